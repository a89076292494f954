"""The results store: every finished evaluation as one JSON file at a path that says what was measured.

``<results>/<model>/<revision or fingerprint>/<data release>-<data revision>/<mode>[-after-<cutoff>][-qualifiers].json``
(docs/architecture.md §5). One ``Settings`` object gives the file name, the ``Identity`` and the provenance. Each segment is made safe, so a model called ``owner/name`` or ``../x`` never makes
extra folders or leaves the store. An evaluation whose ``Identity`` equals a stored one's is not recomputed.
Files are written to a temporary sibling and moved into place, so a failed write never damages a stored result,
under the result's ``folder_lock``, so two runs writing one result take turns.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from lookbench.files import (
    folder_lock,
    new_sibling,
    read_regular,
    regular_file,
    remove_stale_siblings,
    replace_folder,
    replacing,
)
from lookbench.results.rankings import predictions_folder
from lookbench.settings import DEFAULT_DISTRACTORS, DEFAULT_INDEX, DEFAULT_MODE, DEFAULT_PRECISION, DEFAULT_QUERIES

# A store file is read only when it is a regular file of at most this size, nested at most this deep.
MAX_RESULT_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 32


def safe_segment(text) -> str:
    """One path segment: separators and anything unusual become ``_``; never empty, ``.`` or ``..``."""
    segment = re.sub(r"[^A-Za-z0-9._+-]+", "_", str(text)).strip("_") or "_"
    return re.sub(r"^\.", "_", segment)


# The layout of a result's JSON. A stored file of another format is recomputed and replaced, never misread; within
# one format every key below is promised, so a missing one is a bug and fails loudly (find_identical).
RESULT_FORMAT = 3  # 3: attribute_errors and per_query.attributes_at_1 (lookbench.results.attributes)


@dataclass(frozen=True)
class Settings:
    """An evaluation's settings, declared once: the store identity, the result's file name and its provenance are
    derived from them. ``subsets`` are the evaluated ones, sorted; ``chosen_subsets``: the user named them (then
    they are part of the file name). ``cutoff`` (a ``lookbench.filtering.Cutoff`` or its text) is kept as given, and
    compared in UTC. ``queries``: what a query is,
    ``image`` or ``text-<form>`` (its words, ``--queries text --text-form``)."""

    mode: str = DEFAULT_MODE
    distractors: bool = DEFAULT_DISTRACTORS
    cutoff: str | None = field(default=None, compare=False)
    subsets: tuple[str, ...] = ()
    chosen_subsets: bool = False
    index: str = DEFAULT_INDEX
    precision: str = DEFAULT_PRECISION
    queries: str = DEFAULT_QUERIES
    cutoff_utc: str | None = field(init=False)

    def __post_init__(self):
        from lookbench.filtering import Cutoff

        cutoff = None if self.cutoff is None else Cutoff.of(self.cutoff)  # a run's Cutoff is not parsed again
        object.__setattr__(self, "cutoff", None if cutoff is None else str(cutoff))
        object.__setattr__(self, "subsets", tuple(sorted(self.subsets)))
        object.__setattr__(self, "cutoff_utc", None if cutoff is None else cutoff.utc)

    def provenance(self) -> dict:
        """The provenance keys of these settings (``of`` reads them back)."""
        return {"mode": self.mode, "cutoff": self.cutoff, "distractors": self.distractors, "subsets": list(self.subsets),
                "chosen_subsets": self.chosen_subsets, "index": self.index, "precision": self.precision,
                "queries": self.queries}

    @classmethod
    def of(cls, provenance: dict) -> "Settings":
        """The settings recorded in a result's provenance (KeyError when one is missing; a result without
        ``queries`` was written before text queries existed, so its queries were images)."""
        return cls(provenance["mode"], bool(provenance["distractors"]), provenance["cutoff"], tuple(provenance["subsets"]),
                   bool(provenance["chosen_subsets"]), provenance["index"], provenance["precision"],
                   provenance.get("queries", DEFAULT_QUERIES))

    def stem(self) -> str:
        """The result's file name without ``.json``: the mode, then a qualifier for every setting off its default, so
        different evaluations never share a file."""
        stem = self.mode + ("" if self.queries == DEFAULT_QUERIES else f"-{self.queries}")
        stem += f"-after-{self.cutoff}" if self.cutoff is not None else ""
        stem += "" if self.distractors == DEFAULT_DISTRACTORS else "-no-distractors"
        stem += "" if self.index == DEFAULT_INDEX else f"-{self.index}"
        stem += "" if self.precision == DEFAULT_PRECISION else f"-{self.precision}"
        stem += "" if not self.chosen_subsets else "-" + "+".join(self.subsets)
        return safe_segment(stem)


@dataclass(frozen=True)
class Identity:
    """What decides an evaluation's scores; two evaluations with equal identities give the same result.

    ``model`` (the fingerprint) or ``data`` (the content revision) is ``None`` when it is unknown, and an
    unknown identity is never taken as equal to anything.
    """

    model: str | None
    data: str | None
    settings: Settings

    @property
    def known(self) -> bool:
        return self.model is not None and self.data is not None

    @classmethod
    def of(cls, provenance: dict) -> "Identity":
        """The identity recorded in a result's provenance (KeyError on a missing key)."""
        return cls(provenance["model"]["fingerprint"], provenance["dataset"]["revision"], Settings.of(provenance))


