"""Where LookBench keeps its files, and what names a Hub repository (docs/architecture.md §6)."""
from __future__ import annotations

import functools
import re
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


_REPO_ID = re.compile(r"\w[\w.-]*/\w[\w.-]*")
# What git check-ref-format refuses anywhere in a ref, each with the words that name it; a backslash and '//' are
# also the path tricks a revision must not carry, since huggingface_hub reads ``<cache>/refs/<revision>`` as a file.
_REF_FORBIDDEN = (("..", "'..'"), ("\\", "a backslash"), ("//", "'//'"), ("@{", "'@{'"), ("@", "'@'"),
                  *((c, f"'{c}'") for c in ":~^?*["))


def looks_like_hub_id(name: str) -> bool:
    """``owner/name`` as the Hub spells repository ids (one slash, no spaces, no path segments), optionally followed
    by ``@`` and a revision, which ``split_revision`` accepts or refuses saying why."""
    repo = name.partition("@")[0]
    return _REPO_ID.fullmatch(repo) is not None and ".." not in repo


def revision_problem(revision: str) -> str | None:
    """Why ``revision`` is not a branch, tag or commit name (``None``: it is one): git check-ref-format's rules,
    which allow ``feature/x`` and the Hub's ``refs/pr/1``, and refuse every spelling huggingface_hub would read as a
    path outside its cache (a leading '/', '..', a backslash, '//', a trailing '/', segments starting with '.')."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in revision):
        return "contains whitespace or a control character"
    if revision.startswith("/"):
        return "starts with '/'"
    for text, words in _REF_FORBIDDEN:
        if text in revision:
            return f"contains {words}"
    if revision.endswith("/"):
        return "ends with '/'"
    if any(segment.startswith(".") for segment in revision.split("/")):
        return "has a segment starting with '.'"
    if revision.endswith("."):
        return "ends with '.'"
    if any(segment.endswith(".lock") for segment in revision.split("/")):
        return "has a segment ending in '.lock'"
    return None


def split_revision(name: str) -> tuple[str, str | None]:
    """``owner/name@revision`` → (``owner/name``, ``revision``); a name without ``@`` has no revision. A revision that
    is not a ref name is refused here, before anything is fetched or loaded (``revision_problem``)."""
    repo, at, revision = name.partition("@")
    if at and not revision:
        raise ValueError(f"{name!r}: nothing after '@'; write owner/name@<branch, tag or commit sha>")
    problem = revision_problem(revision) if at else None
    if problem:
        raise ValueError(f"{repo}@{revision!r}: the revision {problem}; a revision is a branch, a tag or a commit sha, "
                         "never a path")
    return repo, revision or None


def snapshot_commit(folder) -> str:
    """The commit of a snapshot folder huggingface_hub returned (``<type>s--owner--name/snapshots/<sha>``): its
    name, once checked to be one, so a recorded revision is always a commit and never some folder's name."""
    folder = Path(folder)
    if (re.fullmatch(r"[0-9a-f]{40}", folder.name) and folder.parent.name == "snapshots"
            and re.fullmatch(r"(models|datasets|spaces)--.+", folder.parent.parent.name)):
        return folder.name
    raise ValueError(f"{folder} is not a snapshot of the Hugging Face cache (<type>s--owner--name/snapshots/<commit sha>)")


# How long the one reachability request may take: a Hub that answers does so well within it.
REACH_TIMEOUT_S = 3.0


def hub_reachable() -> bool:
    """Whether a Hub answers: never in huggingface_hub's offline mode (``HF_HUB_OFFLINE=1``; no request is made),
    else one quick request to its endpoint (``HF_ENDPOINT``), asked once per process. A Hub that is away then costs
    one short timeout, and the cache is read at once, instead of huggingface_hub retrying for about 25 s."""
    from huggingface_hub import constants

    return not constants.is_offline_mode() and _answers(constants.ENDPOINT)


@functools.cache
def _answers(endpoint: str) -> bool:
    """The standard library's client (proxies from the environment, as huggingface_hub's), so a Space that carries
    this module needs no HTTP package of its own."""
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=REACH_TIMEOUT_S).close()
    except urllib.error.HTTPError:
        return True  # any HTTP answer, even an error status, is a Hub that can be asked
    except (OSError, ValueError):
        return False
    return True


def transport_errors() -> tuple[type[Exception], ...]:
    """Network failures as huggingface_hub's HTTP client raises them (httpx in huggingface_hub 1.x, httpx2 in 2.x),
    looked up by name: the package is huggingface_hub's dependency, not LookBench's."""
    import importlib

    errors = []
    for name in ("httpx", "httpx2"):
        try:
            errors.append(importlib.import_module(name).TransportError)
        except ImportError:
            continue
    return tuple(errors)
