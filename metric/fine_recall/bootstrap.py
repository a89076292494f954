"""Confidence intervals of LookBench Fine Recall: a seeded percentile bootstrap over queries, outfits drawn whole.

Every score is a ratio of per-query sums (`query_shares`), so a replicate redraws the resampling units and
recomputes the ratios. The engine's stored results draw their intervals with the same functions, so a
one-subset result stores the intervals `compute` gives. `score_retrieval` joins judging and intervals.
"""

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


def bootstrap_rng(seed, position=0):
    """The generator of the `position`-th subset of a result, so a subset's draws do not depend on the others."""
    return np.random.default_rng([seed, position])


def bootstrap_intervals(per_query, resamples=RESAMPLES, seed=0, rows=None, keys=None):
    """`{score: [lo, hi]}`, percent: the 95 % intervals of `summarise`'s scores from a seeded percentile bootstrap
    over queries, outfits drawn whole. `rows` (a boolean mask) restricts it to some queries, `keys` to some scores.
    Drawn as the engine draws a result's first subset, so a one-subset result stores the same intervals."""
    names, top, bottom = query_shares(per_query)
    units = resampling_units(per_query["outfit_id"])
    if rows is not None:
        rows = np.asarray(rows, dtype=bool)
        top, bottom = top[rows], bottom[rows]
        units = np.unique(units[rows], return_inverse=True)[1].reshape(-1)
    pick = [j for j, name in enumerate(names) if keys is None or name in keys]
    replicates = bootstrap_replicates(units, top[:, pick], bottom[:, pick], resamples, bootstrap_rng(seed))
    return {names[j]: [float(lo), float(hi)] for j, (lo, hi) in zip(pick, percentile_interval(replicates))}


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
        categories = np.array(per_query["category"], dtype=object)
        for category, block in results["per_category"].items():
            block["ci95"] = bootstrap_intervals(per_query, n_resamples, random_state, rows=categories == category,
                                                keys=("fine_recall@1", "coarse_recall@1"))
    return results
