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


# A file name's limit on Linux file systems; no Hub id (96 characters a part) or commit (40) comes near it.
MAX_NAME = 255
COMMIT = re.compile(r"[0-9a-f]{40}")


def shown(text, limit: int = 120) -> str:
    """``text`` as a one-line message may show it: quoted, every character that is not printable ASCII escaped (a
    right-to-left override reads as ``\\u202e``, never reorders the line), cut to about ``limit`` characters."""
    quoted = ascii(str(text))
    return quoted if len(quoted) <= limit else f"{quoted[:limit]}...' ({len(str(text))} characters)"


def printable_name(text, what: str, limit: int = MAX_NAME) -> str:
    """``text`` if it is printable ASCII of at most ``limit`` characters. Every name that goes into a path or a pull
    request's title passes here: an invisible or right-to-left character would make it read as another name, and an
    over-long one would fail as the file system's ``[Errno 36]``. Else a one-line ValueError naming ``what``."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"{what} is {shown(text)}, not a name")
    if len(text) > limit:
        raise ValueError(f"{what} {shown(text)} is longer than the {limit} characters a name may have")
    if not all(" " <= c <= "~" for c in text):
        raise ValueError(f"{what} {shown(text)} has a character that is not printable ASCII")
    return text


def check_hub_id(repo, what: str) -> str:
    """``repo`` if it is a Hub repo id ``owner/name`` that huggingface_hub's own ``validate_repo_id`` accepts: ASCII
    letters, digits, '-', '_', '.', not starting or ending with '-' or '.', at most 96 characters a part, no '--' or
    '..'. So the id is also two path segments as they are, neither '.' nor '..'. Else a one-line ValueError."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    printable_name(repo, what, limit=2 * 96 + 1)
    if repo.count("/") != 1:
        raise ValueError(f"{what} {shown(repo)} is not a Hub repo id owner/name")
    try:
        validate_repo_id(repo)
    except HFValidationError as err:
        reason = " ".join(str(err).split()).rsplit(": '", 1)[0].rstrip(":")  # its text without the id it quotes raw
        raise ValueError(f"{what} {shown(repo)} is not a Hub repo id owner/name: {reason}") from None
    return repo


def check_commit(repo: str, revision, what: str) -> str:
    """``revision`` if it is a 40-hex commit sha (lower-cased): what a submission scored must stay the same weights,
    and a branch or tag moves. Else a one-line ValueError saying how to find the commit of ``repo`` (checked first)."""
    if isinstance(revision, str) and COMMIT.fullmatch(revision.lower()):
        return revision.lower()
    ref = revision if isinstance(revision, str) and len(revision) <= 100 and revision.isascii() \
        and revision.isprintable() and revision_problem(revision) is None and "'" not in revision else "main"
    raise ValueError(f"{what} {repo}@{shown(revision)}: the revision must be the model's 40-hex commit sha, not a branch or "
                     f"tag (they move); find it with python -c \"from huggingface_hub import HfApi; "
                     f"print(HfApi().model_info('{repo}', revision='{ref}').sha)\" or in the Hub page's commit history "
                     f"(https://huggingface.co/{repo}/commits/{ref})")


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
