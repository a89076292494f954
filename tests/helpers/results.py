"""Results as the engine writes them, with random per-query outcomes, for tests of intervals, compare and groups."""
from __future__ import annotations

import json

import numpy as np

from lookbench.results.result import EvaluationResult
from lookbench.metric.fine_recall.judging import combine_subsets, summarise
from lookbench.results.attributes import attribute_errors
from lookbench.results.outcomes import Outcomes

K = (1, 5, 10, 20)


def synthetic(seed, sizes, provenance=None, hit_rate=0.55, ndcg_drop=0.0, attribute_error=None):
    """A result as the engine writes it, with random per-query outcomes (street looks in outfits of three);
    ``ndcg_drop`` lowers every nDCG by that much (not below 0). With ``attribute_error`` (a probability), each query
    whose top-1 is of its category also gets random attribute marks (colour always, sleeve on every other query),
    each wrong with that probability, and the result its ``attribute_errors``."""
    rng = np.random.default_rng(seed)
    subsets, outcomes = {}, {}
    for name, n in sizes.items():
        first = np.where(rng.random(n) < hit_rate, rng.geometric(0.5, n) - 1, np.inf).astype(np.float64)
        coarse = np.minimum(first, rng.integers(0, 3, n))
        ndcg = np.maximum(np.sort(rng.random((n, len(K))), axis=1) - ndcg_drop, 0.0)
        outfit = [f"{name}-look-{i // 3}" if "Street" in name else None for i in range(n)]
        marks = None
        if attribute_error is not None:
            def mark(attribute, i):
                return None if rng.random() >= attribute_error else ["red" if attribute == "colour" else "long",
                                                                      [None, "blue", "green"][i % 3]]
            marks = [None if coarse[i] > 0 else {a: mark(a, i) for a in ("colour", "sleeve")[:1 + i % 2]}
                     for i in range(n)]
        o = Outcomes(K, [f"{name}-{i}" for i in range(n)], outfit, ["v20250101"] * n, first, coarse, ndcg,
                     ndcg * 0.5, marks)
        per_query = {"k": list(K), "first_fine": first, "first_coarse": coarse, "ndcg": ndcg, "ap": ndcg * 0.5,
                     "category": ["top"] * n, "outfit_id": [x or "" for x in outfit]}
        subsets[name], outcomes[name] = summarise(per_query), o
        if marks is not None:
            subsets[name]["attribute_errors"] = attribute_errors(marks)
    provenance = provenance or {"model": {"name": f"model-{seed}"}, "dataset": {"key": "local-x", "revision": "local-x"},
                                "mode": "strict", "distractors": True, "cutoff": None}
    overall = combine_subsets(subsets)
    if attribute_error is not None:
        overall["attribute_errors"] = attribute_errors([m for o in outcomes.values() for m in o.attributes_at_1])
    return json.loads(json.dumps(EvaluationResult(subsets, overall, provenance, outcomes).to_dict()))
