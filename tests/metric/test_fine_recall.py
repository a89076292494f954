"""Scores of the `lookbench/fine_recall` metric: hand-worked cases, bad input, and subset combination."""
import itertools
import math
from pathlib import Path

import datasets
import numpy as np
import pytest

from lookbench.metric.fine_recall.bootstrap import score_retrieval
from lookbench.metric.fine_recall.fine_recall import FineRecall
from lookbench.metric.fine_recall.judging import combine_subsets
from lookbench.schema import FEATURES


def attrs(**pairs):
    return [{"name": name, "value": value} for name, value in pairs.items()]


# Gallery and queries worked by hand below. Spelling varies on purpose (case, spaces): comparisons ignore it.
GALLERY = [
    {"category": "top", "main_attribute": "Crew Neck",
     "attributes": attrs(neckline="crew", sleeve="long", color="white")},
    {"category": "top", "main_attribute": "v-neck", "attributes": attrs(neckline="v", sleeve="long")},
    {"category": "dress", "main_attribute": "midi", "attributes": attrs(length="midi", pattern="floral")},
    {"category": "dress", "main_attribute": "midi", "attributes": attrs(length="midi", pattern="solid")},
    {"category": "bag", "main_attribute": "tote", "attributes": []},
    {"category": "top", "main_attribute": "crew neck", "attributes": attrs(neckline="crew")},
]
QUERIES = [
    # extra fields, as dataset rows carry them, must be ignored
    {"category": "Top", "main_attribute": "crew neck", "attributes": attrs(neckline="crew", sleeve="long"),
     "outfit_id": "A", "item_id": "p1", "image": None, "timestamp": "2025-07-01"},
    {"category": "dress ", "main_attribute": "MIDI ", "attributes": attrs(Length=" Midi", pattern="floral"),
     "outfit_id": "A", "item_id": "p2"},
    {"category": "bag", "main_attribute": "tote", "attributes": [], "outfit_id": "B"},
    {"category": "dress", "main_attribute": "maxi", "attributes": attrs(length="maxi"), "outfit_id": "B"},
]
PREDICTIONS = [[1, 0, 2], [3, 2], [0, 4], [2, 3, 0]]
D2, D3 = 1 / math.log2(3), 1 / math.log2(4)  # DCG discounts of ranks 2 and 3


