"""What a command prints while it works: one bar per stage of lookbench's own, the libraries' output folded away."""
from __future__ import annotations

import contextlib

from tqdm.auto import tqdm


@contextlib.contextmanager
def library_output(verbose: bool):
    """Unless ``verbose``, datasets' and huggingface_hub's progress bars and info logging are off in the block
    (they would print one bar per split, shard and save); the previous state is restored afterwards."""
    if verbose:
        yield
        return
    import datasets
    import huggingface_hub.utils as hub_utils
    from datasets.utils import logging as datasets_logging
    from huggingface_hub.utils import logging as hub_logging

    datasets_bars, hub_bars = datasets.is_progress_bar_enabled(), not hub_utils.are_progress_bars_disabled()
    levels = datasets_logging.get_verbosity(), hub_logging.get_verbosity()
    datasets.disable_progress_bars()
    hub_utils.disable_progress_bars()
    datasets_logging.set_verbosity_error()
    hub_logging.set_verbosity_error()
    try:
        yield
    finally:
        if datasets_bars:
            datasets.enable_progress_bars()
        if hub_bars:
            hub_utils.enable_progress_bars()
        datasets_logging.set_verbosity(levels[0])
        hub_logging.set_verbosity(levels[1])


class StageBars:
    """One progress bar per named stage (e.g. validate, write); a stage's total grows as its work becomes known."""

    def __init__(self, stages, *, enabled: bool):
        self.bars = {name: tqdm(desc=f"{name:<8}", total=0, unit=" rows", disable=not enabled, leave=True) for name in stages}

    def __getitem__(self, stage: str) -> tqdm:
        return self.bars[stage]

    def add_total(self, stage: str, count: int) -> None:
        bar = self.bars[stage]
        bar.total += count
        bar.refresh()

    def __enter__(self) -> "StageBars":
        return self

    def __exit__(self, *exc) -> None:
        for bar in self.bars.values():
            bar.close()
