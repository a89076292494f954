"""The results repo as the leaderboard Space reads it (docs/architecture.md §5): a copy of the Hub dataset
(``snapshot_download``; a folder given instead for tests and offline use) and the verdicts on its submissions, kept
by the sha256 key of each submission's files (``lookbench.results.folder.snapshot``), so a refresh judges again
only what changed, and changed bytes never inherit a verdict.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from lookbench.errors import one_line
from lookbench.files import read_regular, replacing
from lookbench.hub import transport_errors
from lookbench.leaderboard.load import MAX_VERDICT_BYTES, Verdict
from lookbench.paths import board_dir
from lookbench.results.folder import MAX_FOLDERS, RESULT_NAME, walk
from lookbench.results.trust import NOT_CHECKED
from lookbench.space.board.judging import ENDED, OVER_BUDGET, UNKNOWN_DATA
from lookbench.submissions import DEFAULT_REPO

REPO_VARIABLE = "LOOKBENCH_RESULTS_REPO"  # the results repo's Hub id (default lookbench/results)
FOLDER_VARIABLE = "LOOKBENCH_RESULTS_FOLDER"  # a local copy of it, read instead of downloading
SUBMISSIONS = "submissions"  # the repo's folder of submissions (lookbench.submissions.submit.ROOT)
MAX_KEPT = MAX_FOLDERS  # verdicts kept: one per submission a copy can hold
# verdicts.json holds at most MAX_KEPT entries of one key (64 hex digits) and one verdict (at most MAX_VERDICT_BYTES).
MAX_VERDICTS_BYTES = MAX_KEPT * (MAX_VERDICT_BYTES + 80) + 2
KEPT_NOT_CHECKED = (OVER_BUDGET, UNKNOWN_DATA, ENDED)  # not-checked verdicts the same files would meet again
log = logging.getLogger("lookbench.space.board")


@dataclass(frozen=True)
class Copy:
    """The copy of the results repo the board shows: its folder (``None``: none could be had, ``problem`` says why)
    and what it is, in words."""

    folder: Path | None
    source: str
    problem: str | None = None


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
        return Copy(None, repo_id, f"the results repo {repo_id} cannot be read: {one_line(err, 300)}")
    return Copy(Path(path), f"the dataset repo {repo_id}")


def submission_folders(root: Path) -> list[Path]:
    """Every folder below ``root/submissions`` holding a ``results.json``, sorted (the one walk: links to folders are
    not followed, at most ``MAX_FOLDERS``)."""
    found = []
    for top, folders, names in walk(Path(root) / SUBMISSIONS):
        if RESULT_NAME in names:
            found.append(top)
            folders.clear()
    return sorted(found)


def submitter(folder: Path, root: Path | None) -> str:
    """The namespace a submission's folder is in (``submissions/<owner>/…``, the pull request's path; ``_unbound`` in
    ``lookbench.leaderboard.load`` binds its result to it): whose cap of sealed submissions it counts against."""
    parts = Path(folder).relative_to(root).parts if root is not None and Path(folder).is_relative_to(root) else ()
    parts = parts[1:] if parts[:1] == (SUBMISSIONS,) else parts
    return parts[0] if parts else ""


class Verdicts:
    """The verdicts by submission key (``lookbench.results.folder.snapshot``: the sha256 of its files, never a
    path, size or time), kept in ``board_dir()/verdicts.json`` across restarts as ``Verdict.to_json()`` each.

    At most ``MAX_KEPT`` are kept (``retain`` drops the keys a copy no longer holds, the oldest go first beyond that),
    so the file is read with a limit it can never outgrow; a damaged entry is dropped alone (the file is the board's
    own memo, and every verdict in it can be computed again)."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else board_dir() / "verdicts.json"
        self._lock = threading.Lock()
        self.known: dict[str, Verdict] = {}
        try:
            raw = json.loads(read_regular(self.path, MAX_VERDICTS_BYTES))
        except ValueError:  # missing, unreadable, too large or no JSON
            raw = {}
        for key, kept in (raw.items() if isinstance(raw, dict) else ()):
            try:
                verdict = Verdict.from_json(kept)
            except ValueError:
                continue
            if verdict.key == key and len(self.known) < MAX_KEPT:
                self.known[key] = verdict

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            return self.known.get(key)

    def all(self) -> list[Verdict]:
        with self._lock:
            return list(self.known.values())

    def keep(self, verdict: Verdict) -> bool:
        """Keep ``verdict`` under its key unless it may change for the same files (data that could not be loaded
        now is tried again at the next refresh); whether it was kept."""
        if not verdict.key or verdict.status == NOT_CHECKED and not verdict.text.startswith(KEPT_NOT_CHECKED):
            return False
        with self._lock:
            self.known.pop(verdict.key, None)
            self.known[verdict.key] = Verdict.from_json(verdict.to_json())  # what a restart reads back
            while len(self.known) > MAX_KEPT:
                del self.known[next(iter(self.known))]
            self._save()
        return True

    def retain(self, keys) -> None:
        """Drop the verdicts of keys not in ``keys`` (the submissions of the current copy), except those scored while
        sealed: they count against their submitter's cap until the release is unsealed, gone or not."""
        keys = set(keys)
        with self._lock:
            gone = [k for k, v in self.known.items() if k not in keys and not v.scored_while_sealed]
            for key in gone:
                del self.known[key]
            if gone:
                self._save()

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(self.path) as tmp:
            tmp.write_text(json.dumps({key: v.to_json() for key, v in self.known.items()}))
