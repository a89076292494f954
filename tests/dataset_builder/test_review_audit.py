"""The audit's figures against cases counted by hand: Cohen's κ, "not applicable" precision/recall, accuracy with
its Wilson interval, disagreements."""
from __future__ import annotations

import pytest

from lookbench.dataset_builder.review.audit import audit, cohen_kappa, lines, markdown
from lookbench.dataset_builder.reviewed_labels import Verdict
from lookbench.dataset_builder.review.items import Item
from lookbench.dataset_builder.decisions import Event

from tests.helpers.annotated_release import NA, TAXONOMY

SLEEVES_A = ["short", "short", "short", "short", "long", "long", "long", "long", NA, NA]
SLEEVES_B = ["short", "short", "short", "long", "long", "long", "long", NA, NA, "short"]


def label(reviewer, key, category="tops", seq=1, **attributes):
    return Event(seq, reviewer, "2026-01-01T00:00:00+00:00", key, "label", category, attributes)


def item(key, category="tops", **proposed):
    return Item(key, "RealStudioFlat", "gallery", "RealStudioFlat/gallery.jsonl", 1, {
        "proposals": {"category": {"value": category, "confidence": 0.9},
                      "attributes": {n: {"value": v, "confidence": 0.5} for n, v in proposed.items()}},
        "proposer": {"name": "p", "revision": "1"}})


def test_cohen_kappa_of_a_table_counted_by_hand():
    # Agreement 7/10; each rater: short 4, long 4, "not applicable" 2 -> chance (16 + 16 + 4) / 100 = 0.36.
    assert cohen_kappa(list(zip(SLEEVES_A, SLEEVES_B))) == pytest.approx((0.7 - 0.36) / (1 - 0.36))
    assert cohen_kappa([("a", "a"), ("b", "b")]) == 1.0
    assert cohen_kappa([("a", "b"), ("b", "a")]) == -1.0
    assert cohen_kappa([("a", "a"), ("a", "a")]) is None  # one label throughout: κ undefined, never shown as 1
    assert cohen_kappa([]) is None


def test_agreement_and_disagreements_from_two_reviewers():
    verdicts = {}
    for i, (a, b) in enumerate(zip(SLEEVES_A, SLEEVES_B)):
        key = f"RealStudioFlat/gallery/i{i}"
        verdicts[key] = Verdict(key, {"ann": label("ann", key, colour="red", sleeve=a, cuff="plain"),
                                      "ben": label("ben", key, colour="red", sleeve=b, cuff="plain")})
    items = [item(key, colour="red", sleeve="short", cuff="plain") for key in verdicts]
    report = audit(items, verdicts, TAXONOMY)
    sleeve = report["agreement"]["sleeve"]
    # issue 54: pooled over the pairs with n beside it; no headline κ on fewer than 20 items (here 10)
    assert sleeve["pooled_kappa"] == pytest.approx(0.53125) and sleeve["n"] == 10 and sleeve["kappa"] is None
    assert sleeve["pairs"]["ann / ben"]["kappa"] == pytest.approx(0.53125) and sleeve["pairs"]["ann / ben"]["n"] == 10
    assert sleeve["pairs"]["ann / ben"]["agreement"] == pytest.approx(70.0)
    assert report["agreement"]["colour"]["pooled_kappa"] is None  # both always said red
    assert report["counts"] == {"items": 10, "reviewed": 7, "disputed": 3, "not_reviewed": 0, "reviewers": ["ann", "ben"],
                                "settled": 0, "settled_by": {}}  # issue 54: disputes settled, by whom
    assert [d["item"] for d in report["disagreements"]] == ["RealStudioFlat/gallery/i3", "RealStudioFlat/gallery/i7",
                                                            "RealStudioFlat/gallery/i9"]
    assert report["disagreements"][2]["fields"] == {"sleeve": {"ann": NA, "ben": "short"}}
    # The proposer said "short" throughout; of the 7 agreed items 3 are short.
    assert report["attributes"]["sleeve"]["accuracy"]["hits"] == 3 and report["attributes"]["sleeve"]["accuracy"]["n"] == 7
    text = "\n".join(lines(report))
    assert "ann / ben: category — (n=10), colour — (n=10), cuff — (n=10), sleeve 0.53 (n=10)" in text
    assert "3 item(s) reviewers disagree on" in text and "i9: sleeve: ann 'not applicable', ben 'short'" in text


def test_not_applicable_precision_recall_and_accuracy_with_wilson():
    # cuff: proposal / reviewed label
    cases = [(NA, NA), (NA, NA), (NA, "plain"), ("plain", NA), (None, NA), ("plain", "plain")]
    items, verdicts = [], {}
    for i, (proposed, actual) in enumerate(cases):
        key = f"RealStudioFlat/gallery/c{i}"
        items.append(item(key, colour="red", sleeve="short", cuff=proposed))
        verdicts[key] = Verdict(key, {"ann": label("ann", key, colour="red", sleeve="short", cuff=actual)})
    items.append(item("RealStudioFlat/gallery/unreviewed", colour="red"))
    report = audit(items, verdicts, TAXONOMY)
    cuff = report["attributes"]["cuff"]
    assert cuff["accuracy"]["hits"] == 3 and cuff["accuracy"]["n"] == 6 and cuff["not_proposed"] == 1
    assert cuff["accuracy"]["ci95"] == pytest.approx([18.7616, 81.2384], abs=1e-3)  # Wilson 3/6 (Newcombe 1998)
    precision, recall = cuff["not_applicable"]["precision"], cuff["not_applicable"]["recall"]
    assert (precision["hits"], precision["n"]) == (2, 3) and precision["ci95"] == pytest.approx([20.766, 93.851], abs=1e-2)
    assert (recall["hits"], recall["n"]) == (2, 4) and recall["ci95"] == pytest.approx([15.004, 84.996], abs=1e-2)
    assert report["attributes"]["sleeve"]["not_applicable"]["precision"]["percent"] is None  # never proposed: no figure
    overall = report["overall_attributes"]
    assert (overall["accuracy"]["hits"], overall["accuracy"]["n"]) == (3 + 6 + 6, 18)
    assert report["counts"]["not_reviewed"] == 1 and report["proposers"] == {"p@1": 6}
    assert "| cuff | 50.0% [18.8, 81.2] (n=6) | 1 | 66.7% [20.8, 93.9] (n=3) | 50.0% [15.0, 85.0] (n=4) | — |" in markdown(report)


def test_a_wrong_category_makes_every_attribute_of_the_reviewed_one_count():
    key = "RealStudioFlat/gallery/s"
    proposal = item(key, category="tops", colour="red", sleeve="short", cuff="plain")
    verdicts = {key: Verdict(key, {"ann": label("ann", key, category="skirts", colour="red", length="mini")})}
    report = audit([proposal], verdicts, TAXONOMY)
    assert report["attributes"]["category"]["accuracy"]["hits"] == 0
    assert report["attributes"]["colour"]["accuracy"]["hits"] == 1  # the same name and value
    assert report["attributes"]["length"]["accuracy"]["hits"] == 0 and report["attributes"]["length"]["not_proposed"] == 1
    assert "sleeve" not in report["attributes"]  # the reviewed category has no sleeve
