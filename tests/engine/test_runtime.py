"""Where and how an evaluation runs (lookbench.engine.runtime): the allocator tuning while encoding, the decode
schedule each device gets by default, and two accelerate processes giving the scores of one."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import lookbench

from tests.helpers.engine_data import scores

PAGE_FAULTS_SCRIPT = """
import json, resource, numpy as np
from lookbench.engine import reuse_freed_memory

def faults(n=20, nbytes=3 * 2**19):  # 1.5 MB: above glibc's mmap threshold, below a transparent huge page
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        buffer = np.ones(nbytes // 8)  # every page written, like an activation tensor
        del buffer
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

with reuse_freed_memory():
    inside = faults()
print(json.dumps({"inside": inside, "after": faults()}))
"""


@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc", reason="mallopt tuning is glibc-only")
def test_encoding_reuses_freed_memory_and_restores_the_allocator():
    # A fresh process: how glibc serves a buffer depends on everything the process allocated before.
    proc = subprocess.run([sys.executable, "-c", PAGE_FAULTS_SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    faults = json.loads(proc.stdout.strip().splitlines()[-1])
    pages = 3 * 2**19 // os.sysconf("SC_PAGE_SIZE")
    assert faults["inside"] <= 2 * pages  # the first buffer grows the heap once; the other 19 reuse it
    assert faults["after"] >= 10 * pages  # glibc's fixed defaults are back: each buffer is mapped and faulted in anew


def test_schedule_defaults_come_from_the_device():
    from lookbench.engine import Schedule

    cores = len(os.sched_getaffinity(0))
    cpu, gpu = Schedule.for_device("cpu"), Schedule.for_device("cuda:0")
    assert (cpu.workers, cpu.batch_size, cpu.overlap) == (cores, 32, False)
    assert (gpu.workers, gpu.batch_size, gpu.overlap) == (cores, 128, True)
    assert Schedule.for_device("cpu", forward_uses_all_cores=False).overlap is True  # a one-thread forward pass
    assert Schedule.for_device("cuda", world=cores * 2).workers == 1  # never fewer than one decode thread
    given = Schedule.for_device("cuda", workers=3, batch_size=7, overlap=False)
    assert (given.workers, given.batch_size, given.overlap) == (3, 7, False)


@pytest.mark.slow
def test_two_accelerate_processes_match_one(data, tmp_path, accelerate_two_cpu_processes):
    single = lookbench.evaluate("raw-pixels", data=data, cache_dir=tmp_path / "c1", quiet=True, batch_size=4).to_dict()
    env = dict(os.environ, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")
    cmd = accelerate_two_cpu_processes + ["-m", "lookbench", "evaluate", "--data", str(data), "--model", "raw-pixels", "--batch-size", "4",
           "--cache-dir", str(tmp_path / "c2"), "--output", str(tmp_path / "out"), "--results", str(tmp_path / "store"), "--quiet"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sum(line.startswith("overall ") for line in proc.stdout.splitlines()) == 1  # only the main process prints
    multi = json.loads((tmp_path / "out" / "results.json").read_text())
    assert multi["provenance"]["processes"] == 2
    # 5 batches of up to 4 images dealt round-robin: batches 0, 2, 4 (4 + 4 + 3 images) to rank 0, 1 and 3 to rank 1
    assert multi["provenance"]["counts"]["forward_images_per_process"] == [11, 8]
    assert scores(multi) == scores(single)
