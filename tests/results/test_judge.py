"""The one judge (issue 44 item 1): for random rankings, what the engine judges and what verify re-judges from the
saved ranking file are the same outcomes and scores."""
from __future__ import annotations

import io
from collections import Counter

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookbench.metric.fine_recall.records import GalleryColumns
from lookbench.results import judge
from lookbench.results.judge import combine, gallery_columns, judge_subset, query_columns
from lookbench.results.rankings import parse_ranking
from lookbench.submissions.verify import _matrix

CATEGORIES = ["top", "skirt", "bag"]
VALUES = ["red", "blue", "stripe", "plain"]


FEATURES = datasets.Features({"item_id": datasets.Value("string"), "category": datasets.Value("string"),
                              "main_attribute": datasets.Value("string"),
                              "attributes": datasets.List({"name": datasets.Value("string"),
                                                           "value": datasets.Value("string")}),
                              "outfit_id": datasets.Value("string"), "release": datasets.Value("string")})


def _records(rng, n, prefix):
    return datasets.Dataset.from_list([{"item_id": f"{prefix}-{i}", "category": CATEGORIES[rng.integers(3)], "main_attribute": VALUES[rng.integers(4)],
             "attributes": [{"name": "colour", "value": VALUES[rng.integers(4)]}] * int(rng.integers(2)),
             "outfit_id": f"o{rng.integers(3)}" if rng.integers(2) else None, "release": f"v2025010{rng.integers(1, 3)}"}
            for i in range(n)], features=FEATURES)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), queries=st.integers(1, 12), gallery=st.integers(1, 30), noise=st.integers(0, 10),
       depth=st.integers(1, 20), mode=st.sampled_from(["strict", "leaderboard"]))
@pytest.mark.slow
def test_the_engine_and_verify_judge_every_random_ranking_alike(seed, queries, gallery, noise, depth, mode):
    rng = np.random.default_rng(seed)
    q, g = _records(rng, queries, "q"), _records(rng, gallery, "g")
    z = _records(rng, noise, "n") if noise else None
    size = gallery + noise
    depth = min(depth, size)
    ranking = np.stack([rng.permutation(size)[:depth] for _ in range(queries)])
    cut = rng.integers(0, depth + 1, size=queries)  # some queries ranked shallower (-1 pads, as faiss gives)
    for i, c in enumerate(cut):
        ranking[i, max(c, 1):] = -1
    columns = gallery_columns(g, GalleryColumns(z) if z is not None else None)
    engine = judge_subset(ranking, q.select_columns(query_columns(q)), columns, mode)

    # what a submission carries: the saved ranking's columns, written and read back as verify reads them
    query, rank = np.nonzero(ranking >= 0)
    ids = list(g["item_id"]) + (list(z["item_id"]) if z is not None else [])
    table = pa.table({"query": query + 1, "query_item_id": [q["item_id"][i] for i in query], "rank": rank + 1,
                      "gallery_index": ranking[query, rank], "item_id": [ids[i] for i in ranking[query, rank]]})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    parsed = parse_ranking(sink.getvalue(), "ranking.parquet")
    problems, matrix = _matrix(parsed, list(q["item_id"]), ids, "RealStudioFlat", "ranking.parquet", z is not None, 20)
    assert problems == []
    verified = judge_subset(matrix, q.select_columns(query_columns(q)), columns, mode)

    assert verified.outcomes.to_json() == engine.outcomes.to_json()
    assert verified.scores == engine.scores
    a, b = combine({"RealStudioFlat": engine}), combine({"RealStudioFlat": verified})
    assert a.overall == b.overall and a.per_release == b.per_release


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), queries=st.integers(1, 12), gallery=st.integers(1, 30), depth=st.integers(1, 20))
def test_judging_both_modes_at_once_is_judging_each_alone(seed, queries, gallery, depth):
    """Issue 52 item 3: one core (coarse hits, overlaps, nDCG, marks, attribute errors) per subset, the same
    judgements as one full judge per mode."""
    rng = np.random.default_rng(seed)
    q, g = _records(rng, queries, "q"), _records(rng, gallery, "g")
    depth = min(depth, gallery)
    ranking = np.stack([rng.permutation(gallery)[:depth] for _ in range(queries)])
    for i, cut in enumerate(rng.integers(1, depth + 1, size=queries)):
        ranking[i, cut:] = -1  # some queries ranked shallower
    queries_ = q.select_columns(query_columns(q))
    columns = gallery_columns(g)
    alone = {mode: judge_subset(ranking, queries_, columns, mode) for mode in ("strict", "leaderboard")}

    calls = Counter()
    with pytest.MonkeyPatch.context() as patch:
        for name in ("score_core", "marks", "attribute_errors"):
            original = getattr(judge, name)
            patch.setattr(judge, name, lambda *a, _f=original, _n=name, **kw: calls.update([_n]) or _f(*a, **kw))
        together = judge.judge_modes(ranking, queries_, columns, ("leaderboard", "strict"))
        with pytest.raises(ValueError, match="^unknown mode 'fine'"):  # refused before any work
            judge.judge_modes(ranking, queries_, columns, ("strict", "fine"))
    assert list(together) == ["leaderboard", "strict"] and calls == {"score_core": 1, "marks": 1, "attribute_errors": 1}
    for mode, one in alone.items():
        both = together[mode]
        assert both.outcomes.to_json() == one.outcomes.to_json() and both.scores == one.scores
        assert np.array_equal(both.fine, one.fine) and np.array_equal(both.coarse, one.coarse)
        assert both.gallery_size == one.gallery_size == gallery
