"""Row checks for a LookBench build: every problem is found, located and reported; nothing is dropped silently."""
from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from PIL import Image, UnidentifiedImageError

REQUIRED = ("item_id", "image", "category", "main_attribute", "attributes", "timestamp", "release")


@dataclass(frozen=True)
class Problem:
    config: str
    split: str
    row: int
    item_id: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.config}/{self.split} row {self.row} (item_id={self.item_id!r}): {self.message}"


@dataclass
class ValidationReport:
    """What a build skipped (or would have to skip) and what it only warns about."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "skipped": [asdict(p) for p in self.problems],
            "num_skipped": len(self.problems),
            "warnings": list(self.warnings),
        }

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


class ValidationError(ValueError):
    """Raised when rows are invalid and the user did not ask to skip them."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"{len(problems)} invalid row(s); fix them or rebuild with --skip-invalid to leave them out "
            f"(a report of what was skipped is then written):\n{lines}"
        )


def load_taxonomy(path) -> dict[str, dict[str, set[str]]]:
    """A taxonomy file maps category -> attribute name -> allowed values (JSON)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {cat.lower(): {name: {str(v) for v in values} for name, values in attrs.items()} for cat, attrs in data.items()}


def image_fingerprint(ref: dict) -> tuple[str, tuple[int, int]]:
    """Content hash and size of an image after a full decode (a truncated file fails here, not later)."""
    if ref.get("error"):
        raise ValueError(ref["error"])
    data = ref.get("bytes")
    if not data:
        raise ValueError(f"no image bytes for {ref.get('path')!r}")
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            size = image.size
    except (UnidentifiedImageError, OSError, SyntaxError) as err:
        raise ValueError(f"unreadable or truncated image {ref.get('path') or ''}: {err}".replace("  ", " ")) from err
    return hashlib.sha256(data).hexdigest(), size


class SplitChecker:
    """Checks the rows of one config/split in order and remembers what it needs for cross-row checks."""

    def __init__(self, config: str, split: str, *, now: dt.datetime, taxonomy=None):
        self.config, self.split, self.now, self.taxonomy = config, split, now, taxonomy
        self.seen: dict[tuple[str, str], int] = {}
        self.hashes: dict[str, list[int]] = {}
        self.raw_sizes: dict[str, tuple[int, int]] = {}
        self.problems: list[Problem] = []
        self.valid: list[int] = []

    def check(self, index: int, row: dict) -> None:
        messages = self._messages(index, row)
        if messages:
            self.problems.extend(Problem(self.config, self.split, index, row.get("item_id"), m) for m in messages)
        else:
            self.valid.append(index)

    def _messages(self, index: int, row: dict) -> list[str]:
        if "_error" in row:
            return [row["_error"]]
        messages = list(row.get("_errors", []))
        missing = [name for name in REQUIRED if row.get(name) in (None, "")]
        if missing:
            messages.append(f"missing required field(s): {', '.join(missing)}")
        digest = None
        if row.get("image") is not None:
            try:
                digest, _ = image_fingerprint(row["image"])
            except ValueError as err:
                messages.append(str(err))
        raw_size = None
        if row.get("raw_image") is not None:
            try:
                raw_size = self._raw_size(row["raw_image"])
            except ValueError as err:
                messages.append(f"raw_image: {err}")
        if row.get("bbox") is not None:
            messages.extend(_bbox_messages(row["bbox"], raw_size))
        stamp = row.get("timestamp")
        if stamp is not None and stamp > self.now:
            messages.append(f"timestamp {stamp.isoformat()} is in the future")
        if self.taxonomy is not None and row.get("category"):
            messages.extend(_taxonomy_messages(row, self.taxonomy))
        if digest is not None and row.get("item_id"):
            key = (row["item_id"], digest)
            if key in self.seen:
                messages.append(f"exact duplicate of row {self.seen[key]} (same item_id and image content)")
            else:
                self.seen[key] = index
        if digest is not None and not messages:
            self.hashes.setdefault(digest, []).append(index)
        return messages

    def _raw_size(self, ref: dict) -> tuple[int, int]:
        key = ref.get("path") or hashlib.sha256(ref.get("bytes") or b"").hexdigest()
        if key not in self.raw_sizes:
            self.raw_sizes[key] = image_fingerprint(ref)[1]
        return self.raw_sizes[key]


def _bbox_messages(bbox, raw_size) -> list[str]:
    try:
        x0, y0, x1, y1 = (float(v) for v in bbox)
    except (TypeError, ValueError):
        return [f"bad bbox {bbox!r}: expected four numbers x0, y0, x1, y1"]
    messages = []
    if x1 <= x0 or y1 <= y0:
        messages.append(f"bad bbox {list(bbox)}: needs x1 > x0 and y1 > y0")
    if raw_size is not None:
        width, height = raw_size
        if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
            messages.append(f"bad bbox {list(bbox)}: outside the {width}x{height} raw image")
    return messages


def _taxonomy_messages(row: dict, taxonomy) -> list[str]:
    category = row["category"].strip().lower()
    if category not in taxonomy:
        return [f"category {row['category']!r} is not in the taxonomy"]
    allowed = taxonomy[category]
    messages = []
    for attribute in row.get("attributes") or []:
        name, value = attribute["name"], attribute["value"]
        if name not in allowed:
            messages.append(f"attribute {name!r} is not in the taxonomy of {category!r}")
        elif value not in allowed[name]:
            messages.append(f"value {value!r} of attribute {name!r} is not in the taxonomy of {category!r}")
    return messages


def leak_warnings(config: str, query: SplitChecker, gallery: SplitChecker) -> list[str]:
    """The same image content in a subset's query and gallery would let a model score by copying."""
    warnings = []
    for digest, query_rows in query.hashes.items():
        if digest in gallery.hashes:
            warnings.append(
                f"{config}: identical image in query row(s) {query_rows} and gallery row(s) {gallery.hashes[digest]} "
                f"(sha256 {digest[:12]}…): a query leaked into the gallery"
            )
    return warnings
