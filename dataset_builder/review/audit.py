"""``lookbench audit``: how good the proposals were and how far reviewers agree, measured on the reviewed labels.

- the proposer's accuracy per attribute (and for the category) against the agreed reviewed labels, with the Wilson
  interval the metric uses for hit rates (``bootstrap.wilson``, which ``results.stats.wilson`` wraps: the dataset
  builder sits below the results layer). An attribute the proposer left unanswered ("not proposed") counts as wrong
  and is counted on its own;
- "not applicable" on its own, as a detection task: precision and recall of the proposals' "not applicable";
- Cohen's κ per attribute over every pair of reviewers' items in common (the plan's shared sample, and any item two
  reviewers happened to meet), all pairs pooled, with its n beside it; no headline κ rests on fewer than
  ``MIN_KAPPA_ITEMS`` items (one κ of 0.00 from a single item is no figure); and κ per pair;
- the disputes: how many, how many an adjudicator settled (by whom) and how many are still open, field by field;
- with gold items (``dataset_builder.gold``): each reviewer's accuracy on gold, item-level and per field, with its
  Wilson interval, and who is flagged (their labels held out of the build);
- for layered proposals, each proposer's coverage and precision (``by_proposer``).
"""
from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from lookbench.files import replacing
from lookbench.terminal import markdown_safe, terminal_safe

from lookbench.dataset_builder.decisions import REVIEWS
from lookbench.dataset_builder.gold import CATEGORY, rate
from lookbench.dataset_builder.review.by_proposer import by_proposer, by_proposer_lines
from lookbench.dataset_builder.review.items import Item
from lookbench.dataset_builder.reviewed_labels import Verdict
from lookbench.dataset_builder.taxonomy import Taxonomy

MIN_KAPPA_ITEMS = 20  # a headline κ rests on at least this many items (pairs pooled); fewer: n shown, no κ


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


def audit(items: list[Item], verdicts: dict[str, Verdict], taxonomy: Taxonomy, gold: dict | None = None) -> dict:
    """The audit of an annotated release as a JSON-able dict (``lines`` and ``markdown`` show it); ``gold``: the
    reviewers' gold scores (``gold.scores``) with the plan's ``threshold`` and ``rate``, when the review has gold."""
    na = taxonomy.not_applicable
    tallies: dict[str, _Tally] = {}
    by_key = {item.key: item for item in items}
    verdicts = {key: v for key, v in verdicts.items() if key in by_key}  # gold items are no items of the release
    decided = {key: v for key, v in verdicts.items() if v.decided}
    for key, verdict in decided.items():
        label = verdict.label
        tallies.setdefault(CATEGORY, _Tally()).add(_proposed(by_key[key], CATEGORY), label.category, na)
        for name, value in label.attributes.items():
            tallies.setdefault(name, _Tally()).add(_proposed(by_key[key], name), value, na)
    overall = _Tally()
    for name, tally in tallies.items():
        if name != CATEGORY:
            for field in vars(overall):
                setattr(overall, field, getattr(overall, field) + getattr(tally, field))
    proposers = Counter(f"{(item.record.get('proposer') or {}).get('name')}@{(item.record.get('proposer') or {}).get('revision')}"
                        for item in items if item.key in decided)
    disputed = sum(v.disputed for v in verdicts.values())
    settled = [v for v in verdicts.values() if v.settled]
    return {
        "counts": {"items": len(items), "reviewed": len(decided), "disputed": disputed,
                   "not_reviewed": len(items) - len(decided) - disputed,
                   "reviewers": sorted({r for v in verdicts.values() for r in (*v.labels, *v.held)}),
                   "settled": len(settled), "settled_by": dict(sorted(Counter(v.adjudication.reviewer for v in settled).items()))},
        "taxonomy": taxonomy.label,
        "proposers": dict(proposers),
        "attributes": {name: tallies[name].to_dict() for name in sorted(tallies, key=lambda n: (n != CATEGORY, n))},
        "overall_attributes": overall.to_dict(),
        "agreement": agreement(verdicts),
        "disagreements": disagreements(verdicts),
        "by_proposer": by_proposer([(by_key[key], v.label.category, v.label.attributes) for key, v in decided.items()], rate),
        "adjudications": [{"item": v.key, "by": v.adjudication.reviewer, "time": v.adjudication.time,
                           "fields": _fields({**v.labels, v.adjudication.reviewer: v.adjudication})}
                          for v in sorted(settled, key=lambda v: v.key)],
        "gold": gold,
    }


