"""The results repo as the leaderboard Space reads it (docs/architecture.md §5): a copy of the Hub dataset
(``snapshot_download``; a folder given instead for tests and offline use) and every submission in it verified once —
``verify_submission``'s verdict as the leaderboard's verified column says it (``lookbench.leaderboard.load``) — the
verdict kept under the hash of the submission's files, so a refresh verifies again only what changed.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from lookbench._version import __version__
from lookbench.files import hash_files, read_regular, replacing
from lookbench.paths import board_dir, transport_errors
from lookbench.submissions import DEFAULT_REPO

REPO_VARIABLE = "LOOKBENCH_RESULTS_REPO"  # the results repo's Hub id (default lookbench/results)
FOLDER_VARIABLE = "LOOKBENCH_RESULTS_FOLDER"  # a local copy of it, read instead of downloading
SUBMISSIONS = "submissions"  # the repo's folder of submissions (lookbench.submissions.submit.ROOT)
MAX_FOLDERS = 10_000  # folders walked below submissions/
MAX_VERDICTS_BYTES = 64 * 1024 * 1024
log = logging.getLogger("lookbench.space.board")


@dataclass(frozen=True)
class Copy:
    """The copy of the results repo the board shows: its folder (``None``: none could be had, ``problem`` says why)
    and what it is, in words."""

    folder: Path | None
    source: str
    problem: str | None = None


@dataclass(frozen=True)
class Verdict:
    """One submission's verdict, as the verified column shows it (``lookbench.leaderboard.load.verified_text``: ``yes``,
    ``no: <reason>``, ``not checked: <why>``), and ``key``, the hash of the files it was given to."""

    folder: str
    key: str
    text: str

    @property
    def status(self) -> str:
        """yes, no or not checked."""
        from lookbench.leaderboard.load import FAILED, NOT_CHECKED, VERIFIED

        return VERIFIED if self.text == VERIFIED else "no" if self.text.startswith(FAILED) else NOT_CHECKED


def fetch(repo_id: str | None = None, folder=None) -> Copy:
    """The results repo: ``folder`` (or ``$LOOKBENCH_RESULTS_FOLDER``) as it is, else ``repo_id`` (or
    ``$LOOKBENCH_RESULTS_REPO``, default ``lookbench/results``) downloaded into ``board_dir()`` as real files —
    offline, or with the Hub unreachable, the copy an earlier download left there. Never raises: a repo that cannot be
    had is a ``Copy`` without a folder, and the page says why."""
    folder = folder or os.environ.get(FOLDER_VARIABLE)
    if folder:
        path = Path(folder)
        if not path.is_dir():
            return Copy(None, str(path), f"{path} is not a folder")
        return Copy(path, f"the folder {path}")
    repo_id = repo_id or os.environ.get(REPO_VARIABLE) or DEFAULT_REPO
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    target = board_dir() / "results" / repo_id.replace("/", "--")
    try:  # local_dir: real files, so every submission's files lie inside its folder, as verify reads them
        path = snapshot_download(repo_id, repo_type="dataset", local_dir=target)
    except (HfHubHTTPError, OSError, ValueError, *transport_errors()) as err:
        return Copy(None, repo_id, f"the results repo {repo_id} cannot be read: {' '.join(str(err).split())[:300]}")
    return Copy(Path(path), f"the dataset repo {repo_id}")


def submission_folders(root: Path) -> list[Path]:
    """Every folder below ``root/submissions`` holding a ``results.json``, sorted (links to folders are not followed)."""
    from lookbench.submissions.verify import RESULT_NAME

    found = []
    for visited, (top, folders, names) in enumerate(os.walk(Path(root) / SUBMISSIONS)):
        if visited > MAX_FOLDERS:
            raise ValueError(f"{root / SUBMISSIONS} holds more than {MAX_FOLDERS} folders")
        if RESULT_NAME in names:
            found.append(Path(top))
            folders.clear()
    return sorted(found)


def submission_key(folder: Path) -> str:
    """sha256 over the submission's files (names and contents; links are not files of it) and the verifier's version:
    a changed file or a new lookbench verifies it again."""
    files = [Path(top) / name for top, _, names in os.walk(folder) for name in names
             if (Path(top) / name).is_file() and not (Path(top) / name).is_symlink()]
    names = "\n".join(sorted(p.relative_to(folder).as_posix() for p in files))
    return hashlib.sha256(f"{__version__}\0{names}\0{hash_files(files)}".encode()).hexdigest()


class Verdicts:
    """The verdicts by submission key, kept in ``board_dir()/verdicts.json`` across restarts (a damaged file is
    started afresh: it is the board's own memo, and every verdict in it can be computed again)."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else board_dir() / "verdicts.json"
        self._lock = threading.Lock()
        try:
            raw = json.loads(read_regular(self.path, MAX_VERDICTS_BYTES))
            self.known = {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str)}
        except (ValueError, AttributeError):
            self.known = {}

    def verify(self, folder: Path) -> Verdict:
        """The verdict on the submission in ``folder``: the one kept for the same files, else ``verified_text``'s (kept
        unless it is "not checked": data that could not be loaded here is tried again at the next refresh)."""
        from lookbench.leaderboard.load import NOT_CHECKED, verified_text

        try:
            key = submission_key(folder)
        except OSError as err:
            return Verdict(str(folder), "", f"{NOT_CHECKED}: cannot read its files ({err.strerror})")
        with self._lock:
            kept = self.known.get(key)
        if kept is not None:
            return Verdict(str(folder), key, kept)
        try:
            verdict = Verdict(str(folder), key, verified_text(folder))
        except Exception as err:  # a failure inside a library: the board keeps serving, and tries again next time
            log.exception("verifying %s failed", folder)
            return Verdict(str(folder), key, f"{NOT_CHECKED}: the check failed ({type(err).__name__}: {err})")
        if verdict.status != NOT_CHECKED:
            with self._lock:
                self.known[key] = verdict.text
                self._save()
        return verdict

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(self.path) as tmp:
            tmp.write_text(json.dumps(self.known, indent=1))