def test_hand_worked_strict():
    r = score_retrieval(PREDICTIONS, QUERIES, GALLERY, k=[1, 2, 3], n_resamples=0)
    # strict first fine hits: q0 rank 2 (item 1 lacks neckline=crew), q1 rank 2 (item 3 is solid),
    # q2 rank 2 (empty A_q: any bag), q3 never (no maxi dress)
    assert [r[f"fine_recall@{k}"] for k in (1, 2, 3)] == [0.0, 75.0, 75.0]
    assert [r[f"coarse_recall@{k}"] for k in (1, 2, 3)] == [75.0, 100.0, 100.0]
    assert r["mrr@3"] == r["mrr@2"] == pytest.approx(100 * (1 / 2 + 1 / 2 + 1 / 2 + 0) / 4) and r["mrr@1"] == 0.0
    # q0, q1 and q2 (empty A_q: the one bag) each have one fine match in the gallery, found at rank 2; q3 none
    assert r["map@2"] == pytest.approx(100 * (1 / 2 + 1 / 2 + 1 / 2 + 0) / 4) and r["map@1"] == 0.0
    # outfit A: both items hit at rank 2; outfit B: q3 never hits, so B is missed at every K
    assert [r[f"outfit_fine_recall@{k}"] for k in (1, 2, 3)] == [0.0, 50.0, 50.0]
    assert (r["num_queries"], r["num_outfits"]) == (4, 2)
    # relevances retrieved: q0 [1/2, 1, 0] ideal (top items) [1, 1/2, 1/2]; q1 [1/2, 1] ideal [1, 1/2];
    # q2 [0, 1] ideal [1]; q3 all 0 and no relevant dress -> 0
    q0 = [0.5 / 1, (0.5 + D2) / (1 + 0.5 * D2), (0.5 + D2) / (1 + 0.5 * D2 + 0.5 * D3)]
    q1 = [0.5 / 1, (0.5 + D2) / (1 + 0.5 * D2), (0.5 + D2) / (1 + 0.5 * D2)]
    q2 = [0.0, D2, D2]
    for i, k in enumerate((1, 2, 3)):
        assert r[f"ndcg@{k}"] == pytest.approx(100 * (q0[i] + q1[i] + q2[i]) / 4, abs=1e-12)
    assert r["per_category"] == {
        "bag": {"fine_recall@1": 0.0, "coarse_recall@1": 0.0, "num_queries": 1},
        "dress": {"fine_recall@1": 0.0, "coarse_recall@1": 100.0, "num_queries": 2},
        "top": {"fine_recall@1": 0.0, "coarse_recall@1": 100.0, "num_queries": 1},
    }
    assert list(r) == [
        "fine_recall@1", "fine_recall@2", "fine_recall@3", "coarse_recall@1", "coarse_recall@2", "coarse_recall@3",
        "ndcg@1", "ndcg@2", "ndcg@3", "map@1", "map@2", "map@3", "mrr@1", "mrr@2", "mrr@3", "outfit_fine_recall@1", "outfit_fine_recall@2", "outfit_fine_recall@3",
        "num_queries", "num_outfits", "per_category",
    ]
    assert all(type(v) is float for key, v in r.items() if "@" in key)


def test_hand_worked_leaderboard():
    strict = score_retrieval(PREDICTIONS, QUERIES, GALLERY, k=[1, 2, 3])
    r = score_retrieval(PREDICTIONS, QUERIES, GALLERY, k=[1, 2, 3], mode="leaderboard")
    # leaderboard: q1's first result, a solid midi dress, has main attribute "midi" -> hit at rank 1;
    # q0's v-neck top and q3's midi dresses are no hits; q2's tote at rank 2
    assert [r[f"fine_recall@{k}"] for k in (1, 2, 3)] == [25.0, 75.0, 75.0]
    assert r["mrr@3"] == pytest.approx(100 * (1 / 2 + 1 + 1 / 2 + 0) / 4)
    assert [r[f"outfit_fine_recall@{k}"] for k in (1, 2, 3)] == [0.0, 50.0, 50.0]
    assert {k: v for k, v in r["per_category"]["dress"].items() if k != "ci95"} == {
        "fine_recall@1": 50.0, "coarse_recall@1": 100.0, "num_queries": 2}
    # coarse recall and graded nDCG do not depend on the mode
    for key in ("coarse_recall@1", "coarse_recall@2", "ndcg@1", "ndcg@2", "ndcg@3"):
        assert r[key] == strict[key]


def test_missing_main_attribute_never_matches_in_leaderboard_mode():
    gallery = [{"category": "top", "attributes": []}]
    query = {"category": "top", "main_attribute": "", "attributes": []}
    r = score_retrieval([[0]], [query], gallery, k=[1], mode="leaderboard")
    assert (r["fine_recall@1"], r["coarse_recall@1"]) == (0.0, 100.0)


def test_attribute_sets_ignore_repeats_and_accept_raw_objects():
    gallery = [{"category": "top", "main_attribute": "x", "attributes": {"sleeve": "long", "fit": "slim"}}]
    query = {"category": "top", "main_attribute": "x", "attributes": attrs(sleeve="long") * 2 + attrs(fit="loose")}
    r = score_retrieval([[0]], [query], gallery, k=[1])
    # A_q = {sleeve=long, fit=loose}: half of it is on the item -> not a fine hit, relevance 1/2 of an ideal 1/2
    assert (r["fine_recall@1"], r["ndcg@1"]) == (0.0, 100.0)
    assert "outfit_fine_recall@1" not in r and r["num_outfits"] == 0


