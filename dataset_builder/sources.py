"""Readers that turn a release on disk into LookBench rows (docs/architecture.md §3), one row at a time.

Every reader streams rows in a fixed order, so the builder can validate in one pass and generate in a
second pass that picks the same rows by index. A row is a dict with the schema's fields; images are
``{"bytes": ..., "path": ...}`` and a missing field is ``None`` (validation reports it, nothing guesses).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq

from lookbench.filtering import to_utc
from lookbench.schema import SUBSETS

TRAIN = "train"
RELEASE_PATTERN = re.compile(r"^v(\d{8})$")


class SourceError(ValueError):
    """A release folder that cannot be read at all (as opposed to individual bad rows)."""


def _split_pair(text: str) -> tuple[str, str]:
    match = re.match(r"^\s*([^:=]+?)\s*[:=]\s*(.*?)\s*$", text)
    if not match:
        raise ValueError(f"attribute {text!r} is not of the form 'name: value'")
    return match.group(1), match.group(2)


def parse_attributes(value) -> list[dict]:
    """Accept a mapping, a list of {name, value} / [name, value] / "name: value", or such a string."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        if text[0] in "[{":
            return parse_attributes(json.loads(text))
        return parse_attributes([part for part in re.split(r"[;,|\n]", text) if part.strip()])
    if isinstance(value, dict):
        items = [(value["name"], value["value"])] if set(value) == {"name", "value"} else list(value.items())
    else:
        items = []
        for entry in value:
            if isinstance(entry, dict):
                items.append((entry["name"], entry["value"]))
            elif isinstance(entry, str):
                items.append(_split_pair(entry))
            else:
                name, val = entry
                items.append((name, val))
    pairs = {(str(n).strip(), str(v).strip()) for n, v in items}
    return [{"name": n, "value": v} for n, v in sorted(pairs)]


def release_date(name: str) -> dt.datetime:
    """The snapshot date a release folder such as ``v20251201`` stands for, midnight UTC."""
    match = RELEASE_PATTERN.match(name)
    if not match:
        raise SourceError(f"Release folder {name!r} is not named v<YYYYMMDD>")
    return dt.datetime.strptime(match.group(1), "%Y%m%d").replace(tzinfo=dt.timezone.utc)


class RawSource:
    """A raw release folder (docs/architecture.md §4): ``<root>/<Subset>/{query,gallery}.jsonl`` + image files."""

    def __init__(self, root, release: str | None = None):
        self.root = Path(root)
        if not self.root.is_dir():
            raise SourceError(f"Raw release folder {self.root} does not exist")
        self.release = release or (self.root.name if RELEASE_PATTERN.match(self.root.name) else None)

    def path(self, config: str, split: str) -> Path:
        return self.root / config / f"{split}.jsonl"

    def has(self, config: str, split: str) -> bool:
        return self.path(config, split).is_file()

    def iter_rows(self, config: str, split: str) -> Iterator[dict]:
        path = self.path(config, split)
        if not path.is_file():
            raise SourceError(f"{path} is missing: a raw release needs {config}/{split}.jsonl")
        folder = path.parent
        with path.open(encoding="utf-8") as lines:
            for line_no, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    yield {"_error": f"line {line_no} of {path.name} is not valid JSON ({err.msg})"}
                    continue
                yield self._row(record, folder, config)

    def _row(self, record: dict, folder: Path, config: str) -> dict:
        row = {"_errors": []}
        for key in ("item_id", "category", "main_attribute", "outfit_id"):
            value = record.get(key)
            row[key] = None if value is None else str(value)
        try:
            row["attributes"] = None if "attributes" not in record else parse_attributes(record["attributes"])
        except (ValueError, KeyError, TypeError) as err:
            row["attributes"] = None
            row["_errors"].append(f"unparseable attributes: {err}")
        try:
            row["timestamp"] = None if record.get("timestamp") in (None, "") else to_utc(str(record["timestamp"]))
        except ValueError:
            row["timestamp"] = None
            row["_errors"].append(f"bad timestamp {record['timestamp']!r} (expected ISO 8601)")
        row["bbox"] = record.get("bbox")
        row["release"] = record.get("release") or self.release
        row["source"] = record.get("source") or (SUBSETS[config].source if config in SUBSETS else None)
        row["image"] = _file_ref(folder, record.get("image"))
        row["raw_image"] = _file_ref(folder, record.get("raw_image"))
        return row


def _file_ref(folder: Path, relative) -> dict | None:
    if not relative:
        return None
    path = folder / relative
    try:
        data = path.read_bytes()
    except OSError as err:
        return {"bytes": None, "path": str(relative), "error": f"cannot read {relative}: {err.strerror}"}
    return {"bytes": data, "path": str(relative)}


class UpstreamSource:
    """The published ``srpone/look-bench`` layout: ``<root>/v<date>/<snake_config>/{query,gallery}.parquet``.

    The published columns are ``image, raw_image, category, main_attribute, other_attributes, bbox,
    item_ID, task, difficulty``; there is no timestamp, so each row takes its release folder's date, and
    street-look rows that share identical ``raw_image`` bytes are one outfit.
    """

    COLUMNS = ("image", "raw_image", "category", "main_attribute", "other_attributes", "bbox", "item_ID", "task", "difficulty")

    def __init__(self, root):
        self.root = Path(root)
        self.releases = sorted(p.name for p in self.root.glob("v*") if p.is_dir() and RELEASE_PATTERN.match(p.name))
        if not self.releases:
            raise SourceError(f"No release folder v<YYYYMMDD> under {self.root} (published srpone/look-bench layout)")

    def files(self, config: str, split: str) -> list[tuple[str, Path]]:
        alias = SUBSETS[config].alias
        return [(r, self.root / r / alias / f"{split}.parquet") for r in self.releases if (self.root / r / alias / f"{split}.parquet").is_file()]

    def has(self, config: str, split: str) -> bool:
        return bool(self.files(config, split))

    def iter_rows(self, config: str, split: str) -> Iterator[dict]:
        files = self.files(config, split)
        if not files:
            raise SourceError(f"No {SUBSETS[config].alias}/{split}.parquet under any release folder of {self.root}")
        for release, path in files:
            stamp = release_date(release)
            parquet = pq.ParquetFile(path)
            missing = [c for c in ("image", "category", "main_attribute", "item_ID") if c not in parquet.schema_arrow.names]
            if missing:
                raise SourceError(f"{path} lacks the published column(s) {', '.join(missing)}")
            for batch in parquet.iter_batches(batch_size=256):
                for record in batch.to_pylist():
                    yield self._row(record, config, release, stamp)

    def _row(self, record: dict, config: str, release: str, stamp: dt.datetime) -> dict:
        row = {"_errors": []}
        row["item_id"] = None if record.get("item_ID") is None else str(record["item_ID"])
        row["category"] = record.get("category")
        row["main_attribute"] = record.get("main_attribute")
        try:
            row["attributes"] = parse_attributes(record.get("other_attributes"))
        except (ValueError, KeyError, TypeError) as err:
            row["attributes"] = None
            row["_errors"].append(f"unparseable other_attributes: {err}")
        bbox = record.get("bbox")
        row["bbox"] = json.loads(bbox) if isinstance(bbox, str) and bbox.strip() else (bbox or None)
        row["timestamp"] = stamp
        row["release"] = release
        row["source"] = SUBSETS[config].source
        row["image"] = _image_struct(record.get("image"))
        row["raw_image"] = _image_struct(record.get("raw_image"))
        raw_bytes = (row["raw_image"] or {}).get("bytes")
        row["outfit_id"] = f"outfit-{hashlib.sha256(raw_bytes).hexdigest()[:16]}" if raw_bytes and SUBSETS[config].multi_item else None
        return row


def _image_struct(value) -> dict | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value), "path": None}
    if value.get("bytes") is None and value.get("path") is None:
        return None
    return {"bytes": value.get("bytes"), "path": value.get("path")}


def open_source(source: str, input_path, release: str | None = None):
    """The reader for ``--source raw|upstream`` (``mini`` is generated into a raw folder first)."""
    if source == "raw":
        return RawSource(input_path, release)
    if source == "upstream":
        return UpstreamSource(input_path)
    raise SourceError(f"Unknown source {source!r}; expected raw, upstream or mini")
