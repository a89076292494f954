"""Reading a raw or upstream release (dataset_builder/sources.py) from hostile and careless input: nothing read from
outside the release, a file that cannot be read that row's problem, subset folders by their aliases, JSONL that is not
UTF-8 (issue 9). Every hostile input is made here; the build is run through the CLI where a user sees it."""
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lookbench.dataset_builder import ValidationError, build_release, sources

from tests.helpers.raw_release import edit_rows, garment_png, write_release, write_upstream
from tests.helpers.raw_build import FLAT, build
from tests.helpers.messages import unwrapped


def parquet_images(out: Path) -> list[dict]:
    """Every image and raw_image cell of every shard, read straight from Parquet."""
    cells = []
    for shard in sorted(p for p in out.rglob("*.parquet") if p.parent.name != "text"):  # the text config has no image
        table = pq.read_table(shard, columns=["image", "raw_image"])
        cells += [c for name in ("image", "raw_image") for c in table.column(name).to_pylist() if c is not None]
    return cells


def report(out: Path) -> dict:
    return json.loads((out / "validation_report.json").read_text())


def test_files_outside_the_subset_folder_or_not_regular_are_invalid_rows(release, tmp_path, capsys):
    secret = tmp_path / "secret.png"
    garment_png(secret, "black", variant=99)
    images = release / FLAT / "images"
    (images / "link.png").symlink_to(secret)
    (images / "zero.png").symlink_to("/dev/zero")
    os.mkfifo(images / "pipe.png")  # opening it would block forever: it must be rejected before any open
    (images / "folder.png").mkdir()
    edit_rows(release, FLAT, "query", {
        1: {"image": "images/link.png"}, 2: {"image": "../../secret.png"}, 3: {"image": str(secret)},
        4: {"image": "images/pipe.png"},
    })
    edit_rows(release, FLAT, "gallery", {1: {"image": "images/folder.png"}, 2: {"image": 7}, 5: {"image": "/dev/zero"},
                                         6: {"image": "images/zero.png"}})

    assert build(release, tmp_path / "out") == 2
    err = unwrapped(capsys.readouterr().err)
    for line, expected in [
        (1, f"images/link.png lies outside the {FLAT}/ folder (it resolves to {secret})"),
        (2, f"../../secret.png lies outside the {FLAT}/ folder"),
        (3, f"{secret} is an absolute path; paths are relative to the {FLAT}/ folder"),
        (4, "images/pipe.png is a FIFO, not a regular file"),
    ]:
        assert f"{FLAT}/query.jsonl line {line} (item_id='Real{line - 1}'): {expected}" in err, err
    for line, expected in [
        (1, "images/folder.png is a directory, not a regular file"),
        (2, "image must be a path string, got 7"),
        (5, "/dev/zero is an absolute path"),
        (6, f"images/zero.png lies outside the {FLAT}/ folder (it resolves to /dev/zero)"),
    ]:
        assert f"{FLAT}/gallery.jsonl line {line} (item_id='Real{line - 1}'): {expected}" in err, err
    assert not (tmp_path / "out").exists()

    out = tmp_path / "skipped"
    assert build(release, out, "--skip-invalid") == 0
    assert "skipped rows: 8 (8 problem(s))" in capsys.readouterr().out
    assert report(out)["num_skipped"] == 8
    outside = {secret.read_bytes()}
    assert all(cell["bytes"] not in outside for cell in parquet_images(out))


def test_files_over_the_size_limit_are_invalid_rows(release, tmp_path, monkeypatch, capsys):
    big = release / FLAT / "images" / "big.png"
    garment_png(big, "red", size=(512, 512))
    monkeypatch.setattr(sources, "MAX_FILE_BYTES", big.stat().st_size - 1)
    edit_rows(release, FLAT, "query", {2: {"image": "images/big.png"}})
    assert build(release, tmp_path / "out", "--subsets", FLAT) == 2
    err = unwrapped(capsys.readouterr().err)
    assert f"{FLAT}/query.jsonl line 2 (item_id='Real1'): images/big.png is larger than the {big.stat().st_size - 1}-byte limit" in err


def test_built_dataset_embeds_every_image_whatever_the_working_directory(release, tmp_path, monkeypatch):
    monkeypatch.chdir(release / FLAT)  # every "images/..." path of this subset now also exists relative to cwd
    out = tmp_path / "out"
    build_release("raw", out, input_path=release, release="v20251201")
    cells = parquet_images(out)
    assert len(cells) == 16 + 16 + 12 + 12 + 5 + 6 + 6  # the image of every row, the raw image of every street-look query
    assert all(cell["bytes"] for cell in cells) and all(cell["path"] is None for cell in cells)


