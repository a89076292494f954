"""Issue 54, gold items: mixed unmarked into every reviewer's queue at the plan's rate (an exact count for a seeded
plan), never in the build; a scripted careless reviewer (accepts every proposal, wrong on gold) is flagged with an
interval under the threshold, a careful one is not; the careless one's labels are held out of the build and their
items requeued to the others."""
from __future__ import annotations

import json

import pytest

from lookbench import cli
from lookbench.dataset_builder.decisions import ReviewError
from lookbench.dataset_builder.review.audit import audit_release, lines
from lookbench.dataset_builder.review.items import GoldItem
from lookbench.dataset_builder.review.plan import Plan
from lookbench.space.review.page import header_of
from lookbench.space.review.session import open_review

from tests.dataset_builder.test_reviewed_release import expected, rows_of
from tests.helpers.annotated_release import PROPOSER, TAXONOMY, proposal_of, truth_of, write_annotated
from tests.helpers.messages import unwrapped
from tests.helpers.raw_release import garment_png


def write_gold(folder, n=10) -> dict:
    """A gold file of ``n`` items whose proposals get every colour wrong, images beside it; the truth by item_id."""
    rows, truth = [], {}
    for index in range(n):
        labels = truth_of(index + 1)
        proposals = proposal_of(index + 1, labels)
        colour = labels["attributes"]["colour"]
        proposals["attributes"]["colour"]["value"] = "black" if colour != "black" else "red"
        item_id = f"look-{index:03d}"
        garment_png(folder / "images" / f"{item_id}.png", colour, variant=500 + index)
        rows.append({"item_id": item_id, "image": f"images/{item_id}.png", "title": f"{colour} {labels['category']}",
                     "proposals": proposals, "proposer": PROPOSER, "category": labels["category"],
                     "attributes": [{"name": k, "value": v} for k, v in labels["attributes"].items()
                                    if v != TAXONOMY.not_applicable]})
        truth[item_id] = labels
    (folder / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return truth


def careful(review, item, truth, gold):
    labels = gold[item.key.rsplit("/", 1)[1]] if isinstance(item, GoldItem) else truth[item.key]
    return labels["category"], labels["attributes"]


def careless(review, item, truth, gold):
    category = item.proposals["category"]["value"]
    return category, {n: e["value"] for n, e in item.proposals["attributes"].items()}


def work(review, name, how, truth, gold, limit=None) -> list:
    """``name`` decides what the page gives them (``how``: careful or careless), at most ``limit`` items; the keys."""
    seen = []
    while (limit is None or len(seen) < limit) and (item := review.next_for(name)) is not None:
        category, attributes = how(review, item, truth, gold)
        names = review.taxonomy.categories[category].attributes
        review.decide(name, item.key, category, [attributes.get(n, review.taxonomy.not_applicable) for n in names])
        seen.append(item.key)
    return seen


def test_gold_items_come_at_the_rate_unmarked_and_never_into_the_build(tmp_path):
    raw, gold_dir = tmp_path / "raw", tmp_path / "gold"
    truth, gold = write_annotated(raw, n=36), write_gold(gold_dir)
    review, _ = open_review(raw, overlap=1, shared=0, gold=gold_dir / "gold.jsonl", gold_rate=0.1)
    plan = json.loads((raw / "reviews" / "plan.json").read_text())["gold"]
    assert plan["rate"] == 0.1 and plan["threshold"] == 0.7 and plan["file"] == str((gold_dir / "gold.jsonl").resolve())
    with pytest.raises(ReviewError, match="planned with --gold .* --gold-rate 0.1"):
        open_review(raw, gold=gold_dir / "gold.jsonl", gold_rate=0.2)  # fixed at first use, like the overlap
    seen = work(review, "ann", careful, truth, gold)
    golds = [k for k in seen if k not in truth]
    # one gold item in each block of 10 places of ann's stream while release items remain: 36 items need 4 blocks
    assert len(seen) == 36 + len(golds) and len(golds) == 4
    assert all(k.startswith("RealStudioFlat/query/look-") for k in golds)  # keyed like any item of the release
    places = [seen.index(k) for k in golds]
    assert [p // 10 for p in places] == [0, 1, 2, 3] and len({p % 10 for p in places}) > 1  # at random places
    item = review.item(golds[0])
    page = header_of(review, item, "ann")
    assert "gold" not in page.lower() and page.startswith(f"### {golds[0]}\nRealStudioFlat/query.jsonl line ")
    out = tmp_path / "out"
    assert cli.main(["build", "--source", "raw", "--input", str(raw), "--out", str(out), "--quiet"]) == 0
    assert rows_of(out) == expected(truth)  # every release item, and no gold item
    (gold_dir / "gold.jsonl").write_text((gold_dir / "gold.jsonl").read_text().replace("look-009", "look-999"))
    with pytest.raises(ReviewError, match="changed since the review plan fixed it"):
        open_review(raw)


def test_a_careless_reviewer_is_flagged_held_out_and_their_items_requeued(tmp_path, capsys):
    raw, gold_dir = tmp_path / "raw", tmp_path / "gold"
    truth, gold = write_annotated(raw, n=20), write_gold(gold_dir)
    review, _ = open_review(raw, overlap=1, shared=0, gold=gold_dir / "gold.jsonl", gold_rate=0.2)
    lazy = work(review, "lazy", careless, truth, gold, limit=12)
    lazy_release = [k for k in lazy if k in truth]
    report = audit_release(raw)
    scores = report["gold"]["reviewers"]
    assert scores["lazy"]["items"]["hits"] == 0 and scores["lazy"]["items"]["n"] == len(lazy) - len(lazy_release) >= 2
    assert scores["lazy"]["items"]["ci95"][1] < 70 and scores["lazy"]["flagged"]  # the interval excludes 70 %
    assert scores["lazy"]["fields"]["colour"]["hits"] == 0 and scores["lazy"]["fields"]["category"]["percent"] == 100
    assert report["counts"]["not_reviewed"] == 20 and report["counts"]["reviewers"] == ["lazy"]  # held out
    text = "\n".join(lines(report))
    assert "lazy: items 0.0% [" in text and "FLAGGED, labels held out" in text
    out = tmp_path / "out"
    assert cli.main(["build", "--source", "raw", "--input", str(raw), "--out", str(out), "--quiet"]) == 2
    err = unwrapped(capsys.readouterr().err)
    assert "the labels of lazy are held out" in err and err.count("held out") >= 1
    review, _ = open_review(raw)  # a new page (lazy's claim on the item they had open is the other server's)
    ann = work(review, "ann", careful, truth, gold)  # lazy's items come back to the others
    assert set(lazy_release) <= set(ann) and len([k for k in ann if k in truth]) == 20
    report = audit_release(raw)
    assert report["gold"]["reviewers"]["ann"]["items"]["percent"] == 100 and not report["gold"]["reviewers"]["ann"]["flagged"]
    assert cli.main(["build", "--source", "raw", "--input", str(raw), "--out", str(out), "--quiet"]) == 0
    assert rows_of(out) == expected(truth)  # ann's labels only: lazy's held out
    card = (out / "README.md").read_text()
    assert "lazy: items 0.0%" in card and "FLAGGED" in card and "ann: items 100.0%" in card


def test_a_gold_file_that_is_no_gold_is_refused_in_one_line(tmp_path):
    raw, gold_dir = tmp_path / "raw", tmp_path / "gold"
    write_annotated(raw, n=6)
    write_gold(gold_dir, n=2)
    path = gold_dir / "gold.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["category"] = "hats"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ReviewError, match=r"gold file .*gold.jsonl line 2: category 'hats' is not one of"):
        open_review(raw, gold=path)
    assert Plan.read(raw).gold is not None  # the plan fixed it; the file is read again at every open
