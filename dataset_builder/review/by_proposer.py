"""The audit of layered proposals (``lookbench annotate --proposer A --proposer B``) per proposer: how often each
answered a field (coverage) and how often its answer was the reviewed label when it did (precision), beside how
often its answer was the one taken.

Why: layering puts the more precise proposer first (lookbench/annotate/layered.py), and that order is the
maintainer's call; these figures are what it rests on — metadata right whenever it answers but answering a third of
the items, zero-shot answering everything less precisely. Read from each merged field's ``by`` (every proposer's
own answer) and ``source``; rows of a single proposer carry neither and are not counted here.
"""
from __future__ import annotations

from lookbench.dataset_builder.review.items import Item

CATEGORY = "category"
ALL = "all attributes"


def _field(item: Item, name: str):
    entry = item.proposals.get(CATEGORY) if name == CATEGORY else (item.proposals.get("attributes") or {}).get(name)
    return entry if isinstance(entry, dict) and isinstance(entry.get("by"), dict) else None


def by_proposer(reviewed: list[tuple[Item, str, dict[str, str]]], rate) -> dict:
    """proposer -> field (category, each attribute, all attributes) -> {coverage, precision, taken}, over the reviewed
    items (item, reviewed category, reviewed attributes); ``rate(hits, n)`` a proportion with its interval. Empty
    when no reviewed item's proposals are layered."""
    counts: dict[str, dict[str, list[int]]] = {}  # proposer -> field -> [judged, answered, right, taken]
    for item, category, attributes in reviewed:
        for name, actual in [(CATEGORY, category), *attributes.items()]:
            field = _field(item, name)
            if field is None:
                continue
            for proposer, answer in field["by"].items():
                value = answer.get("value") if isinstance(answer, dict) else None
                for key in (name, ALL) if name != CATEGORY else (name,):
                    tally = counts.setdefault(str(proposer), {}).setdefault(key, [0, 0, 0, 0])
                    tally[0] += 1
                    tally[1] += value is not None
                    tally[2] += value is not None and value == actual
                    tally[3] += field.get("source") == proposer
    return {proposer: {name: {"coverage": rate(answered, judged), "precision": rate(right, answered), "taken": taken}
                       for name, (judged, answered, right, taken) in sorted(fields.items(), key=_order)}
            for proposer, fields in counts.items()}


def _order(field) -> tuple:
    """The category first, every attribute by name, all attributes last."""
    return field[0] != CATEGORY, field[0] == ALL, field[0]


def by_proposer_lines(report: dict, percent, escape=str) -> list[str]:
    """The per-proposer figures for a terminal (``percent`` shows a rate); none when the proposals were not layered."""
    found = report.get("by_proposer") or {}
    if not found:
        return []
    out = ["", "Layered proposals, per proposer (coverage: answered of judged; precision: right of answered; taken: "
               "its answer was the proposal):"]
    for proposer, fields in found.items():
        out.append(f"  {escape(proposer)}")
        out += [f"    {escape(name)}: coverage {percent(entry['coverage'])}, precision {percent(entry['precision'])}, "
                f"taken {entry['taken']}" for name, entry in fields.items()]
    return out