def test_query_of_a_category_absent_from_the_gallery_scores_zero():
    # the ranking is shorter than K = 5: a miss stays a miss at every K
    r = score_retrieval([[0]], [{"category": "shoe", "attributes": []}], GALLERY[:1], k=[1, 5])
    assert (r["coarse_recall@5"], r["fine_recall@5"], r["ndcg@5"], r["mrr@5"]) == (0.0, 0.0, 0.0, 0.0)


def test_faiss_array_with_padding_equals_lists():
    array = np.full((4, 3), -1, dtype=np.int64)
    for i, ranking in enumerate(PREDICTIONS):
        array[i, : len(ranking)] = ranking
    assert score_retrieval(array, QUERIES, GALLERY) == score_retrieval(PREDICTIONS, QUERIES, GALLERY)
    # a ranking with no result at all (faiss found nothing) is a miss, not an error
    array[2] = -1
    r = score_retrieval(array, QUERIES, GALLERY, k=[3])
    assert r["coarse_recall@3"] == 75.0


def gallery_dataset(records):
    """A gallery with an image column whose bytes are not an image: decoding it would fail the test."""
    features = datasets.Features({k: FEATURES[k] for k in ("image", "item_id", "category", "main_attribute", "attributes")})
    rows = [
        {"image": {"bytes": b"not an image", "path": None}, "item_id": f"id{i}", "main_attribute": None, **r}
        for i, r in enumerate(records)
    ]
    return datasets.Dataset.from_list(rows, features=features)


def test_dataset_gallery_equals_list_gallery():
    dataset = gallery_dataset(GALLERY)
    for mode in ("strict", "leaderboard"):
        expected = score_retrieval(PREDICTIONS, QUERIES, GALLERY, k=[1, 2, 3], mode=mode)
        assert score_retrieval(PREDICTIONS, QUERIES, dataset, k=[1, 2, 3], mode=mode) == expected
        # rows reordered and taken through an indices mapping: the predictions follow the new row order
        shuffled = dataset.select([5, 4, 3, 2, 1, 0])
        remapped = [[5 - i for i in ranking] for ranking in PREDICTIONS]
        assert score_retrieval(remapped, QUERIES, shuffled, k=[1, 2, 3], mode=mode) == expected
        # a subset gallery with the noise gallery appended: several Arrow chunks
        appended = datasets.concatenate_datasets([dataset.select(range(4)), dataset.select(range(4, 6))])
        assert score_retrieval(PREDICTIONS, QUERIES, appended, k=[1, 2, 3], mode=mode) == expected


def test_metric_compute_equals_pure_function():
    metric = FineRecall()
    expected = score_retrieval(PREDICTIONS, QUERIES, GALLERY)
    assert metric.compute(predictions=PREDICTIONS, references=QUERIES, gallery=GALLERY) == expected
    metric.add_batch(predictions=PREDICTIONS[:2], references=QUERIES[:2])
    metric.add(prediction=np.array(PREDICTIONS[2]), reference=QUERIES[2])
    metric.add_batch(predictions=PREDICTIONS[3:], references=QUERIES[3:])
    assert metric.compute(gallery=gallery_dataset(GALLERY)) == expected


