"""The audit of layered proposals per proposer (issue 54 part 5): coverage, precision and how often each proposer's
answer was taken, counted by hand from four reviewed items."""
from __future__ import annotations

from lookbench.annotate.layered import merged_field
from lookbench.dataset_builder.decisions import Event
from lookbench.dataset_builder.review.audit import audit, lines
from lookbench.dataset_builder.review.items import Item
from lookbench.dataset_builder.reviewed_labels import Verdict

from tests.helpers.annotated_release import TAXONOMY

ZS = "zero-shot:m"


def answers(meta, zs):
    return merged_field({"metadata": {"value": meta, "confidence": 1.0 if meta else 0.0},
                         ZS: {"value": zs, "confidence": 0.6}})


def layered(key, category, colour, sleeve):
    return Item(key, "RealStudioFlat", "gallery", "RealStudioFlat/gallery.jsonl", 1, {
        "proposals": {"category": answers(*category), "attributes": {"colour": answers(*colour), "sleeve": answers(*sleeve)}},
        "proposer": {"name": f"metadata > {ZS}", "revision": "r > s"}})


def test_each_proposer_s_coverage_precision_and_taken_counted_by_hand():
    items = [layered("k0", ("tops", "tops"), ("red", "red"), (None, "short")),
             layered("k1", ("tops", "tops"), ("red", "blue"), (None, "short")),
             layered("k2", (None, "tops"), ("red", "red"), (None, "long")),
             layered("k3", (None, "skirts"), (None, "red"), (None, "short"))]
    verdicts = {i.key: Verdict(i.key, {"ann": Event(1, "ann", "2026-01-01T00:00:00+00:00", i.key, "label", "tops",
                                                    {"colour": "red", "sleeve": "short", "cuff": "plain"})})
                for i in items}
    report = audit(items, verdicts, TAXONOMY)
    got = {p: {f: (e["coverage"]["hits"], e["coverage"]["n"], e["precision"]["hits"], e["precision"]["n"], e["taken"])
               for f, e in fields.items()} for p, fields in report["by_proposer"].items()}
    # (answered, judged, right, answered, taken); the cuff was proposed by neither: not judged
    assert got == {"metadata": {"category": (2, 4, 2, 2, 2), "colour": (3, 4, 3, 3, 3), "sleeve": (0, 4, 0, 0, 0),
                                "all attributes": (3, 8, 3, 3, 3)},
                   ZS: {"category": (4, 4, 3, 4, 2), "colour": (4, 4, 3, 4, 1), "sleeve": (4, 4, 3, 4, 4),
                        "all attributes": (8, 8, 6, 8, 5)}}
    assert report["by_proposer"]["metadata"]["colour"]["precision"]["percent"] == 100.0
    shown = "\n".join(lines(report))
    assert "Layered proposals, per proposer" in shown
    assert "    sleeve: coverage 0.0% [0.0, 49.0] (n=4), precision —, taken 0" in shown
    # the proposals' agreement is still measured on the merged value
    assert report["attributes"]["colour"]["accuracy"]["hits"] == 4 and report["attributes"]["category"]["accuracy"]["hits"] == 3


def test_a_single_proposer_s_audit_has_no_per_proposer_figures():
    item = Item("k", "RealStudioFlat", "gallery", "f", 1, {"proposals": {"category": {"value": "tops", "confidence": 0.9},
                                                                        "attributes": {}}, "proposer": {"name": "p", "revision": "1"}})
    report = audit([item], {"k": Verdict("k", {"ann": Event(1, "ann", "2026-01-01T00:00:00+00:00", "k", "label", "tops", {})})},
                   TAXONOMY)
    assert report["by_proposer"] == {} and "Layered proposals" not in "\n".join(lines(report))
