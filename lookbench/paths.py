"""Where LookBench keeps its files, and what names a Hub repository (docs/architecture.md §6)."""
from __future__ import annotations

import re
from pathlib import Path


def lookbench_home() -> Path:
    """``$HF_HOME/lookbench``: embeddings, converted snapshots, dataset caches and weight hashes live below it.

    Read through huggingface_hub's constant at call time, so it follows the same rules (``HF_HOME``, XDG) as the
    libraries' own caches and a test that points ``HF_HOME`` elsewhere moves all of LookBench's files with it.
    """
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "lookbench"


def looks_like_hub_id(name: str) -> bool:
    """``owner/name`` as the Hub spells repository ids (one slash, no spaces, no path segments), optionally pinned
    as ``owner/name@revision``."""
    return re.fullmatch(r"[\w.-]+/[\w.-]+(@[\w./-]+)?", name) is not None and ".." not in name


def split_revision(name: str) -> tuple[str, str | None]:
    """``owner/name@revision`` → (``owner/name``, ``revision``); a name without ``@`` has no revision."""
    repo, at, revision = name.partition("@")
    if at and not revision:
        raise ValueError(f"{name!r}: nothing after '@'; write owner/name@<branch, tag or commit sha>")
    return repo, revision or None
