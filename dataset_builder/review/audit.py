"""``lookbench audit``: how good the proposals were and how far reviewers agree, measured on the reviewed labels.

- the proposer's accuracy per attribute (and for the category) against the agreed reviewed labels, with the Wilson
  interval the metric uses for hit rates (``bootstrap.wilson``, which ``results.stats.wilson`` wraps: the dataset
  builder sits below the results layer). An attribute the proposer left unanswered ("not proposed") counts as wrong
  and is counted on its own;
- "not applicable" on its own, as a detection task: precision and recall of the proposals' "not applicable";
- Cohen's κ per attribute for every pair of reviewers over the items both labelled (the plan's shared sample, and
  any item two reviewers happened to meet), and its mean over the pairs (Light's κ) when there are more;
- the items reviewers disagree on, field by field;
- for layered proposals, each proposer's coverage and precision (``by_proposer``).
"""
from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from lookbench.errors import one_line, shown
from lookbench.files import read_regular, replacing
from lookbench.terminal import markdown_safe, terminal_safe

from lookbench.metric.fine_recall.bootstrap import wilson

from lookbench.dataset_builder.decisions import REVIEWS
from lookbench.dataset_builder.review.by_proposer import by_proposer, by_proposer_lines
from lookbench.dataset_builder.review.items import Item
from lookbench.dataset_builder.reviewed_labels import Verdict
from lookbench.dataset_builder.taxonomy import Taxonomy

CATEGORY = "category"
MAX_AUDIT_BYTES = 64 << 20


def rate(hits: int, n: int) -> dict:
    """A proportion with its 95 % Wilson interval, in percent (``None`` on no observation)."""
    if n == 0:
        return {"hits": 0, "n": 0, "percent": None, "ci95": None}
    lo, hi = wilson(hits / n, n)
    return {"hits": hits, "n": n, "percent": 100 * hits / n, "ci95": [100 * lo, 100 * hi]}


def cohen_kappa(pairs: list[tuple[str, str]]) -> float | None:
    """Cohen's κ of two raters' labels ``(a, b)`` per item; ``None`` when chance agreement is 1 (both raters gave one
    and the same label throughout, where κ is undefined)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    chance = sum(first[label] * second[label] for label in first) / (n * n)
    return None if chance == 1 else (observed - chance) / (1 - chance)


@dataclass
class _Tally:
    hits: int = 0
    n: int = 0
    not_proposed: int = 0
    na_true_positive: int = 0
    na_proposed: int = 0
    na_actual: int = 0

    def add(self, proposed, actual, na: str) -> None:
        self.n += 1
        self.hits += proposed == actual
        self.not_proposed += proposed is None
        self.na_proposed += proposed == na
        self.na_actual += actual == na
        self.na_true_positive += proposed == na and actual == na

    def to_dict(self) -> dict:
        return {"accuracy": rate(self.hits, self.n), "not_proposed": self.not_proposed,
                "not_applicable": {"precision": rate(self.na_true_positive, self.na_proposed),
                                   "recall": rate(self.na_true_positive, self.na_actual)}}


def _proposed(item: Item, name: str):
    """The proposal's value of an attribute (or of the category), ``None`` when it proposed none."""
    if name == CATEGORY:
        entry = item.proposals.get("category")
    else:
        entry = (item.proposals.get("attributes") or {}).get(name)
    return entry.get("value") if isinstance(entry, dict) else None


def audit(items: list[Item], verdicts: dict[str, Verdict], taxonomy: Taxonomy) -> dict:
    """The audit of an annotated release as a JSON-able dict (``lines`` and ``markdown`` show it)."""
    na = taxonomy.not_applicable
    tallies: dict[str, _Tally] = {}
    by_key = {item.key: item for item in items}
    agreed = {key: v for key, v in verdicts.items() if v.agreed and key in by_key}
    for key, verdict in agreed.items():
        label = next(iter(verdict.labels.values()))
        tallies.setdefault(CATEGORY, _Tally()).add(_proposed(by_key[key], CATEGORY), label.category, na)
        for name, value in label.attributes.items():
            tallies.setdefault(name, _Tally()).add(_proposed(by_key[key], name), value, na)
    overall = _Tally()
    for name, tally in tallies.items():
        if name != CATEGORY:
            for field in vars(overall):
                setattr(overall, field, getattr(overall, field) + getattr(tally, field))
    proposers = Counter(f"{(item.record.get('proposer') or {}).get('name')}@{(item.record.get('proposer') or {}).get('revision')}"
                        for item in items if item.key in agreed)
    return {
        "counts": {"items": len(items), "reviewed": len(agreed),
                   "disputed": sum(not v.agreed for k, v in verdicts.items() if k in by_key),
                   "not_reviewed": sum(item.key not in verdicts for item in items),
                   "reviewers": sorted({r for v in verdicts.values() for r in v.labels})},
        "taxonomy": taxonomy.label,
        "proposers": dict(proposers),
        "attributes": {name: tallies[name].to_dict() for name in sorted(tallies, key=lambda n: (n != CATEGORY, n))},
        "overall_attributes": overall.to_dict(),
        "agreement": agreement(verdicts),
        "disagreements": disagreements(verdicts),
        "by_proposer": by_proposer([(by_key[key], label.category, label.attributes) for key, v in agreed.items()
                                    for label in [next(iter(v.labels.values()))]], rate),
    }