def normalise_cutoff(cutoff) -> str | None:
    """The one spelling of a cutoff: a release name as it is, a date as UTC ISO 8601."""
    from lookbench.filtering import Cutoff

    return None if cutoff is None else Cutoff.of(cutoff).utc


def result_path(root, *, model: str, revision: str | None, fingerprint: str | None, releases, data_revision,
                settings: Settings) -> Path:
    """Where a result goes: model, its revision (or fingerprint), the data, then ``settings.stem()``."""
    version = revision or (fingerprint.rsplit(":", 1)[-1][:16] if fingerprint else "unversioned")
    # The content revision is part of the data segment: two builds of one release (e.g. LookBench-Mini at two
    # scales, both v20251201) are different data.
    data = "+".join(releases) or "no-release"
    data += f"-{str(data_revision)[:22]}" if data_revision else "-unknown-revision"
    return Path(root) / safe_segment(model) / safe_segment(version) / safe_segment(data) / f"{settings.stem()}.json"


def find_identical(path: Path, identity: Identity, *, need_predictions=()) -> dict | None:
    """The stored result at ``path`` if it was measured with ``identity`` (and has the requested saved rankings)."""
    if not identity.known or not path.is_file():
        return None
    try:
        stored = read_json(path)
    except ValueError:
        return None  # unreadable: recompute and replace it
    provenance = stored.get("provenance") if isinstance(stored, dict) else None
    if not isinstance(provenance, dict) or provenance.get("result_format") != RESULT_FORMAT:
        return None  # foreign, or written in an older layout: recompute and replace it
    if Identity.of(provenance) != identity:  # a KeyError here is a key this format promises and lacks: a bug
        return None
    from lookbench.results.outcomes import verdict

    if verdict(stored, str(path)) is not None:
        return None  # its outcomes do not give its scores (damaged or edited): recompute and replace it
    folder = predictions_folder(path)
    saved = stored["provenance"].get("saved_predictions") or ()
    if any(name not in saved or not (folder / f"{name}.parquet").is_file() for name in need_predictions):
        return None
    return stored


def read_json(path, shown=None):
    """A JSON file from a store (or given by a user): a regular file of at most ``MAX_RESULT_BYTES``, read without
    blocking, nested at most ``MAX_DEPTH`` deep. Anything else is a ``ValueError`` saying what is wrong."""
    return parse_json(read_regular(regular_file(path, shown), MAX_RESULT_BYTES, shown))


def parse_json(data: bytes):
    """JSON bytes read from outside, nested at most ``MAX_DEPTH`` deep, or a ``ValueError`` saying what is wrong."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError(f"not valid JSON: nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise ValueError("not valid JSON: not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"not a LookBench result: nested deeper than {MAX_DEPTH} levels")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return value


def write_result(path: Path, text: str, write_rankings=None) -> Path:
    """A result's JSON ``text`` at ``path`` and its saved rankings (``write_rankings(folder)`` fills a new folder)
    beside it, each written whole and then put in place. ``path``'s lock is held throughout (a second writer of the
    result waits), so a JSON never stands beside another run's rankings; rankings an earlier result left are removed,
    and so is what a killed run left of both."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = predictions_folder(path)
    with folder_lock(path, wait=True):
        remove_stale_siblings(folder)  # the JSON's own were removed by folder_lock
        if write_rankings is None:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            staged = new_sibling(folder, "writing", folder=True)
            try:
                write_rankings(staged)
                replace_folder(staged, folder)
            finally:
                shutil.rmtree(staged, ignore_errors=True)
        return write_atomic(path, text)


def remove_result(path: Path) -> None:
    """A result JSON and its saved rankings removed, under the result's lock (a writer of it is waited for); nothing
    is done when neither is there."""
    path = Path(path)
    if not (path.exists() or predictions_folder(path).exists()):
        return
    with folder_lock(path, wait=True):
        shutil.rmtree(predictions_folder(path), ignore_errors=True)
        path.unlink(missing_ok=True)


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary sibling and ``os.replace`` (the umask decides the mode)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    return path
