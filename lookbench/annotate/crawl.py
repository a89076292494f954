"""Reading a crawl folder (docs/architecture.md §4, "Crawl folder"): its items, each checked, and what was skipped.

Why checked here and not left to the build: an item that cannot be annotated (a path outside the crawl, a subset
that does not exist, an image PIL cannot read) must be named when it is skipped, not discovered days later at
review. Every file is read through ``lookbench.files``' containment: inside the crawl folder, regular, size-capped.
Whatever a line carries, it costs one named skip and the run goes on: each text field is capped at ``MAX_TEXT``
characters and each line at ``MAX_LINE_BYTES`` (read line by line, never parsed past the cap), so memory stays
bounded by the crawl file, and a line that breaks the parser itself (a 100k-deep array, a year 9999 timestamp that
overflows in UTC) is named with its error like any other.
"""
from __future__ import annotations

import hashlib
import io
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

from lookbench.errors import clip, one_line, shown
from lookbench.files import contained_file, read_regular
from lookbench.filtering import to_utc
from lookbench.schema import SUBSETS, resolve_subset

from lookbench.dataset_builder import sources
from lookbench.dataset_builder.crawl import ITEMS, MAX_TEXT
from lookbench.dataset_builder.validation import bbox_problems, open_image

TEXT_FIELDS = ("title", "description", "shop_category", "outfit_id")
MAX_ITEMS_BYTES = 1 << 30
MAX_LINE_BYTES = 256 << 10  # one item's line: its text fields at the cap, JSON-escaped, fit well inside


@dataclass
class Item:
    """One crawl item: its line, the fields a raw row keeps, and where it goes."""

    line: int
    config: str
    split: str
    fields: dict  # item_id, image, timestamp and the optional fields, as the crawl wrote them

    def text(self) -> str:
        """Its own words (title, description, shop category), for proposers that read them."""
        return " ".join(self.fields.get(key) or "" for key in ("title", "description", "shop_category"))


@dataclass
class Crawl:
    folder: Path
    items: list[Item]
    skipped: list[str] = field(default_factory=list)  # "items.jsonl line N (item_id=…): why", one per skipped item
    digest: str = ""  # sha256 of items.jsonl: a resumed run must read the same crawl


def _item(folder: Path, line: int, record) -> Item:
    """The checked item of one line, or ``ValueError`` saying what is wrong with it."""
    if not isinstance(record, dict):
        raise ValueError(f"not a JSON object but a JSON {type(record).__name__}")
    for key in ("item_id", "image", "timestamp", "subset", "split"):
        if not isinstance(record.get(key), str) or not record[key].strip():
            raise ValueError(f"{key} must be a non-empty string, got {shown(record.get(key))}")
    config = resolve_subset(record["subset"])
    if record["split"] not in SUBSETS[config].splits:
        raise ValueError(f"split {shown(record['split'])} is not one of {config}'s ({', '.join(SUBSETS[config].splits)})")
    to_utc(record["timestamp"])
    record = dict(record)
    for key in ("image", "raw_image"):
        if record.get(key) is not None:
            if not isinstance(record[key], str):
                raise ValueError(f"{key} must be a path inside the crawl folder, got {shown(record[key])}")
            # kept as the file's own path inside the folder: `a/../b.png` is `b.png`, so no name written from it
            # (the release's copy of the file) can climb out of the folder it is written into
            record[key] = contained_file(folder, record[key]).relative_to(folder.resolve()).as_posix()
    for key in TEXT_FIELDS:
        if record.get(key) is not None and not isinstance(record[key], str):
            raise ValueError(f"{key} must be a string, got {shown(record[key])}")
    for key, value in record.items():
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise ValueError(f"{shown(key)} is {len(value)} characters, over the {MAX_TEXT}-character limit of crawl text")
    bbox = record.get("bbox")
    if bbox is not None and not (isinstance(bbox, list) and len(bbox) == 4
                                 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in bbox)):
        raise ValueError(f"bbox must be four numbers x0, y0, x1, y1, got {shown(bbox)}")
    if bbox is not None and record.get("raw_image") is None:
        raise ValueError("bbox needs the raw_image it points into")
    if bbox is not None and (problems := bbox_problems(bbox, None)):
        raise ValueError(problems[0])
    kept = {key: record[key] for key in ("item_id", "image", "timestamp", "bbox", "raw_image", *TEXT_FIELDS)
            if record.get(key) is not None}
    return Item(line, config, record["split"], kept)


def read_crawl(folder) -> Crawl:
    """The items of ``folder/items.jsonl`` in file order; a line that cannot be an item is skipped and named."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"--input {folder}: no such crawl folder")
    try:
        data = read_regular(contained_file(folder, ITEMS), MAX_ITEMS_BYTES)
    except ValueError as err:
        raise ValueError(f"--input {folder}: {err} (a crawl folder holds {ITEMS})") from None
    crawl = Crawl(folder, [], digest=hashlib.sha256(data).hexdigest())
    lines = io.BytesIO(data)
    for line in itertools.count(1):
        raw = lines.readline(MAX_LINE_BYTES + 1)
        if not raw:
            break
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while (rest := lines.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                pass  # the rest of an over-long line, read past in pieces
            crawl.skipped.append(f"{ITEMS} line {line}: longer than the {MAX_LINE_BYTES}-byte limit of one item "
                                 f"(crawl text is capped at {MAX_TEXT} characters a field)")
            continue
        if not raw.strip():
            continue
        record = None
        try:
            record = json.loads(raw.decode("utf-8"))
            crawl.items.append(_item(folder, line, record))
        except UnicodeDecodeError:
            crawl.skipped.append(f"{ITEMS} line {line}: not UTF-8 text")
        except json.JSONDecodeError as err:
            crawl.skipped.append(f"{ITEMS} line {line}: not valid JSON ({err.msg} at column {err.colno})")
        except Exception as err:  # noqa: BLE001 - whatever a line breaks (RecursionError, OverflowError, …): one named skip
            item_id = record.get("item_id") if isinstance(record, dict) else None
            why = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
            crawl.skipped.append(f"{ITEMS} line {line} (item_id={shown(item_id)}): {clip(one_line(why), 300)}")
    if not crawl.items:
        raise ValueError(f"--input {folder}: no item to annotate in {ITEMS}" + (f" ({crawl.skipped[0]})" if crawl.skipped else ""))
    return crawl


def image_of(crawl: Crawl, item: Item):
    """(the item's image bytes, the decoded RGB image); ``ValueError`` naming the file when it cannot be read."""
    from lookbench.encoders.base import to_rgb

    name = item.fields["image"]
    return (data := _read(crawl, name)), to_rgb(open_image(data, name))


def raw_image_of(crawl: Crawl, item: Item) -> bytes | None:
    """The bytes of the item's street photo (None without one), decoded whole under the decompression-bomb guard and
    its crop box checked inside it: a photo a reviewer's page could not open, or a box it could not draw, is the
    item's named skip here, never a stuck review later."""
    name = item.fields.get("raw_image")
    if name is None:
        return None
    size = open_image(data := _read(crawl, name), name).size
    if problems := bbox_problems(item.fields.get("bbox"), size) if "bbox" in item.fields else []:
        raise ValueError(problems[0])
    return data


def _read(crawl: Crawl, name: str) -> bytes:
    return read_regular(contained_file(crawl.folder, name), sources.MAX_FILE_BYTES, name)
