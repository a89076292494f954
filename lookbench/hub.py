"""The Hugging Face Hub as LookBench names and asks it: the published release's id, the grammar of repo ids and their
revisions, whether a Hub answers, and the one line a failed Hub request becomes (docs/architecture.md §2).

A base module: the engine, the encoders, ``submit``, ``push`` and the Spaces import it, and it imports nothing of
lookbench above ``errors``, so none of them has to import another application for a Hub fact."""
from __future__ import annotations

import functools
import re
from pathlib import Path

from lookbench.errors import one_line

UPSTREAM = "srpone/look-bench"  # the published LookBench release (a dataset repo): what reproduces the paper's figures
DATASET_ID = "lookbench/lookbench"  # the project's dataset repo, a Hub Benchmark (`lookbench stage --namespace` retargets it)
BOARD_SPACE = "lookbench/leaderboard"  # LookBench's own leaderboard Space

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
        reason = one_line(err).rsplit(": '", 1)[0].rstrip(":")  # its text without the id it quotes raw
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
    if (COMMIT.fullmatch(folder.name) and folder.parent.name == "snapshots"
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


# The fix for a refusal whose cause a status tells, said instead of huggingface_hub's words.
HTTP_REASONS = {
    401: "the Hub refused the token (401): set HF_TOKEN or run `hf auth login` with a valid token",
    403: "the token may not write there (403): it needs write access to the namespace",
    404: "not found (404): check the namespace and --revision",
}


def error_line(err: Exception, limit: int = 300) -> str:
    """What a failed Hub request that sends something (push, a pull request, a job) tells its user, in one line: the fix
    for a refusal ``HTTP_REASONS`` knows, else the status and huggingface_hub's words, or the endpoint that could not
    be reached (a ``transport_errors`` failure); the words cut at ``limit`` characters."""
    from huggingface_hub import constants

    status = getattr(getattr(err, "response", None), "status_code", None)
    if status is not None:
        return HTTP_REASONS.get(status) or f"the Hub answered {status}: {one_line(err, limit)}"
    if isinstance(err, transport_errors()):
        return f"cannot reach {constants.ENDPOINT}: {type(err).__name__}: {one_line(err, limit)}"
    return one_line(err, limit)
