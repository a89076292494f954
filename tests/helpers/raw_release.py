"""Writes small LookBench releases for tests: raw folders (docs/architecture.md §4) and the published srpone/look-bench layout."""
from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw

COLOURS = {"red": (200, 30, 30), "blue": (30, 60, 200), "green": (30, 160, 60), "black": (20, 20, 20)}


def garment_png(path: Path, colour: str, variant: int = 0, size=(64, 64)) -> None:
    """A small distinct image per (colour, variant) so content hashes differ unless meant to match."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    offset = variant % 7
    draw.polygon([(10 + offset, 12), (54 - offset, 12), (50, 56), (14, 56)], fill=COLOURS[colour])
    draw.point((variant % size[0], 1), fill=(variant % 255, 0, 0))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


def item(item_id, colour, timestamp="2025-03-01T00:00:00Z", variant=0, **extra):
    row = {
        "item_id": item_id,
        "image": f"images/{item_id}-{variant}.png",
        "category": "tops",
        "main_attribute": colour,
        "attributes": {"colour": colour, "sleeve": "short"},
        "timestamp": timestamp,
        "_colour": colour,
        "_variant": variant,
    }
    row.update(extra)
    return row


def write_split(root: Path, subset: str, split: str, rows: list[dict]) -> Path:
    folder = root / subset
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for row in rows:
        row = dict(row)
        colour, variant = row.pop("_colour", None), row.pop("_variant", 0)
        if colour and row.get("image") and not (folder / row["image"]).exists():
            garment_png(folder / row["image"], colour, variant)
        lines.append(json.dumps(row))
    path = folder / f"{split}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_outfit(root: Path, subset: str, outfit_id: str, colours: list[str], timestamp="2025-03-01T00:00:00Z", start=0,
                 variant=0):
    """A street look: one raw photo with several items; returns the item query rows (with crops). A ``variant``
    other than 0 marks every item with a pixel of its own, so its crops differ from those of other variants."""
    folder = root / subset
    raw_rel = f"images/{outfit_id}.png"
    (folder / "images").mkdir(parents=True, exist_ok=True)
    raw = Image.new("RGB", (128, 64), (120, 120, 120))
    rows = []
    for k, colour in enumerate(colours):
        box = (k * 60 + 2, 4, k * 60 + 60, 60)
        ImageDraw.Draw(raw).rectangle(box, fill=COLOURS[colour])
        if variant:
            raw.putpixel((box[0] + 1 + variant % 50, box[1] + 1), (variant % 256, 255 - variant % 256, 7))
        rows.append({
            "item_id": f"{outfit_id}-{k}", "image": f"images/{outfit_id}-{k}.png", "category": "tops",
            "main_attribute": colour, "attributes": {"colour": colour}, "timestamp": timestamp,
            "bbox": list(box), "outfit_id": outfit_id, "raw_image": raw_rel,
        })
    raw.save(folder / raw_rel)
    for row in rows:
        raw.crop(tuple(row["bbox"])).save(folder / row["image"])
    return rows


STAMPS = ("2024-06-01T00:00:00Z", "2025-01-01T00:00:00Z", "2025-12-01T00:00:00Z")


def write_release(root: Path, stamps=STAMPS, tag: str = "", variant: int = 0) -> Path:
    """A clean release with all five configs, three timestamps' worth of rows. A later snapshot of it takes other
    ``stamps``, a ``tag`` for its item ids and a ``variant`` offset for its images (20 and more: no image in common)."""
    colours = list(COLOURS)
    for subset in ("RealStudioFlat", "AIGen-Studio"):
        queries = [item(f"{subset[:4]}{tag}{i}", colours[i % 4], stamps[i % 3], variant=variant + 1) for i in range(6)]
        gallery = [item(f"{subset[:4]}{tag}{i}", colours[i % 4], stamps[i % 3], variant=variant + 2) for i in range(6)]
        gallery += [item(f"{subset[:4]}{tag}neg{i}", colours[(i + 1) % 4], stamps[i % 3], variant=variant + 3) for i in range(4)]
        write_split(root, subset, "query", queries)
        write_split(root, subset, "gallery", gallery)
    for subset in ("RealStreetLook", "AIGen-StreetLook"):
        queries = []
        for o in range(3):
            queries += write_outfit(root, subset, f"{subset[:4]}{tag}-look{o}", [colours[o], colours[(o + 1) % 4]], stamps[o],
                                    variant=variant and variant + o)
        gallery = [item(q["item_id"], q["main_attribute"], q["timestamp"], variant=variant + 5) for q in queries]
        for g in gallery:
            g["attributes"] = {"colour": g["main_attribute"]}
        write_split(root, subset, "query", queries)
        write_split(root, subset, "gallery", gallery)
    write_split(root, "noise", "gallery", [item(f"noise{tag}{i}", colours[i % 4], stamps[i % 3], variant=variant + 9 + i)
                                           for i in range(5)])
    return root


def _png(colour, size=(48, 48)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def write_upstream(root: Path) -> Path:
    """Two releases in the published srpone/look-bench column layout (no timestamp column)."""
    image_type = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([
        ("image", image_type), ("raw_image", image_type), ("category", pa.string()), ("main_attribute", pa.string()),
        ("other_attributes", pa.string()), ("bbox", pa.list_(pa.float64())), ("item_ID", pa.int64()),
        ("task", pa.string()), ("difficulty", pa.string()),
    ])
    look_a, look_b = _png("gray", (96, 64)), _png("olive", (96, 64))
    for release, offset in (("v20250101", 0), ("v20251201", 100)):
        folder = root / release / "real_streetlook"
        folder.mkdir(parents=True)
        query = {
            "image": [{"bytes": _png(c), "path": None} for c in ("red", "blue", "green")],
            "raw_image": [{"bytes": look_a, "path": None}, {"bytes": look_a, "path": None}, {"bytes": look_b, "path": None}],
            "category": ["Tops", "trousers", "tops"], "main_attribute": ["red", "blue", "green"],
            "other_attributes": ['{"colour": "red", "fit": "loose"}', "colour: blue; length: full", '[["colour", "green"]]'],
            "bbox": [[0, 0, 48, 48], [48, 0, 96, 48], [10, 10, 40, 40]],
            "item_ID": [offset + 1, offset + 2, offset + 3], "task": ["real_streetlook"] * 3, "difficulty": ["hard"] * 3,
        }
        gallery = {
            "image": [{"bytes": _png(c, (40, 40)), "path": None} for c in ("red", "blue")],
            "raw_image": [None, None], "category": ["tops", "trousers"], "main_attribute": ["red", "blue"],
            "other_attributes": ['{"colour": "red", "fit": "loose"}', "colour: blue; length: full"],
            "bbox": [None, None], "item_ID": [offset + 1, offset + 2], "task": ["real_streetlook"] * 2, "difficulty": ["hard"] * 2,
        }
        pq.write_table(pa.table(query, schema=schema), folder / "query.parquet")
        pq.write_table(pa.table(gallery, schema=schema), folder / "gallery.parquet")
    return root


def read_split(root: Path, subset: str, split: str) -> list[dict]:
    return [json.loads(line) for line in (root / subset / f"{split}.jsonl").read_text().splitlines() if line.strip()]


def edit_rows(root: Path, subset: str, split: str, changes: dict[int, dict]) -> None:
    """Rewrite some rows of a split, keyed by 1-based line number; a value of ``DELETE`` removes the field."""
    rows = read_split(root, subset, split)
    for line, fields in changes.items():
        for key, value in fields.items():
            if value is DELETE:
                rows[line - 1].pop(key, None)
            else:
                rows[line - 1][key] = value
    (root / subset / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


DELETE = object()


def bomb_png(path: Path, width: int = 30000, height: int = 30000) -> None:
    """A PNG whose header claims ``width`` x ``height`` pixels (no pixel data): a decompression-bomb header."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b""))