@pytest.mark.parametrize(
    "predictions, references, gallery, kwargs, message",
    [
        (PREDICTIONS[:3], QUERIES, GALLERY, {}, r"3 rankings but references has 4 records: query 3 has no ranking"),
        (PREDICTIONS, QUERIES[:3], GALLERY, {}, r"query 3 has no reference"),
        ([[1], [6], [0], [0]], QUERIES, GALLERY, {}, r"query 1: predicted index 6 at rank 1 is outside the gallery"),
        ([[1], [0], [-2], [0]], QUERIES, GALLERY, {}, r"query 2: predicted index -2"),
        ([[1], [0], [0, -1, 3], [0]], QUERIES, GALLERY, {}, r"query 2: -1 \(no result\) is followed by a gallery"),
        ([[1, 2, 1], [0], [0], [0]], QUERIES, GALLERY, {}, r"query 0: gallery index 1 appears more than once"),
        ([[1], [], [0], [0]], QUERIES, GALLERY, {}, r"query 1 has an empty ranking"),
        ([[1], [0.5], [0], [0]], QUERIES, GALLERY, {}, r"query 1: rankings must hold integer gallery indices"),
        (PREDICTIONS, QUERIES[:1] + [{"attributes": []}] + QUERIES[2:], GALLERY, {}, r"references\[1\] has no 'cat"),
        (PREDICTIONS, QUERIES, GALLERY[:3] + [{"category": "  "}] + GALLERY[4:], {}, r"gallery\[3\] has no 'category'"),
        (PREDICTIONS, QUERIES, GALLERY[:1] + [{"category": "top", "attributes": [{"name": "fit"}]}] + GALLERY[2:],
         {}, r"gallery\[1\]: every attribute needs a string 'name' and 'value'"),
        (PREDICTIONS, QUERIES, GALLERY, {"k": [1, 0]}, r"every K must be an integer >= 1"),
        (PREDICTIONS, QUERIES, GALLERY, {"mode": "loose"}, r"unknown mode 'loose'"),
        ([], [], GALLERY, {}, r"no queries"),
    ],
)
def test_bad_input_is_named(predictions, references, gallery, kwargs, message):
    with pytest.raises(ValueError, match=message):
        score_retrieval(predictions, references, gallery, **kwargs)


def test_bad_input_through_evaluate_is_a_value_error():
    metric = FineRecall()
    broken = [dict(QUERIES[0]), {k: v for k, v in QUERIES[1].items() if k != "category"}]
    with pytest.raises(ValueError, match=r"references\[1\] has no 'category'"):
        metric.compute(predictions=PREDICTIONS[:2], references=broken, gallery=GALLERY)
    with pytest.raises(ValueError, match=r"query 1 of this batch has no ranking"):
        metric.compute(predictions=PREDICTIONS[:1], references=QUERIES[:2], gallery=GALLERY)
    with pytest.raises(ValueError, match=r"query 3: gallery index 2 appears more than once"):
        metric.compute(predictions=PREDICTIONS[:3] + [[2, 2]], references=QUERIES, gallery=GALLERY)


def test_dataset_gallery_with_a_null_category_or_attribute_is_named():
    records = [dict(r) for r in GALLERY]
    records[2]["category"] = None
    with pytest.raises(ValueError, match=r"gallery\[2\] has no 'category'"):
        score_retrieval(PREDICTIONS, QUERIES, gallery_dataset(records))
    records = [dict(r) for r in GALLERY]
    records[3]["attributes"] = [{"name": "length", "value": None}]
    with pytest.raises(ValueError, match=r"gallery\[3\]: an attribute lacks its 'name' or 'value'"):
        score_retrieval(PREDICTIONS, QUERIES, gallery_dataset(records))


def test_combine_subsets_reproduces_the_published_overall():
    sizes = {"RealStudioFlat": 1011, "AIGen-Studio": 193, "RealStreetLook": 981, "AIGen-StreetLook": 160}
    gr_pro = dict(zip(sizes, (69.14, 75.13, 62.39, 77.50)))
    gr_lite = dict(zip(sizes, (68.74, 70.47, 60.14, 75.00)))
    for published, overall in ((gr_pro, 67.38), (gr_lite, 65.71)):
        results = {
            name: {"fine_recall@1": published[name], "ndcg@5": 50.0, "num_queries": n, "num_outfits": 0,
                   "per_category": {}}
            for name, n in sizes.items()
        }
        # a street-look-only score is not common to all subsets and is left out
        results["RealStreetLook"]["outfit_fine_recall@1"] = 40.0
        combined = combine_subsets(results)
        assert round(combined["fine_recall@1"], 2) == overall
        assert combined == {"fine_recall@1": combined["fine_recall@1"], "ndcg@5": pytest.approx(50.0),
                            "num_queries": 2345, "num_outfits": 0}
    assert FineRecall.combine_subsets is combine_subsets


