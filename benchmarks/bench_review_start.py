"""``lookbench review`` started as the review tests start it (``tests/helpers/forked.py``): a plain ``python -m
lookbench`` against a process forked from the worker's preloaded server. Seconds from the start to the ``Running
on`` line, on a two-item annotated release; the server's own first start is timed apart; interleaved rounds, best
of --repeat.

    python benchmarks/bench_review_start.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.helpers


def started(raw: Path, preloaded: bool) -> float:
    """Seconds until the start prints its address; then it is stopped."""
    from tests.helpers import clients, forked

    port = clients.free_port()
    begun = time.perf_counter()
    process = forked.start("review", raw, "--port", port, preloaded=preloaded)
    assert isinstance(process, forked.Forked) == preloaded
    for line in process.stdout:
        if line.strip() == f"Running on http://127.0.0.1:{port}":
            break
    else:
        raise SystemExit("the review app never said where it serves")
    took = time.perf_counter() - begun
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from tests.helpers.annotated_release import write_annotated

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw"
        write_annotated(raw, n=2)
        first = started(raw, True)  # the server's start and preload, paid once per pytest worker
        best = {"python -m lookbench": float("inf"), "forked": float("inf")}
        for _ in range(args.repeat):
            for name in best:
                best[name] = min(best[name], started(raw, name == "forked"))
    print(f"review start to its address, best of {args.repeat}; {os.cpu_count()} cores")
    print(f"the forkserver's first start (once per worker)   {first:6.2f} s")
    for name, seconds in best.items():
        print(f"{name:48s} {seconds:6.2f} s")
    print(f"forked / python -m lookbench = {best['forked'] / best['python -m lookbench']:.2f}x")


if __name__ == "__main__":
    main()
