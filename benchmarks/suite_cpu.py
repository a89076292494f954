"""Where the test suite spends its CPU: a pytest plugin that appends each test's CPU seconds (its process and the
children it waited for: subprocesses, venv installs, Spaces) to ``$SUITE_CPU_OUT.<worker>``, and a summary by file.

    PYTHONPATH=benchmarks SUITE_CPU_OUT=/tmp/cpu python -m pytest -n auto --dist loadfile -p suite_cpu
    python benchmarks/suite_cpu.py /tmp/cpu        # CPU seconds per test file, largest first

CPU seconds, not wall: on a shared machine the wall time of a test is mostly what ran beside it (docs/developing.md).
A process a worker's forkserver starts (tests/helpers/forked.py: the review app's starts) is the server's child, not
the test's, so its CPU is in no test's figure; the CPU of everything a command started is counted apart, in a cpuacct
cgroup (benchmarks/RESULTS.md, "Test suite wall time").
"""
from __future__ import annotations

import collections
import glob
import json
import os
import resource
import sys
import time

import pytest


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = _cpu(), time.perf_counter()
    yield
    record = {"id": item.nodeid, "cpu": round(_cpu() - cpu, 2), "wall": round(time.perf_counter() - wall, 2)}
    with open(f"{os.environ['SUITE_CPU_OUT']}.{os.environ.get('PYTEST_XDIST_WORKER', 'main')}", "a") as out:
        out.write(json.dumps(record) + "\n")


def main(prefix: str, top: int = 30) -> None:
    rows = [json.loads(line) for path in glob.glob(f"{prefix}.*") for line in open(path)]
    by_file = collections.Counter()
    for row in rows:
        by_file[row["id"].split("::")[0]] += row["cpu"]
    print(f"{len(rows)} tests, {sum(by_file.values()):.0f} CPU-s")
    for name, seconds in by_file.most_common(top):
        print(f"{seconds:8.1f}  {name}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
