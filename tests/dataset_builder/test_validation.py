"""The checks of a build's rows and images (dataset_builder/validation.py) on hostile and careless raw releases:
images PIL refuses, strict types and bounding boxes, release names, empty and all-invalid splits, malformed
taxonomies (issue 9), each run through the CLI where a user sees it."""
import re

import pytest
from PIL import Image

from tests.helpers.raw_release import DELETE, bomb_png, edit_rows, write_release
from tests.helpers.raw_build import FLAT, build
from tests.helpers.messages import unwrapped


def test_decompression_bombs_are_that_rows_problem(release, tmp_path, monkeypatch, capsys):
    bomb_png(release / FLAT / "images" / "bomb.png")
    (release / FLAT / "images" / "text.png").write_text("not an image")
    edit_rows(release, FLAT, "query", {1: {"image": "images/bomb.png"}, 2: {"image": "images/text.png"}})
    assert build(release, tmp_path / "out", "--subsets", FLAT) == 2
    err = unwrapped(capsys.readouterr().err)
    assert f"{FLAT}/query.jsonl line 1 (item_id='Real0'): images/bomb.png: refused as a decompression bomb (Image size (900000000 pixels)" in err
    assert f"{FLAT}/query.jsonl line 2 (item_id='Real1'): images/text.png is not an image format PIL can read" in err
    assert "BytesIO" not in err

    # Between one and two times the limit PIL only warns; the build treats the warning as the same error.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 64 * 64 - 1)
    edit_rows(release, FLAT, "query", {1: {"image": "images/Real0-1.png"}, 2: {"image": "images/Real1-1.png"}})
    assert build(release, tmp_path / "out", "--subsets", FLAT, "--skip-invalid") == 2
    err = unwrapped(capsys.readouterr().err)
    assert "every one of its 6 row(s) is invalid; nothing is left to build" in err
    assert f"{FLAT}/query.jsonl line 1 (item_id='Real0'): images/Real0-1.png: refused as a decompression bomb (Image size (4096 pixels)" in err


def test_strict_types_and_bboxes(release, tmp_path, capsys):
    edit_rows(release, FLAT, "query", {
        1: {"category": ["tops"]}, 2: {"item_id": 7}, 3: {"item_id": True}, 4: {"bbox": [float("nan"), 0, 5, 5]},
        5: {"bbox": "1234"}, 6: {"bbox": [-1, 0, 5, 5], "main_attribute": 3},
    })
    edit_rows(release, FLAT, "gallery", {1: {"bbox": [0, 0, True, 5]}, 2: {"bbox": [0, 0, float("inf"), 5]},
                                         3: {"attributes": {"colour": 5}}, 4: {"timestamp": 20250101}})
    assert build(release, tmp_path / "out", "--subsets", FLAT) == 2
    err = unwrapped(capsys.readouterr().err)
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


def test_row_release_must_be_a_snapshot_name(release, tmp_path, capsys):
    edit_rows(release, "noise", "gallery", {2: {"release": "latest"}})
    assert build(release, tmp_path / "out", "--subsets", "noise") == 2
    assert "noise/gallery.jsonl line 2 (item_id='noise1'): release 'latest' is not a snapshot name v<YYYYMMDD>" in capsys.readouterr().err


def test_empty_split_and_all_invalid_split_are_clear_lookbench_errors(release, tmp_path, capsys):
    (release / "AIGen-Studio" / "query.jsonl").write_text("\n")
    assert build(release, tmp_path / "out") == 2
    err = unwrapped(capsys.readouterr().err)
    assert "AIGen-Studio/query.jsonl: has no rows" in err and "corresponds to no data" not in err

    write_release(release)  # back to a clean release
    edit_rows(release, "noise", "gallery", {line: {"main_attribute": DELETE} for line in range(1, 6)})
    assert build(release, tmp_path / "out", "--skip-invalid") == 2
    err = unwrapped(capsys.readouterr().err)
    assert "noise/gallery.jsonl: every one of its 5 row(s) is invalid; nothing is left to build" in err
    assert "noise/gallery.jsonl: missing required field(s): main_attribute — 5 rows" in err
    assert "corresponds to no data" not in err


@pytest.mark.parametrize("text, expected", [
    ('{"tops": {"colour": ["red",]}}', r"not valid JSON \(Expecting value at line 1 column \d+\)"),
    ('["tops"]', r"expected an object \{\"taxonomy_format\": 1, .*got a JSON list"),
    ('{"tops": {"colour": ["red"]}}', r"taxonomy_format is none, this version reads 1"),
])
def test_malformed_taxonomy_names_the_file_and_the_problem(release, tmp_path, capsys, text, expected):
    taxonomy = tmp_path / "taxonomy.json"
    taxonomy.write_text(text)
    assert build(release, tmp_path / "out", "--taxonomy", str(taxonomy)) == 2
    err = unwrapped(capsys.readouterr().err)
    assert f"taxonomy {taxonomy}: " in err
    assert re.search(expected, err), err