def agreement(verdicts: dict[str, Verdict]) -> dict:
    """Per field (category, each attribute): Cohen's κ over every pair of reviewers' items in common, pooled, with its
    n (``kappa`` None under ``MIN_KAPPA_ITEMS``; ``pooled_kappa`` the figure whatever its n), and per pair."""
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
        pooled = [labels for each in pairs[name].values() for labels in each]
        kappa = cohen_kappa(pooled)
        out[name] = {"kappa": kappa if len(pooled) >= MIN_KAPPA_ITEMS else None, "pooled_kappa": kappa,
                     "n": len(pooled), "pairs": per_pair}
    return out


def _fields(labels: dict) -> dict:
    """Each field the labels differ on, with each one's value."""
    fields = {CATEGORY: {r: e.category for r, e in labels.items()}}
    for name in sorted({n for e in labels.values() for n in e.attributes}):
        fields[name] = {r: e.attributes.get(name, "—") for r, e in labels.items()}
    return {n: v for n, v in fields.items() if len(set(v.values())) > 1}


def disagreements(verdicts: dict[str, Verdict]) -> list[dict]:
    """Every item reviewers labelled differently and no adjudicator settled: each field they differ on, with each
    reviewer's value."""
    return [{"item": key, "fields": _fields(verdict.labels)} for key, verdict in sorted(verdicts.items()) if verdict.disputed]


def _percent(entry: dict) -> str:
    if entry["percent"] is None:
        return "—"
    lo, hi = entry["ci95"]
    return f"{entry['percent']:.1f}% [{lo:.1f}, {hi:.1f}] (n={entry['n']})"


