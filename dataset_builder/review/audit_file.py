"""An audit read back from a built folder (``annotation_audit*.json``) for the card: every figure re-derived from its
counts and refused where the counts do not hold together, since the card is public and the file could be anyone's."""
from __future__ import annotations

import json
from pathlib import Path

from lookbench.errors import one_line, shown
from lookbench.files import read_regular

from lookbench.dataset_builder.gold import CATEGORY, rate
from lookbench.dataset_builder.review.audit import MIN_KAPPA_ITEMS, markdown

MAX_AUDIT_BYTES = 64 << 20


def audit_card(path: Path, rows: int) -> str | None:
    """The card's audit section from an audit file of a built folder (None when there is none), after checking it
    (``checked``; ``rows``: the rows the folder holds of the step it audits, and those its validation left out)."""
    if not path.exists():
        return None
    try:
        return markdown(checked(json.loads(read_regular(path, MAX_AUDIT_BYTES).decode("utf-8")), rows))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise ValueError(f"{path.name}: not an audit of the release it sits beside ({one_line(err, 200)}); remove it "
                         "or audit the release again (lookbench audit RAW --json)") from None


def write_public_audit(path: Path, target: Path) -> None:
    """The audit at ``path`` without a label at ``target``, for a sealed release's public part: its figures kept
    (counts, accuracies, κ, gold accuracies, disputes settled and by whom), each disputed item's key and values left
    out (only the names of the fields disputed stay), and the adjudications' values too. The card renders it checked
    (``audit_card``) as it renders any; the whole audit stays with the labels and comes back at unseal."""
    try:
        report = json.loads(read_regular(path, MAX_AUDIT_BYTES).decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise ValueError(f"{path.name}: not an audit ({one_line(err, 200)}); remove it or audit the release again") from None
    if not isinstance(report, dict):
        raise ValueError(f"{path.name}: not an audit (not a JSON object)")
    disputes = report.get("disagreements") if isinstance(report.get("disagreements"), list) else []
    public = {key: value for key, value in report.items() if key not in ("disagreements", "adjudications")}
    public["disagreements"] = [{"fields": sorted(d["fields"]) if isinstance(d, dict) and isinstance(d.get("fields"), dict) else []}
                               for d in disputes]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(public, indent=2) + "\n", encoding="utf-8")


def checked(report, rows: int) -> dict:
    """An audit read back from a file, each figure re-derived from its counts (a percent or interval is never taken
    as written) and refused (``ValueError`` naming the claim) where its counts do not hold together: items as
    reviewed + disputed + not reviewed, one disagreement per disputed item, the category judged on every reviewed
    item, one proposer per reviewed item, and no more reviewed items than ``rows`` (what the folder holds of its
    releases, with the rows their build left out)."""
    if not isinstance(report, dict) or not isinstance(report.get("counts"), dict):
        raise ValueError("no counts")
    counts = report["counts"]
    items, reviewed, disputed, not_reviewed = (_count(counts.get(k), k) for k in ("items", "reviewed", "disputed", "not_reviewed"))
    if items != reviewed + disputed + not_reviewed:
        raise ValueError(f"{items} items are not {reviewed} reviewed + {disputed} disputed + {not_reviewed} not reviewed")
    if reviewed > rows:
        raise ValueError(f"{reviewed} reviewed items claimed, but the folder holds {rows} row(s) of its release(s), "
                         "counting those its build left out")
    reviewers = counts.get("reviewers")
    if not isinstance(reviewers, list) or not all(isinstance(r, str) for r in reviewers):
        raise ValueError("reviewers are not a list of names")
    proposers = report.get("proposers")
    if not isinstance(proposers, dict) or sum(_count(n, f"proposer {shown(p)}") for p, n in proposers.items()) != reviewed:
        raise ValueError(f"the proposers' items do not add up to the {reviewed} reviewed")
    attributes, disagreements = report.get("attributes"), report.get("disagreements")
    if not isinstance(attributes, dict) or not isinstance(disagreements, list) or len(disagreements) != disputed:
        raise ValueError(f"{disputed} disputed items claimed, {len(disagreements) if isinstance(disagreements, list) else 'no'} listed")
    judged = {name: _tally(entry, name) for name, entry in attributes.items()}
    if (judged[CATEGORY]["accuracy"]["n"] if CATEGORY in judged else 0) != reviewed:
        raise ValueError(f"the category was not judged on each of the {reviewed} reviewed items")
    settled = _count(counts.get("settled", 0), "settled")
    settled_by = counts.get("settled_by", {})
    if not isinstance(settled_by, dict) or sum(_count(n, f"settled by {shown(a)}") for a, n in settled_by.items()) != settled \
            or settled > reviewed:
        raise ValueError(f"the {settled} settled disputes are not counted by adjudicator within the {reviewed} reviewed")
    return {"counts": {"items": items, "reviewed": reviewed, "disputed": disputed, "not_reviewed": not_reviewed,
                       "reviewers": reviewers, "settled": settled, "settled_by": settled_by},
            "taxonomy": str(report.get("taxonomy")), "proposers": proposers, "attributes": judged,
            "overall_attributes": _tally(report.get("overall_attributes"), "all attributes"),
            "agreement": _agreement(report.get("agreement")), "disagreements": disagreements,
            "gold": _gold(report.get("gold"))}


