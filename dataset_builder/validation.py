"""Row checks for a LookBench build: every problem is found, located and reported; nothing is dropped silently.

Problems name the file and its 1-based line (a row of a published Parquet file); a row with two problems
is one invalid row with two problems, and the same problem on many rows is listed once with a count.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import math
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from lookbench.errors import shorten
from lookbench.schema import RELEASE_PATTERN, REQUIRED_FIELDS, STRING_FIELDS

from lookbench.dataset_builder.taxonomy import Taxonomy

# How many problem lines an error message lists, and how many rows it names per grouped line.
SHOWN_GROUPS = 40
SHOWN_ROWS = 3


@dataclass(frozen=True)
class Problem:
    config: str
    split: str
    file: str
    line: int | None  # None: the problem is the file's (no rows, every row invalid)
    item_id: str | None
    message: str

    @property
    def where(self) -> str:
        unit = "line" if self.file.endswith(".jsonl") else "row"
        return f"{self.file} {unit} {self.line}" if self.line is not None else self.file

    def __str__(self) -> str:
        item = f" (item_id={self.item_id!r})" if self.line is not None else ""
        return f"{self.where}{item}: {self.message}"


def invalid_rows(problems: list[Problem]) -> int:
    return len({(p.file, p.line) for p in problems if p.line is not None})


def grouped(problems: list[Problem]) -> list[str]:
    """One line per distinct (file, message); a message shared by several rows gets a count and the first rows."""
    groups: dict[tuple[str, str], list[Problem]] = {}
    for problem in problems:
        groups.setdefault((problem.file, problem.message), []).append(problem)
    lines = []
    for (file, message), members in groups.items():
        if len(members) == 1:
            lines.append(str(members[0]))
            continue
        first = ", ".join(f"{p.line} ({p.item_id!r})" for p in members[:SHOWN_ROWS])
        more = f" and {len(members) - SHOWN_ROWS} more" if len(members) > SHOWN_ROWS else ""
        unit = "lines" if file.endswith(".jsonl") else "rows"
        lines.append(f"{file}: {message} — {len(members)} rows: {unit} {first}{more}")
    if len(lines) > SHOWN_GROUPS:
        lines[SHOWN_GROUPS:] = [f"… and {len(lines) - SHOWN_GROUPS} more (rebuild with --skip-invalid for the full report)"]
    return lines


@dataclass
class ValidationReport:
    """What a build skipped (or would have to skip) and what it only warns about."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "skipped": [asdict(p) for p in self.problems],
            "num_skipped": invalid_rows(self.problems),
            "num_problems": len(self.problems),
            "warnings": list(self.warnings),
        }

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


class ValidationError(ValueError):
    """Raised when rows are invalid and the user did not ask to skip them, or a split has nothing to build."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        lines = "\n".join(f"  - {line}" for line in grouped(problems))
        rows, empty = invalid_rows(problems), sum(p.line is None for p in problems)
        head = ([f"{rows} invalid row(s) ({len(problems) - empty} problem(s))"] if rows else []) + (
            [f"{empty} split(s) with nothing to build"] if empty else [])
        advice = " or rebuild with --skip-invalid to leave the rows out (a report of what was skipped is then written)" if rows else ""
        super().__init__(f"{'; '.join(head)}; fix them{advice}:\n{lines}")


def image_fingerprint(ref: dict, what: str = "image") -> tuple[str, tuple[int, int]]:
    """Content hash and size of an image after a full decode (a truncated file fails here, not later).

    PIL's decompression-bomb limit (``Image.MAX_IMAGE_PIXELS``) stays on, its warning is an error too.
    """
    if ref.get("error"):
        raise ValueError(ref["error"])
    name = ref.get("path") or what
    data = ref.get("bytes")
    if not data:
        raise ValueError(f"{name}: no image bytes")
    return hashlib.sha256(data).hexdigest(), open_image(data, name).size


def open_image(data: bytes, name: str) -> Image.Image:
    """The image in ``data``, fully decoded; a ``ValueError`` naming ``name`` for a bomb, a format PIL cannot read or
    a truncated file (the one decode check of the builder and the annotator)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            image.load()
            return image
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as err:
        raise ValueError(f"{name}: refused as a decompression bomb ({err})") from None
    except UnidentifiedImageError:
        raise ValueError(f"{name} is not an image format PIL can read") from None
    except (OSError, SyntaxError, ValueError) as err:
        raise ValueError(f"unreadable or truncated image {name} ({err})") from None