def test_combine_subsets_of_real_results_weights_by_queries():
    a = score_retrieval(PREDICTIONS[:1], QUERIES[:1], GALLERY)
    b = score_retrieval(PREDICTIONS[1:], QUERIES[1:], GALLERY)
    both = score_retrieval(PREDICTIONS, QUERIES, GALLERY)
    combined = combine_subsets({"a": a, "b": b})
    for key in ("fine_recall@5", "coarse_recall@1", "ndcg@10", "mrr@10", "map@5"):
        assert combined[key] == pytest.approx(both[key])
    with pytest.raises(ValueError, match=r"subset 'a' has no positive integer 'num_queries'"):
        combine_subsets({"a": {"fine_recall@1": 1.0}, "b": b})


@pytest.mark.parametrize(
    "predictions, message",
    [
        ([[1], [1.9], [0], [0]], r"query 1: rankings must hold integer gallery indices, got 1\.9 \(float\) at rank 1"),
        ([[1], [0], [0, 1.0], [0]], r"query 2: .* got 1\.0 \(float\) at rank 2"),
        ([[1], [0], [0], ["2"]], r"query 3: .* got '2' \(str\) at rank 1"),
        ([[1, True], [0], [0], [0]], r"query 0: .* got True \(bool\) at rank 2"),
        ([[1], np.array([0.0]), [0], [0]], r"query 1: .* got 0\.0 \(float\) at rank 1"),
        (np.array([[1.0], [0.0], [0.0], [0.0]]), r"query 0: rankings must hold integer gallery indices, got float64"),
    ],
)
def test_non_integer_indices_are_rejected_by_compute_and_score_retrieval_alike(predictions, message):
    with pytest.raises(ValueError, match=message):
        score_retrieval(predictions, QUERIES, GALLERY)
    with pytest.raises(ValueError, match=message):  # before evaluate's Arrow cast could truncate 1.9 to 1
        FineRecall().compute(predictions=predictions, references=QUERIES, gallery=GALLERY)


def test_numpy_and_python_integers_are_accepted_alike():
    expected = score_retrieval(PREDICTIONS, QUERIES, GALLERY)
    mixed = [[np.int32(i) if n % 2 else i for n, i in enumerate(p)] for p in PREDICTIONS]
    assert score_retrieval(mixed, QUERIES, GALLERY) == expected
    assert FineRecall().compute(predictions=mixed, references=QUERIES, gallery=GALLERY) == expected


@pytest.mark.parametrize(
    "references, gallery, kwargs, message",
    [
        (QUERIES, GALLERY, {"k": None}, r"k must be an integer >= 1 or a list of them, got k=None"),
        (QUERIES, GALLERY, {"k": 2.5}, r"k must be an integer >= 1 or a list of them, got k=2\.5"),
        (QUERIES, [], {}, r"gallery is empty"),
        ([dict(QUERIES[0], category=["top"])] + QUERIES[1:], GALLERY, {}, r"references\[0\]: 'category' must be a string, got \['top'\]"),
        (QUERIES, GALLERY[:2] + [dict(GALLERY[2], category=7)] + GALLERY[3:], {}, r"gallery\[2\]: 'category' must be a string, got 7"),
    ],
)
def test_bad_k_empty_gallery_and_non_string_category_are_named_in_both_paths(references, gallery, kwargs, message):
    with pytest.raises(ValueError, match=message):
        score_retrieval(PREDICTIONS, references, gallery, **kwargs)
    with pytest.raises(ValueError, match=message):
        FineRecall().compute(predictions=PREDICTIONS, references=references, gallery=gallery, **kwargs)


