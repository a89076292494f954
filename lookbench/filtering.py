"""Contamination-aware filtering: keep only what was crawled after a model's training cutoff.

A cutoff is a date (queries time-stamped strictly after it) or a release name such as ``v20250101`` (queries of
the releases after it, by their ``release`` column).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lookbench.errors import shown
from lookbench.schema import RELEASE_PATTERN, release_date


def to_utc(cutoff) -> dt.datetime:
    """Parse a date/datetime/ISO string (a cutoff, a raw release's timestamp); naive values are taken as UTC."""
    if isinstance(cutoff, str):
        try:
            cutoff = dt.datetime.fromisoformat(cutoff.strip().replace("Z", "+00:00"))
        except ValueError as err:
            raise ValueError(f"Cutoff {shown(cutoff)} is not an ISO 8601 date, e.g. 2025-06-01 or 2025-06-01T12:00:00+02:00, "
                             "nor a release name, e.g. v20250101") from err
    elif isinstance(cutoff, dt.date) and not isinstance(cutoff, dt.datetime):
        cutoff = dt.datetime(cutoff.year, cutoff.month, cutoff.day)
    elif not isinstance(cutoff, dt.datetime):
        raise TypeError(f"Cutoff must be a date, datetime or ISO string, got {type(cutoff).__name__}")
    if cutoff.tzinfo is None:
        return cutoff.replace(tzinfo=dt.timezone.utc)
    return cutoff.astimezone(dt.timezone.utc)


def parse_cutoff(cutoff) -> str | dt.datetime:
    """A cutoff as its release name (``v20250101``, checked) or as a UTC datetime (``ValueError``/``TypeError`` otherwise)."""
    if isinstance(cutoff, str) and RELEASE_PATTERN.match(cutoff.strip()):
        release_date(cutoff.strip())
        return cutoff.strip()
    return to_utc(cutoff)


@dataclass(frozen=True)
class Cutoff:
    """A cutoff parsed once, which every stage of a run receives: a release name (``release``) or a UTC instant
    (``date``); ``text`` is what the user gave (the file names and provenance keep it), ``utc`` its one spelling."""

    text: str
    release: str | None = None
    date: dt.datetime | None = None

    @classmethod
    def of(cls, value) -> "Cutoff":
        """``value`` parsed (``ValueError``/``TypeError`` as ``parse_cutoff``); a ``Cutoff`` is returned as it is."""
        if isinstance(value, Cutoff):
            return value
        parsed = parse_cutoff(value)
        return cls(str(value), parsed, None) if isinstance(parsed, str) else cls(str(value), None, parsed)

    @property
    def utc(self) -> str:
        return self.release or self.date.isoformat()

    def __str__(self) -> str:
        return self.text


def _synthetic(release: str) -> bool:
    return release.startswith("mini-")


def _check_family(cutoff: str, releases: list[str]) -> None:
    """A release cutoff names a release of the data's own kind: LookBench-Mini's ``mini-v…`` names are never read as a
    real snapshot's ``v…`` (nor the reverse), so a synthetic result never claims a cutoff at a real release."""
    other = sorted(r for r in releases if _synthetic(r) != _synthetic(cutoff))
    if other:
        kind = "LookBench-Mini (synthetic) releases mini-v<YYYYMMDD>" if _synthetic(other[0]) else "real releases v<YYYYMMDD>"
        like = ("mini-" + cutoff) if _synthetic(other[0]) else cutoff.removeprefix("mini-")
        raise ValueError(f"Cutoff {shown(cutoff)} names a release of another kind than this data's: its queries are of "
                         f"{kind} ({', '.join(other[:5])}{', ...' if len(other) > 5 else ''}); give a release of "
                         f"this data, e.g. {like}, or a date")


def _column(dataset, name: str):
    column = dataset.select_columns([name]).with_format("arrow")[:][name]
    if column.null_count:
        raise ValueError(f"{column.null_count} row(s) have no {name}; cannot filter by cutoff")
    return column


def after_mask(dataset, cutoff) -> np.ndarray:
    """Boolean mask of rows strictly after ``cutoff`` — time-stamped after a date, or of a release after a release
    name — read from Arrow without decoding images."""
    cutoff = Cutoff.of(cutoff)
    if cutoff.release is not None:
        column = _column(dataset, "release")
        releases = pc.unique(column).to_pylist()
        _check_family(cutoff.release, releases)
        later = [r for r in releases if release_date(r) > release_date(cutoff.release)]
        return pc.is_in(column, value_set=pa.array(later, pa.string())).to_numpy(zero_copy_only=False)
    column = _column(dataset, "timestamp")
    seconds = pc.cast(column, pa.timestamp("s", tz="UTC")).cast(pa.int64()).to_numpy()
    return seconds > int(cutoff.date.timestamp())


def filter_after(dataset, cutoff):
    """Contamination-aware data, as ``lookbench evaluate --cutoff`` uses it: of a subset's ``DatasetDict`` only
    the ``query`` split is filtered to rows strictly after ``cutoff`` (a date, or a release name: later releases); the gallery stays whole, since removing
    old gallery rows would remove the positives of recent queries (docs/architecture.md §1). A single
    ``Dataset`` is filtered as it is."""
    if hasattr(dataset, "keys") and not hasattr(dataset, "features"):
        if "query" not in dataset:
            raise ValueError(f"filter_after filters a subset's query split; this DatasetDict has none ({', '.join(dataset)})")
        return type(dataset)({split: filter_after(ds, cutoff) if split == "query" else ds for split, ds in dataset.items()})
    return dataset.select(np.flatnonzero(after_mask(dataset, cutoff)))
