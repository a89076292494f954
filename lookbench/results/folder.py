"""A result on disk and everything around it: where its JSON is (``locate``), the files that belong to it, each read
once under its bound and hashed into the one key (``read_submission``, ``snapshot``), and its rankings, read through
the one loop (``ResultFolder.rankings``) by the one reader (``lookbench.results.rankings``).

A submission (docs/submitting.md) is one folder holding exactly one result JSON and each subset's ranking beside it
(``results.json`` and ``results.predictions/<subset>.parquet``, as ``evaluate --output`` and the store keep them).
Folders are walked without following links, at most ``MAX_FOLDERS`` of them; a file is read only inside its folder,
regular and within its kind's limit; every byte is hashed before it is parsed, so nothing shown of a submission is
read from bytes its key does not name.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from lookbench._version import __version__
from lookbench.errors import clip, shorten
from lookbench.files import contained_file, digest, read_regular
from lookbench.results.rankings import (
    MAX_RANKING_BYTES,
    MAX_RANKING_ROWS,
    Ranking,
    is_predictions_folder,
    parse_ranking,
    predictions_folder,
    ranking_file,
    read,
)
from lookbench.results.provenance import Provenance, result_parts
from lookbench.results.result import mode_file
from lookbench.results.store import MAX_RESULT_BYTES, Settings, parse_json
from lookbench.settings import MODES

RESULT_NAME = "results.json"
MAX_FOLDERS = 10_000  # folders walked below a folder given (a submission's, a results repo's, the demo's)
MAX_FILES = 64  # files in one submission folder (a result, four rankings, a card)
MAX_OTHER_BYTES = 1024 * 1024  # any other file of a submission but a ranking (its README)
# The other modes' results of one ``evaluate --output`` run (``lookbench.results.result.mode_file``).
_OTHER_MODES = frozenset(mode_file(mode) for mode in MODES)
# What a killed write leaves beside its target (lookbench.files.new_sibling): never part of a submission.
_STALE = re.compile(r"\..+\.[a-z]+-[0-9a-f]+(\.previous)?")


class TooManyFolders(ValueError):
    """A walk met more folders than its bound."""


def walk(path: Path, limit: int = MAX_FOLDERS, hint: str = "", skip=lambda folder: False):
    """The one walk below a folder given: ``os.walk`` below ``path``, sorted, links to folders not entered, the stale
    work of killed writes and the folders ``skip`` names left out; ``TooManyFolders`` ("<path> holds more than <limit>
    folders<hint>") before a folder past ``limit`` is entered."""
    for visited, (root, folders, names) in enumerate(os.walk(path)):
        if visited >= limit:
            raise TooManyFolders(f"{path} holds more than {limit} folders{hint}")
        folders[:] = sorted(f for f in folders if not _STALE.fullmatch(f) and not skip(f))
        yield Path(root), folders, sorted(n for n in names if not _STALE.fullmatch(n))


def results_below(given: Path, limit: int = MAX_FOLDERS) -> tuple[list[str], bool]:
    """The results with rankings beside them below the folder ``given`` (paths relative to it; a folder's
    ``results.json`` first), and whether the walk stopped at ``limit`` folders before the end."""
    found = []
    try:
        for top, _, names in walk(given, limit, skip=is_predictions_folder):
            found += [str((top / n).relative_to(given)) for n in sorted(names, key=lambda n: (n != RESULT_NAME, n))
                      if n.endswith(".json") and ResultFolder(top, n).has_rankings()]
    except TooManyFolders:  # the first ``limit`` folders' results
        return found, True
    return found, False


def locate(path) -> tuple[Path, str]:
    """(folder, file name) of the result JSON: ``path`` itself, its ``results.json``, or the one ``results.json`` below
    it (the output of ``submit --dry-run``, laid out as the results repo). Symlinked folders are not entered; a JSON
    above the submission is refused (it would be a second result)."""
    path = Path(path)
    if not path.is_dir():
        return path.parent, path.name
    if os.path.lexists(path / RESULT_NAME):
        return path, RESULT_NAME
    found, strays = [], []
    for root, folders, names in walk(path, hint="; name the submission folder itself"):
        if RESULT_NAME in names:
            found.append(root)
            folders.clear()
        else:
            strays += [root / n for n in names if n.endswith(".json")]
    if len(found) != 1:
        listed = ": " + ", ".join(sorted(clip(f.relative_to(path), 60) for f in found)[:5]) if found else ""
        raise ValueError(f"{path} holds {len(found) or 'no'} submission(s) ({RESULT_NAME}){listed}; "
                         "name one submission folder")
    stray = [s for s in strays if found[0].is_relative_to(s.parent)]
    if stray:
        raise ValueError(f"{shorten(str(stray[0].relative_to(path)))} lies above the submission "
                         f"{shorten(str(found[0].relative_to(path)))}: a submission is one result, nothing else is")
    return found[0], RESULT_NAME


def submission_files(folder: Path, name: str = RESULT_NAME) -> list[str]:
    """Every file of the submission in ``folder`` (relative, sorted). A second JSON, a link or anything but a regular
    file is refused by name: a submission holds exactly one result, and nothing in it is left unhashed. Beside a
    ``results.json``, the other modes' results ``evaluate --output`` writes with it (``results-<mode>.json``) are
    hashed like any file and never read as the result (nor shown: ``load_store`` skips a JSON beside a submission)."""
    files = []
    for root, folders, names in walk(folder, hint="; name the submission folder itself"):
        for entry in [*folders, *names]:
            full = root / entry
            relative = full.relative_to(folder).as_posix()
            if full.is_symlink():
                raise ValueError(f"{shorten(relative)} is a link; a submission holds its own files only")
            if entry in names:
                if not full.is_file():
                    raise ValueError(f"{shorten(relative)} is not a regular file")
                if relative.endswith(".json") and relative != name and not (name == RESULT_NAME and relative in _OTHER_MODES):
                    raise ValueError(f"{shorten(relative)} is a second JSON beside {name}: a submission holds exactly "
                                     "one result")
                files.append(relative)
                if len(files) > MAX_FILES:
                    raise ValueError(f"the submission holds more than {MAX_FILES} files")
    if name not in files:
        raise ValueError(f"{shorten(name)} is not a regular file of the submission")
    return sorted(files)


def _key(hashes: dict[str, str]) -> str:
    """The submission's key: the one digest of every file's name and sha256, salted with the verifier's version (a
    new lookbench judges again)."""
    return digest(sorted(hashes.items()), salt=f"lookbench {__version__}\n")


def files_digest(files: dict[str, bytes]) -> str:
    """The id of files about to be sent (a pull request's: path in the repo -> bytes): the one digest, unsalted."""
    return digest(sorted((name, hashlib.sha256(content).hexdigest()) for name, content in files.items()))


def _read(folder: Path, relative: str, name: str, hashes: dict) -> bytes:
    """One file of the submission, read once within its kind's limit (the result, a ranking, anything else) and its
    sha256 recorded in ``hashes``: verify and ``snapshot`` hash alike, so their keys agree."""
    limit = (MAX_RESULT_BYTES if relative == name else
             MAX_RANKING_BYTES if relative.endswith(".parquet") else MAX_OTHER_BYTES)
    content = read_regular(folder / relative, limit, relative)
    hashes[relative] = hashlib.sha256(content).hexdigest()
    return content


def read_submission(folder, name: str = RESULT_NAME, keep=lambda relative: False) -> tuple[str, bytes, dict]:
    """(key, result bytes, {relative: bytes} of the files ``keep`` names) of the submission in ``folder`` as its files
    are now: every byte hashed (no size or time shortcut), and every byte returned exactly as hashed."""
    folder = Path(folder)
    hashes, result, kept = {}, b"", {}
    for relative in submission_files(folder, name):
        content = _read(folder, relative, name, hashes)
        result = content if relative == name else result
        if keep(relative):
            kept[relative] = content
    return _key(hashes), result, kept


def snapshot(folder, name: str = RESULT_NAME) -> tuple[str, bytes]:
    """(key, result bytes) of the submission in ``folder``, so what a board shows is what its key names."""
    key, result, _ = read_submission(folder, name)
    return key, result


def deepest_k(blocks: dict) -> int:
    """The deepest K any claimed score of the result names (20, the default's, when none does)."""
    from lookbench.metric.fine_recall.judging import DEFAULT_K

    ks = [int(at[1:]) for block in blocks.values() for scores in block.values() if isinstance(scores, dict)
          for at in scores if isinstance(at, str) and re.fullmatch(r"@\d{1,6}", at)]
    return max(ks, default=max(DEFAULT_K))


def ranking_rows(blocks: dict, subset: str) -> int:
    """The most rows a subset's ranking may hold: its claimed queries times the deepest K the result reports."""
    count = blocks[subset].get("num_queries")
    claimed = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0
    return min(MAX_RANKING_ROWS, claimed * deepest_k(blocks))


@dataclass(frozen=True)
class ResultFolder:
    """A result on disk: the ``folder`` holding its JSON (``name``) and its rankings beside it. Everybody who reads a
    result's rankings asks it where they are and reads them through ``rankings``."""

    folder: Path
    name: str = RESULT_NAME

    @classmethod
    def of(cls, path) -> "ResultFolder":
        """The result whose JSON is at ``path``."""
        path = Path(path)
        return cls(path.parent, path.name)

    @classmethod
    def locate(cls, path) -> "ResultFolder":
        """The submission at ``path`` (``locate``)."""
        return cls(*locate(path))

    @property
    def path(self) -> Path:
        return self.folder / self.name

    def ranking(self, subset: str) -> str:
        """A subset's ranking, relative to the folder."""
        return ranking_file(self.name, subset)

    def is_ranking(self, relative: str) -> bool:
        """Whether ``relative`` (a path inside the folder) lies among the result's rankings."""
        return PurePosixPath(relative).parent.as_posix() == predictions_folder(Path(self.name)).name

    def has_rankings(self) -> bool:
        """Whether a rankings folder lies beside the JSON."""
        return predictions_folder(self.path).is_dir()

    def ranking_files(self) -> list[str]:
        """Every file name in the rankings folder, relative to the folder (none when there is none)."""
        rankings = predictions_folder(self.path)
        return [f"{rankings.name}/{name}" for name in sorted(os.listdir(rankings))] if rankings.is_dir() else []

    def rankings(self, subsets, blocks: dict | None = None, *, saved: bool = False, content=None, shown=str):
        """The one loop over a result's rankings: per subset (subset, relative path, bytes, parsed), each file read
        once — by ``content(relative)`` (a submission's hashed read), else inside the folder, regular, within
        ``MAX_RANKING_BYTES`` — and parsed by the one reader, bounded by ``blocks``' queries times its deepest K
        (``ranking_rows``; without ``blocks``, ``MAX_RANKING_ROWS``). ``saved``: every column as a pyarrow Table (the
        engine's saved rankings), else the ranked ids (``Ranking``); ``shown(relative)`` names a file in messages."""
        for subset in subsets:
            relative = self.ranking(subset)
            data = content(relative) if content is not None else read_regular(
                contained_file(self.folder, relative), MAX_RANKING_BYTES, shown(relative))
            rows = MAX_RANKING_ROWS if blocks is None else ranking_rows(blocks, subset)
            parsed = read(data, shown(relative), rows, saved=True) if saved else parse_ranking(data, shown(relative), rows)
            yield subset, relative, data, parsed

    def saved_rankings(self, result: dict) -> dict:
        """Every saved ranking the stored ``result`` lists (subset -> ``datasets.Dataset``), each read and checked; a
        ``ValueError`` naming the file when one is missing or damaged, so it is never reused."""
        import datasets

        from lookbench.schema import SUBSETS

        listed = Provenance.of(result).saved()
        if not isinstance(listed, list) or not all(isinstance(name, str) and name in SUBSETS for name in listed):
            raise ValueError(f"{self.path}: saved_predictions {str(listed)[:100]} is not a list of subsets")
        return {subset: datasets.Dataset(table) for subset, _, _, table in
                self.rankings(listed, saved=True, shown=lambda relative: str(self.folder / relative))}


@dataclass
class Submitted:
    """A submission as hashed: its folder and result name, its ``key``, the result and its parts (``result_parts``)
    and each subset's ranking, all parsed from the bytes the key names."""

    folder: Path
    name: str
    key: str
    result: dict
    provenance: Provenance
    blocks: dict
    settings: Settings
    rankings: dict[str, Ranking]

    def ranking(self, subset: str) -> str:
        """A subset's ranking, relative to the folder (as messages name it)."""
        return ranking_file(self.name, subset)


def read_submitted(path) -> Submitted:
    """The submission at ``path`` (a submission folder, a folder holding one, or a stored result with rankings):
    every file read once and hashed into its key, the result and every ranking parsed from those same bytes, each
    checked before any data is loaded. Bad input is a ``ValueError`` naming the file relative to the submission."""
    place = ResultFolder.locate(path)
    folder, name = place.folder, place.name
    files = submission_files(folder, name)
    hashes = {}
    raw = _read(folder, name, name, hashes)
    try:
        result = parse_json(raw)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    provenance, blocks, settings = result_parts(result, name)
    saved = provenance.saved_predictions
    for subset in blocks:
        relative = place.ranking(subset)
        if not isinstance(saved, list) or subset not in saved or relative not in files:
            raise ValueError(f"{name} has no saved ranking of {subset} ({relative}); a result is verified from its "
                             "rankings")
    rankings = {subset: ranking for subset, _, _, ranking in
                place.rankings(blocks, blocks, content=lambda relative: _read(folder, relative, name, hashes))}
    for relative in files:  # the rest of the submission (its card): hashed, never parsed
        if relative not in hashes:
            _read(folder, relative, name, hashes)
    return Submitted(folder, name, _key(hashes), result, provenance, blocks, settings, rankings)
