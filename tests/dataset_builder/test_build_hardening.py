"""Hostile and careless raw releases: nothing read from outside, nothing lost, nothing silently wrong (issue 9).

Every hostile input is made here; the build is run through the CLI where a user sees it.
"""
import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from lookbench import cli
from lookbench.dataset_builder import ValidationError, build_release, sources
from tests.helpers.raw_release import DELETE, bomb_png, edit_rows, garment_png, write_release, write_upstream

FLAT = "RealStudioFlat"


@pytest.fixture
def release(tmp_path):
    return write_release(tmp_path / "raw")


def build(release, out, *flags):
    return cli.main(["build", "--source", "raw", "--input", str(release), "--out", str(out), "--quiet", *flags])


def parquet_images(out: Path) -> list[dict]:
    """Every image and raw_image cell of every shard, read straight from Parquet."""
    cells = []
    for shard in sorted(out.rglob("*.parquet")):
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
    err = capsys.readouterr().err
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
    err = capsys.readouterr().err
    assert f"{FLAT}/query.jsonl line 2 (item_id='Real1'): images/big.png is larger than the {big.stat().st_size - 1}-byte limit" in err


def test_decompression_bombs_are_that_rows_problem(release, tmp_path, monkeypatch, capsys):
    bomb_png(release / FLAT / "images" / "bomb.png")
    (release / FLAT / "images" / "text.png").write_text("not an image")
    edit_rows(release, FLAT, "query", {1: {"image": "images/bomb.png"}, 2: {"image": "images/text.png"}})
    assert build(release, tmp_path / "out", "--subsets", FLAT) == 2
    err = capsys.readouterr().err
    assert f"{FLAT}/query.jsonl line 1 (item_id='Real0'): images/bomb.png: refused as a decompression bomb (Image size (900000000 pixels)" in err
    assert f"{FLAT}/query.jsonl line 2 (item_id='Real1'): images/text.png is not an image format PIL can read" in err
    assert "BytesIO" not in err

    # Between one and two times the limit PIL only warns; the build treats the warning as the same error.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 64 * 64 - 1)
    edit_rows(release, FLAT, "query", {1: {"image": "images/Real0-1.png"}, 2: {"image": "images/Real1-1.png"}})
    assert build(release, tmp_path / "out", "--subsets", FLAT, "--skip-invalid") == 2
    err = capsys.readouterr().err
    assert "every one of its 6 row(s) is invalid; nothing is left to build" in err
    assert f"{FLAT}/query.jsonl line 1 (item_id='Real0'): images/Real0-1.png: refused as a decompression bomb (Image size (4096 pixels)" in err


