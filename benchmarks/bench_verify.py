"""``lookbench verify`` of a submission at the published scale (issue 44): target <= 20 s and <= 1.5 GB peak.

    python benchmarks/bench_verify.py [--data DATA] [--repeat 3] [--profile]

Without ``--data`` it builds (once, into $HF_HOME/lookbench/bench, with bench_scale.py's builder) the published layout
of LookBench-Mini: ``lookbench build --source mini --scale 9 --noise-scale 13`` (2,534 queries, 8,941 subset gallery
and 58,500 noise rows). Each step is a process of its own (bench_scale.py's ``run``: wall seconds of the whole
process, peak RSS from ``wait4``), spawned by a small launcher process: a child spawned straight from this one would
report at least this process's own peak RSS (see ``cli``; shown once, beside):

evaluate  ``lookbench evaluate --data DATA --model raw-pixels --save-predictions --output OUT`` (kept under
          $HF_HOME/lookbench/bench/verify/; skipped when OUT/results.json is of the same data); its
          ``provenance.timings_s`` give the engine's own score stage, shown beside verify's cost
submit    ``lookbench submit OUT/results.json --dry-run --out SUB --allow-synthetic --model-id someone/raw-pixels@<sha>``
          (submit verifies the submission itself before writing it); if it refuses, OUT is verified in place
verify    ``lookbench verify SUB`` ``--repeat`` times (min and median), then ``--format json`` once for the verdict.
          A process runs the CLI's ``main`` (what ``python -m lookbench`` runs) and prints its exit code after it,
          so a verdict of "not verified" (exit 1) is reported rather than taken for a crash
profile   with ``--profile``, or when a target is missed: the verify process under ``python -m cProfile -s cumtime``,
          its first 25 rows
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

from bench_scale import GB, build_published, fmt_stages, run, shapes  # sets the offline environment too

TARGET_S, TARGET_GB = 20.0, 1.5
MODEL = "raw-pixels"
MODEL_ID = f"someone/raw-pixels@{hashlib.sha1(b'raw-pixels').hexdigest()}"  # any owner/name@<40 hex chars>


def child_cli(*argv: str) -> dict:
    """One ``lookbench`` command in this process; its stdout, then its exit code and VmHWM (this process's own peak
    RSS, of the memory exec gave it) as the last line."""
    import re

    from lookbench.cli import main

    code = main(list(argv))
    sys.stdout.flush()
    hwm = re.search(r"^VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    return {"exit": code, "hwm": int(hwm.group(1)) * 1024 if hwm else None}


def cpu_of_children() -> float:
    t = os.times()
    return t.children_user + t.children_system


def launch(*argv: str) -> dict:
    """``lookbench ARGV`` measured from this small process (see ``cli``): wall, peak RSS (wait4), CPU seconds (user +
    system: reaping the child adds them to this process's children's times), exit code, the child's own VmHWM."""
    before = cpu_of_children()
    wall, rss, out = run([sys.executable, __file__, "--child", *argv])
    cpu = cpu_of_children() - before
    *text, last = out.rstrip("\n").splitlines()
    print("\n".join(text))
    return {"wall": wall, "rss": rss, "cpu": cpu, **json.loads(last)}


def cli(*argv: str) -> tuple[float, float, str, int, float]:
    """Wall seconds, peak RSS and stdout of ``lookbench ARGV`` in a process of its own, its exit code, and its CPU
    seconds. The process is spawned by a small launcher process, not by this one: on Linux, wait4's ru_maxrss of a
    child is at least the peak RSS its parent had reached when it spawned it (subprocess spawns with vfork, and exec
    keeps the high-water mark of the memory it replaces), and this process has read the whole data."""
    _, _, out = run([sys.executable, __file__, "--launch", *argv])
    *text, last = out.rstrip("\n").splitlines()
    m = json.loads(last)
    if m["hwm"] is not None and abs(m["hwm"] - m["rss"]) > 0.05 * GB:
        print(f"  (note: wait4 gives {m['rss'] / GB:.3f} GB, the child's own VmHWM {m['hwm'] / GB:.3f} GB)")
    return m["wall"], m["rss"], "\n".join(text), m["exit"], m["cpu"]


def same_data(result: Path, data: str) -> bool:
    """Whether the result at ``result`` was evaluated on ``data`` as it is now (its label and content revision)."""
    from lookbench.engine import load_benchmark

    if not result.is_file():
        return False
    dataset = json.loads(result.read_text())["provenance"]["dataset"]
    truth = load_benchmark(data).provenance
    return dataset.get("data") == truth["data"] and dataset.get("revision") == truth["revision"]


def ranking_rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(p).num_rows for p in folder.rglob("*.parquet"))


