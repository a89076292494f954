"""Readers that turn a release on disk into LookBench rows (docs/architecture.md §3), one row at a time.

Every reader streams rows in a fixed order, so the builder can validate in one pass and generate in a
second pass that picks the same rows by index. A row is a dict with the schema's fields as the release
wrote them (no value is converted to a string: validation rejects a wrong type), plus ``_file``/``_line``
(where it came from, 1-based) and ``_errors`` (field -> what is wrong with it); images are ``{"bytes": ..., "path": ...}`` and a missing
field is ``None`` (validation reports it, nothing guesses). Nothing outside the release is ever read
(docs/architecture.md §4).
"""
from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Iterator

import pyarrow.parquet as pq

from lookbench.files import blank_line, contained_file, json_lines, read_regular
from lookbench.filtering import to_utc
from lookbench.schema import RELEASE_PATTERN, SUBSETS, release_date, resolve_subset

from lookbench.dataset_builder.decisions import REVIEWS, DecisionStore
from lookbench.dataset_builder.gold import held_out
from lookbench.dataset_builder.reviewed_labels import reviewed_fields, verdicts
from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE, Taxonomy, load as load_taxonomy

TRAIN = "train"
# The largest file (image, raw_image) the builder reads; a bigger one is an invalid row. Tests lower it.
MAX_FILE_BYTES = 64 * 1024 * 1024


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
    for name, val in items:
        if not isinstance(name, str) or not isinstance(val, str):
            raise ValueError(f"attribute {name!r}: {val!r} needs a string name and a string value")
    pairs = {(n.strip(), v.strip()) for n, v in items}
    return [{"name": n, "value": v} for n, v in sorted(pairs)]


def read_contained(base: Path, relative: str) -> bytes:
    """The bytes of a contained regular file of at most ``MAX_FILE_BYTES`` (read with that limit)."""
    return read_regular(contained_file(base, relative), MAX_FILE_BYTES, relative)


