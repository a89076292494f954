"""`build` of an annotated raw release takes only reviewed labels: a scripted reviewer who fixes every proposal from
the truth makes a release identical to the truth; unreviewed and disputed items are refused, or left out and
counted; `build --source raw --input RAW --append` adds a reviewed release without touching the earlier ones; the
audit lands in the card."""
from __future__ import annotations

import hashlib
import json

import datasets
import pytest

from lookbench import cli
from lookbench.dataset_builder.decisions import LABEL, DecisionStore
from lookbench.space.review.session import open_review

from tests.helpers.annotated_release import NA, TAXONOMY, review_from_truth, write_annotated
from tests.helpers.messages import unwrapped


def rows_of(out, config="RealStudioFlat"):
    """item key -> (category, main_attribute, attribute set) of a built folder."""
    found = {}
    for split in ("query", "gallery"):
        for row in datasets.load_dataset(str(out), config, split=split):
            found[f"{config}/{split}/{row['item_id']}"] = (row["category"], row["main_attribute"],
                                                          {(a["name"], a["value"]) for a in row["attributes"]})
    return found


def expected(truth):
    """The truth as a release row holds it: "not applicable" is no attribute of the item."""
    return {key: (t["category"], t["attributes"]["colour"], {(n, v) for n, v in t["attributes"].items() if v != NA})
            for key, t in truth.items()}


def build(*args):
    return cli.main(["build", *map(str, args), "--quiet"])


def test_a_scripted_reviewer_fixing_every_proposal_makes_the_truth_and_append_keeps_earlier_releases(tmp_path, capsys):
    first, second = tmp_path / "raw-june", tmp_path / "raw-july"
    truth = write_annotated(first, n=15, street=False)
    later = write_annotated(second, n=12, prefix="july", month=7)
    for raw, known in ((first, truth), (second, later)):
        review, _ = open_review(raw, overlap=1, shared=0)
        assert review_from_truth(review, known, "oracle") == len(known)
    proposed = {key: {n: e["value"] for n, e in item.proposals["attributes"].items()} for key, item in review.by_key.items()}
    assert sum(proposed[key] != later[key]["attributes"] for key in later) >= 6  # what the reviewer had to fix
    out = tmp_path / "data" / "lookbench"
    assert build("--source", "raw", "--input", first, "--out", out) == 0
    assert rows_of(out) == expected(truth)
    shards = {p.relative_to(out): hashlib.sha256(p.read_bytes()).hexdigest() for p in out.rglob("*.parquet")}
    assert build("--source", "raw", "--input", second, "--append", "--out", out) == 0
    assert rows_of(out) == expected(truth) | expected(later)
    assert {p: hashlib.sha256((out / p).read_bytes()).hexdigest() for p in shards} == shards  # earlier shards untouched
    card = (out / "README.md").read_text()
    assert card.count("## Annotation audit") == 2 and "15 items: 15 reviewed and agreed, 0 disputed, 0 not reviewed" in card
    audit = json.loads((out / "annotation_audit-v20250712.json").read_text())
    assert audit["counts"]["reviewed"] == 12 and audit["attributes"]["cuff"]["accuracy"]["hits"] == 0


def test_a_reviewed_release_appended_with_seal_is_published_sealed_and_the_earlier_one_stays_public(tmp_path, capsys):
    """The last step of a release made from a crawl: `build --source raw --input RAW --append --seal` withholds the
    new release's reviewed labels (docs/publishing.md) and leaves the earlier release public and byte-identical."""
    import pyarrow.parquet as pq

    from lookbench.dataset_builder.labels import Labels
    from lookbench.dataset_builder.sealed import sealed_state

    first, second = tmp_path / "raw-june", tmp_path / "raw-july"
    truth, later = write_annotated(first, n=9), write_annotated(second, n=9, prefix="july", month=7)
    for raw, known in ((first, truth), (second, later)):
        review, _ = open_review(raw, overlap=1, shared=0)
        assert review_from_truth(review, known, "oracle") == len(known)
    out, labels = tmp_path / "data" / "lookbench", tmp_path / "labels"
    assert build("--source", "raw", "--input", first, "--out", out) == 0
    # the image configs' shards; the text config (its words are made from labels) is withheld whole while any
    # release is sealed (docs/publishing.md)
    earlier = {p.relative_to(out): p.read_bytes() for p in out.glob("Real*/*.parquet")}
    assert build("--source", "raw", "--input", second, "--append", "--seal", "--until", "2026-06-30",
                 "--labels-out", labels, "--out", out) == 0
    state = sealed_state(out)
    (release,) = state.releases  # the appended (July) release only
    assert release.startswith("v202507") and state.until == "2026-06-30"
    assert {p: (out / p).read_bytes() for p in earlier} == earlier  # the earlier release: public, untouched
    assert not (out / "text").exists() and (labels / "text").is_dir()
    rows = [row for shard in sorted(out.glob("RealStudioFlat/*.parquet")) for row in pq.read_table(shard).to_pylist()]
    new = [r for r in rows if r["release"] == release]
    assert len(new) == len(later) and all(r["category"] is None and r["main_attribute"] is None and r["attributes"] is None
                                         for r in new)  # no reviewed label on the public side
    assert all(r["category"] is not None for r in rows if r["release"] != release)
    joined = tmp_path / "joined"
    Labels.read(labels, state.releases).join_into(out, joined, state)
    assert rows_of(joined) == expected(truth) | expected(later)  # the labels kept aside are the reviewed truth


