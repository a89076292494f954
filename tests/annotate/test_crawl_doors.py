"""What a hostile crawl carries into `lookbench annotate` (issue 53): bad boxes, a decompression bomb, lines that break
the parser, text past the cap and a tampered batch of a killed run are each one named, counted skip; the run goes on
and nothing of them reaches the release."""
from __future__ import annotations

import json
import struct
import zlib

import pytest
from PIL import Image

from lookbench import cli
from lookbench.annotate.proposers import Metadata
from lookbench.annotate.run import annotate as run_annotate
from lookbench.dataset_builder.crawl import MAX_TEXT

from tests.annotate.test_annotate import SHOP, _rows, annotate
from tests.helpers.raw_release import garment_png


def bomb_png(width: int = 20000, height: int = 20000) -> bytes:
    """A tiny PNG that claims ``width`` x ``height`` pixels: PIL refuses it as a decompression bomb on open."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


BASE = {"timestamp": "2026-01-02T03:04:05Z", "subset": "real_studio_flat", "split": "query"}


@pytest.fixture
def hostile_crawl(tmp_path):
    crawl = tmp_path / "crawl"
    garment_png(crawl / "img" / "a.png", "red")
    Image.new("RGB", (128, 96), "white").save(crawl / "img" / "look.png")
    (crawl / "img" / "bomb.png").write_bytes(bomb_png())
    street = {"raw_image": "img/look.png", "subset": "real_streetlook"}
    lines = [json.dumps(item, allow_nan=True) for item in [
        {**BASE, "item_id": "ok", "image": "img/a.png", "title": "Red top"},
        {**BASE, **street, "item_id": "flipped", "image": "img/a.png", "bbox": [90, 10, 20, 80]},
        {**BASE, **street, "item_id": "nan", "image": "img/a.png", "bbox": [float("nan"), 10, 20, 80]},
        {**BASE, **street, "item_id": "outside", "image": "img/a.png", "bbox": [0, 0, 1e300, 50]},
        {**BASE, **street, "item_id": "negative", "image": "img/a.png", "bbox": [-5, 0, 20, 50]},
        {**BASE, **street, "item_id": "bomb-street", "image": "img/a.png", "raw_image": "img/bomb.png", "bbox": [1, 1, 9, 9]},
        {**BASE, "item_id": "bomb", "image": "img/bomb.png"},
        {**BASE, "item_id": "overflow", "image": "img/a.png", "timestamp": "9999-12-31T23:59:59-23:59"},
        {**BASE, "item_id": "long", "image": "img/a.png", "description": "x" * (MAX_TEXT + 1)},
        {**BASE, "item_id": "huge", "image": "img/a.png", "description": "y" * 400_000},
    ]] + ["[" * 100_000 + "]" * 100_000]
    (crawl / "items.jsonl").write_text("\n".join(lines) + "\n")
    return crawl, SHOP.write(tmp_path / "taxonomy.json")


def test_every_hostile_line_is_one_named_counted_skip_and_the_run_goes_on(hostile_crawl, tmp_path, capsys):
    crawl, taxonomy = hostile_crawl
    raw = tmp_path / "raw"
    assert annotate(crawl, taxonomy, "metadata", raw) == 0
    out = capsys.readouterr().out
    assert "skipped items: 10" in out
    report = json.loads((raw / "annotate_report.json").read_text())
    skipped = report["skipped"]
    assert len(skipped) == 10 and all("\n" not in line and len(line) < 400 for line in skipped)
    expected = {
        2: "(item_id='flipped'): bad bbox [90, 10, 20, 80]: needs x1 > x0 and y1 > y0",
        3: "(item_id='nan'): bad bbox [nan, 10, 20, 80]: every coordinate must be finite",
        4: "(item_id='outside'): bad bbox [0, 0, 1e+300, 50]: outside the 128x96 raw image",
        5: "(item_id='negative'): bad bbox [-5, 0, 20, 50]: coordinates must be non-negative",
        6: "(item_id='bomb-street'): img/bomb.png: refused as a decompression bomb",
        7: "(item_id='bomb'): img/bomb.png: refused as a decompression bomb",
        8: "(item_id='overflow'): OverflowError",
        9: f"(item_id='long'): 'description' is {MAX_TEXT + 1} characters, over the {MAX_TEXT}-character limit",
        10: "longer than the 262144-byte limit of one item",
        11: "RecursionError",
    }
    for line, says in expected.items():
        assert any(s.startswith(f"items.jsonl line {line}") and says in s for s in skipped), (line, skipped)
    assert [row["item_id"] for row in _rows(raw)] == ["ok"]
    assert not list(raw.rglob("bomb.png")) and not list(raw.rglob("look.png"))  # nothing of a skipped item copied


class Dying(Metadata):
    """The metadata proposer, killed after its first batch (what a kill mid-run leaves)."""

    def propose(self, items, images):
        if getattr(self, "calls", 0):
            raise RuntimeError("killed")
        self.calls = 1
        return super().propose(items, images)


def test_a_tampered_batch_is_taken_back_as_fresh_input(tmp_path, capsys):
    crawl = tmp_path / "crawl"
    items = []
    for n, colour in enumerate(["red", "blue", "green", "red", "blue", "green"]):
        garment_png(crawl / "img" / f"{n}.png", colour, variant=n)
        items.append({**BASE, "item_id": f"i{n}", "image": f"img/{n}.png", "title": f"{colour} top"})
    (crawl / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    taxonomy = SHOP.write(tmp_path / "taxonomy.json")
    raw = tmp_path / "raw"
    with pytest.raises(RuntimeError, match="killed"):
        run_annotate(crawl, SHOP, Dying(SHOP), raw, batch_size=4)
    [path] = (raw / ".annotate").glob("batch-*.json")
    batch = json.loads(path.read_text())
    entries = batch["entries"]
    entries[0]["row"]["image"] = "/etc/passwd"
    entries[1]["row"]["proposals"]["category"]["value"] = "hats"
    entries[2]["config"] = "Moonwalk"
    entries.append({**entries[3], "line": 999})
    path.write_text(json.dumps(batch))

    assert annotate(crawl, taxonomy, "metadata", raw) == 0
    out = capsys.readouterr().out
    assert "skipped items: 4" in out
    skipped = json.loads((raw / "annotate_report.json").read_text())["skipped"]
    assert any(s.startswith(f"{path.name}: an entry for line 999, which is no item line of items.jsonl") for s in skipped)
    assert any(s.startswith("items.jsonl line 1 (item_id='i0'): ") and "'image' is '/etc/passwd'" in s for s in skipped)
    assert any(s.startswith("items.jsonl line 2 (item_id='i1'): ") and "category 'hats' is not one of shop" in s
               for s in skipped)
    assert any(s.startswith("items.jsonl line 3 (item_id='i2'): ") and "'Moonwalk'" in s for s in skipped)
    rows = _rows(raw)
    assert [r["item_id"] for r in rows] == ["i3", "i4", "i5"]  # the untouched entry and the items done now
    assert all(r["image"].startswith("images/img/") and r["proposals"]["category"]["value"] in (None, "tops", "shoes")
               for r in rows)
    assert "/etc/passwd" not in "".join(p.read_text() for p in raw.glob("*/*.jsonl"))


def test_a_batch_file_that_is_no_batch_refuses_the_resume_in_one_line(tmp_path, capsys):
    crawl = tmp_path / "crawl"
    garment_png(crawl / "img" / "a.png", "red")
    garment_png(crawl / "img" / "b.png", "blue")
    (crawl / "items.jsonl").write_text("".join(json.dumps({**BASE, "item_id": i, "image": f"img/{i}.png"}) + "\n"
                                               for i in "ab"))
    taxonomy = SHOP.write(tmp_path / "taxonomy.json")
    raw = tmp_path / "raw"
    with pytest.raises(RuntimeError, match="killed"):
        run_annotate(crawl, SHOP, Dying(SHOP), raw, batch_size=1)
    [path] = (raw / ".annotate").glob("batch-*.json")
    path.write_text("[" * 100_000)
    assert cli.main(["annotate", "--input", str(crawl), "--taxonomy", str(taxonomy), "--proposer", "metadata",
                     "--out", str(raw), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{path.name}: not a batch of this annotate run" in err