def test_dataset_gallery_with_a_non_string_category_column_is_named():
    records = [dict(r, category=n) for n, r in enumerate(GALLERY)]
    gallery = datasets.Dataset.from_list(records)
    with pytest.raises(ValueError, match=r"gallery's 'category' column must hold strings, got Value\('int64'\)"):
        score_retrieval(PREDICTIONS, QUERIES, gallery)


def crew_neck_run(hits, outfit=None):
    """Queries for GALLERY[0]'s crew-neck top, each ranking it first where `hits` is true, else second."""
    queries = [dict(QUERIES[0], outfit_id=outfit[i] if outfit else "") for i in range(len(hits))]
    return [[0, 1] if hit else [1, 0] for hit in hits], queries


def test_compute_gives_every_score_its_bootstrap_interval_as_the_engine_draws_it():
    from lookbench.results import stats
    from lookbench.metric.fine_recall.judging import score_queries
    from lookbench.results.outcomes import Outcomes

    hits = np.random.default_rng(7).random(400) < 0.6
    predictions, queries = crew_neck_run(hits)
    r = FineRecall().compute(predictions=predictions, references=queries, gallery=GALLERY, k=[1, 2])
    assert set(r["ci95"]) == {key for key, value in r.items() if isinstance(value, float)}
    lo, hi = r["ci95"]["fine_recall@1"]
    assert lo < r["fine_recall@1"] == 100 * hits.mean() < hi
    # an independent percentile bootstrap over queries, and the binomial width, within Monte-Carlo error
    rng = np.random.default_rng(123)
    means = [100 * hits[rng.integers(0, hits.size, hits.size)].mean() for _ in range(4000)]
    theirs = np.percentile(means, [2.5, 97.5])
    assert hi - lo == pytest.approx(theirs[1] - theirs[0], rel=0.12)
    p = hits.mean()
    assert hi - lo == pytest.approx(2 * 1.96 * 100 * math.sqrt(p * (1 - p) / hits.size), rel=0.12)
    # one bootstrap: a one-subset result of the engine stores these intervals (its nDCG is kept to 1e-6)
    per_query = score_queries(predictions, queries, GALLERY, k=[1, 2])
    engine = stats.intervals({"RealStudioFlat": Outcomes.of(per_query, queries)})["RealStudioFlat"]
    assert engine.keys() == r["ci95"].keys()
    for key, value in engine.items():
        assert list(value) == (r["ci95"][key] if "ndcg" not in key else pytest.approx(r["ci95"][key], abs=1e-3))
    # per category, and seeded: another seed moves the interval, the same seed repeats it
    assert r["per_category"]["top"]["ci95"]["fine_recall@1"] == [lo, hi]
    again = FineRecall().compute(predictions=predictions, references=queries, gallery=GALLERY, k=[1, 2])
    assert again["ci95"] == r["ci95"]
    other = FineRecall().compute(predictions=predictions, references=queries, gallery=GALLERY, k=[1, 2], random_state=5)
    assert other["ci95"] != r["ci95"] and other["fine_recall@1"] == r["fine_recall@1"]


def test_queries_of_one_outfit_are_resampled_together():
    outfit_hit = np.random.default_rng(3).random(100) < 0.5
    hits = np.repeat(outfit_hit, 4)  # four item queries per street photo, which succeed or fail together
    predictions, queries = crew_neck_run(hits, [f"look-{i // 4}" for i in range(hits.size)])
    together = FineRecall().compute(predictions=predictions, references=queries, gallery=GALLERY, k=[1])
    alone = FineRecall().compute(predictions=predictions, references=crew_neck_run(hits)[1], gallery=GALLERY, k=[1])
    width = {name: np.subtract(*r["ci95"]["fine_recall@1"][::-1]) for name, r in (("together", together), ("alone", alone))}
    assert width["together"] > 1.6 * width["alone"]  # 100 independent outfits, not 400 queries
    assert together["ci95"]["outfit_fine_recall@1"] == pytest.approx(together["ci95"]["fine_recall@1"])


