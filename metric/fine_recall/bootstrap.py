"""Confidence intervals of LookBench Fine Recall: a seeded bootstrap over queries, outfits drawn whole.

Every score is a ratio of per-query sums (`query_shares`), so a replicate redraws the resampling units and
recomputes the ratios. nDCG, MAP and MRR take the replicates' percentile interval. A hit rate (Fine/Coarse
Recall@K, outfit recall) takes a Wilson score interval on its effective sample size instead, because a percentile
interval collapses to a point at 0 % and 100 % (70 of 70 hits is not certainty): the bootstrap's variance measures
the design effect of the outfits, and at 0 % or 100 %, where it cannot, each outfit counts as one observation
(`effective_size`). The engine's stored results draw their intervals with the same functions, so a one-subset
result stores the intervals `compute` gives. `score_retrieval` joins judging and intervals.
"""

from statistics import NormalDist

import numpy as np

from .judging import DEFAULT_K
from .judging import outfit_hits
from .judging import query_scores
from .judging import score_queries
from .judging import summarise

RESAMPLES = 1000
# The most resamples `score_retrieval` draws (documented in README.md): far past where a 95 % interval settles.
MAX_RESAMPLES = 100_000
CONFIDENCE = 0.95
Z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
# The scores that are hit rates (each unit scores 0 or 100), whose intervals are Wilson intervals; the others are
# means of graded values and keep the percentile bootstrap. The labels are the metric's `interval_method` values.
HIT_RATES = ("fine_recall@", "coarse_recall@", "outfit_fine_recall@")
WILSON = "Wilson (effective n)"
PERCENTILE = "bootstrap"
# Upper bound on the cells of one chunk of bootstrap draws (resamples x units), so memory stays flat in the queries.
_DRAW_CELLS = 1 << 22


def outfit_shares(first_fine, outfit_ids, k):
    """Outfit Fine Recall@K as per-query shares that sum to the outfit mean: `({key: numerator}, denominator)`.

    Each member of an outfit carries 1/size of its outfit's hit and of its weight, so a resampled outfit counts
    once, and queries outside any outfit weigh nothing."""
    ids = [o if o not in (None, "") else "" for o in outfit_ids]
    outfits, hits = outfit_hits(first_fine, ids, k)
    if not outfits.size:
        return {}, np.zeros(len(ids))
    member = np.array([o != "" for o in ids])
    index = np.searchsorted(outfits, np.array(ids, dtype=object)[member].astype(str))
    size = np.bincount(index, minlength=outfits.size)
    weight = np.zeros(len(ids))
    weight[member] = 1.0 / size[index]
    numerators = {}
    for j, value in enumerate(k):
        share = np.zeros(len(ids))
        share[member] = 100.0 * hits[index, j] / size[index]
        numerators[f"outfit_fine_recall@{value}"] = share
    return numerators, weight


def query_shares(per_query):
    """`(names, numerators, denominators)`, queries x scores: every score of `summarise` is the column's
    sum(numerator) / sum(denominator), which is what a bootstrap resamples."""
    scores = query_scores(per_query)
    outfit, weight = outfit_shares(per_query["first_fine"], per_query["outfit_id"], per_query["k"])
    names = [*scores, *outfit]
    numerators = np.stack([*scores.values(), *outfit.values()], axis=1)
    ones = np.ones(len(weight))
    denominators = np.stack([ones] * len(scores) + [weight] * len(outfit), axis=1)
    return names, numerators, denominators


def resampling_units(outfit_ids):
    """Per query, the index of its bootstrap unit: the item queries of one street look share an outfit id and are
    not independent, so they are drawn together; every other query is a unit of its own."""
    ids = [f"outfit:{o}" if o not in (None, "") else f"query:{i}" for i, o in enumerate(outfit_ids)]
    return np.unique(np.array(ids, dtype=str), return_inverse=True)[1].reshape(-1)


