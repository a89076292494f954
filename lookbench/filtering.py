"""Contamination-aware filtering: keep only what was crawled after a model's training cutoff.

A cutoff is a date (queries time-stamped strictly after it) or a release name such as ``v20250101`` (queries of
the releases after it, by their ``release`` column).
"""
from __future__ import annotations

import datetime as dt

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


def _column(dataset, name: str):
    column = dataset.select_columns([name]).with_format("arrow")[:][name]
    if column.null_count:
        raise ValueError(f"{column.null_count} row(s) have no {name}; cannot filter by cutoff")
    return column


def after_mask(dataset, cutoff) -> np.ndarray:
    """Boolean mask of rows strictly after ``cutoff`` — time-stamped after a date, or of a release after a release
    name — read from Arrow without decoding images."""
    cutoff = parse_cutoff(cutoff)
    if isinstance(cutoff, str):
        column = _column(dataset, "release")
        later = [r for r in pc.unique(column).to_pylist() if release_date(r) > release_date(cutoff)]
        return pc.is_in(column, value_set=pa.array(later, pa.string())).to_numpy(zero_copy_only=False)
    column = _column(dataset, "timestamp")
    seconds = pc.cast(column, pa.timestamp("s", tz="UTC")).cast(pa.int64()).to_numpy()
    return seconds > int(cutoff.timestamp())


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
