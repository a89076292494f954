"""The taxonomy as data (dataset_builder/taxonomy.py, issue 48): the versioned file, its refusals, the rows a build
refuses against it (named by row and value), the taxonomy every source ships, and a crawl with its truth kept aside."""
import json

import pytest
from datasets import load_dataset

from lookbench import cli
from lookbench.dataset_builder import crawl, fashion_mnist, mini
from lookbench.dataset_builder.taxonomy import NOT_APPLICABLE, Taxonomy, TaxonomyError, load, parse

from tests.helpers.photos import small_photos
from tests.helpers.raw_build import FLAT, build
from tests.helpers.raw_release import edit_rows

TOPS = {"tops": {"colour": ["red", "blue", "green", "black"], "sleeve": ["short", "long"]}}


def _file(tmp_path, data) -> str:
    path = tmp_path / "taxonomy.json"
    path.write_text(json.dumps(data))
    return str(path)


def _good() -> dict:
    return Taxonomy.of("shop", "2", TOPS, "colour").to_json()


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d.pop("version"), "version is missing: a non-empty string"),
    (lambda d: d.update(taxonomy_format=2), "taxonomy_format is 2, this version reads 1"),
    (lambda d: d["categories"]["tops"].update(main_attribute="fit"), "'tops' main_attribute 'fit' is not one of its attributes (colour, sleeve)"),
    (lambda d: d["categories"]["tops"]["attributes"]["sleeve"].append("not applicable"), "'tops' -> 'sleeve' repeats a value or lists 'not applicable'"),
    (lambda d: d["categories"]["tops"]["attributes"]["sleeve"].append("short"), "'tops' -> 'sleeve' repeats a value"),
    (lambda d: d["categories"].update(Tops=d["categories"]["tops"]), "category 'Tops' must be lower-case"),
    (lambda d: d["categories"]["tops"]["attributes"].update(fit=[]), "'tops' -> 'fit' must be a non-empty list of strings, got []"),
    (lambda d: d.update(colours=[]), "unknown key(s) 'colours'"),
])
def test_a_malformed_taxonomy_is_refused_naming_the_file_and_the_entry(tmp_path, edit, expected):
    data = _good()
    edit(data)
    path = _file(tmp_path, data)
    with pytest.raises(TaxonomyError) as info:
        load(path)
    assert str(info.value).startswith(f"taxonomy {path}: ") and expected in str(info.value)


def test_round_trip_revision_and_not_applicable(tmp_path):
    taxonomy = Taxonomy.of("shop", "2", TOPS, "colour")
    assert load(taxonomy.write(tmp_path / "t.json")) == taxonomy
    assert taxonomy.allows("tops", "sleeve", NOT_APPLICABLE) and not taxonomy.allows("tops", "sleeve", "sideways")
    changed = parse({**_good(), "categories": {"tops": {"main_attribute": "colour", "attributes": {"colour": ["red"], "sleeve": ["short"]}}}}, "x")
    assert changed.version == taxonomy.version and changed.revision != taxonomy.revision  # same label, other content
    assert taxonomy.row_problems("tops", "red", [{"name": "sleeve", "value": NOT_APPLICABLE}]) == []
    assert taxonomy.row_problems("tops", "red", [{"name": "colour", "value": "blue"}]) == [
        "main_attribute 'red' disagrees with the row's 'colour' 'blue'"]


def test_build_refuses_unknown_category_attribute_and_value_naming_row_and_value(release, tmp_path, capsys):
    edit_rows(release, FLAT, "query", {
        1: {"category": "spacesuits"},
        2: {"attributes": {"colour": "red", "fabric": "silk"}, "main_attribute": "red"},
        3: {"attributes": {"colour": "mauve"}, "main_attribute": "mauve"},
    })
    Taxonomy.of("shop", "2", TOPS, "colour").write(release / "taxonomy.json")  # the release's own: no --taxonomy needed
    assert build(release, tmp_path / "out", "--subsets", FLAT) == 2
    err = capsys.readouterr().err
    assert f"{FLAT}/query.jsonl line 1 (item_id='Real0'): category 'spacesuits' is not in the taxonomy shop 2 (" in err
    assert f"{FLAT}/query.jsonl line 2 (item_id='Real1'): attribute 'fabric' is not in the taxonomy of 'tops'" in err
    assert f"{FLAT}/query.jsonl line 3 (item_id='Real2'): value 'mauve' of attribute 'colour' is not in the taxonomy of 'tops'" in err
    assert f"{FLAT}/query.jsonl line 3 (item_id='Real2'): main_attribute 'mauve' is not a value of 'tops'" in err
    assert not (tmp_path / "out").exists()


def test_a_built_release_ships_its_taxonomy_and_its_card_describes_it(release, tmp_path):
    taxonomy = Taxonomy.of("shop", "2", TOPS, "colour")
    taxonomy.write(release / "taxonomy.json")
    out = tmp_path / "out"
    assert build(release, out) == 0
    assert load(out / "taxonomy.json") == taxonomy
    card = (out / "README.md").read_text()
    assert f"**shop**, version 2 (content sha256 `{taxonomy.revision}…`)" in card
    assert "| `tops` | `colour` | colour (4), sleeve (2) |" in card
    assert len(load_dataset(str(out), FLAT, split="query")) == 6  # the file beside the configs changes no config


def test_fashion_mnist_and_mini_emit_their_taxonomy_and_their_rows_pass_it(tmp_path):
    photos = small_photos(tmp_path / "idx", n=40)
    out = tmp_path / "fm"
    assert cli.main(["build", "--source", "fashion-mnist", "--input", str(photos), "--out", str(out), "--quiet"]) == 0
    assert load(out / "taxonomy.json") == fashion_mnist.TAXONOMY
    assert set(fashion_mnist.TAXONOMY.categories) == set(fashion_mnist.CLASSES)
    assert {c.main_attribute for c in fashion_mnist.TAXONOMY.categories.values()} == {"shade"}
    raw = tmp_path / "raw"
    mini.generate_raw_release(raw, scale=0.05)
    assert load(raw / "taxonomy.json") == mini.MINI_TAXONOMY


def test_a_crawl_keeps_its_labels_aside(tmp_path):
    out = crawl.write_crawl("mini", tmp_path / "c", scale=0.05)
    items = [json.loads(line) for line in (out / "crawl" / "items.jsonl").read_text().splitlines()]
    truth = crawl.read_truth(out / "truth.jsonl")
    taxonomy = load(out / "taxonomy.json")
    assert taxonomy == mini.MINI_TAXONOMY and len(items) == len(truth) > 20
    for item in items:
        assert not set(item) & {"category", "main_attribute", "attributes"}
        assert (out / "crawl" / item["image"]).is_file() and item["image"] in truth
        labels = truth[item["image"]]
        pairs = [{"name": n, "value": v} for n, v in labels["attributes"].items()]
        assert taxonomy.row_problems(labels["category"], labels["main_attribute"], pairs) == []
        if item.get("bbox"):
            assert (out / "crawl" / item["raw_image"]).is_file() and item["outfit_id"]
    assert {item["subset"] for item in items} == {"RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook", "noise"}
    assert not list((out / "crawl").rglob("*.json*"))[1:]  # items.jsonl is the crawl's one JSON file
