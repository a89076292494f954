"""Issue 54 part 5: several `--proposer` in one run, merged field by field (the first named first, every proposer's
answer kept), "not applicable" proposed by zero-shot and by metadata, and a resumed run that names other proposers
refused."""
import collections
import json
import shutil

import pytest
from PIL import Image

from lookbench import cli
from lookbench.annotate.layered import Layered
from lookbench.annotate.proposers import Metadata, ZeroShot
from lookbench.annotate.run import annotate as annotate_run
from lookbench.dataset_builder.crawl import read_truth
from lookbench.dataset_builder.taxonomy import NOT_APPLICABLE, Taxonomy, load

from tests.annotate.test_annotate import _rows, annotate
from tests.helpers.annotated_release import TAXONOMY
from tests.helpers.raw_release import garment_png

ZS = "zero-shot:gr-lite-mini-text"
NONE = {"value": None, "confidence": 0.0}


@pytest.fixture(scope="module")
def small(mini_crawl, tmp_path_factory):
    """The Mini crawl's first 12 items, and what zero-shot alone proposes for each."""
    crawl = tmp_path_factory.mktemp("small") / "crawl"
    lines = (mini_crawl / "crawl" / "items.jsonl").read_text().splitlines()[:12]
    for line in lines:
        for key in ("image", "raw_image"):
            if relative := json.loads(line).get(key):
                (crawl / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(mini_crawl / "crawl" / relative, crawl / relative)
    (crawl / "items.jsonl").write_text("\n".join(lines) + "\n")
    alone = tmp_path_factory.mktemp("alone") / "raw"
    assert annotate(crawl, mini_crawl / "taxonomy.json", ZS, alone) == 0
    return crawl, {row["image"]: row["proposals"] for row in _rows(alone)}


def _truth(mini_crawl, row):
    return read_truth(mini_crawl / "truth.jsonl")[row["image"].removeprefix("images/")]


def test_metadata_then_zero_shot_each_field_from_the_first_that_answered_both_recorded(mini_crawl, small, tmp_path):
    crawl, alone = small
    raw = tmp_path / "raw"
    assert annotate(crawl, mini_crawl / "taxonomy.json", "metadata", raw, "--proposer", ZS) == 0
    rows = _rows(raw)
    assert len(rows) == 12
    zs_categories_right = 0
    for row in rows:
        truth, proposed, own = _truth(mini_crawl, row), row["proposals"], alone[row["image"]]
        assert row["proposer"]["name"] == f"metadata > {ZS}"
        assert row["proposer"]["revision"].startswith("rules-2 > ") and row["proposer"]["revision"].endswith("+prompts-2")
        # the title names the category: metadata's, at its confidence; zero-shot's own answer kept beside it
        assert proposed["category"] == {"value": truth["category"], "confidence": 1.0, "source": "metadata",
                                         "by": {"metadata": {"value": truth["category"], "confidence": 1.0},
                                                ZS: own["category"]}}
        attributes = proposed["attributes"]
        assert set(attributes) == set(truth["attributes"])
        assert attributes["color"]["source"] == "metadata" and attributes["color"]["value"] == truth["attributes"]["color"]
        assert attributes["color"]["confidence"] == 1.0 and attributes["color"]["by"][ZS]["value"] is not None
        for name, field in attributes.items():
            if name == "color":
                continue
            # the title says nothing else: zero-shot fills in, for metadata's category
            assert field["by"]["metadata"] == NONE and field["source"] == ZS
            assert {k: field[k] for k in ("value", "confidence")} == field["by"][ZS] and field["confidence"] < 1
        if own["category"]["value"] == truth["category"]:
            zs_categories_right += 1
            assert {n: f["by"][ZS] for n, f in attributes.items()} == own["attributes"]
    assert 0 < zs_categories_right < 12  # some items where zero-shot alone named another category: metadata fixed it
    report = json.loads((raw / "annotate_report.json").read_text())
    assert report["proposer"]["name"] == f"metadata > {ZS}" and report["not_proposed"] == {}


def test_the_order_given_decides_zero_shot_first_answers_every_field(mini_crawl, small, tmp_path):
    crawl, alone = small
    raw = tmp_path / "raw"
    assert annotate(crawl, mini_crawl / "taxonomy.json", ZS, raw, "--proposer", "metadata") == 0
    for row in _rows(raw):
        truth, proposed, own = _truth(mini_crawl, row), row["proposals"], alone[row["image"]]
        assert row["proposer"]["name"] == f"{ZS} > metadata"
        assert proposed["category"] == {**own["category"], "source": ZS,
                                         "by": {ZS: own["category"], "metadata": {"value": truth["category"], "confidence": 1.0}}}
        assert {f["source"] for f in proposed["attributes"].values()} == {ZS}
        assert {n: {"value": f["value"], "confidence": f["confidence"]} for n, f in proposed["attributes"].items()} == own["attributes"]
        # metadata is read for zero-shot's category: its colour is the title's, the rest not stated
        assert proposed["attributes"]["color"]["by"]["metadata"] == {"value": truth["attributes"]["color"], "confidence": 1.0}


def test_zero_shot_proposes_not_applicable_where_the_attribute_is_absent_and_not_elsewhere(mini_crawl):
    """A taxonomy without "sleeveless": the tiny model's absence prompt ("top with no sleeve length") wins on the
    sleeveless tops and dresses, on none of the sleeved ones. With "sleeveless" a value, it is that value instead."""
    values = load(mini_crawl / "taxonomy.json").values()
    truth = read_truth(mini_crawl / "truth.jsonl")
    keys = [k for k, t in truth.items() if t["category"] in ("tops", "dresses")]
    images = [Image.open(mini_crawl / "crawl" / k) for k in keys]
    found = {}
    for without in (False, True):  # the taxonomy as it is, then without "sleeveless"
        if without:
            for category in ("tops", "dresses"):
                values[category]["sleeve_length"] = ["short", "long"]
        taxonomy = Taxonomy.of("mini-sleeves", "1", values, "color")
        proposals = ZeroShot(taxonomy, "gr-lite-mini-text").propose([None] * len(keys), images,
                                                                   [truth[k]["category"] for k in keys])
        found[without] = collections.Counter((truth[k]["attributes"]["sleeve_length"], p["attributes"]["sleeve_length"]["value"])
                                             for k, p in zip(keys, proposals))
        assert all(p["attributes"]["color"]["value"] != NOT_APPLICABLE for p in proposals)  # the main attribute: never
    assert found[True] == {("long", "long"): 8, ("short", "short"): 1, ("sleeveless", NOT_APPLICABLE): 5, ("sleeveless", "short"): 1}
    assert NOT_APPLICABLE not in {proposed for _, proposed in found[False]}


@pytest.fixture
def worded(tmp_path):
    """Items whose descriptions say an attribute is absent, in the test taxonomy (tops: colour, sleeve, cuff)."""
    crawl = tmp_path / "crawl"
    base = {"timestamp": "2026-01-02T03:04:05Z", "subset": "RealStudioFlat", "split": "gallery"}
    texts = {"n1": ("red", "Sleeveless red top", "No cuffs."), "n2": ("blue", "Blue top", "Long sleeves with ribbed cuffs."),
             "n3": ("green", "Green top", "Short sleeves, without a cuff; no colour to speak of"),
             "n4": ("red", "Red skirt", "No sleeves")}
    items = []
    for i, (item_id, (colour, title, description)) in enumerate(texts.items()):
        garment_png(crawl / "img" / f"{item_id}.png", colour, variant=i)
        items.append({**base, "item_id": item_id, "image": f"img/{item_id}.png", "title": title, "description": description})
    (crawl / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    return crawl, TAXONOMY.write(tmp_path / "taxonomy.json")


def test_metadata_proposes_not_applicable_when_the_words_say_so(worded, tmp_path):
    crawl, taxonomy = worded
    raw = tmp_path / "raw"
    assert annotate(crawl, taxonomy, "metadata", raw) == 0
    got = {row["item_id"]: {n: a["value"] for n, a in row["proposals"]["attributes"].items()} for row in _rows(raw)}
    assert got == {"n1": {"colour": "red", "sleeve": NOT_APPLICABLE, "cuff": NOT_APPLICABLE},
                   "n2": {"colour": "blue", "sleeve": "long", "cuff": "ribbed"},
                   # "no colour" is no answer for the main attribute, which is never "not applicable"
                   "n3": {"colour": "green", "sleeve": "short", "cuff": NOT_APPLICABLE},
                   "n4": {"colour": "red", "length": None}}  # a skirt has no sleeve attribute to be absent


def test_metadata_reads_absence_as_the_taxonomy_s_own_value_where_it_has_one(tmp_path):
    crawl = tmp_path / "crawl"
    garment_png(crawl / "a.png", "red")
    (crawl / "items.jsonl").write_text(json.dumps({"item_id": "a", "image": "a.png", "timestamp": "2026-01-02T03:04:05Z",
                                                  "subset": "RealStudioFlat", "split": "query",
                                                  "title": "Red top", "description": "No sleeves, no collar"}) + "\n")
    mini = Taxonomy.of("m", "1", {"tops": {"color": ["red"], "sleeve_length": ["sleeveless", "short"],
                                           "neckline": ["crew", "collar"]}}, "color")
    assert annotate(crawl, mini.write(tmp_path / "t.json"), "metadata", tmp_path / "raw") == 0
    [row] = _rows(tmp_path / "raw")
    # "no sleeves" is the value "sleeveless"; "no collar" denies the neckline's value "collar": not proposed
    assert {n: a["value"] for n, a in row["proposals"]["attributes"].items()} == {
        "color": "red", "sleeve_length": "sleeveless", "neckline": None}


class _Dies(Metadata):
    """Metadata that is killed on its second batch (what `kill -9` would leave: the first batch on disk)."""

    def propose(self, items, images, given=None):
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == 2:  # every Mini title names a category: one call per batch
            raise KeyboardInterrupt
        return super().propose(items, images, given)


@pytest.mark.slow
def test_a_resumed_run_refuses_another_proposer_list_and_checks_the_merged_batches(mini_crawl, small, tmp_path, capsys):
    crawl, _ = small
    taxonomy, raw = load(mini_crawl / "taxonomy.json"), tmp_path / "raw"
    with pytest.raises(KeyboardInterrupt):
        annotate_run(crawl, taxonomy, Layered(taxonomy, [_Dies(taxonomy), ZeroShot(taxonomy, "gr-lite-mini-text")]),
                     raw, batch_size=5)
    [batch] = list((raw / ".annotate").glob("batch-*.json"))
    for order in ([ZS, "metadata"], [ZS], ["metadata"]):
        flags = [x for name in order[1:] for x in ("--proposer", name)]
        assert annotate(crawl, mini_crawl / "taxonomy.json", order[0], raw, *flags) == 2
        err = capsys.readouterr().err
        assert "holds an unfinished annotate run of another proposer ('metadata > zero-shot:gr-lite-mini-text', this run " \
               f"{' > '.join(order)!r})" in err and "(every one, in the same order)" in err
    # a merged field changed on disk (its source no longer the first that answered) is a named skip, tried again
    entries = json.loads(batch.read_text())
    first = entries["entries"][0]["row"]["proposals"]["attributes"]
    name = next(n for n, f in first.items() if f["source"] == ZS)
    first[name]["source"] = "metadata"
    batch.write_text(json.dumps(entries))
    assert annotate(crawl, mini_crawl / "taxonomy.json", "metadata", raw, "--proposer", ZS, "--batch-size", "5") == 0
    out = capsys.readouterr().out
    assert "resumed: 5 item(s) were done by an earlier run" in out and "skipped items: 1" in out
    assert f"{batch.name} was changed: its {name!r} proposal is not the first answer of its proposers; not taken" in out
    whole = tmp_path / "whole"
    assert annotate(crawl, mini_crawl / "taxonomy.json", "metadata", whole, "--proposer", ZS, "--batch-size", "5") == 0
    kept = [r for r in _rows(whole) if r["image"] != entries["entries"][0]["row"]["image"]]
    assert len(kept) == 11 and [r["proposals"] for r in _rows(raw)] == [r["proposals"] for r in kept]


def test_a_proposer_named_twice_is_refused_in_one_line(worded, tmp_path, capsys):
    crawl, taxonomy = worded
    assert annotate(crawl, taxonomy, "metadata", tmp_path / "raw", "--proposer", "metadata") == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err == "lookbench annotate: error: --proposer metadata is given twice; name each proposer once, the more precise first"
    assert not (tmp_path / "raw").exists()