class RawSource:
    """A raw release folder (docs/architecture.md §4): ``<root>/<Subset>/{query,gallery}.jsonl`` + image files.

    Subset folders are matched through the one alias table; an unknown, duplicated or incomplete folder
    stops the build before any row is read, so no subset is left out silently.
    """

    def __init__(self, root, release: str | None = None):
        self.root = Path(root)
        if not self.root.is_dir():
            raise SourceError(f"Raw release folder {self.root} does not exist")
        if release is not None:
            release_date(release)
        self.release = release
        self.folders = self._subset_folders()

    def _subset_folders(self) -> dict[str, Path]:
        folders, problems = {}, []
        for child in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != REVIEWS):
            try:
                config = TRAIN if child.name == TRAIN else resolve_subset(child.name)
            except ValueError as err:
                problems.append(f"folder {child.name}/: {err}")
                continue
            if config in folders:
                problems.append(f"folders {folders[config].name}/ and {child.name}/ are both {config}")
                continue
            splits = (TRAIN,) if config == TRAIN else SUBSETS[config].splits
            missing = [f"{split}.jsonl" for split in splits if not (child / f"{split}.jsonl").is_file()]
            if missing:
                problems.append(f"folder {child.name}/ has no {' or '.join(missing)}")
            folders[config] = child
        if problems:
            raise SourceError(f"Raw release {self.root}: " + "; ".join(problems))
        return folders

    def taxonomy(self) -> Taxonomy | None:
        """The release's own taxonomy, ``<root>/taxonomy.json``, when it ships one."""
        path = self.root / TAXONOMY_FILE
        return load_taxonomy(path) if os.path.lexists(path) else None

    def location(self, config: str, split: str) -> str:
        """The split's JSONL file relative to the release root, e.g. ``real_streetlook/query.jsonl``."""
        folder = self.folders[config].name if config in self.folders else config
        return f"{folder}/{split}.jsonl"

    def has(self, config: str, split: str) -> bool:
        return config in self.folders

    def _jsonl(self, config: str, split: str) -> Path:
        if config not in self.folders:
            alias = f" (nor {SUBSETS[config].alias}/)" if config in SUBSETS else ""
            raise SourceError(f"Raw release {self.root} has no {config}/ folder{alias}")
        return contained_file(self.root, self.location(config, split))

    def lines(self, config: str, split: str) -> Iterator[tuple[int, object]]:
        """(1-based line number, the JSON value or an error message) of every non-blank line."""
        path = self._jsonl(config, split)
        with path.open("rb") as lines:
            yield from json_lines(lines)

    def num_rows(self, config: str, split: str) -> int:
        with self._jsonl(config, split).open("rb") as lines:
            return sum(1 for line in lines if not blank_line(line))

    @functools.cached_property
    def default_release(self) -> str | None:
        """``v<YYYYMMDD>`` of the newest timestamp in the release (a future one is an invalid row and does not
        count), when some row carries no ``release``."""
        newest, needed, now = None, False, dt.datetime.now(dt.timezone.utc)
        for config in self.folders:
            for split in (TRAIN,) if config == TRAIN else SUBSETS[config].splits:
                for _, record in self.lines(config, split):
                    if not isinstance(record, dict):
                        continue
                    needed = needed or record.get("release") is None
                    try:
                        stamp = to_utc(record["timestamp"])
                    except (KeyError, TypeError, ValueError):
                        continue
                    if stamp <= now and (newest is None or stamp > newest):
                        newest = stamp
        return f"v{newest:%Y%m%d}" if needed and newest is not None else None

    def iter_rows(self, config: str, split: str) -> Iterator[dict]:
        folder, where = self.folders[config], self.location(config, split)
        for line_no, record in self.lines(config, split):
            if not isinstance(record, dict):
                yield {"_file": where, "_line": line_no, "_error": record}
                continue
            row = self._row(record, folder, config)
            if "proposals" in record:
                self._reviewed(row, record, config, split)
            yield {"_file": where, "_line": line_no, **row}

    @functools.cached_property
    def verdicts(self) -> dict:
        """Item key -> its reviewers' labels, for an annotated release (``dataset_builder.reviewed_labels``), without
        the labels of reviewers its gold items flag (``dataset_builder.gold``)."""
        store = DecisionStore(self.root)
        return verdicts(store, held_out(self.root, store.all_events(), self.review_taxonomy))

    @functools.cached_property
    def review_taxonomy(self) -> Taxonomy | None:
        return self.taxonomy()

    def _reviewed(self, row: dict, record: dict, config: str, split: str) -> None:
        """An annotated row (it keeps its proposals) takes its labels from its review, and only from there: a row
        with no agreed review is an invalid row (refused, or left out and counted with --skip-invalid)."""
        carried = [key for key in ("category", "main_attribute", "attributes") if record.get(key) is not None]
        taxonomy = self.review_taxonomy
        if carried:
            row["_error"] = f"an annotated row (with proposals) takes its labels from its review, yet it carries {', '.join(carried)}"
        elif taxonomy is None:
            row["_error"] = f"an annotated row (with proposals), but {self.root} has no taxonomy.json to review against"
        else:
            image = (row.get("image") or {}).get("bytes")
            fields, problem = reviewed_fields(self.verdicts.get(f"{config}/{split}/{row.get('item_id')}"), image, taxonomy)
            row.update(fields)
            if problem:
                row["_error"] = problem

    def _row(self, record: dict, folder: Path, config: str) -> dict:
        row = {"_errors": {}}
        for key in ("item_id", "category", "main_attribute", "outfit_id"):
            row[key] = record.get(key)
        try:
            row["attributes"] = None if "attributes" not in record else parse_attributes(record["attributes"])
        except (ValueError, KeyError, TypeError) as err:
            row["attributes"] = None
            row["_errors"]["attributes"] = f"unparseable attributes: {err}"
        stamp = record.get("timestamp")
        row["timestamp"] = None
        if isinstance(stamp, str) and stamp.strip():
            try:
                row["timestamp"] = to_utc(stamp)
            except ValueError:
                row["_errors"]["timestamp"] = f"bad timestamp {stamp!r} (expected ISO 8601)"
        elif stamp not in (None, ""):
            row["_errors"]["timestamp"] = f"bad timestamp {stamp!r}: expected an ISO 8601 string"
        row["bbox"] = record.get("bbox")
        row["release"] = record.get("release")
        if row["release"] is None:  # the release's default is computed only when some row needs it
            row["release"] = self.release if self.release is not None else self.default_release
        row["source"] = record["source"] if record.get("source") is not None else (SUBSETS[config].source if config in SUBSETS else None)
        for key in ("image", "raw_image"):
            row[key] = _file_ref(folder, key, record.get(key))
        return row


def _file_ref(folder: Path, key: str, relative) -> dict | None:
    if relative is None or relative == "":
        return None
    if not isinstance(relative, str):
        return {"bytes": None, "path": None, "error": f"{key} must be a path string, got {relative!r}"}
    try:
        return {"bytes": read_contained(folder, relative), "path": relative}
    except ValueError as err:
        return {"bytes": None, "path": relative, "error": str(err)}