def test_proposals_are_never_labels(tmp_path):
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=6)
    review, _ = open_review(raw, overlap=1, shared=0)
    # accept every proposal as it stands: the release then holds the proposals, reviewed
    while (item := review.next_for("lazy")) is not None:
        category = item.proposals["category"]["value"]
        names = TAXONOMY.categories[category].attributes
        review.decide("lazy", item.key, category, [item.proposals["attributes"][n]["value"] for n in names])
    out = tmp_path / "out"
    assert build("--source", "raw", "--input", raw, "--out", out) == 0
    built = rows_of(out)
    assert built != expected(truth)  # the proposer calls every cuff plain; the reviewer accepted that
    assert all(("cuff", "plain") in attrs for key, (cat, _, attrs) in built.items() if cat == "tops")


def test_unreviewed_and_disputed_items_are_refused_or_left_out_and_counted(tmp_path, capsys):
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=12)
    review, _ = open_review(raw, overlap=2, shared=3)
    shared = list(review.plan.shared)
    store = DecisionStore(raw)
    disputed = shared[0]
    for reviewer in ("ann", "ben"):
        for key in shared:
            labels = truth[key]
            attributes = dict(labels["attributes"])
            if reviewer == "ben" and key == disputed:
                attributes["colour"] = "green" if attributes["colour"] != "green" else "red"
            names = TAXONOMY.categories[labels["category"]].attributes
            review.decide(reviewer, key, labels["category"], [attributes[n] for n in names])
    other = next(k for k in truth if k not in shared)
    labels = truth[other]
    review.decide("ann", other, labels["category"], [labels["attributes"][n] for n in TAXONOMY.categories[labels["category"]].attributes])
    out = tmp_path / "out"
    assert build("--source", "raw", "--input", raw, "--out", out) == 2
    err = unwrapped(capsys.readouterr().err)
    assert "lookbench build: error: 9 invalid row(s) (9 problem(s))" in err
    assert "not reviewed (no reviewer has labelled it; lookbench review) — " in err
    assert f"(item_id={disputed.rsplit('/', 1)[1]!r}): reviewers disagree (ann, ben); see lookbench audit" in err and not out.exists()
    assert build("--source", "raw", "--input", raw, "--out", out, "--skip-invalid") == 0
    summary = capsys.readouterr().out
    assert "skipped rows: 9 (9 problem(s))" in summary
    assert set(rows_of(out)) == set(shared[1:]) | {other}
    report = json.loads((out / "validation_report.json").read_text())
    messages = [p["message"] for p in report["skipped"]]
    assert sum(m.startswith("not reviewed") for m in messages) == 8 and sum("disagree" in m for m in messages) == 1
    card = (out / "README.md").read_text()
    assert "12 items: 3 reviewed and agreed, 1 disputed, 8 not reviewed; reviewers: ann, ben" in card


def test_a_row_whose_image_changed_since_review_or_that_carries_labels_is_refused(tmp_path, capsys):
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=3)
    review, _ = open_review(raw, overlap=1, shared=0)
    review_from_truth(review, truth, "ann")
    key = "RealStudioFlat/query/item-000"
    (raw / "RealStudioFlat" / "images" / "item-000.png").write_bytes((raw / "RealStudioFlat" / "images" / "item-001.png").read_bytes())
    path = raw / "RealStudioFlat" / "gallery.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["category"] = "tops"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert build("--source", "raw", "--input", raw, "--out", tmp_path / "out") != 0
    err = unwrapped(capsys.readouterr().err)
    assert "its image changed since ann reviewed it; review it again" in err and "item-000" in err
    assert "an annotated row (with proposals) takes its labels from its review, yet it carries category" in err
    assert key in {e.item for e in DecisionStore(raw).events("ann") if e.action == LABEL}