def agreement(verdicts: dict[str, Verdict]) -> dict:
    """Per field (category, each attribute): Cohen's κ and the items it rests on, for every pair of reviewers who
    labelled items in common, and the mean over the pairs."""
    pairs: dict[str, dict[str, list]] = {}
    for verdict in verdicts.values():
        for a, b in itertools.combinations(sorted(verdict.labels), 2):
            first, second = verdict.labels[a], verdict.labels[b]
            pair = f"{a} / {b}"
            pairs.setdefault(CATEGORY, {}).setdefault(pair, []).append((first.category, second.category))
            for name in sorted(set(first.attributes) & set(second.attributes)):
                pairs.setdefault(name, {}).setdefault(pair, []).append((first.attributes[name], second.attributes[name]))
    out = {}
    for name in sorted(pairs, key=lambda n: (n != CATEGORY, n)):
        per_pair = {pair: {"kappa": cohen_kappa(labels), "n": len(labels),
                           "agreement": rate(sum(x == y for x, y in labels), len(labels))["percent"]}
                    for pair, labels in pairs[name].items()}
        kappas = [p["kappa"] for p in per_pair.values() if p["kappa"] is not None]
        out[name] = {"kappa": sum(kappas) / len(kappas) if kappas else None, "pairs": per_pair}
    return out


def disagreements(verdicts: dict[str, Verdict]) -> list[dict]:
    """Every item reviewers labelled differently: each field they differ on, with each reviewer's value."""
    found = []
    for key, verdict in sorted(verdicts.items()):
        if verdict.agreed:
            continue
        labels = verdict.labels
        fields = {CATEGORY: {r: e.category for r, e in labels.items()}}
        for name in sorted({n for e in labels.values() for n in e.attributes}):
            fields[name] = {r: e.attributes.get(name, "—") for r, e in labels.items()}
        found.append({"item": key, "fields": {n: v for n, v in fields.items() if len(set(v.values())) > 1}})
    return found


def _percent(entry: dict) -> str:
    if entry["percent"] is None:
        return "—"
    lo, hi = entry["ci95"]
    return f"{entry['percent']:.1f}% [{lo:.1f}, {hi:.1f}] (n={entry['n']})"


