"""Where LookBench keeps its files (docs/architecture.md §6); what names a Hub repository is ``lookbench.hub``'s."""
from __future__ import annotations

from pathlib import Path

from lookbench._version import __version__


def lookbench_home() -> Path:
    """``$HF_HOME/lookbench``: every file LookBench keeps lives below it, at a location named by a function here.

    Read through huggingface_hub's constant at call time, so it follows the same rules (``HF_HOME``, XDG) as the
    libraries' own caches and a test that points ``HF_HOME`` elsewhere moves all of LookBench's files with it.
    """
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "lookbench"


# Every folder and file below lookbench_home(), one function each, so that a location is spelled in one place.


def results_dir() -> Path:
    """The results store ``lookbench evaluate`` saves into and ``lookbench leaderboard`` reads."""
    return lookbench_home() / "results"


def embeddings_dir() -> Path:
    """The embedding cache, one file per encoder fingerprint."""
    return lookbench_home() / "embeddings"


def datasets_cache_dir(revision: str) -> Path:
    """datasets' cache for one dataset folder, named by the folder's content revision."""
    return lookbench_home() / "datasets" / revision


def converted_data_dir(stamp: str) -> Path:
    """A published ``srpone/look-bench`` snapshot converted by the builder, named by a stamp of its files."""
    return lookbench_home() / "converted" / stamp


def converted_models_dir() -> Path:
    """Hub model snapshots converted to transformers folders, ``<owner>--<name>/<commit>``."""
    return lookbench_home() / "converted-models"


def mini_dir(generation: int) -> Path:
    """The embedded LookBench-Mini's dataset folder: one per package version and generator generation."""
    return lookbench_home() / f"mini-{__version__}-g{generation}" / "lookbench"


def weight_hashes_file() -> Path:
    """The memo of weight files' sha256, keyed by (path, size, mtime)."""
    return lookbench_home() / "weight_hashes.json"


def mteb_stats_dir() -> Path:
    """mteb's descriptive statistics of the LookBench tasks."""
    return lookbench_home() / "mteb" / "descriptive_stats"


def space_assets_dir() -> Path:
    """The demo Space's assets: thumbnails, embeddings and faiss indexes of the served data."""
    return lookbench_home() / "space"


def board_dir() -> Path:
    """The leaderboard Space's copy of the results repo and the verdicts of the submissions it has verified."""
    return lookbench_home() / "board"


def bench_dir() -> Path:
    """The datasets the scripts in ``benchmarks/`` build and time."""
    return lookbench_home() / "bench"


def result_file(path) -> Path:
    """The result JSON a user names: the file itself, or ``results.json`` inside a ``lookbench evaluate --output``
    folder, so every command that reads a result takes both."""
    path = Path(path)
    return path / "results.json" if path.is_dir() else path
