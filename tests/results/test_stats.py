"""Intervals and paired tests (lookbench.results.stats) against computations written out in the test."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lookbench.results import stats
from lookbench.results.outcomes import Outcomes

K = (1, 5, 10, 20)


def outcomes(hits, outfit=None, rng=None):
    """Outcomes whose first fine hit is at rank 1 where ``hits`` is true and never otherwise."""
    hits = np.asarray(hits, dtype=bool)
    n = hits.size
    rng = rng or np.random.default_rng(0)
    first = np.where(hits, 0.0, np.inf)
    ndcg = np.repeat(rng.random(n)[:, None], len(K), axis=1)
    return Outcomes(K, [f"q{i}" for i in range(n)], list(outfit) if outfit is not None else [None] * n,
                    ["v20250101"] * n, first, first.copy(), ndcg, np.where(hits, 1.0, 0.0)[:, None].repeat(len(K), 1))


def width(interval):
    return interval[1] - interval[0]


def plain_bootstrap(values, resamples=4000, seed=123):
    """An independent percentile bootstrap over single queries."""
    rng = np.random.default_rng(seed)
    means = [values[rng.integers(0, values.size, values.size)].mean() for _ in range(resamples)]
    return np.percentile(means, [2.5, 97.5])


def test_query_bootstrap_has_the_width_of_an_independent_one_and_of_the_binomial():
    rng = np.random.default_rng(7)
    hits = rng.random(400) < 0.6
    ours = stats.intervals({"RealStudioFlat": outcomes(hits, rng=rng)})
    fine = ours["RealStudioFlat"]["fine_recall@1"]
    theirs = plain_bootstrap(100.0 * hits)
    # Monte-Carlo error of a percentile width from 1000 resamples is a few percent
    assert width(fine) == pytest.approx(width(theirs), rel=0.12)
    p = hits.mean()
    assert width(fine) == pytest.approx(2 * 1.96 * 100 * math.sqrt(p * (1 - p) / hits.size), rel=0.12)
    assert fine[0] < 100 * p < fine[1]
    # graded scores too
    ndcg = ours["RealStudioFlat"]["ndcg@5"]
    o = outcomes(hits, rng=np.random.default_rng(7))
    assert width(ndcg) == pytest.approx(width(plain_bootstrap(100.0 * o.ndcg[:, 1])), rel=0.12)


def test_outfit_clustered_interval_is_not_narrower_than_the_plain_one():
    rng = np.random.default_rng(3)
    outfit_hit = rng.random(100) < 0.5
    hits = np.repeat(outfit_hit, 4)  # four item queries per street photo, which succeed or fail together
    outfit = [f"look-{i // 4}" for i in range(400)]
    clustered = stats.intervals({"RealStreetLook": outcomes(hits, outfit)})["RealStreetLook"]["fine_recall@1"]
    plain = stats.intervals({"RealStreetLook": outcomes(hits)})["RealStreetLook"]["fine_recall@1"]
    assert width(clustered) >= width(plain)
    # 100 independent outfits, not 400 queries: the width of a bootstrap over outfits, about twice the plain one
    assert width(clustered) == pytest.approx(width(plain_bootstrap(100.0 * outfit_hit)), rel=0.12)
    assert width(clustered) > 1.6 * width(plain)


def test_overall_interval_combines_the_subsets_by_query_count():
    rng = np.random.default_rng(5)
    a, b = rng.random(300) < 0.8, rng.random(100) < 0.3
    out = stats.intervals({"RealStudioFlat": outcomes(a), "AIGen-Studio": outcomes(b)})
    overall = out["overall"]["fine_recall@1"]
    point = 100 * (a.sum() + b.sum()) / 400
    assert overall[0] < point < overall[1]
    # stratified: the variance is the weighted sum of the subsets' binomial variances
    sd = 100 * math.sqrt((0.75 ** 2) * a.mean() * (1 - a.mean()) / 300 + (0.25 ** 2) * b.mean() * (1 - b.mean()) / 100)
    assert width(overall) == pytest.approx(2 * 1.96 * sd, rel=0.12)
    assert "outfit_fine_recall@1" not in out["overall"]  # no subset has outfits


def test_intervals_are_seeded():
    hits = np.random.default_rng(1).random(200) < 0.5
    first = stats.intervals({"RealStudioFlat": outcomes(hits)}, seed=4)
    assert first == stats.intervals({"RealStudioFlat": outcomes(hits)}, seed=4)
    assert first != stats.intervals({"RealStudioFlat": outcomes(hits)}, seed=5)


def exact_mcnemar(b, c):
    """Two-sided exact McNemar: the binomial probability of a split at least this uneven."""
    n = b + c
    probability = [math.comb(n, i) / 2 ** n for i in range(n + 1)]
    return min(1.0, sum(q for i, q in enumerate(probability) if q <= probability[b] * (1 + 1e-12)))


@pytest.mark.parametrize("b, c", [(0, 0), (3, 0), (10, 4), (25, 40), (7, 7), (120, 80)])
def test_mcnemar_is_the_exact_binomial_test(b, c):
    assert stats.mcnemar(b, c) == pytest.approx(exact_mcnemar(b, c), rel=1e-12, abs=1e-300)


def test_holm_steps_down():
    assert stats.holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert stats.holm([0.5, 0.5]) == [1.0, 1.0]


def test_wilson_interval_of_the_published_gr_pro_score():
    lo, hi = stats.wilson(67.38, 2345)
    assert (lo, hi) == pytest.approx((65.5, 69.3), abs=0.1)  # ±1.9 points on 2,345 queries


def test_paired_difference_of_a_result_with_itself_is_zero_with_p_one():
    hits = np.random.default_rng(2).random(150) < 0.5
    a = {"RealStreetLook": outcomes(hits, [f"o{i // 3}" for i in range(150)])}
    out = stats.paired(a, a, "ndcg@5")
    for row in out.values():
        assert row["diff"] == 0.0 and row["ci95"] == (0.0, 0.0) and row["p"] == 1.0


def test_a_perfect_subset_has_the_wilson_interval_of_its_queries_and_outfits_widen_it():
    perfect = np.ones(70, dtype=bool)
    alone = stats.intervals({"RealStudioFlat": outcomes(perfect)})["RealStudioFlat"]
    assert alone["fine_recall@1"] == pytest.approx((94.80, 100.0), abs=0.005)  # was (100.0, 100.0)
    assert alone["coarse_recall@20"] == alone["fine_recall@1"]
    looks = stats.intervals({"RealStreetLook": outcomes(perfect, [f"look-{i // 2}" for i in range(70)])})
    assert looks["RealStreetLook"]["fine_recall@1"] == pytest.approx((90.11, 100.0), abs=0.005)  # 35 outfits
    uneven = [f"look-{i // 7}" if i < 14 else None for i in range(70)]  # two outfits of seven, 56 lone queries
    n_eff = 70 ** 2 / (2 * 7 ** 2 + 56)  # 31.8 observations: Kish's effective size of the outfit sizes
    lo = stats.intervals({"RealStreetLook": outcomes(perfect, uneven)})["RealStreetLook"]["fine_recall@1"][0]
    assert lo == pytest.approx(stats.wilson(100.0, n_eff)[0]) and lo == pytest.approx(89.23, abs=0.005)


def test_a_perfect_overall_pools_every_subsets_observations():
    perfect = np.ones(70, dtype=bool)
    out = stats.intervals({"RealStudioFlat": outcomes(perfect), "AIGen-Studio": outcomes(perfect)})
    assert out["overall"]["fine_recall@1"] == pytest.approx(stats.wilson(100.0, 140))
    street = {"RealStudioFlat": outcomes(perfect), "RealStreetLook": outcomes(perfect, [f"o{i // 2}" for i in range(70)])}
    # 70 lone queries and 35 outfits of two, each weighted by its share: Kish's n = 140² / (70 + 35 · 4)
    assert stats.intervals(street)["overall"]["fine_recall@1"] == pytest.approx(stats.wilson(100.0, 140 ** 2 / 210))


def test_a_mid_range_overall_keeps_the_width_of_the_percentile_bootstrap():
    from lookbench.metric.fine_recall import bootstrap

    rng = np.random.default_rng(5)
    subsets = {"RealStudioFlat": outcomes(rng.random(1011) < 0.69), "RealStreetLook": outcomes(
        rng.random(981) < 0.62, [f"look-{i // 3}" for i in range(981)])}
    wilson = stats.intervals(subsets)
    combined = 0
    for position, (name, o) in enumerate(subsets.items()):
        names, top, bottom = bootstrap.query_shares(o.per_query())
        draws = bootstrap.bootstrap_replicates(bootstrap.resampling_units(o.outfit_id), top, bottom, stats.RESAMPLES,
                                               bootstrap.bootstrap_rng(stats.SEED, position))
        percentile = bootstrap.percentile_interval(draws)[names.index("fine_recall@1")]
        assert wilson[name]["fine_recall@1"] == pytest.approx(percentile, abs=0.4)
        combined = combined + len(o) / 1992 * draws[:, names.index("fine_recall@1")]
    assert wilson["overall"]["fine_recall@1"] == pytest.approx(bootstrap.percentile_interval(combined[:, None])[0], abs=0.4)
    # nDCG keeps the percentile bootstrap exactly
    assert wilson["overall"]["ndcg@5"] != wilson["overall"]["fine_recall@1"]


def test_the_provenance_and_the_table_note_name_the_method():
    recorded = stats.settings()
    assert recorded["interval_method"] == {"hit rates": "Wilson (effective n)", "other scores": "bootstrap"}
    assert "Wilson" in recorded["hit_rates"] and "outfit" in recorded["hit_rates"]
    assert stats.note(recorded).startswith("[lo, hi]: the 95% interval: Fine/Coarse Recall a Wilson interval on the "
                                           "effective number of queries (the queries divided by the outfits' design "
                                           "effect, measured by 1000 bootstrap resamples;")
    # a result stored before: all its intervals were the percentile bootstrap, and its note says so
    older = {"method": "percentile bootstrap over queries", "resamples": 1000, "seed": 0, "confidence": 0.95}
    assert stats.note(older) == ("[lo, hi]: the 95% interval (1000 bootstrap resamples over queries, outfits resampled "
                                 "whole; all scores and intervals in results.json).")
