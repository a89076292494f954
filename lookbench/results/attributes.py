"""Where top-1 goes wrong, attribute by attribute: each query's top-1 item held against the query's attributes.

A query counts for attribute *a* when its annotation has *a* and the judge found its top-1 item of the query's
category (its ``coarse`` flag at rank 1, so image and text queries and -1 pads are treated as the judge treats
them). It is an error when the top-1 item does not carry the query's value of *a*: it lacks *a*, or has another
value. Names and values are compared as the metric compares them (case- and whitespace-insensitive) and kept in that
normal form. Each query's marks are kept with its outcomes (``per_query.attributes_at_1``), so the rates, their
Wilson intervals and the paired comparison are recomputed from a stored result without its rankings.
docs/architecture.md §5 and docs/statistics.md.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from lookbench.metric.fine_recall import bootstrap
from lookbench.metric.fine_recall.records import GalleryColumns, normalise, project_records

CONFUSIONS = 10  # the most frequent confusions kept per attribute (ties: by query value, then top-1 value)


def _values(pairs) -> dict[str, list[str]]:
    """``{name: sorted distinct values}`` of (name, value) pairs, in normal form."""
    out: dict[str, set] = {}
    for name, value in pairs:
        out.setdefault(normalise(name), set()).add(normalise(value))
    return {name: sorted(values) for name, values in out.items()}


def marks(ranking: np.ndarray, coarse: np.ndarray, queries, gallery: GalleryColumns) -> list:
    """Per query: ``None`` when its top-1 item is not of its category (or it has no result), else ``{a: None}``
    for each of its attributes the top-1 item carries and ``{a: [query value, top-1 value or None]}`` for each it
    does not (a name with several values shows them joined by "/")."""
    columns = gallery.columns
    rows = columns["rows"]
    (name_codes, name_uniques), (value_codes, value_uniques) = columns["name"], columns["value"]
    out = []
    for q, record in enumerate(project_records(queries, "queries")):
        if ranking.shape[1] == 0 or ranking[q, 0] < 0 or not coarse[q, 0]:
            out.append(None)
            continue
        start, end = np.searchsorted(rows, ranking[q, 0], "left"), np.searchsorted(rows, ranking[q, 0], "right")
        item = _values((name_uniques[name_codes[i]], value_uniques[value_codes[i]]) for i in range(start, end))
        wanted = _values((a["name"], a["value"]) for a in record["attributes"])
        out.append({name: None if set(values) <= set(item.get(name, ())) else
                    ["/".join(values), "/".join(item[name]) if name in item else None]
                    for name, values in wanted.items()})
    return out


def attribute_errors(per_query: list) -> dict:
    """``{a: {"rate": percent, "n": queries, "ci95": [lo, hi], "confusions": [[query value, top-1 value or None,
    count], ...]}}`` of the queries' ``marks`` (of one subset, or of every subset's joined for the overall), by
    name. The interval is Wilson's on the ``n`` queries."""
    counted: Counter = Counter()
    confused: dict[str, Counter] = {}
    for query in per_query:
        for name, wrong in (query or {}).items():
            counted[name] += 1
            tally = confused.setdefault(name, Counter())
            if wrong is not None:
                tally[tuple(wrong)] += 1
    out = {}
    for name in sorted(counted):
        n, errors = counted[name], sum(confused[name].values())
        rate = 100.0 * errors / n
        top = sorted(confused[name].items(), key=lambda item: (-item[1], item[0][0], item[0][1] or ""))[:CONFUSIONS]
        # the metric's Wilson interval (as stats.wilson; imported from there, this module would close a circle
        # through outcomes, which checks these claims)
        out[name] = {"rate": rate, "n": n, "ci95": [round(100 * v, 4) for v in bootstrap.wilson(errors / n, n)],
                     "confusions": [[query, top1, count] for (query, top1), count in top]}
    return out


def differences(claimed, recomputed: dict, where: str, tolerance: float) -> list[str]:
    """Where claimed ``attribute_errors`` differ from the recomputed ones (numbers within ``tolerance``): one line
    per attribute and key, naming them."""
    if not isinstance(claimed, dict):
        return [f"{where} attribute_errors is {type(claimed).__name__}, not a mapping of attributes"]
    problems = [f"{where} attribute_errors has {str(name)[:60]!r}, which no counted query has" for name in claimed
                if name not in recomputed]
    for name, truth in recomputed.items():
        block = claimed.get(name)
        if not isinstance(block, dict):
            problems.append(f"{where} attribute_errors.{name} is missing; the queries give rate {truth['rate']:.4f} "
                            f"on {truth['n']}")
            continue
        problems += [f"{where} attribute_errors.{name}.{key} claimed {str(block.get(key))[:80]}, the queries give "
                     f"{str(given)[:80]}" for key, given in truth.items() if not _close(block.get(key), given, tolerance)]
    return problems


def _close(value, given, tolerance: float) -> bool:
    """Equal, numbers within ``tolerance`` (a bool is no number), lists element by element."""
    if isinstance(given, list):
        return isinstance(value, list) and len(value) == len(given) and all(
            _close(v, g, tolerance) for v, g in zip(value, given))
    if isinstance(given, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value - given) <= tolerance
    return type(value) is type(given) and value == given


def check_marks(data, size: int, where: str) -> list:
    """Stored ``per_query.attributes_at_1``: one entry per query, each ``None`` or ``{name: None | [query value,
    top-1 value or None]}``; anything else a ValueError naming the query."""
    if not isinstance(data, list) or len(data) != size:
        shown = f"{len(data)} values" if isinstance(data, list) else type(data).__name__
        raise ValueError(f"{where} per_query.attributes_at_1 is {shown}, not one entry for each of {size} queries")
    for i, entry in enumerate(data):
        good = entry is None or isinstance(entry, dict) and all(
            isinstance(name, str) and (wrong is None or isinstance(wrong, list) and len(wrong) == 2
                                       and isinstance(wrong[0], str) and (wrong[1] is None or isinstance(wrong[1], str)))
            for name, wrong in entry.items())
        if not good:
            raise ValueError(f"{where} per_query.attributes_at_1[{i}] is {str(entry)[:80]}, not null or "
                             "{attribute: null or [query value, top-1 value or null]}")
    return data


def check_claims(claims: dict, outcomes: dict, damaged: str, tolerance: float) -> None:
    """Every ``attribute_errors`` a result claims (``claims``: subset or "overall" -> block) is what its stored
    marks give; a result that keeps no marks claims none (results written before they were kept: nothing to check
    and nothing shown). Anything else is a ValueError "<damaged> <what>"."""
    kept = [name for name, o in outcomes.items() if o.attributes_at_1 is not None]
    claiming = [name for name, block in claims.items() if isinstance(block, dict) and "attribute_errors" in block]
    if not kept and not claiming:
        return
    if len(kept) != len(outcomes) or len(claiming) != len(claims):
        raise ValueError(f"{damaged} attribute_errors are claimed for {', '.join(claiming) or 'nothing'} and "
                         f"per_query.attributes_at_1 kept for {', '.join(kept) or 'nothing'}; they go together")
    given = {name: attribute_errors(o.attributes_at_1) for name, o in outcomes.items()}
    given["overall"] = attribute_errors([m for o in outcomes.values() for m in o.attributes_at_1])
    problems = [p for name, block in claims.items()
                for p in differences(block["attribute_errors"], given[name], name, tolerance)]
    if problems:
        raise ValueError(f"{damaged} {problems[0]}")