def bootstrap_replicates(units, numerators, denominators, resamples, rng):
    """resamples x scores: each score on a cluster-bootstrap replicate of the units (NaN where a replicate has no
    weight), drawn in chunks so memory does not grow with resamples x queries."""
    count = int(units.max()) + 1
    top = np.zeros((count, numerators.shape[1]))
    bottom = np.zeros_like(top)
    np.add.at(top, units, numerators)
    np.add.at(bottom, units, denominators)
    chunk = max(1, _DRAW_CELLS // count)
    out = []
    for start in range(0, resamples, chunk):
        draws = rng.multinomial(count, np.full(count, 1.0 / count), size=min(chunk, resamples - start)).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append((draws @ top) / (draws @ bottom))
    return np.concatenate(out) if out else np.zeros((0, numerators.shape[1]))


def percentile_interval(replicates):
    """scores x 2: the central `CONFIDENCE` percentile interval of each column of replicates."""
    tail = 100 * (1 - CONFIDENCE) / 2
    with np.errstate(invalid="ignore"):
        return np.nanpercentile(replicates, [tail, 100 - tail], axis=0).T


def interval_method(name):
    """`WILSON` for a hit rate, `PERCENTILE` for every other score."""
    return WILSON if name.startswith(HIT_RATES) else PERCENTILE


def wilson(p, n, z=Z):
    """`(lo, hi)`, fractions: the Wilson score interval of a hit rate `p` on `n` (effective) observations. It always
    holds `p` (the clamps only absorb rounding at 0 and 1)."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(max(0.0, min(p, centre - half))), float(min(1.0, max(p, centre + half)))


def effective_size(p, variance, weights):
    """The effective sample size of a hit rate `p` (fraction): how many independent observations would be as
    uncertain, n / design effect. Inside (0, 1) it is p(1-p) / the bootstrap `variance` (fraction²), so the design
    effect is what the outfit-clustered bootstrap measures (above 1 when an outfit's items succeed or fail together,
    below 1 when every outfit mixes easy and hard items). At 0 or 1 every replicate is
    the same and nothing is measured, so each resampling unit counts as one observation, weighted by its share of
    the score (`weights`, summing to 1): Kish's 1 / sum(w²) — n for independent queries, n² / sum of outfit sizes²
    for the queries of one subset — the design effect of outfits whose items all succeed or fail together."""
    if 0 < p < 1 and variance > 0:
        return p * (1 - p) / variance
    return 1.0 / float(np.sum(np.square(weights)))


def hit_rate_intervals(points, replicates, weights):
    """scores x 2 (percent): the Wilson interval of each hit-rate column on its `effective_size`; `points` (percent)
    per column, `weights` units x columns, each unit's share of the score."""
    with np.errstate(invalid="ignore"):
        variance = np.nanvar(replicates / 100.0, axis=0, ddof=1) if len(replicates) > 1 else np.zeros(len(points))
    out = []
    for j, point in enumerate(points):
        p = point / 100.0
        n = effective_size(p, variance[j], weights[:, j]) if np.isfinite(p) else np.nan
        out.append([100.0 * bound for bound in wilson(p, n)] if np.isfinite(n) else [np.nan, np.nan])
    return np.array(out).reshape(len(points), 2)


def unit_parts(units, numerators, denominators):
    """`(points, weights)` of one set of queries: each column's score (percent) and each resampling unit's share of
    its denominator (queries, or outfits for outfit recall)."""
    count = int(units.max()) + 1 if units.size else 0
    bottom = np.zeros((count, denominators.shape[1]))
    np.add.at(bottom, units, denominators)
    total = bottom.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return numerators.sum(axis=0) / total, bottom / total


def intervals_of(names, replicates, points, weights):
    """scores x 2 (percent): `hit_rate_intervals` for the hit rates among `names`, the percentile interval of the
    replicates for the others."""
    out = percentile_interval(replicates)
    hits = [j for j, name in enumerate(names) if interval_method(name) == WILSON]
    if hits:
        out[hits] = hit_rate_intervals(points[hits], replicates[:, hits], weights[:, hits])
    return out


def bootstrap_rng(seed, position=0):
    """The generator of the `position`-th subset of a result, so a subset's draws do not depend on the others."""
    return np.random.default_rng([seed, position])


def bootstrap_intervals(per_query, resamples=RESAMPLES, seed=0, rows=None, keys=None):
    """`{score: [lo, hi]}`, percent: the 95 % intervals of `summarise`'s scores from a seeded bootstrap over
    queries, outfits drawn whole (`intervals_of`: Wilson for hit rates, percentile for the rest). `rows` (a boolean
    mask) restricts it to some queries, `keys` to some scores. Drawn as the engine draws a result's first subset, so
    a one-subset result stores the same intervals."""
    names, top, bottom = query_shares(per_query)
    units = resampling_units(per_query["outfit_id"])
    if rows is not None:
        rows = np.asarray(rows, dtype=bool)
        top, bottom = top[rows], bottom[rows]
        units = np.unique(units[rows], return_inverse=True)[1].reshape(-1)
    pick = [j for j, name in enumerate(names) if keys is None or name in keys]
    top, bottom, picked = top[:, pick], bottom[:, pick], [names[j] for j in pick]
    replicates = bootstrap_replicates(units, top, bottom, resamples, bootstrap_rng(seed))
    bounds = intervals_of(picked, replicates, *unit_parts(units, top, bottom))
    return {name: [float(lo), float(hi)] for name, (lo, hi) in zip(picked, bounds)}


def score_retrieval(predictions, references, gallery, k=DEFAULT_K, mode="strict", n_resamples=RESAMPLES, random_state=0):
    """Score ranked retrieval results against annotations; the pure function behind `FineRecall.compute`.

    Arguments and returned keys are those of `FineRecall.compute` (see the module's inputs description);
    `gallery` may also be a `GalleryColumns`, factorised once for many calls.
    """
    for name, value in (("n_resamples", n_resamples), ("random_state", random_state)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if n_resamples > MAX_RESAMPLES:
        raise ValueError(f"n_resamples must be at most MAX_RESAMPLES = {MAX_RESAMPLES}, got {n_resamples}")
    per_query = score_queries(predictions, references, gallery, k=k, mode=mode)
    results = summarise(per_query)
    if n_resamples:
        results["ci95"] = bootstrap_intervals(per_query, n_resamples, random_state)
        results["interval_method"] = {name: interval_method(name) for name in results["ci95"]}
        categories = np.array(per_query["category"], dtype=object)
        for category, block in results["per_category"].items():
            block["ci95"] = bootstrap_intervals(per_query, n_resamples, random_state, rows=categories == category,
                                                keys=("fine_recall@1", "coarse_recall@1"))
    return results
