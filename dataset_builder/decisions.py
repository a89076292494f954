"""Review decisions of an annotated raw release, kept as ``<RAW>/reviews/<reviewer>/<NNNNNNNN>.json``: one event per
file, never rewritten (an undo is an event too).

One file per event, because that is what survives everything a review session meets: each event is written whole
under a temporary name and renamed into place (``lookbench.files.replacing``), so a killed writer leaves no torn file;
reviewers never share a file, so several at once lose nothing; two pages of one reviewer take turns on the reviewer's
``folder_lock``. docs/building-a-release.md ("The decision store") is the format's reference.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path

from lookbench.errors import shown
from lookbench.files import folder_lock, read_regular, replacing

REVIEWS = "reviews"  # <RAW>/reviews/: beside the subset folders, never read as one
PLAN = "plan.json"  # <RAW>/reviews/plan.json: who reviews which item (review.plan); no reviewer's folder
FORMAT = 1
LABEL, SKIP, UNDO = "label", "skip", "undo"
# An adjudicator's labels of a disputed item: the item's verdict (reviewed_labels), the reviewers' labels kept beside it.
ADJUDICATE = "adjudicate"
LABELS = (LABEL, ADJUDICATE)  # the actions that carry a category and attribute values
REVIEWER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
EVENT_FILE = re.compile(r"\d{8}\.json")
MAX_EVENT_BYTES = 1 << 20
MAX_PLAN_BYTES = 64 << 20


class ReviewError(ValueError):
    """A review that cannot go on: a bad reviewer name, a damaged decision file, a release without proposals."""


def check_reviewer(name) -> str:
    """``name`` if it can name a reviewer's folder: ASCII letters, digits, ``.``, ``_``, ``-``, at most 64, not
    starting with a dot or dash, and not the name of a file the store keeps beside the reviewers' folders."""
    if not isinstance(name, str) or not REVIEWER.fullmatch(name):
        raise ReviewError(f"reviewer name {shown(name)} is not 1-64 ASCII letters, digits, '.', '_' or '-' starting with "
                          "a letter or digit")
    if name.lower() == PLAN:
        raise ReviewError(f"reviewer name {name!r} is reserved (the review plan's file); choose another name")
    return name