class UpstreamSource:
    """The published ``srpone/look-bench`` layout: ``<root>/v<date>/<snake_config>/{query,gallery}.parquet``.

    The published columns are ``image, raw_image, category, main_attribute, other_attributes, bbox,
    item_ID, task, difficulty``; there is no timestamp, so each row takes its release folder's date, and
    street-look rows that share identical ``raw_image`` bytes are one outfit. ``release`` is taken as every reader
    is, and unused: the published folders name their own releases.
    """

    COLUMNS = ("image", "raw_image", "category", "main_attribute", "other_attributes", "bbox", "item_ID", "task", "difficulty")

    def __init__(self, root, release: str | None = None):
        self.root = Path(root)
        self.releases = sorted(p.name for p in self.root.glob("v*") if p.is_dir() and RELEASE_PATTERN.match(p.name))
        if not self.releases:
            raise SourceError(f"No release folder v<YYYYMMDD> under {self.root} (published srpone/look-bench layout)")

    def files(self, config: str, split: str) -> list[tuple[str, str]]:
        """(release, path relative to the root) of every published file of a config's split."""
        alias = SUBSETS[config].alias
        return [(r, f"{r}/{alias}/{split}.parquet") for r in self.releases if (self.root / r / alias / f"{split}.parquet").exists()]

    def has(self, config: str, split: str) -> bool:
        return bool(self.files(config, split))

    def taxonomy(self) -> None:
        """The published release ships no taxonomy file (its 100+ attributes are not published as one)."""
        return None

    def location(self, config: str, split: str) -> str:
        return f"v*/{SUBSETS[config].alias}/{split}.parquet"

    def num_rows(self, config: str, split: str) -> int:
        return sum(pq.ParquetFile(contained_file(self.root, rel)).metadata.num_rows for _, rel in self.files(config, split))

    def iter_rows(self, config: str, split: str) -> Iterator[dict]:
        files = self.files(config, split)
        if not files:
            raise SourceError(f"No {SUBSETS[config].alias}/{split}.parquet under any release folder of {self.root}")
        for release, relative in files:
            stamp = release_date(release)
            try:
                parquet = pq.ParquetFile(contained_file(self.root, relative))
            except ValueError as err:
                raise SourceError(f"{self.root}: {err}") from None
            missing = [c for c in ("image", "category", "main_attribute", "item_ID") if c not in parquet.schema_arrow.names]
            if missing:
                raise SourceError(f"{self.root / relative} lacks the published column(s) {', '.join(missing)}")
            line = 0
            for batch in parquet.iter_batches(batch_size=256):
                for record in batch.to_pylist():
                    line += 1
                    yield {"_file": relative, "_line": line, **self._row(record, config, release, stamp)}

    def _row(self, record: dict, config: str, release: str, stamp: dt.datetime) -> dict:
        row = {"_errors": {}}
        row["item_id"] = None if record.get("item_ID") is None else str(record["item_ID"])  # published ids are int64
        row["category"] = record.get("category")
        row["main_attribute"] = record.get("main_attribute")
        try:
            row["attributes"] = parse_attributes(record.get("other_attributes"))
        except (ValueError, KeyError, TypeError) as err:
            row["attributes"] = None
            row["_errors"]["attributes"] = f"unparseable other_attributes: {err}"
        bbox = record.get("bbox")
        try:
            row["bbox"] = json.loads(bbox) if isinstance(bbox, str) and bbox.strip() else (bbox or None)
        except json.JSONDecodeError:
            row["bbox"] = bbox
        row["timestamp"] = stamp
        row["release"] = release
        row["source"] = SUBSETS[config].source
        row["image"] = _image_struct("image", record.get("image"))
        row["raw_image"] = _image_struct("raw_image", record.get("raw_image"))
        raw_bytes = (row["raw_image"] or {}).get("bytes")
        row["outfit_id"] = f"outfit-{hashlib.sha256(raw_bytes).hexdigest()[:16]}" if raw_bytes and SUBSETS[config].multi_item else None
        return row


def _image_struct(key: str, value) -> dict | None:
    """A published image cell; only embedded bytes are used, a path is never opened."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        value = {"bytes": bytes(value), "path": None}
    data, path = value.get("bytes"), value.get("path")
    if data is None and path is None:
        return None
    if data is None:
        return {"bytes": None, "path": path, "error": f"{key} {path} has no embedded bytes (a path is never opened)"}
    if len(data) > MAX_FILE_BYTES:
        return {"bytes": None, "path": path, "error": f"{key} is larger than the {MAX_FILE_BYTES}-byte limit of one file"}
    return {"bytes": data, "path": path}