class SplitChecker:
    """Checks the rows of one config/split in order and remembers what it needs for cross-row checks."""

    def __init__(self, config: str, split: str, file: str, *, now: dt.datetime, taxonomy: Taxonomy | None = None):
        self.config, self.split, self.file, self.now, self.taxonomy = config, split, file, now, taxonomy
        self.seen: dict[tuple[str, str], int] = {}
        self.hashes: dict[str, list[int]] = {}
        self.raw_sizes: dict[str, tuple[int, int]] = {}
        self.problems: list[Problem] = []
        self.valid: list[int] = []
        self.rows = 0

    def check(self, index: int, row: dict) -> None:
        self.rows += 1
        messages = self._messages(row)
        item_id = row.get("item_id") if isinstance(row.get("item_id"), str) else None
        if messages:
            self.problems.extend(
                Problem(self.config, self.split, row.get("_file", self.file), row.get("_line"), item_id, m) for m in messages
            )
        else:
            self.valid.append(index)

    def split_problems(self, skip_invalid: bool) -> list[Problem]:
        """A split with no row, or (when skipping) with no valid row, leaves nothing to build: a clear error."""
        if not self.rows:
            return [Problem(self.config, self.split, self.file, None, None, "has no rows")]
        if skip_invalid and not self.valid:
            return [Problem(self.config, self.split, self.file, None, None,
                            f"every one of its {self.rows} row(s) is invalid; nothing is left to build")]
        return []

    def _messages(self, row: dict) -> list[str]:
        if "_error" in row:
            return [row["_error"]]
        errors = row.get("_errors", {})
        messages = list(errors.values())
        wrong = [name for name in STRING_FIELDS if row.get(name) is not None and not isinstance(row[name], str)]
        messages.extend(f"{name} must be a string, got {row[name]!r}" for name in wrong)
        missing = [name for name in REQUIRED_FIELDS if row.get(name) in (None, "") and name not in errors]
        if missing:
            messages.append(f"missing required field(s): {', '.join(missing)}")
        release = row.get("release")
        if isinstance(release, str) and release and not RELEASE_PATTERN.match(release):
            messages.append(f"release {release!r} is not a snapshot name v<YYYYMMDD> (mini-v<YYYYMMDD> for LookBench-Mini)")
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
            messages.extend(bbox_problems(row["bbox"], raw_size))
        stamp = row.get("timestamp")
        if stamp is not None and stamp > self.now:
            messages.append(f"timestamp {stamp.isoformat()} is in the future")
        if self.taxonomy is not None and isinstance(row.get("category"), str) and row["category"]:
            messages.extend(self.taxonomy.row_problems(row["category"], row.get("main_attribute"), row.get("attributes")))
        line = row.get("_line")
        if digest is not None and isinstance(row.get("item_id"), str) and row["item_id"]:
            key = (row["item_id"], digest)
            if key in self.seen:
                messages.append(f"exact duplicate of line {self.seen[key]} (same item_id and image content)")
            else:
                self.seen[key] = line
        if digest is not None and not messages:
            self.hashes.setdefault(digest, []).append(line)
        return messages

    def _raw_size(self, ref: dict) -> tuple[int, int]:
        key = ref.get("path") or hashlib.sha256(ref.get("bytes") or b"").hexdigest()
        if key not in self.raw_sizes:
            self.raw_sizes[key] = image_fingerprint(ref, "raw_image")[1]
        return self.raw_sizes[key]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def bbox_problems(bbox, raw_size) -> list[str]:
    """What is wrong with a crop box ``x0, y0, x1, y1`` (in the raw image of ``raw_size``, when known): the one check
    of the builder, the annotator and the review page, which draws only a box this passes."""
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4 or not all(_is_number(v) for v in bbox):
        return [f"bad bbox {shorten(bbox)}: expected a list of four numbers x0, y0, x1, y1"]
    if not all(math.isfinite(v) for v in bbox):
        return [f"bad bbox {list(bbox)}: every coordinate must be finite"]
    x0, y0, x1, y1 = bbox
    messages = []
    if min(bbox) < 0:
        messages.append(f"bad bbox {list(bbox)}: coordinates must be non-negative")
    if x1 <= x0 or y1 <= y0:
        messages.append(f"bad bbox {list(bbox)}: needs x1 > x0 and y1 > y0")
    if raw_size is not None:
        width, height = raw_size
        if x1 > width or y1 > height:
            messages.append(f"bad bbox {list(bbox)}: outside the {width}x{height} raw image")
    return messages


def leak_warnings(config: str, query: SplitChecker, gallery: SplitChecker) -> list[str]:
    """The same image content in a subset's query and gallery would let a model score by copying."""
    warnings = []
    for digest, query_lines in query.hashes.items():
        if digest in gallery.hashes:
            warnings.append(
                f"{config}: identical image in {query.file} line(s) {query_lines} and {gallery.file} line(s) "
                f"{gallery.hashes[digest]} (sha256 {digest[:12]}…): a query leaked into the gallery"
            )
    return warnings