def _kappa(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def table_rows(report: dict) -> list[list[str]]:
    """One row per field: accuracy, not proposed, "not applicable" precision and recall, κ."""
    rows = []
    for name, entry in [*report["attributes"].items(), ("all attributes", report["overall_attributes"])]:
        kappa = report["agreement"].get(name, {}).get("kappa")
        rows.append([name, _percent(entry["accuracy"]), str(entry["not_proposed"]),
                     _percent(entry["not_applicable"]["precision"]), _percent(entry["not_applicable"]["recall"]),
                     _kappa(kappa)])
    return rows


HEADER = ["field", "proposer accuracy [95% Wilson]", "not proposed", "'not applicable' precision",
          "'not applicable' recall", "reviewers' κ"]


def summary(report: dict, escape=str) -> str:
    counts = report["counts"]
    return (f"{counts['items']} items: {counts['reviewed']} reviewed and agreed, {counts['disputed']} disputed, "
            f"{counts['not_reviewed']} not reviewed; reviewers: {escape(', '.join(counts['reviewers'])) or 'none'}; "
            f"taxonomy {escape(report['taxonomy'])}")


def lines(report: dict) -> list[str]:
    """The audit for a terminal."""
    rows = [HEADER, *table_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    out = [summary(report, terminal_safe), ""] + ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    out += _pair_lines(report)
    out += by_proposer_lines(report, _percent, terminal_safe)
    if report["disagreements"]:
        out += ["", f"{len(report['disagreements'])} item(s) reviewers disagree on:"]
        out += [f"  {d['item']}: " + "; ".join(f"{n}: " + ", ".join(f"{r} {v!r}" for r, v in sorted(vals.items()))
                                             for n, vals in d["fields"].items()) for d in report["disagreements"]]
    return out


def _pair_lines(report: dict) -> list[str]:
    pairs = sorted({pair for entry in report["agreement"].values() for pair in entry["pairs"]})
    if not pairs:
        return ["", "No item was labelled by two reviewers: no agreement to measure (review with --overlap 2 or more)."]
    out = ["", "Cohen's κ per pair of reviewers (items both labelled):"]
    for pair in pairs:
        parts = [f"{name} {_kappa(entry['pairs'][pair]['kappa'])} (n={entry['pairs'][pair]['n']})"
                 for name, entry in report["agreement"].items() if pair in entry["pairs"]]
        out.append(f"  {pair}: " + ", ".join(parts))
    return out


def markdown(report: dict) -> str:
    """The audit as the card's section text."""
    rows = table_rows(report)

    def cells(row, name=lambda text: text.replace("|", "\\|")):
        return "| " + " | ".join([name(row[0]), *(cell.replace("|", "\\|") for cell in row[1:])]) + " |"

    # a field's name is the taxonomy's text, escaped; the other cells are figures
    table = "\n".join([cells(HEADER), cells(["---"] * len(HEADER)), *(cells(row, markdown_safe) for row in rows)])
    # names from the release's rows and taxonomy: text on the card, never markup (nor a code span to break out of)
    proposers = ", ".join(f"{markdown_safe(name)} ({count} items)" for name, count in report["proposers"].items()) or "none recorded"
    disputed = len(report["disagreements"])
    return (f"{summary(report, markdown_safe)}. Labels were proposed by {proposers} and every label in this release was checked by a "
            f"reviewer; items reviewers disagree on ({disputed}) and items nobody reviewed carry no label and are not "
            f"in the release.\n\n{table}\n\nAccuracy is the share of the proposals that the reviewed label kept; "
            "'not applicable' precision and recall treat \"not applicable\" as the class to detect; κ is Cohen's kappa "
            "between reviewers on the items both labelled (the mean over pairs when more than two reviewed).")


def audit_release(raw) -> dict:
    """The audit of the raw release folder ``raw`` (its rows, ``taxonomy.json`` and ``reviews/``)."""
    from lookbench.dataset_builder.decisions import DecisionStore, ReviewError
    from lookbench.dataset_builder.review.items import read_items
    from lookbench.dataset_builder.reviewed_labels import verdicts
    from lookbench.dataset_builder.sources import RawSource

    taxonomy = RawSource(raw).taxonomy()
    if taxonomy is None:
        raise ReviewError(f"{raw} has no taxonomy.json; audit an annotated release (lookbench annotate --out RAW)")
    items, problems = read_items(raw)
    report = audit(items, verdicts(DecisionStore(raw)), taxonomy)
    report["counts"]["not_reviewable"] = len(problems)
    return report


def write_audit(raw, path: Path) -> Path | None:
    """The audit of a reviewed raw release (one with ``reviews/``) as JSON at ``path``; None for any other release."""
    if not (Path(raw) / REVIEWS).is_dir():
        return None
    with replacing(path) as tmp:
        tmp.write_text(json.dumps(audit_release(raw), indent=2) + "\n", encoding="utf-8")
    return path


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
    agreement = report.get("agreement")
    if not isinstance(agreement, dict):
        raise ValueError("no agreement")
    for name, entry in agreement.items():
        pairs = entry.get("pairs") if isinstance(entry, dict) else None
        if not (isinstance(pairs, dict) and _kappa_ok(entry.get("kappa")) and all(
                isinstance(p, dict) and _kappa_ok(p.get("kappa")) and _count(p.get("n"), f"{name} n") >= 0
                for p in pairs.values())):
            raise ValueError(f"the agreement on {shown(name)} is not kappas over counted items")
    return {"counts": {"items": items, "reviewed": reviewed, "disputed": disputed, "not_reviewed": not_reviewed,
                       "reviewers": reviewers},
            "taxonomy": str(report.get("taxonomy")), "proposers": proposers, "attributes": judged,
            "overall_attributes": _tally(report.get("overall_attributes"), "all attributes"),
            "agreement": agreement, "disagreements": disagreements}


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