def test_built_dataset_embeds_every_image_whatever_the_working_directory(release, tmp_path, monkeypatch):
    monkeypatch.chdir(release / FLAT)  # every "images/..." path of this subset now also exists relative to cwd
    out = tmp_path / "out"
    build_release("raw", out, input_path=release, release="v20251201")
    cells = parquet_images(out)
    assert len(cells) == 16 + 16 + 12 + 12 + 5 + 6 + 6  # the image of every row, the raw image of every street-look query
    assert all(cell["bytes"] for cell in cells) and all(cell["path"] is None for cell in cells)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_failed_rebuild_leaves_the_previous_folder_untouched_and_lists_every_subset(release, tmp_path, capsys):
    out, train = tmp_path / "data" / "lookbench", tmp_path / "data" / "train"
    assert build(release, out) == 0
    before = _snapshot(out)
    edit_rows(release, "AIGen-Studio", "gallery", {line: {"category": DELETE} for line in range(1, 11)})
    edit_rows(release, "noise", "gallery", {5: {"timestamp": "2999-01-01T00:00:00Z"}})
    assert build(release, out) == 2
    err = capsys.readouterr().err
    assert "11 invalid row(s) (11 problem(s))" in err
    assert ("AIGen-Studio/gallery.jsonl: missing required field(s): category — 10 rows: lines 1 ('AIGe0'), 2 ('AIGe1'), "
            "3 ('AIGe2') and 7 more") in err
    assert "noise/gallery.jsonl line 5 (item_id='noise4'): timestamp 2999-01-01T00:00:00+00:00 is in the future" in err
    assert _snapshot(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["lookbench"]  # no staging folder left behind
    (release / "train").mkdir()
    assert build(release, out, "--train-out", str(train)) == 2  # train/ has no train.jsonl: nothing is written
    assert "folder train/ has no train.jsonl" in capsys.readouterr().err
    assert _snapshot(out) == before and not train.exists()


def test_out_that_is_not_an_earlier_build_is_refused(release, tmp_path, capsys):
    out = tmp_path / "mine"
    (out / "notes").mkdir(parents=True)
    assert build(release, out) == 2
    assert "holds notes, which no build wrote; a build replaces the whole folder" in capsys.readouterr().err
    assert (out / "notes").is_dir()
    (tmp_path / "file").write_text("mine")
    assert build(release, tmp_path / "file") == 2
    assert f"--out {tmp_path / 'file'} is a file, not a dataset folder" in capsys.readouterr().err
    assert (tmp_path / "file").read_text() == "mine"


def test_strict_types_and_bboxes(release, tmp_path, capsys):
    edit_rows(release, FLAT, "query", {
        1: {"category": ["tops"]}, 2: {"item_id": 7}, 3: {"item_id": True}, 4: {"bbox": [float("nan"), 0, 5, 5]},
        5: {"bbox": "1234"}, 6: {"bbox": [-1, 0, 5, 5], "main_attribute": 3},
    })
    edit_rows(release, FLAT, "gallery", {1: {"bbox": [0, 0, True, 5]}, 2: {"bbox": [0, 0, float("inf"), 5]},
                                         3: {"attributes": {"colour": 5}}, 4: {"timestamp": 20250101}})
    assert build(release, tmp_path / "out", "--subsets", FLAT) == 2
    err = capsys.readouterr().err
    assert "10 invalid row(s) (11 problem(s))" in err  # line 6 has two problems and is one row
    q, g = f"{FLAT}/query.jsonl", f"{FLAT}/gallery.jsonl"
    for expected in [
        f"{q} line 1 (item_id='Real0'): category must be a string, got ['tops']",
        f"{q} line 2 (item_id=None): item_id must be a string, got 7",
        f"{q} line 3 (item_id=None): item_id must be a string, got True",
        f"{q} line 4 (item_id='Real3'): bad bbox [nan, 0, 5, 5]: every coordinate must be finite",
        f"{q} line 5 (item_id='Real4'): bad bbox '1234': expected a list of four numbers",
        f"{q} line 6 (item_id='Real5'): main_attribute must be a string, got 3",
        f"{q} line 6 (item_id='Real5'): bad bbox [-1, 0, 5, 5]: coordinates must be non-negative",
        f"{g} line 1 (item_id='Real0'): bad bbox [0, 0, True, 5]: expected a list of four numbers",
        f"{g} line 2 (item_id='Real1'): bad bbox [0, 0, inf, 5]: every coordinate must be finite",
        f"{g} line 3 (item_id='Real2'): unparseable attributes: attribute 'colour': 5 needs a string name and a string value",
        f"{g} line 4 (item_id='Real3'): bad timestamp 20250101: expected an ISO 8601 string",
    ]:
        assert expected in err, (expected, err)


@pytest.mark.parametrize("name", ["yesterday", "v2025-12-01", "v20251341"])
def test_release_name_is_checked_before_anything_is_read(release, tmp_path, capsys, name):
    assert build(release, tmp_path / "out", "--release", name) == 2
    assert capsys.readouterr().err.startswith(f"lookbench build: error: Release {name!r} is not a snapshot name v<YYYYMMDD>")


def test_row_release_must_be_a_snapshot_name(release, tmp_path, capsys):
    edit_rows(release, "noise", "gallery", {2: {"release": "latest"}})
    assert build(release, tmp_path / "out", "--subsets", "noise") == 2
    assert "noise/gallery.jsonl line 2 (item_id='noise1'): release 'latest' is not a snapshot name v<YYYYMMDD>" in capsys.readouterr().err


def test_subset_folders_go_through_the_alias_table(release, tmp_path, capsys):
    (release / "RealStreetLook").rename(release / "real_streetlook")
    out = tmp_path / "out"
    assert build(release, out) == 0
    assert "RealStreetLook     query=6  gallery=6" in capsys.readouterr().out
    assert (out / "RealStreetLook" / "query-00000-of-00001.parquet").is_file()

    (release / "RealStudoFlat").mkdir()
    (release / "AIGen-Studio" / "query.jsonl").unlink()
    assert build(release, tmp_path / "out2") == 2
    err = capsys.readouterr().err
    assert "folder RealStudoFlat/: Unknown LookBench subset 'RealStudoFlat'. Did you mean 'RealStudioFlat'" in err
    assert "folder AIGen-Studio/ has no query.jsonl" in err


def test_empty_split_and_all_invalid_split_are_clear_lookbench_errors(release, tmp_path, capsys):
    (release / "AIGen-Studio" / "query.jsonl").write_text("\n")
    assert build(release, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "AIGen-Studio/query.jsonl: has no rows" in err and "corresponds to no data" not in err

    write_release(release)  # back to a clean release
    edit_rows(release, "noise", "gallery", {line: {"main_attribute": DELETE} for line in range(1, 6)})
    assert build(release, tmp_path / "out", "--skip-invalid") == 2
    err = capsys.readouterr().err
    assert "noise/gallery.jsonl: every one of its 5 row(s) is invalid; nothing is left to build" in err
    assert "noise/gallery.jsonl: missing required field(s): main_attribute — 5 rows" in err
    assert "corresponds to no data" not in err


def test_jsonl_that_is_not_utf8_is_named_and_skippable(release, tmp_path, capsys):
    path = release / "noise" / "gallery.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace('"tops"', '"tr\xe9s"')
    path.write_bytes("\n".join(lines[:2]).encode() + b"\n" + lines[2].encode("latin-1") + b"\n" + "\n".join(lines[3:]).encode() + b"\n")
    utf16 = release / "AIGen-Studio" / "query.jsonl"
    utf16.write_bytes(utf16.read_text().encode("utf-16"))
    assert build(release, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "noise/gallery.jsonl line 3 (item_id=None): not UTF-8 text (byte 0xe9 at column " in err
    assert "AIGen-Studio/query.jsonl: not UTF-8 text (it looks like UTF-16; save the file as UTF-8) — 6 rows: lines 1 (None)" in err

    write_release(tmp_path / "clean")
    utf16.write_bytes((tmp_path / "clean" / "AIGen-Studio" / "query.jsonl").read_bytes())
    out = tmp_path / "out"
    assert build(release, out, "--skip-invalid") == 0
    assert "skipped rows: 1 (1 problem(s))" in capsys.readouterr().out
    assert report(out)["skipped"][0] | {"message": ""} == {
        "config": "noise", "split": "gallery", "file": "noise/gallery.jsonl", "line": 3, "item_id": None, "message": ""}


@pytest.mark.parametrize("text, expected", [
    ('{"tops": {"colour": ["red",]}}', r"not valid JSON \(Expecting value at line 1 column \d+\)"),
    ('["tops"]', r"expected an object category -> \{attribute: \[allowed values, ...\]\}, got a JSON list"),
    ('{"tops": {"colour": "red"}}', r"'tops' -> 'colour' must be a list of strings, got 'red'"),
])
def test_malformed_taxonomy_names_the_file_and_the_problem(release, tmp_path, capsys, text, expected):
    taxonomy = tmp_path / "taxonomy.json"
    taxonomy.write_text(text)
    assert build(release, tmp_path / "out", "--taxonomy", str(taxonomy)) == 2
    err = capsys.readouterr().err
    assert f"taxonomy {taxonomy}: " in err
    assert re.search(expected, err), err


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


def test_build_is_quiet_by_default_and_says_more_when_asked(release, tmp_path, capsys):
    base = ["build", "--source", "raw", "--input", str(release), "--subsets", "noise", "--out"]
    assert cli.main(base + [str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "validate: 100%" in err and "write   : 100%" in err
    assert "Generating" not in err and "Creating parquet" not in err
    assert cli.main(base + [str(tmp_path / "b"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert cli.main(base + [str(tmp_path / "c"), "--verbose"]) == 0
    err = capsys.readouterr().err
    assert "Generating gallery split" in err and "validate: 100%" in err
    assert cli.main(["subsets", "--data", str(tmp_path / "a"), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "noise" in captured.out
