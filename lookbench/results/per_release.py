"""Scores per release: each subset's queries split by the snapshot they belong to; the gallery is always whole.

Whether a model scores worse on snapshots newer than its training data is the contamination signal LookBench is
built on. The split is of the per-query outcomes every result keeps (``lookbench.results.outcomes``), so a release's
scores are means over its queries, its intervals are ``lookbench.results.stats.intervals`` of those queries, and the
releases recombine, query-weighted, to the subset's score. Numpy only (docs/architecture.md §5).
"""
from __future__ import annotations

import numpy as np

from lookbench.results import stats
from lookbench.metric.fine_recall.judging import combine_subsets
from lookbench.results.outcomes import Outcomes

# The headline scores a result carries per release (every score stays in the subset's own block).
HEADLINE = ("fine_recall@1", "fine_recall@5", "fine_recall@10", "fine_recall@20", "coarse_recall@1", "ndcg@5")


def releases_of(outcomes: dict[str, Outcomes]) -> list[str]:
    """The releases of the evaluated queries, oldest first (``vYYYYMMDD`` sorts by date)."""
    return sorted({r for o in outcomes.values() for r in o.release if r})


def per_release(outcomes: dict[str, Outcomes], keys=HEADLINE) -> tuple[dict, dict]:
    """``(scores, intervals)``: ``{subset or "overall": {release: {key: percent, "num_queries": n}}}`` and
    ``{subset or "overall": {release: {key: (lo, hi)}}}``. A subset without queries of a release has no entry for
    it; the overall of a release is the query-weighted mean over the subsets that have it."""
    scores: dict[str, dict] = {}
    intervals: dict[str, dict] = {}
    for release in releases_of(outcomes):
        picked = {}
        for name, o in outcomes.items():
            keep = np.array([r == release for r in o.release], dtype=bool)
            if keep.any():
                picked[name] = o.select(keep)
        blocks = {}
        for name, o in picked.items():
            shares = o.scores()
            blocks[name] = {key: float(np.mean(shares[key])) for key in keys} | {"num_queries": len(o)}
        combined = combine_subsets(blocks)
        blocks["overall"] = {key: combined[key] for key in (*keys, "num_queries")}
        bounds = stats.intervals(picked)
        for name, block in blocks.items():
            scores.setdefault(name, {})[release] = block
            intervals.setdefault(name, {})[release] = {key: bounds[name][key] for key in keys if key in bounds[name]}
    return scores, intervals
