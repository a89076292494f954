"""Issue 54, adjudication: a dispute settled by an adjudicator's event (kept beside the reviewers' labels), undone only
by its author, counted by the audit, and built without --skip-invalid with the adjudicator's labels in the row; a
skip on a disputed item keeps the reviewer's label (no third reviewer is pulled in)."""
from __future__ import annotations

import json

import pytest

from lookbench import cli
from lookbench.dataset_builder.decisions import ADJUDICATE, SKIP, UNDO, DecisionStore, ReviewError
from lookbench.dataset_builder.review.audit import audit_release, lines
from lookbench.dataset_builder.review.plan import queue
from lookbench.dataset_builder.reviewed_labels import verdicts
from lookbench.space.review.adjudicate import adjudicate, majority, open_disputes
from lookbench.space.review.session import open_review

from tests.dataset_builder.test_reviewed_release import expected, rows_of
from tests.helpers.annotated_release import TAXONOMY, review_from_truth, write_annotated
from tests.helpers.messages import unwrapped


def values(labels: dict) -> list:
    return [labels["attributes"][n] for n in TAXONOMY.categories[labels["category"]].attributes]


def other_colour(colour: str) -> str:
    return "green" if colour != "green" else "red"


@pytest.fixture
def disputed(tmp_path):
    """A release of 9 items labelled by ann (all of them) and ben (the 3 shared), who disagree on the colour of one."""
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=9)
    review, _ = open_review(raw, overlap=2, shared=3)
    key = review.plan.shared[0]
    for name in ("ann", "ben"):
        for item in [i for i in review.items if name == "ann" or i.key in review.plan.shared]:
            labels = json.loads(json.dumps(truth[item.key]))
            if name == "ben" and item.key == key:
                labels["attributes"]["colour"] = other_colour(labels["attributes"]["colour"])
            review.decide(name, item.key, labels["category"], values(labels))
    return raw, review, truth, key


def test_an_adjudication_settles_the_dispute_with_its_labels_and_only_its_author_undoes_it(disputed):
    raw, review, truth, key = disputed
    assert list(open_disputes(review)) == [key] and not verdicts(review.store)[key].decided
    # the form opens on the first reviewer's values on a tie (one against one)
    assert majority(verdicts(review.store)[key]) == (truth[key]["category"], truth[key]["attributes"])
    with pytest.raises(ReviewError, match="a dispute is settled by a third person"):
        adjudicate(review, "ann", key, truth[key]["category"], values(truth[key]))
    wrong = json.loads(json.dumps(truth[key]))
    wrong["attributes"]["colour"] = "black" if truth[key]["attributes"]["colour"] != "black" else "blue"
    adjudicate(review, "cyd", key, wrong["category"], values(wrong))  # the adjudicator's own choice, a third colour
    event = review.store.events("cyd")[-1]
    assert (event.action, event.item, event.reviewer) == (ADJUDICATE, key, "cyd") and event.time
    verdict = verdicts(review.store)[key]
    assert verdict.settled and verdict.decided and not verdict.agreed and not verdict.disputed
    assert verdict.label.attributes["colour"] == wrong["attributes"]["colour"]
    assert {n: e.attributes["colour"] for n, e in verdict.labels.items()} == {  # the reviewers' values kept
        "ann": truth[key]["attributes"]["colour"], "ben": other_colour(truth[key]["attributes"]["colour"])}
    assert open_disputes(review) == {}
    with pytest.raises(ReviewError, match="no open dispute"):
        adjudicate(review, "dan", key, truth[key]["category"], values(truth[key]))
    # nobody else's undo takes it back: ann's undo takes back ann's own latest label
    undone = review.store.add("ann", UNDO)
    assert undone.item != key and verdicts(review.store)[key].settled
    review.store.add("cyd", UNDO)  # its author's does
    assert not verdicts(review.store)[key].decided and list(open_disputes(review)) == [key]
    # a settled item leaves the reviewers' dispute queue
    assert key in {i.key for i in queue(review.plan, review.items, review.store, "ben")}
    adjudicate(review, "cyd", key, truth[key]["category"], values(truth[key]))
    assert key not in {i.key for i in queue(review.plan, review.items, review.store, "ben")}


