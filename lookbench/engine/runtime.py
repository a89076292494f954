"""Where encoding runs: the ``accelerate`` processes, the decode schedule of a device, and the allocator setting.

docs/architecture.md §7-§8.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import os
import platform
from dataclasses import dataclass

# glibc mallopt parameters and their defaults (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
_DEFAULT_TRIM_THRESHOLD, _DEFAULT_MMAP_MAX = 128 * 1024, 65536


@contextlib.contextmanager
def reuse_freed_memory():
    """Keep freed memory in the heap while encoding (glibc only).

    A CPU forward pass allocates activation buffers of tens of MB per layer. glibc serves those with fresh
    ``mmap`` pages and returns them on ``free``, so every batch page-faults its activations in again: measured
    here, 2.6 M page faults and 2.5x the forward time of EfficientNet-Lite0 at batch 32 (PyTorch's CPU tuning
    guide recommends jemalloc/tcmalloc for the same reason). Inside this block large blocks come from the heap
    and stay there for the next batch; on exit glibc's default (fixed) thresholds are restored. Left alone when
    the user tunes malloc through ``MALLOC_MMAP_MAX_`` / ``MALLOC_TRIM_THRESHOLD_``.
    """
    user_tuned = any(v in os.environ for v in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_"))
    if platform.libc_ver()[0] != "glibc" or user_tuned:
        yield
        return
    mallopt = ctypes.CDLL(None).mallopt
    mallopt(_M_MMAP_MAX, 0)  # no mmap: large blocks come from the heap
    mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)  # the largest int mallopt takes: never shrink the heap meanwhile
    try:
        yield
    finally:
        mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)
        mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)


@dataclass(frozen=True)
class Schedule:
    """How the encode stage feeds a device: decode threads, images per forward pass, and whether decoding overlaps
    the forward passes."""

    workers: int
    batch_size: int
    overlap: bool

    @classmethod
    def for_device(cls, device: str, world: int = 1, *, forward_uses_all_cores: bool = True, workers=None,
                   batch_size=None, overlap=None) -> "Schedule":
        """The defaults of ``device`` (a torch device string), each replaced by the caller's value when given.

        A CPU that runs the forward pass on every core (torch) alternates decoding with it: a decode thread that
        pre-empts one of torch's threads stalls the others at the next barrier. Batches there stay at 32. An
        accelerator leaves the cores to decoding: one decode thread per core of this process's share, overlapping
        the forward passes, batches of 128 (a GPU forward pass is cheap per image only when the batch is large).
        A forward pass on one thread (``Encoder.forward_uses_all_cores`` False) overlaps decoding on a CPU too.
        """
        on_cpu = str(device).startswith("cpu")
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return cls(workers=workers or max(1, cores // world),
                   batch_size=batch_size or (32 if on_cpu else 128),
                   overlap=(not on_cpu or not forward_uses_all_cores) if overlap is None else overlap)


@functools.cache
def _end_process_group_at_exit():
    """Left to the interpreter's finalization, gloo's worker threads die joinable and a process aborts now and then
    ('terminate called without an active exception') after its work is done; destroyed by an exit handler, while the
    interpreter is whole, it never does. Once per process: accelerate's state is shared by every evaluate in it."""
    from accelerate import PartialState

    atexit.register(PartialState().destroy_process_group)


class Processes:
    """Process rank/world from ``accelerate`` when launched with it; a single process otherwise."""

    def __init__(self):
        self.state = None
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            from accelerate import PartialState
            from accelerate.utils import parse_flag_from_env

            # Without cpu=True a CPU-only launch silently degrades to independent single processes.
            self.state = PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))
            _end_process_group_at_exit()
        self.rank = self.state.process_index if self.state else 0
        self.world = self.state.num_processes if self.state else 1
        self.is_main = self.rank == 0
        self.device = str(self.state.device) if self.state else None

    def barrier(self):
        if self.state:
            self.state.wait_for_everyone()

    def gather(self, items: list) -> list:
        """Concatenate every process's list, in rank order."""
        if not self.state:
            return items
        from accelerate.utils import gather_object

        return gather_object(items)
