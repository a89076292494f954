"""How sure a score is: bootstrap intervals, paired differences, exact McNemar, Holm and Wilson. Numpy only.

Queries are resampled in units: the item queries of one street-look photo share an ``outfit_id`` and are not
independent, so they are drawn together (a cluster bootstrap); every other query is a unit of its own. The overall
score resamples each subset and combines the replicates with the subsets' query counts, as ``combine_subsets``
combines the scores. The bootstrap itself is the metric's (``bootstrap.bootstrap_replicates``), so the intervals of
``evaluate.load("lookbench/fine_recall")`` and of a stored result are drawn alike. docs/architecture.md §5 and
docs/statistics.md.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from lookbench.metric.fine_recall import bootstrap
from lookbench.results.outcomes import Outcomes

RESAMPLES = bootstrap.RESAMPLES
SEED = 0
CONFIDENCE = bootstrap.CONFIDENCE
METHOD = ("percentile bootstrap over queries; queries sharing an outfit_id are resampled together; the overall "
          "resamples every subset and weights them by their query counts")


def settings(resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """What the provenance records about the intervals."""
    return {"method": METHOD, "resamples": resamples, "seed": seed, "confidence": CONFIDENCE}


def _overall(per_subset: dict[str, tuple[list[str], np.ndarray]], weights: dict[str, int]) -> tuple[list[str], np.ndarray]:
    """Replicates of the query-weighted overall, for the metrics every subset has."""
    common = [n for n in next(iter(per_subset.values()))[0] if all(n in names for names, _ in per_subset.values())]
    total = sum(weights.values())
    combined = sum(weights[s] * reps[:, [names.index(n) for n in common]] for s, (names, reps) in per_subset.items())
    return common, combined / total


def intervals(subsets: dict[str, Outcomes], *, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, dict]:
    """``{subset or "overall": {"fine_recall@1": (lo, hi), ...}}``: 95 % bootstrap intervals, percent."""
    reps, out = {}, {}
    for position, (name, outcomes) in enumerate(subsets.items()):
        names, top, bottom = bootstrap.query_shares(outcomes.per_query())
        units = bootstrap.resampling_units(outcomes.outfit_id)
        rng = bootstrap.bootstrap_rng(seed, position)
        reps[name] = (names, bootstrap.bootstrap_replicates(units, top, bottom, resamples, rng))
        out[name] = dict(zip(names, map(tuple, bootstrap.percentile_interval(reps[name][1]))))
    if subsets:
        names, combined = _overall(reps, {s: len(o) for s, o in subsets.items()})
        out["overall"] = dict(zip(names, map(tuple, bootstrap.percentile_interval(combined))))
    return out


def paired(a: dict[str, Outcomes], b: dict[str, Outcomes], key: str, *, resamples: int = RESAMPLES,
           seed: int = SEED) -> dict[str, dict]:
    """Per subset and overall, A − B of score ``key`` (percent) with its paired, outfit-clustered bootstrap interval
    and bootstrap p-value; both results must hold the same queries in the same order."""
    reps, out = {}, {}
    for position, name in enumerate(a):
        diff = (a[name].scores()[key] - b[name].scores()[key])[:, None]
        units = bootstrap.resampling_units(a[name].outfit_id)
        rng = bootstrap.bootstrap_rng(seed, position)
        replicates = bootstrap.bootstrap_replicates(units, diff, np.ones_like(diff), resamples, rng)
        reps[name] = ([key], replicates)
        out[name] = _difference(float(diff.mean()), replicates[:, 0])
    weights = {s: len(o) for s, o in a.items()}
    total = sum(weights.values())
    point = sum(weights[s] * out[s]["diff"] for s in a) / total
    out["overall"] = _difference(point, _overall(reps, weights)[1][:, 0])
    return out


def _difference(point: float, replicates: np.ndarray) -> dict:
    """The difference, its percentile interval and the two-sided bootstrap p-value (+1-corrected): twice the share
    of replicates on the far side of 0, so a difference that never leaves 0 has p = 1."""
    lo, hi = bootstrap.percentile_interval(replicates[:, None])[0]
    below, above = int(np.sum(replicates <= 0)), int(np.sum(replicates >= 0))
    p = min(1.0, 2 * (min(below, above) + 1) / (replicates.size + 1))
    return {"diff": point, "ci95": (float(lo), float(hi)), "p": p}


def mcnemar(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p-value: the binomial test of the discordant pairs against 1/2."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment, in the order given."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def wilson(percent: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval (percent) of a hit rate ``percent`` measured on ``n`` independent queries."""
    p = percent / 100
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return 100 * (centre - half), 100 * (centre + half)
