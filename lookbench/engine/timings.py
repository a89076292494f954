"""Wall seconds of the main process in each stage of one evaluation: ``provenance["timings_s"]``.

docs/architecture.md §7-§8. Users compare runs by them (as MTEB records evaluation time), and
``benchmarks/bench_scale.py`` reads them to set each stage against its own limit.
"""
from __future__ import annotations

import contextlib
import time

STAGES = ("load", "hash", "encode", "search", "score")


class StageTimes:
    """Seconds per stage, summed over every time a stage runs (search and score alternate per subset)."""

    def __init__(self):
        self.seconds = dict.fromkeys(STAGES, 0.0)

    @contextlib.contextmanager
    def stage(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start

    def rounded(self) -> dict:
        return {name: round(s, 3) for name, s in self.seconds.items()}