def profile(target: str) -> str:
    """The first 25 rows of a cProfile of ``lookbench verify TARGET`` by cumulative time."""
    _, _, out = run([sys.executable, "-m", "cProfile", "-s", "cumtime", __file__, "--child", "verify", target])
    lines = out.splitlines()
    head = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    return "\n".join(lines[max(head - 3, 0):head + 26])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="a built published-layout folder to reuse (default: build it once)")
    parser.add_argument("--repeat", type=int, default=3, help="measured runs of verify (default 3)")
    parser.add_argument("--profile", action="store_true", help="profile verify even when both targets are met")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument("--launch", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child_cli(*args.child)))
        return
    if args.launch:
        print(json.dumps(launch(*args.launch)))
        return

    from lookbench.paths import bench_dir

    sys.stdout.reconfigure(line_buffering=True)  # each line as it comes, also into a log file
    data = args.data or build_published()
    shape = shapes(data)  # also prepares the datasets Arrow cache every process below reads
    queries, gallery = sum(shape["queries"].values()), sum(shape["galleries"].values())
    print(f"data: {data}: {queries} queries, {gallery} subset gallery rows + {shape['noise']} noise rows = "
          f"{gallery + shape['noise']}; {os.cpu_count()} cores; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    work = bench_dir() / "verify" / hashlib.sha256(str(Path(data).resolve()).encode()).hexdigest()[:12]
    out, sub = work / f"evaluate-{MODEL}", work / "submission"

    if same_data(out / "results.json", data):
        print(f"evaluate   kept: {out}/results.json is of this data")
    else:
        shutil.rmtree(out, ignore_errors=True)
        wall, rss, _, _, cpu = cli("evaluate", "--data", data, "--model", MODEL, "--save-predictions", "--output", str(out),
                              "--quiet")
        print(f"evaluate   {wall:.1f} s wall ({cpu:.1f} s CPU), peak RSS {rss / GB:.2f} GB")
    timings = json.loads((out / "results.json").read_text())["provenance"]["timings_s"]
    print(f"           its stages: {fmt_stages(timings)}")

    shutil.rmtree(sub, ignore_errors=True)
    wall, rss, text, code, cpu = cli("submit", str(out / "results.json"), "--dry-run", "--out", str(sub),
                                "--allow-synthetic", "--model-id", MODEL_ID)
    if code == 0:
        target = str(sub)
        print(f"submit     {wall:.1f} s wall ({cpu:.1f} s CPU), peak RSS {rss / GB:.2f} GB (it verifies the submission before writing "
              f"it): {text.strip()}")
    else:
        target = str(out)
        print(f"submit     REFUSED (exit {code}): {text.strip()}\n           verifying {out} in place instead")
    rows = ranking_rows(Path(target))

    runs = []
    for _ in range(args.repeat):
        wall, rss, text, code, cpu = cli("verify", target)
        if code not in (0, 1):
            raise SystemExit(f"lookbench verify {target} failed ({code}):\n{text[-3000:]}")
        runs.append((wall, rss, cpu))
    jwall, jrss, text, code, jcpu = cli("verify", target, "--format", "json")
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    _, direct, _ = run([sys.executable, __file__, "--child", "verify", target])  # as bench_scale.py spawns its steps
    verdict = json.loads(text)
    walls, rsss, cpus = (sorted(r[i] for r in runs) for i in range(3))
    wmin, wmed = walls[0], statistics.median(walls)
    rmax, rmed = rsss[-1], statistics.median(rsss)
    agree = sum(s["agrees"] for s in verdict["scores"])
    print(f"\nlookbench verify {target}")
    print(f"  queries {queries}, gallery + noise rows {gallery + shape['noise']}, ranking rows {rows}")
    print(f"  verdict (--format json, exit {code}): verified {verdict['verified']}, {agree} of {len(verdict['scores'])} "
          f"claimed scores agree, {len(verdict['reasons'])} reason(s){': ' + verdict['reasons'][0] if verdict['reasons'] else ''}")
    print(f"  wall s      {', '.join(f'{r[0]:.2f}' for r in runs)}; min {wmin:.2f}, median {wmed:.2f}  (target <= "
          f"{TARGET_S:.0f}: min / target = {wmin / TARGET_S:.3f}, median / target = {wmed / TARGET_S:.3f})")
    print(f"  CPU s       {', '.join(f'{r[2]:.2f}' for r in runs)}; min {cpus[0]:.2f}, median {statistics.median(cpus):.2f}"
          f"  (user + system; median / {TARGET_S:.0f} s = {statistics.median(cpus) / TARGET_S:.3f})")
    print(f"  peak RSS GB {', '.join(f'{r[1] / GB:.3f}' for r in runs)}; median {rmed / GB:.3f}, max {rmax / GB:.3f}  "
          f"(target <= {TARGET_GB}: max / target = {rmax / GB / TARGET_GB:.3f})")
    print(f"  --format json run: {jwall:.2f} s wall, {jcpu:.2f} s CPU, {jrss / GB:.3f} GB")
    print(f"  the same verify spawned straight from this process (peak RSS {own / GB:.3f} GB, having read the data), as "
          f"bench_scale.py spawns its steps: wait4 gives {direct / GB:.3f} GB")
    print(f"  reference, the engine's own stages in the evaluate run: score {timings['score']:.2f} s, search "
          f"{timings['search']:.2f} s; verify median / score stage = {wmed / timings['score']:.1f}")
    missed = wmed > TARGET_S or rmax / GB > TARGET_GB
    print(f"  targets: wall {'met' if wmed <= TARGET_S else 'MISSED'}, peak RSS "
          f"{'met' if rmax / GB <= TARGET_GB else 'MISSED'}; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if missed or args.profile:
        print(f"\npython -m cProfile -s cumtime, lookbench verify {target} (first 25 rows):\n{profile(target)}")


if __name__ == "__main__":
    main()
