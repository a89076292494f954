"""Results as the engine writes them, with random per-query outcomes, for tests of intervals, compare and groups."""
from __future__ import annotations

import json

import numpy as np

from lookbench.engine.results import EvaluationResult
from lookbench.metric.fine_recall.judging import combine_subsets, summarise
from lookbench.results.outcomes import Outcomes

K = (1, 5, 10, 20)


def synthetic(seed, sizes, provenance=None, hit_rate=0.55, ndcg_drop=0.0):
    """A result as the engine writes it, with random per-query outcomes (street looks in outfits of three);
    ``ndcg_drop`` lowers every nDCG by that much (not below 0)."""
    rng = np.random.default_rng(seed)
    subsets, outcomes = {}, {}
    for name, n in sizes.items():
        first = np.where(rng.random(n) < hit_rate, rng.geometric(0.5, n) - 1, np.inf).astype(np.float64)
        coarse = np.minimum(first, rng.integers(0, 3, n))
        ndcg = np.maximum(np.sort(rng.random((n, len(K))), axis=1) - ndcg_drop, 0.0)
        outfit = [f"{name}-look-{i // 3}" if "Street" in name else None for i in range(n)]
        o = Outcomes(K, [f"{name}-{i}" for i in range(n)], outfit, ["v20250101"] * n, first, coarse, ndcg,
                     ndcg * 0.5)
        per_query = {"k": list(K), "first_fine": first, "first_coarse": coarse, "ndcg": ndcg, "ap": ndcg * 0.5,
                     "category": ["top"] * n, "outfit_id": [x or "" for x in outfit]}
        subsets[name], outcomes[name] = summarise(per_query), o
    provenance = provenance or {"model": {"name": f"model-{seed}"}, "dataset": {"key": "local-x", "revision": "local-x"},
                                "mode": "strict", "distractors": True, "cutoff": None}
    overall = combine_subsets(subsets)
    return json.loads(json.dumps(EvaluationResult(subsets, overall, provenance, outcomes).to_dict()))