def test_the_audit_counts_disputes_settled_by_whom_and_open(disputed):
    raw, review, truth, key = disputed
    report = audit_release(raw)
    assert (report["counts"]["disputed"], report["counts"]["settled"], report["counts"]["reviewed"]) == (1, 0, 8)
    adjudicate(review, "cyd", key, truth[key]["category"], values(truth[key]))
    report = audit_release(raw)
    counts = report["counts"]
    assert (counts["items"], counts["reviewed"], counts["disputed"], counts["not_reviewed"]) == (9, 9, 0, 0)
    assert counts["settled"] == 1 and counts["settled_by"] == {"cyd": 1} and report["disagreements"] == []
    (settled,) = report["adjudications"]
    assert settled["item"] == key and settled["by"] == "cyd" and set(settled["fields"]) == {"colour"}
    assert set(settled["fields"]["colour"]) == {"ann", "ben", "cyd"}
    text = "\n".join(lines(report))
    assert "9 items: 9 reviewed and agreed (1 dispute(s) settled by an adjudicator: cyd 1), 0 disputed, 0 not reviewed" in text
    assert f"1 dispute(s) settled by an adjudicator:\n  {key} by cyd" in text


def test_a_release_whose_disputes_are_settled_is_appended_without_skip_invalid(disputed, tmp_path, capsys):
    raw, review, truth, key = disputed
    out = tmp_path / "out"
    assert cli.main(["build", "--source", "raw", "--input", str(raw), "--out", str(out), "--quiet"]) == 2
    err = unwrapped(capsys.readouterr().err)
    assert "reviewers disagree (ann, ben); see lookbench audit" in err and "lookbench review RAW --adjudicate" in err
    settled = json.loads(json.dumps(truth[key]))
    settled["attributes"]["colour"] = "black" if truth[key]["attributes"]["colour"] != "black" else "blue"
    adjudicate(review, "cyd", key, settled["category"], values(settled))
    earlier = write_annotated(tmp_path / "raw-may", n=3, prefix="may", month=5)
    assert review_from_truth(open_review(tmp_path / "raw-may", overlap=1, shared=0)[0], earlier, "ann") == 3
    assert cli.main(["build", "--source", "raw", "--input", str(tmp_path / "raw-may"), "--out", str(out), "--quiet"]) == 0
    assert cli.main(["build", "--source", "raw", "--input", str(raw), "--append", "--out", str(out), "--quiet"]) == 0
    assert rows_of(out) == expected(earlier) | expected({**truth, key: settled})  # the adjudicator's labels in the row
    card = (out / "README.md").read_text()
    assert "9 items: 9 reviewed and agreed (1 dispute(s) settled by an adjudicator: cyd 1), 0 disputed" in card


def test_a_skip_on_a_disputed_item_keeps_the_label_and_pulls_in_no_third_reviewer(disputed):
    raw, review, truth, key = disputed
    store = DecisionStore(raw)
    assert [i.key for i in queue(review.plan, review.items, store, "ben")][0] == key  # shown once, to settle
    store.add("ben", SKIP, key)
    assert set(verdicts(store)[key].labels) == {"ann", "ben"}  # ben's label still in force: still a dispute
    assert key not in {i.key for i in queue(review.plan, review.items, store, "cyd")}  # no third reviewer drawn in
    assert [i.key for i in queue(review.plan, review.items, store, "ben")][-1] == key  # ben's: later, not gone
    store.add("ben", "label", key, category=truth[key]["category"], attributes=truth[key]["attributes"],
              image_sha256=verdicts(store)[key].labels["ann"].image_sha256)  # ben changes his mind
    assert verdicts(store)[key].agreed and key not in {i.key for i in queue(review.plan, review.items, store, "ben")}