def plan_data(raw) -> dict | None:
    """The JSON object of ``<RAW>/reviews/plan.json`` (None before the first review); its parts are read by
    ``review.plan`` (the sample) and ``gold`` (the gold items' settings)."""
    path = Path(raw) / REVIEWS / PLAN
    if not path.exists():
        return None
    try:
        data = json.loads(read_regular(path, MAX_PLAN_BYTES).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ReviewError(f"{path}: not a review plan ({err})") from None
    if not isinstance(data, dict):
        raise ReviewError(f"{path}: not a review plan (not a JSON object)")
    return data


@dataclass(frozen=True)
class Event:
    """One decision file: ``action`` ``label`` (``category`` and ``attributes``, each attribute a value or "not
    applicable"), ``adjudicate`` (the same fields: an adjudicator's labels settling a dispute), ``skip`` (come back
    later), or ``undo`` (``undoes``: the seq of the event taken back; only the author's own events)."""

    seq: int
    reviewer: str
    time: str
    item: str
    action: str
    category: str | None = None
    attributes: dict | None = None
    image_sha256: str | None = None
    undoes: int | None = None

    @property
    def labels(self) -> tuple:
        """What two reviewers must agree on: the category and every attribute's value."""
        return self.category, tuple(sorted((self.attributes or {}).items()))


class DecisionStore:
    """The decisions under ``<raw>/reviews/``: read them all, or add one event for a reviewer."""

    def __init__(self, raw):
        self.raw = Path(raw)
        self.folder = self.raw / REVIEWS
        # Parsed events by file and (size, mtime): event files are never rewritten, so a page's every step re-reads
        # only the folder listings and the files added since.
        self._parsed: dict[Path, tuple[tuple, Event]] = {}

    def check_folder(self, reviewer: str) -> None:
        """Refused in one line when something that is not a reviewer's folder has the reviewer's name (checked when a
        reviewer starts, so no decision of theirs fails half-way)."""
        path = self.folder / check_reviewer(reviewer)
        if path.is_symlink() or path.exists() and not path.is_dir():
            raise ReviewError(f"reviewer name {reviewer!r} is taken by {REVIEWS}/{reviewer}, which is not a reviewer's "
                              "folder; choose another name")

    def reviewers(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(p.name for p in self.folder.iterdir() if p.is_dir() and REVIEWER.fullmatch(p.name))

    def events(self, reviewer: str) -> list[Event]:
        """A reviewer's events in the order they were written; a damaged or foreign file is named in one line."""
        folder = self.folder / check_reviewer(reviewer)
        if not folder.is_dir():
            return []
        events = []
        for path in sorted(folder.iterdir()):
            if path.name.startswith("."):
                continue  # a temporary file a killed writer left, removed by the reviewer's next write
            if not EVENT_FILE.fullmatch(path.name):
                raise ReviewError(f"{path}: not a decision file (<8 digits>.json); move it out of {folder}")
            stamp = path.stat()
            seen = self._parsed.get(path)
            if seen is None or seen[0] != (stamp.st_size, stamp.st_mtime_ns):
                seen = self._parsed[path] = ((stamp.st_size, stamp.st_mtime_ns), _parse(path, reviewer))
            events.append(seen[1])
        return events

    def all_events(self) -> dict[str, list[Event]]:
        return {name: self.events(name) for name in self.reviewers()}

    def add(self, reviewer: str, action: str, item: str | None = None, *, now: dt.datetime | None = None, **fields) -> Event:
        """Write one event as the reviewer's next file, whole or not at all; an undo takes back the reviewer's latest
        label, adjudication or skip still in force (``ReviewError`` when there is none)."""
        check_reviewer(reviewer)
        folder = self.folder / reviewer
        self.check_folder(reviewer)
        folder.mkdir(parents=True, exist_ok=True)
        with folder_lock(folder, wait=True):
            for left in folder.glob(".*.json.tmp-*"):
                left.unlink(missing_ok=True)  # a killed writer's; no live writer holds the lock now
            events = self.events(reviewer)
            if action == UNDO:
                done = in_force(events)
                if not done:
                    raise ReviewError(f"{reviewer} has nothing to undo")
                fields, item = {"undoes": done[-1].seq}, done[-1].item
            seq = events[-1].seq + 1 if events else 1
            stamp = (now or dt.datetime.now(dt.timezone.utc)).isoformat(timespec="seconds")
            event = Event(seq, reviewer, stamp, item, action, **fields)
            body = {"format": FORMAT, **{k: v for k, v in vars(event).items() if v is not None}}
            with replacing(folder / f"{seq:08d}.json") as tmp:
                tmp.write_text(json.dumps(body, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        return event


def in_force(events: list[Event]) -> list[Event]:
    """The labels, adjudications and skips an undo has not taken back, oldest first."""
    done: list[Event] = []
    for event in events:
        if event.action == UNDO:
            done = [e for e in done if e.seq != event.undoes]
        else:
            done.append(event)
    return done


def current(events: list[Event]) -> dict[str, Event]:
    """Each item's latest label or adjudication in force, else its latest skip: what the reviewer decided about it.
    A skip never takes back a label (it only puts the item later in the reviewer's queue): a reviewer who skips an
    item shown to them as disputed keeps their label, so no third reviewer is pulled in to make a new dispute."""
    found: dict[str, Event] = {}
    for event in in_force(events):
        if event.action != SKIP or found.get(event.item, event).action == SKIP:
            found[event.item] = event
    return found


def _parse(path: Path, reviewer: str) -> Event:
    try:
        data = json.loads(read_regular(path, MAX_EVENT_BYTES).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ReviewError(f"{path}: not a decision file ({err})") from None
    problem = _problem(data, path, reviewer)
    if problem:
        raise ReviewError(f"{path}: {problem}")
    return Event(**{k: data.get(k) for k in Event.__dataclass_fields__})


def _problem(data, path: Path, reviewer: str) -> str | None:
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("format") != FORMAT:
        return f"format {data.get('format')!r}, this version reads {FORMAT}"
    if data.get("reviewer") != reviewer or data.get("seq") != int(path.stem):
        return "its reviewer or seq disagrees with its place"
    if data.get("action") not in (LABEL, ADJUDICATE, SKIP, UNDO) or not isinstance(data.get("item"), str):
        return "no action label/adjudicate/skip/undo for an item"
    if data["action"] in LABELS and not (isinstance(data.get("category"), str) and isinstance(data.get("attributes"), dict)
                                        and all(isinstance(v, str) for v in data["attributes"].values())):
        return "a label without a category and attribute values"
    if data["action"] == UNDO and not isinstance(data.get("undoes"), int):
        return "an undo that names no event"
    return None
