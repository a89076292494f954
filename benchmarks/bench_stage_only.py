"""`lookbench stage --only dataset,labels` of a sealed release from an empty home, and a full stage re-run with
unchanged inputs (the demo's prepared galleries reused) against the first full stage (issue 54 part 6).

    python benchmarks/bench_stage_only.py [--photos IDX_DIR] [--work DIR]

Every step is ``python -m lookbench ...`` in a fresh process, offline. A sealed LookBench-Mini release is built
(``build --source mini --seal``, not timed, in a home of its own); then, each timed:
  1. ``stage --only dataset,labels --data D --labels D-labels`` with an empty HF_HOME (target: <= 90 s);
  2. a full ``stage`` with another empty HF_HOME (the demo's galleries prepared: the Mini's 1,759 images and the photos);
  3. the same full ``stage`` again with that home (the galleries reused from ``$HF_HOME/lookbench/space``).
``--photos``: the folder of Fashion-MNIST's IDX files of the real-photo gallery (default: the Debian package's 10,000).
Prints the three times and the ratios measured in this run.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1"}


def lookbench(home: Path, *argv: str) -> float:
    """Seconds ``lookbench argv`` took with ``HF_HOME=home``; a failure stops the benchmark with its output."""
    env = {**os.environ, **OFFLINE, "HF_HOME": str(home)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "lookbench", *argv], env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"lookbench {' '.join(argv)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photos", type=Path, help="IDX folder of the real-photo gallery (default: the Debian package's)")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a new temporary one)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-stage-"))
    photos = ["--photos", str(args.photos)] if args.photos else []
    data = work / "data"
    lookbench(work / "home-build", "build", "--source", "mini", "--out", str(data), "--seal", "--until", "2027-06-01",
              "--quiet")
    only = lookbench(work / "home-only", "stage", "--out", str(work / "HUB-only"), "--data", str(data), "--labels",
                     f"{data}-labels", "--only", "dataset,labels")
    first = lookbench(work / "home-full", "stage", "--out", str(work / "HUB-first"), *photos)
    again = lookbench(work / "home-full", "stage", "--out", str(work / "HUB-again"), *photos)
    print(f"stage --only dataset,labels of a sealed release, empty home   {only:8.1f} s  (target <= 90 s)")
    print(f"full stage, empty home (demo galleries prepared)              {first:8.1f} s")
    print(f"full stage again, same home (demo galleries reused)           {again:8.1f} s")
    print(f"only dataset,labels / first full stage = {only / first:.3f}")
    print(f"full stage re-run / first full stage    = {again / first:.3f}")


if __name__ == "__main__":
    main()