def test_a_perfect_or_empty_score_has_a_wilson_interval_not_a_point():
    """70 of 70 is not certainty: the Wilson 95 % interval of 70 independent hits is [94.80, 100] (0 of 70: [0,
    5.20]); the percentile bootstrap collapsed both to a point. nDCG, MAP and MRR keep the bootstrap."""
    predictions, queries = crew_neck_run([True] * 70)
    r = FineRecall().compute(predictions=predictions, references=queries, gallery=GALLERY, k=[1, 2])
    assert r["fine_recall@1"] == 100.0 and r["ci95"]["fine_recall@1"] == pytest.approx([94.80, 100.0], abs=0.005)
    assert r["ci95"]["coarse_recall@2"] == r["ci95"]["fine_recall@1"]
    assert r["per_category"]["top"]["ci95"]["fine_recall@1"] == r["ci95"]["fine_recall@1"]
    assert r["interval_method"] == {key: "Wilson (effective n)" if "recall" in key else "bootstrap" for key in r["ci95"]}
    assert r["ci95"]["mrr@1"] == [100.0, 100.0]  # every query scores 100: a bootstrap of them cannot vary
    missed = FineRecall().compute(predictions=crew_neck_run([False] * 70)[0], references=queries, gallery=GALLERY, k=[1])
    assert missed["fine_recall@1"] == 0.0 and missed["ci95"]["fine_recall@1"] == pytest.approx([0.0, 5.20], abs=0.005)


@pytest.mark.parametrize("size, lower", [(1, 94.80), (2, 90.11), (7, 72.25)])
def test_at_100_percent_each_outfit_counts_as_one_observation(size, lower):
    """At 100 % the bootstrap measures no design effect, so an outfit counts once: 70 queries in outfits of two
    are 35 observations (Wilson lower bound 90.11), in outfits of seven 10 (72.25)."""
    predictions, queries = crew_neck_run([True] * 70, [f"look-{i // size}" if size > 1 else "" for i in range(70)])
    r = FineRecall().compute(predictions=predictions, references=queries, gallery=GALLERY, k=[1])
    assert r["ci95"]["fine_recall@1"] == pytest.approx([lower, 100.0], abs=0.005)
    if size > 1:  # the outfits themselves: 70 / size independent outfits, all hits
        assert r["ci95"]["outfit_fine_recall@1"] == pytest.approx([lower, 100.0], abs=0.005)


@pytest.mark.parametrize("n, p", [(400, 0.6), (2345, 0.67)])
def test_a_mid_range_wilson_interval_agrees_with_the_percentile_bootstrap(n, p):
    """Away from 0 and 100 % the Wilson interval on the effective sample size is the width the bootstrap draws:
    each bound within a few tenths of a point of the percentile interval of the same draws."""
    from lookbench.metric.fine_recall import bootstrap

    hits = np.random.default_rng(11).random(n) < p
    r = score_retrieval(*crew_neck_run(hits), GALLERY, k=[1])
    shares = (100.0 * hits)[:, None]
    draws = bootstrap.bootstrap_replicates(np.arange(n), shares, np.ones_like(shares), bootstrap.RESAMPLES,
                                           bootstrap.bootstrap_rng(0))
    assert r["ci95"]["fine_recall@1"] == pytest.approx(bootstrap.percentile_interval(draws)[0], abs=0.4)


