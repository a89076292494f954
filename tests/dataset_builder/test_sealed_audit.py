"""Issue 54, part 8: a sealed release's public card carries the annotation audit (agreement, gold accuracy, disputes
settled) and no label: its public audit file keeps the figures, not an item key or a value; unseal brings the whole
audit back."""
from __future__ import annotations

import json
import re

from lookbench import cli
from lookbench.dataset_builder.decisions import SKIP
from lookbench.space.review.adjudicate import adjudicate, open_disputes
from lookbench.space.review.session import open_review

from tests.dataset_builder.test_gold import careful, work, write_gold
from tests.helpers.annotated_release import TAXONOMY, write_annotated

VALUES = {v for c in TAXONOMY.categories.values() for values in c.attributes.values() for v in values}


def test_the_sealed_public_card_shows_the_audit_and_no_label(tmp_path):
    first, second, gold_dir = tmp_path / "raw-june", tmp_path / "raw-july", tmp_path / "gold"
    truth, later, gold = write_annotated(first, n=6), write_annotated(second, n=12, prefix="july", month=7), write_gold(gold_dir)
    review, _ = open_review(first, overlap=1, shared=0)
    work(review, "ann", careful, truth, {})
    review, _ = open_review(second, overlap=2, shared=4, gold=gold_dir / "gold.jsonl", gold_rate=0.2)
    work(review, "ann", careful, later, gold)
    work(review, "ben", careful, later, gold, limit=2)
    key = next(k for k in review.plan.shared if k in {e.item for e in review.store.events("ben")})
    labels = later[key]
    colour = "green" if labels["attributes"]["colour"] != "green" else "red"
    names = TAXONOMY.categories[labels["category"]].attributes
    review.store.add("ben", SKIP, key)  # a skip keeps ben's label; ben changes it to make a dispute
    review.decide("ben", key, labels["category"], [colour if n == "colour" else labels["attributes"][n] for n in names])
    work(review, "ben", careful, later, gold)
    assert list(open_disputes(review)) == [key]
    adjudicate(review, "cyd", key, labels["category"], [labels["attributes"][n] for n in names])
    out, held = tmp_path / "data", tmp_path / "labels"
    assert cli.main(["build", "--source", "raw", "--input", str(first), "--out", str(out), "--quiet"]) == 0
    assert cli.main(["build", "--source", "raw", "--input", str(second), "--append", "--seal", "--until", "2026-06-30",
                     "--labels-out", str(held), "--out", str(out), "--quiet"]) == 0
    card = (out / "README.md").read_text()
    assert "Sealed: v2025" in card and card.count("## Annotation audit") == 2
    section = card.split("## Annotation audit")[2]
    section = section.split("\n## ", 1)[0]
    assert "12 items: 12 reviewed and agreed (1 dispute(s) settled by an adjudicator: cyd 1), 0 disputed" in section
    assert "ann: items 100.0%" in section and "ben: items 100.0%" in section  # gold accuracy
    assert "reviewers' κ, pairs pooled" in section and "(n=4 < 20)" in section  # agreement: n, no headline
    words = set(re.findall(r"[a-z]+", section.lower()))
    assert not words & (VALUES - {"long", "short"}), words & VALUES  # no colour, length or cuff value
    public = json.loads(next(out.glob("annotation_audit-v202507*.json")).read_text())
    text = json.dumps(public)
    assert "july-" not in text and "adjudications" not in public  # no item key of the sealed release
    assert public["disagreements"] == [] and not set(re.findall(r'"([a-z]+)"', text)) & (VALUES - {"long", "short"})
    whole = json.loads(next(held.glob("annotation_audit-v202507*.json")).read_text())
    assert whole["adjudications"][0]["item"] == key  # the whole audit stays with the labels
    assert cli.main(["unseal", str(out), "--labels", str(held)]) == 0
    assert json.loads(next(out.glob("annotation_audit-v202507*.json")).read_text()) == whole
