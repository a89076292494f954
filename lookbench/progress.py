"""Quiet by default: lookbench shows one bar per stage of its own and folds the libraries' output away.

A first evaluation on a fresh machine would otherwise print dozens of datasets bars (``Generating … split``,
``Creating parquet``, ``Flattening the indices``) and transformers' ``Loading weights``. docs/architecture.md §8.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys


@contextlib.contextmanager
def quiet_libraries(verbose: bool = False):
    """Silence datasets', transformers' and huggingface_hub's progress bars and their info/warning logging inside
    the block (``verbose`` keeps them); everything is restored on exit.

    transformers reads huggingface_hub's switch when it is imported, so a transformers imported inside the
    block starts silenced too and is switched back on at exit.
    """
    if verbose:
        yield
        return
    import datasets
    from huggingface_hub import utils as hub_utils

    undo = []
    with contextlib.ExitStack() as stack:
        stack.callback(lambda: [f() for f in reversed(undo)])
        if datasets.is_progress_bar_enabled():
            datasets.disable_progress_bars()
            undo.append(datasets.enable_progress_bars)
        level = datasets.logging.get_verbosity()
        datasets.logging.set_verbosity_error()
        undo.append(lambda: datasets.logging.set_verbosity(level))
        hub_bars = not hub_utils.are_progress_bars_disabled()
        if hub_bars:
            hub_utils.disable_progress_bars()
            undo.append(hub_utils.enable_progress_bars)
        had_transformers = "transformers.utils.logging" in sys.modules
        if had_transformers:
            undo.append(_silence_transformers())
        elif "TRANSFORMERS_VERBOSITY" not in os.environ:
            os.environ["TRANSFORMERS_VERBOSITY"] = "error"  # read when transformers configures its logger
            undo.append(lambda: os.environ.pop("TRANSFORMERS_VERBOSITY", None))
        yield
        if not had_transformers and "transformers.utils.logging" in sys.modules:
            from transformers.utils import logging as tf_logging

            undo.append(lambda: tf_logging.set_verbosity(logging.WARNING))  # transformers' default
            if hub_bars:
                undo.append(tf_logging.enable_progress_bar)


def _silence_transformers():
    """Switch an imported transformers' bars and logging off; returns the undo."""
    from transformers.utils import logging as tf_logging

    bars, level = tf_logging.is_progress_bar_enabled(), tf_logging.get_verbosity()
    tf_logging.disable_progress_bar()
    tf_logging.set_verbosity_error()

    def undo():
        tf_logging.set_verbosity(level)
        if bars:
            tf_logging.enable_progress_bar()

    return undo


def stage_bar(desc: str, *, quiet: bool, unit: str = "it"):
    """The one progress bar of a lookbench stage (load, hash, encode, search); its total is set by the stage."""
    from tqdm.auto import tqdm

    return tqdm(total=0, desc=desc, unit=unit, disable=quiet)


class StageBars:
    """Several named stage bars open at once (the builder validates and writes split by split); a stage's total
    grows as its work becomes known."""

    def __init__(self, stages, *, enabled: bool):
        self.bars = {name: stage_bar(f"{name:<8}", quiet=not enabled, unit=" rows") for name in stages}

    def __getitem__(self, stage: str):
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


def stage_note(stage: str, bar=None) -> str:
    """A start's or a background preparation's progress as a page shows it: ``⏳ <stage>: <the bar's desc> <n> of
    <total>`` (the count alone while the total is unknown; the stage alone without a bar)."""
    if bar is None:
        return f"⏳ {stage}"
    return f"⏳ {stage}: {bar.desc.strip()} {bar.n:,}" + (f" of {bar.total:,}" if bar.total else "")
