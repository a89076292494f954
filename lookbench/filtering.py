"""Contamination-aware filtering: keep only what was crawled after a model's training cutoff."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def to_utc(cutoff) -> dt.datetime:
    """Parse a date/datetime/ISO string (a cutoff, a raw release's timestamp); naive values are taken as UTC."""
    if isinstance(cutoff, str):
        try:
            cutoff = dt.datetime.fromisoformat(cutoff.strip().replace("Z", "+00:00"))
        except ValueError as err:
            raise ValueError(f"Cutoff {cutoff!r} is not an ISO 8601 date, e.g. 2025-06-01 or 2025-06-01T12:00:00+02:00") from err
    elif isinstance(cutoff, dt.date) and not isinstance(cutoff, dt.datetime):
        cutoff = dt.datetime(cutoff.year, cutoff.month, cutoff.day)
    elif not isinstance(cutoff, dt.datetime):
        raise TypeError(f"Cutoff must be a date, datetime or ISO string, got {type(cutoff).__name__}")
    if cutoff.tzinfo is None:
        return cutoff.replace(tzinfo=dt.timezone.utc)
    return cutoff.astimezone(dt.timezone.utc)


def after_mask(dataset, cutoff) -> np.ndarray:
    """Boolean mask of rows time-stamped strictly after ``cutoff``, read from Arrow without decoding images."""
    column = dataset.select_columns(["timestamp"]).with_format("arrow")[:]["timestamp"]
    if column.null_count:
        raise ValueError(f"{column.null_count} row(s) have no timestamp; cannot filter by cutoff")
    seconds = pc.cast(column, pa.timestamp("s", tz="UTC")).cast(pa.int64()).to_numpy()
    return seconds > int(to_utc(cutoff).timestamp())


def filter_after(dataset, cutoff):
    """Contamination-aware data, as ``lookbench evaluate --cutoff`` uses it: of a subset's ``DatasetDict`` only
    the ``query`` split is filtered to rows strictly after ``cutoff``; the gallery stays whole, since removing
    old gallery rows would remove the positives of recent queries (docs/architecture.md §1). A single
    ``Dataset`` is filtered as it is."""
    if hasattr(dataset, "keys") and not hasattr(dataset, "features"):
        if "query" not in dataset:
            raise ValueError(f"filter_after filters a subset's query split; this DatasetDict has none ({', '.join(dataset)})")
        return type(dataset)({split: filter_after(ds, cutoff) if split == "query" else ds for split, ds in dataset.items()})
    return dataset.select(np.flatnonzero(after_mask(dataset, cutoff)))
