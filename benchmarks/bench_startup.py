"""Start-up cost (issue 14 item 7), measured in fresh subprocesses, interleaved, median of --repeat each.

    python benchmarks/bench_startup.py --repeat 9

S1 `lookbench --help` wall time (target <= 1.0 s)
S2 `python -c "import lookbench"` / `python -c "import torch, transformers"` (target <= 1.15): lookbench may cost
   no more than the libraries every user of it has anyway; GR-Lite joins the Auto classes only when an encoder
   calls lookbench.models.gr_lite.register_auto_classes()
Also shown, not targets: `lookbench evaluate --help`, `lookbench models`, and `from transformers import AutoModel`.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# The console script pip installed next to this interpreter: what a user types.
LOOKBENCH = str(Path(sys.executable).with_name("lookbench"))
COMMANDS = {
    "lookbench --help": [LOOKBENCH, "--help"],
    "lookbench evaluate --help": [LOOKBENCH, "evaluate", "--help"],
    "lookbench models": [LOOKBENCH, "models"],
    "import lookbench": [sys.executable, "-c", "import lookbench"],
    "import torch, transformers": [sys.executable, "-c", "import torch, transformers"],
    "from transformers import AutoModel": [sys.executable, "-c", "from transformers import AutoModel"],
}


def wall(command: list[str]) -> float:
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_EVALUATE_OFFLINE="1")
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    for command in COMMANDS.values():  # warm the OS file cache and Python's bytecode caches once
        wall(command)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):  # interleaved: a slow spell of the shared machine hits every command alike
        for name, command in COMMANDS.items():
            times[name].append(wall(command))
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, t in median.items():
        print(f"   {name:<36} median {t:.2f} s  (runs: {', '.join(f'{x:.2f}' for x in times[name])})")
    print(f"S1 lookbench --help                       = {median['lookbench --help']:.2f} s   (target <= 1.0 s)")
    ratio = median["import lookbench"] / median["import torch, transformers"]
    print(f"S2 import lookbench / import torch, transformers = {median['import lookbench']:.2f} s / "
          f"{median['import torch, transformers']:.2f} s = {ratio:.3f}   (target <= 1.15)")


if __name__ == "__main__":
    main()