@pytest.mark.parametrize("kwargs, message", [
    ({"n_resamples": -1}, r"n_resamples must be a non-negative integer, got -1"),
    ({"n_resamples": 2.5}, r"n_resamples must be a non-negative integer, got 2\.5"),
    ({"random_state": "seed"}, r"random_state must be a non-negative integer, got 'seed'"),
])
def test_bad_bootstrap_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FineRecall().compute(predictions=PREDICTIONS, references=QUERIES, gallery=GALLERY, **kwargs)


def test_no_resamples_no_intervals():
    r = FineRecall().compute(predictions=PREDICTIONS, references=QUERIES, gallery=GALLERY, n_resamples=0)
    assert "ci95" not in r and "interval_method" not in r
    assert all("ci95" not in block for block in r["per_category"].values())
    assert r == score_retrieval(PREDICTIONS, QUERIES, GALLERY, n_resamples=0)


# -- upper bounds (issue 37): K, the number of Ks and n_resamples ------------------------------------------------


@pytest.mark.parametrize("k, message", [
    (10 ** 12, r"^k=1000000000000 is larger than both the ranking depth \(3\) and the gallery \(6 rows\)"),
    (10 ** 8, r"^k=100000000 is larger than both the ranking depth \(3\) and the gallery \(6 rows\)"),
    ([1, 21], r"^k=21 is larger than both the ranking depth \(3\) and the gallery \(6 rows\), beyond which no score "
              r"changes; K can be at most 20 \(the larger of them, or 20, the largest default cut-off\)$"),
    (range(1, 300), r"^k names 299 cut-offs; at most MAX_CUTOFFS = 256 are scored in one call$"),
    (range(1, 10 ** 12), r"^k names 999999999999 cut-offs; at most MAX_CUTOFFS = 256 are scored in one call$"),
    (itertools.count(1), r"^k names more than 256 cut-offs; at most MAX_CUTOFFS = 256 are scored in one call$"),
])
def test_k_beyond_the_rankings_and_the_gallery_or_too_many_ks_are_refused_at_once(k, message):
    """K = 10**12 asked for 21.8 TiB and K = 10**8 with 3 queries took 54 s and 3.5 GB: now refused before any
    allocation, in both paths, naming k."""
    predictions, references = PREDICTIONS[:3], QUERIES[:3]
    with pytest.raises(ValueError, match=message):
        score_retrieval(predictions, references, GALLERY, k=k, n_resamples=0)
    with pytest.raises(ValueError, match=message):
        FineRecall().compute(predictions=predictions, references=references, gallery=GALLERY, k=k, n_resamples=0)


def test_k_up_to_the_padded_depth_the_gallery_or_the_default_20_is_scored():
    """faiss pads a search deeper than the gallery with -1; the default cut-offs (up to 20) are scored on any
    gallery, as the engine reports them for every run."""
    padded = np.full((2, 30), -1)
    padded[0, :3], padded[1, :2] = [1, 0, 2], [3, 2]
    assert score_retrieval(padded, QUERIES[:2], GALLERY, k=[30], n_resamples=0)["coarse_recall@30"] == 100.0
    assert score_retrieval(PREDICTIONS, QUERIES, GALLERY, k=[6, 20], n_resamples=0)["num_queries"] == 4


def test_n_resamples_above_its_cap_is_refused_and_the_caps_are_documented():
    from lookbench.metric.fine_recall import bootstrap, judging

    card = Path(bootstrap.__file__).with_name("README.md").read_text(encoding="utf-8")
    assert (bootstrap.MAX_RESAMPLES, judging.MAX_CUTOFFS) == (100_000, 256)
    assert "`MAX_RESAMPLES` = 100,000" in card and "`MAX_CUTOFFS` = 256" in card
    for n in (bootstrap.MAX_RESAMPLES + 1, 10 ** 9):
        with pytest.raises(ValueError, match=rf"^n_resamples must be at most MAX_RESAMPLES = 100000, got {n}$"):
            FineRecall().compute(predictions=PREDICTIONS, references=QUERIES, gallery=GALLERY, k=[1, 2], n_resamples=n)