def _agreement(agreement) -> dict:
    """κ per field and pair; the pooled n re-derived from the pairs', and no headline κ on fewer than the minimum."""
    if not isinstance(agreement, dict):
        raise ValueError("no agreement")
    out = {}
    for name, entry in agreement.items():
        pairs = entry.get("pairs") if isinstance(entry, dict) else None
        if not (isinstance(pairs, dict) and _kappa_ok(entry.get("kappa")) and all(
                isinstance(p, dict) and _kappa_ok(p.get("kappa")) and _count(p.get("n"), f"{name} n") >= 0
                for p in pairs.values())):
            raise ValueError(f"the agreement on {shown(name)} is not kappas over counted items")
        n = sum(p["n"] for p in pairs.values())
        out[name] = {"kappa": entry["kappa"] if n >= MIN_KAPPA_ITEMS else None, "n": n, "pairs": pairs}
    return out


def _gold(gold) -> dict | None:
    """Each reviewer's gold accuracy re-derived from its counts, and the flag from the threshold."""
    if gold is None:
        return None
    if not isinstance(gold, dict) or not isinstance(gold.get("reviewers"), dict) or not all(
            isinstance(gold.get(k), (int, float)) and not isinstance(gold.get(k), bool) and 0 <= gold[k] <= 1
            for k in ("rate", "threshold")):
        raise ValueError("the gold items' figures are not a rate, a threshold and reviewers' accuracies")
    reviewers = {}
    for name, score in gold["reviewers"].items():
        fields = score.get("fields") if isinstance(score, dict) else None
        if not isinstance(fields, dict):
            raise ValueError(f"the gold accuracy of {shown(name)} has no fields")
        items = _rate(score.get("items"), f"{name} gold items")
        reviewers[name] = {"items": items, "fields": {f: _rate(e, f"{name} gold {f}") for f, e in fields.items()},
                           "flagged": items["ci95"] is not None and items["ci95"][1] < 100 * gold["threshold"]}
    return {"rate": gold["rate"], "threshold": gold["threshold"], "reviewers": reviewers}


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{shown(what)} is {shown(value)}, not a count")
    return value


def _kappa_ok(value) -> bool:
    return value is None or (not isinstance(value, bool) and isinstance(value, (int, float)) and -1 <= value <= 1)


def _rate(entry, what: str) -> dict:
    """A rate re-derived from its hits and n."""
    hits, n = (_count(entry.get(k) if isinstance(entry, dict) else None, f"{what} {k}") for k in ("hits", "n"))
    if hits > n:
        raise ValueError(f"{shown(what)}: {hits} hits of {n}")
    return rate(hits, n)


def _tally(entry, name: str) -> dict:
    if not isinstance(entry, dict) or not isinstance(entry.get("not_applicable"), dict):
        raise ValueError(f"{shown(name)} is not an accuracy with its 'not applicable' precision and recall")
    accuracy = _rate(entry.get("accuracy"), f"{name} accuracy")
    if _count(entry.get("not_proposed"), f"{name} not proposed") > accuracy["n"]:
        raise ValueError(f"{shown(name)}: more not proposed than judged")
    na = entry["not_applicable"]
    return {"accuracy": accuracy, "not_proposed": entry["not_proposed"],
            "not_applicable": {k: _rate(na.get(k), f"{name} {k}") for k in ("precision", "recall")}}
