"""`lookbench annotate` (issue 48): each proposer on a small crawl through the CLI, the row contract of its output,
bad items and images counted and named, the tiny VLM's invalid answers counted through the real transformers path,
and a run killed mid-way resumed to the same release."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lookbench import cli
from lookbench.annotate.vlm import parse_answer
from lookbench.dataset_builder.crawl import read_truth
from lookbench.dataset_builder.taxonomy import NOT_APPLICABLE, Taxonomy, load

from tests.helpers.hub_cache import put_snapshot, tiny_vlm
from tests.helpers.raw_release import garment_png

SHOP = Taxonomy.of("shop", "1", {"tops": {"colour": ["red", "blue", "green"], "pattern": ["solid", "stripes"]},
                                 "shoes": {"colour": ["red", "blue", "green"], "sole": ["white", "black"]}}, "colour")
LABELS = {"category", "main_attribute", "attributes"}


def _answers(row: dict) -> tuple:
    proposed = row["proposals"]
    return proposed["category"]["value"], {name: a["value"] for name, a in proposed["attributes"].items()}


def _rows(raw: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(raw.glob("*/*.jsonl")) for line in path.read_text().splitlines()]


@pytest.fixture
def shop_crawl(tmp_path):
    """Five items of a hand-written crawl (one with a broken image, one outside the folder) and the taxonomy."""
    crawl = tmp_path / "crawl"
    for name, colour in (("a", "red"), ("b", "blue"), ("c", "green"), ("d", "black")):
        garment_png(crawl / "img" / f"{name}.png", colour)
    (crawl / "img" / "broken.png").write_bytes((crawl / "img" / "a.png").read_bytes()[:60])
    base = {"timestamp": "2026-01-02T03:04:05Z", "subset": "real_studio_flat", "split": "query"}
    items = [
        {**base, "item_id": "p1", "image": "img/a.png", "title": "Red striped top", "description": "Cotton."},
        {**base, "item_id": "p2", "image": "img/b.png", "split": "gallery", "title": "Sneakers", "shop_category": "shoes",
         "description": "Blue canvas, white sole"},
        {**base, "item_id": "p3", "image": "img/c.png", "title": "Green top or shoes"},
        {**base, "item_id": "p4", "image": "img/broken.png", "title": "Blue top"},
        {**base, "item_id": "p5", "image": "../outside.png"},
        {**base, "item_id": "p6", "image": "img/d.png", "subset": "Moonwalk"},
    ]
    (crawl / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items) + "{not json\n")
    taxonomy = SHOP.write(tmp_path / "taxonomy.json")
    return crawl, taxonomy


def annotate(crawl, taxonomy, proposer, out, *flags) -> int:
    return cli.main(["annotate", "--input", str(crawl), "--taxonomy", str(taxonomy), "--proposer", proposer,
                     "--out", str(out), "--quiet", *flags])


def test_metadata_proposals_the_row_contract_and_every_skip_named(shop_crawl, tmp_path, capsys):
    crawl, taxonomy = shop_crawl
    raw = tmp_path / "raw"
    assert annotate(crawl, taxonomy, "metadata", raw) == 0
    out = capsys.readouterr().out
    assert "skipped items: 4" in out
    assert "items.jsonl line 4 (item_id='p4'): unreadable or truncated image img/broken.png" in out
    assert "items.jsonl line 5 (item_id='p5'): ../outside.png lies outside the crawl/ folder" in out
    assert "items.jsonl line 6 (item_id='p6'): Unknown LookBench subset 'Moonwalk'" in out
    assert "items.jsonl line 7: not valid JSON" in out
    report = json.loads((raw / "annotate_report.json").read_text())
    assert len(report["skipped"]) == 4 and report["rows"] == {"RealStudioFlat": {"query": 2, "gallery": 1}}
    assert load(raw / "taxonomy.json") == SHOP and not (raw / ".annotate").exists()

    rows = {row["item_id"]: row for row in _rows(raw)}
    assert set(rows) == {"p1", "p2", "p3"}
    for row in rows.values():
        assert not LABELS & set(row) and row["proposer"] == {"name": "metadata", "revision": "rules-2"}
        assert (raw / "RealStudioFlat" / row["image"]).read_bytes() == (crawl / row["image"].removeprefix("images/")).read_bytes()
    assert rows["p1"]["proposals"] == {"category": {"value": "tops", "confidence": 1.0}, "attributes": {
        "colour": {"value": "red", "confidence": 1.0}, "pattern": {"value": "stripes", "confidence": 1.0}}}
    # "white" is no colour of the shoe here but its sole: the description says both, each goes where it can
    assert rows["p2"]["proposals"]["category"]["value"] == "shoes"
    assert rows["p2"]["proposals"]["attributes"] == {"colour": {"value": "blue", "confidence": 1.0},
                                                     "sole": {"value": "white", "confidence": 1.0}}
    assert rows["p3"]["proposals"] == {"category": {"value": None, "confidence": 0.0}, "attributes": {}}  # two categories named
    assert rows["p1"]["title"] == "Red striped top" and rows["p2"]["shop_category"] == "shoes"


def test_the_output_refuses_to_build_until_reviewed(shop_crawl, tmp_path, capsys):
    crawl, taxonomy = shop_crawl
    assert annotate(crawl, taxonomy, "metadata", tmp_path / "raw") == 0
    assert cli.main(["build", "--source", "raw", "--input", str(tmp_path / "raw"), "--out", str(tmp_path / "built"), "--quiet"]) == 2
    assert "not reviewed (no reviewer has labelled it; lookbench review)" in capsys.readouterr().err


def test_zero_shot_proposes_every_attribute_of_its_category_and_beats_chance(mini_crawl, tmp_path):
    raw = tmp_path / "raw"
    assert annotate(mini_crawl / "crawl", mini_crawl / "taxonomy.json", "zero-shot:gr-lite-mini-text", raw, "--batch-size", "8") == 0
    taxonomy, truth, rows = load(mini_crawl / "taxonomy.json"), read_truth(mini_crawl / "truth.jsonl"), _rows(raw)
    assert len(rows) == len(truth)
    right = 0
    for row in rows:
        proposed = row["proposals"]
        category = proposed["category"]["value"]
        assert row["proposer"]["name"] == "zero-shot:gr-lite-mini-text" and row["proposer"]["revision"].endswith("+prompts-2")
        assert set(proposed["attributes"]) == set(taxonomy.categories[category].attributes)
        for name, answer in proposed["attributes"].items():
            assert taxonomy.allows(category, name, answer["value"]) and 0 < answer["confidence"] <= 1
        right += category == truth[row["image"].removeprefix("images/")]["category"]
    assert right / len(rows) > 0.5  # eight categories: chance is 1/8 (benchmarks/RESULTS.md measures it at scale)


def test_tiny_vlm_through_transformers_its_invalid_answers_counted(shop_crawl, tmp_path, monkeypatch, capsys):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    put_snapshot(tmp_path / "hub", "tiny/vlm", "e" * 40, tiny_vlm(tmp_path / "vlm"))
    crawl, taxonomy = shop_crawl
    raw = tmp_path / "raw"
    assert annotate(crawl, taxonomy, "vlm:tiny/vlm", raw, "--batch-size", "2") == 0
    out = capsys.readouterr().out
    assert "invalid answers (not proposed): 3" in out  # a random model's text is never a valid answer
    assert json.loads((raw / "annotate_report.json").read_text())["invalid_answers"] == 3
    rows = _rows(raw)
    assert [r["proposals"] for r in rows] == [{"category": {"value": None, "confidence": 0.0}, "attributes": {}}] * 3
    assert {r["proposer"]["name"] for r in rows} == {"vlm:tiny/vlm"}
    assert {r["proposer"]["revision"] for r in rows} == {"e" * 40 + "+prompts-1"}


@pytest.mark.parametrize("text, expected", [
    ('Sure! {"category": "tops", "attributes": {"colour": "red", "pattern": "not applicable"}}',
     ("tops", {"colour": "red", "pattern": NOT_APPLICABLE}, True)),
    ('{"category": "Tops", "attributes": {"colour": "navy", "pattern": "solid"}}', ("tops", {"colour": None, "pattern": "solid"}, False)),
    ('{"category": "tops", "attributes": {"colour": "red", "pattern": "solid", "fabric": "silk"}}',
     ("tops", {"colour": "red", "pattern": "solid"}, False)),
    ('{"category": "hats", "attributes": {}}', (None, {}, False)),
    ('{"category": "tops", "attributes": {"colour": "red"', (None, {}, False)),
])
def test_a_vlm_answer_is_checked_against_the_taxonomy(text, expected):
    assert parse_answer(text, SHOP) == expected


@pytest.mark.slow
def test_a_killed_run_resumes_to_the_same_release(mini_crawl, tmp_path, capsys):
    crawl, taxonomy = mini_crawl / "crawl", mini_crawl / "taxonomy.json"
    raw = tmp_path / "raw"
    command = [sys.executable, "-m", "lookbench", "annotate", "--input", str(crawl), "--taxonomy", str(taxonomy),
               "--proposer", "zero-shot:gr-lite-mini-text", "--out", str(raw), "--quiet", "--batch-size", "2"]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while not list((raw / ".annotate").glob("batch-*.json")) and child.poll() is None:
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL, child.stderr.read().decode()
    batches = [json.loads(p.read_text()) for p in (raw / ".annotate").glob("batch-*.json")]
    done = sum(len(batch["entries"]) for batch in batches)
    assert done >= 2 and not list(raw.glob("*/query.jsonl"))  # killed mid-run: nothing finished

    assert annotate(crawl, taxonomy, "metadata", raw) == 2  # another proposer may not take over the folder
    assert "holds an unfinished annotate run of another proposer" in capsys.readouterr().err

    assert annotate(crawl, taxonomy, "zero-shot:gr-lite-mini-text", raw, "--batch-size", "5") == 0
    assert f"resumed: {done} item(s) were done by an earlier run" in capsys.readouterr().out
    whole = tmp_path / "whole"
    assert annotate(crawl, taxonomy, "zero-shot:gr-lite-mini-text", whole, "--batch-size", "7") == 0
    assert sorted(p.relative_to(raw) for p in raw.rglob("*")) == sorted(p.relative_to(whole) for p in whole.rglob("*"))
    for path in sorted(whole.rglob("*.png")):
        assert (raw / path.relative_to(whole)).read_bytes() == path.read_bytes(), path
    for resumed_row, row in zip(_rows(raw), _rows(whole), strict=True):  # batch sizes change float sums, not answers
        assert _answers(resumed_row) == _answers(row) and resumed_row["item_id"] == row["item_id"]
        assert resumed_row["proposals"]["category"]["confidence"] == pytest.approx(row["proposals"]["category"]["confidence"], abs=1e-4)

    assert annotate(crawl, taxonomy, "zero-shot:gr-lite-mini-text", raw) == 2  # a finished release is never overwritten
    assert "is not empty and holds no unfinished annotate run" in capsys.readouterr().err


def test_a_path_that_climbs_and_comes_back_is_written_under_its_own_name(shop_crawl, tmp_path):
    crawl, taxonomy = shop_crawl
    climbing = "/".join([".."] * len(crawl.resolve().parts[1:])) + crawl.resolve().as_posix() + "/img/c.png"
    (crawl / "items.jsonl").write_text(json.dumps({"item_id": "q", "image": climbing, "timestamp": "2026-01-02T00:00:00Z",
                                                   "subset": "RealStudioFlat", "split": "query", "title": "green top"}) + "\n")
    raw = tmp_path / "out" / "raw"
    assert annotate(crawl, taxonomy, "metadata", raw) == 0
    [row] = _rows(raw)
    assert row["image"] == "images/img/c.png" and (raw / "RealStudioFlat" / "images" / "img" / "c.png").is_file()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["raw"]  # nothing written beside the release