def test_subset_folders_go_through_the_alias_table(release, tmp_path, capsys):
    (release / "RealStreetLook").rename(release / "real_streetlook")
    out = tmp_path / "out"
    assert build(release, out) == 0
    assert "RealStreetLook     query=6  gallery=6" in capsys.readouterr().out
    assert (out / "RealStreetLook" / "query-00000-of-00001.parquet").is_file()

    (release / "RealStudoFlat").mkdir()
    (release / "AIGen-Studio" / "query.jsonl").unlink()
    assert build(release, tmp_path / "out2") == 2
    err = unwrapped(capsys.readouterr().err)
    assert "folder RealStudoFlat/: Unknown LookBench subset 'RealStudoFlat'. Did you mean 'RealStudioFlat'" in err
    assert "folder AIGen-Studio/ has no query.jsonl" in err


def test_jsonl_that_is_not_utf8_is_named_and_skippable(release, tmp_path, capsys):
    path = release / "noise" / "gallery.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace('"tops"', '"tr\xe9s"')
    path.write_bytes("\n".join(lines[:2]).encode() + b"\n" + lines[2].encode("latin-1") + b"\n" + "\n".join(lines[3:]).encode() + b"\n")
    utf16 = release / "AIGen-Studio" / "query.jsonl"
    utf16.write_bytes(utf16.read_text().encode("utf-16"))
    assert build(release, tmp_path / "out") == 2
    err = unwrapped(capsys.readouterr().err)
    assert "noise/gallery.jsonl line 3 (item_id=None): not UTF-8 text (byte 0xe9 at column " in err
    assert "AIGen-Studio/query.jsonl: not UTF-8 text (it looks like UTF-16; save the file as UTF-8) — 6 rows: lines 1 (None)" in err

    write_release(tmp_path / "clean")
    utf16.write_bytes((tmp_path / "clean" / "AIGen-Studio" / "query.jsonl").read_bytes())
    out = tmp_path / "out"
    assert build(release, out, "--skip-invalid") == 0
    assert "skipped rows: 1 (1 problem(s))" in capsys.readouterr().out
    assert report(out)["skipped"][0] | {"message": ""} == {
        "config": "noise", "split": "gallery", "file": "noise/gallery.jsonl", "line": 3, "item_id": None, "message": ""}


def test_the_published_snapshot_converted_carries_its_queries_in_words(tmp_path):
    """Issue 39 item 1: the converter writes the text config too; the published colour is worded like color."""
    import datasets

    build_release("upstream", tmp_path / "out", input_path=write_upstream(tmp_path / "look-bench"))
    text = datasets.load_dataset(str(tmp_path / "out"), "text", split="real_streetlook")
    query = datasets.load_dataset(str(tmp_path / "out"), "RealStreetLook", split="query")
    assert text["item_id"] == query["item_id"] and text["release"] == ["v20250101"] * 3 + ["v20251201"] * 3
    assert text["text_short"][:3] == ["red loose top", "blue full trousers", "green top"]
    assert text["text_long"][0] == "An item in the category tops whose colour is red and fit is loose."


def test_upstream_files_must_lie_inside_the_release(tmp_path):
    root = write_upstream(tmp_path / "look-bench")
    outside = tmp_path / "elsewhere.parquet"
    target = root / "v20251201" / "real_streetlook" / "gallery.parquet"
    target.rename(outside)
    target.symlink_to(outside)
    with pytest.raises(ValueError, match=r"v20251201/real_streetlook/gallery.parquet lies outside the look-bench/ folder"):
        build_release("upstream", tmp_path / "out", input_path=root)


def test_upstream_images_stored_by_path_are_never_opened(tmp_path):
    root = write_upstream(tmp_path / "look-bench")
    path = root / "v20251201" / "real_streetlook" / "gallery.parquet"
    table = pq.read_table(path)
    images = table.column("image").to_pylist()
    images[1] = {"bytes": None, "path": str(tmp_path / "elsewhere.png")}
    garment_png(tmp_path / "elsewhere.png", "red")
    pq.write_table(table.set_column(0, "image", pa.array(images, type=table.schema.field("image").type)), path)
    with pytest.raises(ValidationError, match=r"v20251201/real_streetlook/gallery.parquet row 2 \(item_id='102'\): image .*elsewhere.png "
                                              r"has no embedded bytes \(a path is never opened\)"):
        build_release("upstream", tmp_path / "out", input_path=root)