def _kappa(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _headline(entry: dict | None) -> str:
    """A field's pooled κ with its n; under ``MIN_KAPPA_ITEMS`` items only the n (no headline figure)."""
    if not entry:
        return "—"
    if entry.get("n", 0) < MIN_KAPPA_ITEMS:
        return f"— (n={entry.get('n', 0)} < {MIN_KAPPA_ITEMS})"
    return f"{_kappa(entry['kappa'])} (n={entry['n']})"


def table_rows(report: dict) -> list[list[str]]:
    """One row per field: accuracy, not proposed, "not applicable" precision and recall, κ."""
    rows = []
    for name, entry in [*report["attributes"].items(), ("all attributes", report["overall_attributes"])]:
        rows.append([name, _percent(entry["accuracy"]), str(entry["not_proposed"]),
                     _percent(entry["not_applicable"]["precision"]), _percent(entry["not_applicable"]["recall"]),
                     _headline(report["agreement"].get(name))])
    return rows


HEADER = ["field", "proposer accuracy [95% Wilson]", "not proposed", "'not applicable' precision",
          "'not applicable' recall", "reviewers' κ, pairs pooled"]


def summary(report: dict, escape=str) -> str:
    counts = report["counts"]
    settled = counts.get("settled", 0)
    by = ", ".join(f"{escape(name)} {n}" for name, n in counts.get("settled_by", {}).items())
    return (f"{counts['items']} items: {counts['reviewed']} reviewed and agreed"
            + (f" ({settled} dispute(s) settled by an adjudicator: {by})" if settled else "")
            + f", {counts['disputed']} disputed, {counts['not_reviewed']} not reviewed; reviewers: "
            f"{escape(', '.join(counts['reviewers'])) or 'none'}; taxonomy {escape(report['taxonomy'])}")


def gold_lines(report: dict, escape=str) -> list[str]:
    """Each reviewer's accuracy on the gold items, item-level and per field, and who is flagged."""
    gold = report.get("gold")
    if not gold:
        return []
    out = [f"Gold items (known labels, {100 * gold['rate']:.0f}% of each queue): accuracy [95% Wilson]; a reviewer whose "
           f"item-level interval lies wholly under {100 * gold['threshold']:.0f}% is flagged and their labels are held "
           "out of the build until another reviewer reviews their items."]
    for name, score in gold["reviewers"].items():
        fields = ", ".join(f"{escape(field)} {_percent(entry)}" for field, entry in score["fields"].items())
        out.append(f"{escape(name)}: items {_percent(score['items'])}{' — FLAGGED, labels held out' if score['flagged'] else ''}"
                   f"; {fields}")
    return out


def lines(report: dict) -> list[str]:
    """The audit for a terminal."""
    rows = [HEADER, *table_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    out = [summary(report, terminal_safe), ""] + ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    out += ["", f"No headline κ rests on fewer than {MIN_KAPPA_ITEMS} items (every pair of reviewers pooled)."]
    out += _pair_lines(report)
    out += by_proposer_lines(report, _percent, terminal_safe)
    if report["disagreements"]:
        out += ["", f"{len(report['disagreements'])} item(s) reviewers disagree on (settle with lookbench review RAW --adjudicate):"]
        out += [f"  {d['item']}: {_differences(d['fields'])}" for d in report["disagreements"]]
    if report.get("adjudications"):
        out += ["", f"{len(report['adjudications'])} dispute(s) settled by an adjudicator:"]
        out += [f"  {a['item']} by {a['by']} ({a['time']}): {_differences(a['fields'])}" for a in report["adjudications"]]
    if gold := gold_lines(report, terminal_safe):
        out += ["", *gold[:1], *(f"  {line}" for line in gold[1:])]
    return out


def _differences(fields: dict) -> str:
    return "; ".join(f"{n}: " + ", ".join(f"{r} {v!r}" for r, v in sorted(vals.items())) for n, vals in fields.items())


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
    """The audit as the card's section text: figures and names, never a label value (a sealed release's card shows
    it too)."""
    rows = table_rows(report)

    def cells(row, name=lambda text: text.replace("|", "\\|")):
        return "| " + " | ".join([name(row[0]), *(cell.replace("|", "\\|") for cell in row[1:])]) + " |"

    # a field's name is the taxonomy's text, escaped; the other cells are figures
    table = "\n".join([cells(HEADER), cells(["---"] * len(HEADER)), *(cells(row, markdown_safe) for row in rows)])
    # names from the release's rows and taxonomy: text on the card, never markup (nor a code span to break out of)
    proposers = ", ".join(f"{markdown_safe(name)} ({count} items)" for name, count in report["proposers"].items()) or "none recorded"
    disputed = len(report["disagreements"])
    gold = gold_lines(report, markdown_safe)
    return (f"{summary(report, markdown_safe)}. Labels were proposed by {proposers} and every label in this release was checked by a "
            f"reviewer or set by an adjudicator settling a dispute; items still disputed ({disputed}) and items nobody "
            f"reviewed carry no label and are not in the release.\n\n{table}\n\nAccuracy is the share of the proposals "
            "that the reviewed label kept; 'not applicable' precision and recall treat \"not applicable\" as the class to "
            "detect; κ is Cohen's kappa between reviewers on the items two labelled, every pair pooled, shown only when it "
            f"rests on at least {MIN_KAPPA_ITEMS} items."
            + ("\n\n" + "\n".join(f"- {line}" if i else line for i, line in enumerate(gold)) if gold else ""))


def audit_release(raw) -> dict:
    """The audit of the raw release folder ``raw`` (its rows, ``taxonomy.json`` and ``reviews/``); a reviewer the
    gold flags has their labels held out, as the build holds them out."""
    from lookbench.dataset_builder.decisions import DecisionStore, ReviewError
    from lookbench.dataset_builder.gold import GoldSettings, flagged, read_gold, scores
    from lookbench.dataset_builder.review.items import read_items
    from lookbench.dataset_builder.reviewed_labels import verdicts
    from lookbench.dataset_builder.sources import RawSource

    taxonomy = RawSource(raw).taxonomy()
    if taxonomy is None:
        raise ReviewError(f"{raw} has no taxonomy.json; audit an annotated release (lookbench annotate --out RAW)")
    items, problems = read_items(raw)
    store = DecisionStore(raw)
    events, settings, gold, held = store.all_events(), GoldSettings.from_plan(raw), None, frozenset()
    if settings is not None:
        truths = {key: truth for key, _, _, truth in read_gold(settings, taxonomy)}
        held = flagged(truths, events, settings.threshold)
        gold = {"rate": settings.rate, "threshold": settings.threshold, "items": len(truths),
                "reviewers": scores(truths, events, settings.threshold)}
    report = audit(items, verdicts(store, held), taxonomy, gold)
    report["counts"]["not_reviewable"] = len(problems)
    return report


def write_audit(raw, path: Path) -> Path | None:
    """The audit of a reviewed raw release (one with ``reviews/``) as JSON at ``path``; None for any other release."""
    if not (Path(raw) / REVIEWS).is_dir():
        return None
    with replacing(path) as tmp:
        tmp.write_text(json.dumps(audit_release(raw), indent=2) + "\n", encoding="utf-8")
    return path
