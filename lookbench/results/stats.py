"""How sure a score is: intervals, paired differences, exact McNemar, Holm and Wilson. Numpy only.

Queries are resampled in units: the item queries of one street-look photo share an ``outfit_id`` and are not
independent, so they are drawn together (a cluster bootstrap); every other query is a unit of its own. The overall
score resamples each subset and combines the replicates with the subsets' query counts, as ``combine_subsets``
combines the scores. Hit rates take a Wilson interval on the effective sample size the bootstrap measures, the other
scores the bootstrap's percentiles. Both are the metric's (``bootstrap.bootstrap_replicates``, ``bootstrap.intervals_of``),
so the intervals of ``evaluate.load("lookbench/fine_recall")`` and of a stored result are drawn alike.
docs/architecture.md §5 and docs/statistics.md.
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
HIT_RATES = ("Fine/Coarse Recall@K and outfit recall: a Wilson score interval on the effective number of queries, "
             "p(1-p) / the variance of the outfit-clustered bootstrap, i.e. the queries divided by the design effect it "
             "measures (at 0 % and 100 %, where a bootstrap cannot vary, each outfit counts as one observation)")
METHOD = ("nDCG@K, MAP@K, MRR@K: percentile bootstrap over queries; queries sharing an outfit_id are resampled "
          "together; the overall resamples every subset and weights them by their query counts")


def settings(resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """What the provenance records about the intervals: ``hit_rates`` and ``method`` (the other scores) in words,
    ``interval_method`` the label of each kind (the metric's ``interval_method`` values)."""
    return {"hit_rates": HIT_RATES, "method": METHOD, "resamples": resamples, "seed": seed, "confidence": CONFIDENCE,
            "interval_method": {"hit rates": bootstrap.WILSON, "other scores": bootstrap.PERCENTILE}}


def note(recorded: dict) -> str:
    """The table's note on its intervals, from the interval settings a result's provenance records (older results,
    whose intervals were all percentile bootstrap, say so)."""
    if "hit_rates" not in recorded:
        return (f"[lo, hi]: the 95% interval ({recorded['resamples']} bootstrap resamples over queries, outfits resampled "
                "whole; all scores and intervals in results.json).")
    return ("[lo, hi]: the 95% interval: Fine/Coarse Recall a Wilson interval on the effective number of queries "
            f"(the queries divided by the outfits' design effect, measured by {recorded['resamples']} bootstrap "
            "resamples; each outfit one observation at 0% and 100%); nDCG/MRR/MAP the bootstrap's percentiles; all scores and intervals in "
            "results.json.")


def intervals(subsets: dict[str, Outcomes], *, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, dict]:
    """``{subset or "overall": {"fine_recall@1": (lo, hi), ...}}``: 95 % intervals, percent (``bootstrap.intervals_of``).

    The overall of the scores every subset has is the query-weighted combination of the subsets' replicates and
    points; its resampling units are all the subsets' units, each weighted by its share."""
    parts, out = {}, {}
    for position, (name, outcomes) in enumerate(subsets.items()):
        names, top, bottom = bootstrap.query_shares(outcomes.per_query())
        units = bootstrap.resampling_units(outcomes.outfit_id)
        rng = bootstrap.bootstrap_rng(seed, position)
        replicates = bootstrap.bootstrap_replicates(units, top, bottom, resamples, rng)
        parts[name] = (names, replicates, *bootstrap.unit_parts(units, top, bottom))
        out[name] = dict(zip(names, map(tuple, bootstrap.intervals_of(*parts[name]))))
    if subsets:
        names, *combined = _overall(parts, {s: len(o) for s, o in subsets.items()})
        out["overall"] = dict(zip(names, map(tuple, bootstrap.intervals_of(names, *combined))))
    return out


def _overall(parts: dict[str, tuple], counts: dict[str, int]) -> tuple:
    """``(names, replicates, points, weights)`` of the query-weighted overall, for the scores every subset has: the
    subsets' replicates and points weighted by their shares of the queries, every subset's unit weights scaled by
    its share."""
    common = [n for n in next(iter(parts.values()))[0] if all(n in p[0] for p in parts.values())]
    total = sum(counts.values())
    replicates, points, weights = 0.0, 0.0, []
    for subset, (names, reps, subset_points, unit_weights) in parts.items():
        pick, share = [names.index(n) for n in common], counts[subset] / total
        replicates = replicates + share * reps[:, pick]
        points = points + share * subset_points[pick]
        weights.append(share * unit_weights[:, pick])
    return common, replicates, points, np.concatenate(weights)


def paired(a: dict[str, Outcomes], b: dict[str, Outcomes], key: str, *, resamples: int = RESAMPLES,
           seed: int = SEED) -> dict[str, dict]:
    """Per subset and overall, A − B of score ``key`` (percent) with its paired, outfit-clustered bootstrap interval
    and bootstrap p-value; both results must hold the same queries in the same order."""
    return paired_differences({name: (a[name].scores()[key] - b[name].scores()[key], a[name].outfit_id) for name in a},
                              resamples=resamples, seed=seed)


def paired_differences(diffs: dict[str, tuple[np.ndarray, list]], *, resamples: int = RESAMPLES,
                       seed: int = SEED) -> dict[str, dict]:
    """Per subset and overall, the mean of each query's paired difference (subset -> (differences, the queries'
    outfit ids)) with its outfit-clustered bootstrap interval and p-value; the overall weights the subsets by
    their queries."""
    reps, out = {}, {}
    for position, (name, (diff, outfit_id)) in enumerate(diffs.items()):
        diff = np.asarray(diff, dtype=np.float64)[:, None]
        units = bootstrap.resampling_units(outfit_id)
        rng = bootstrap.bootstrap_rng(seed, position)
        replicates = bootstrap.bootstrap_replicates(units, diff, np.ones_like(diff), resamples, rng)
        reps[name] = replicates[:, 0]
        out[name] = _difference(float(diff.mean()), replicates[:, 0])
    weights = {s: len(d) for s, (d, _) in diffs.items()}
    total = sum(weights.values())
    point = sum(weights[s] * out[s]["diff"] for s in diffs) / total
    out["overall"] = _difference(point, sum(weights[s] * reps[s] for s in diffs) / total)
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


def wilson(percent: float, n: int) -> tuple[float, float]:
    """The Wilson score interval (percent) of a hit rate ``percent`` measured on ``n`` independent queries."""
    lo, hi = bootstrap.wilson(percent / 100, n)
    return 100 * lo, 100 * hi
