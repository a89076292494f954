"""fine_recall against an independent implementation (pytrec_eval) and under hypothesis-generated input."""
import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import lookbench.metric.fine_recall.judging as judging
from lookbench.metric.fine_recall.bootstrap import score_retrieval
from lookbench.metric.fine_recall.records import fine_miss_reasons

KS = [1, 5, 10, 20]
CATEGORIES = ["top", "dress", "bag", "shoe", "coat"]
NAMES, VALUES = ["neckline", "sleeve", "pattern", "fit"], ["a", "b", "c"]


def random_problem(seed, empty_query_attributes):
    """A random gallery, queries made from gallery items (so every query has a fine-relevant item), and
    random rankings of random length, some shorter than the largest K."""
    rng = np.random.default_rng(seed)
    gallery = []
    for _ in range(240):
        names = rng.choice(NAMES, size=rng.integers(0, len(NAMES) + 1), replace=False)
        gallery.append(
            {
                "category": str(rng.choice(CATEGORIES)),
                "main_attribute": str(rng.choice(VALUES)),
                "attributes": [{"name": str(n), "value": str(rng.choice(VALUES))} for n in names],
            }
        )
    queries, predictions = [], []
    for _ in range(60):
        source = gallery[rng.integers(len(gallery))]
        kept = [a for a in source["attributes"] if rng.random() < 0.7 and not empty_query_attributes]
        queries.append(dict(source, attributes=kept))
        predictions.append(rng.permutation(len(gallery))[: rng.integers(1, 30)].tolist())
    return gallery, queries, predictions


def trec(qrels, predictions, measures):
    """Per-measure means over queries from pytrec_eval; distinct descending scores fix the ranking order."""
    run = {
        f"q{q}": {f"d{doc}": float(len(ranking) - rank) for rank, doc in enumerate(ranking)}
        for q, ranking in enumerate(predictions)
    }
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert len(per_query) == len(predictions)  # every query has a relevant item, none was skipped
    return {m: 100 * np.mean([v[m] for v in per_query.values()]) for m in next(iter(per_query.values()))}


def judged(queries, gallery, relevant):
    return {
        f"q{q}": {f"d{i}": int(relevant(query, item)) for i, item in enumerate(gallery)}
        for q, query in enumerate(queries)
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coarse_recall_ndcg_and_mrr_agree_with_trec_eval_on_binary_relevance(seed):
    # With no query attributes, rel = [same category]: binary, which is what trec_eval's nDCG takes.
    gallery, queries, predictions = random_problem(seed, empty_query_attributes=True)
    ours = score_retrieval(predictions, queries, gallery, k=KS)
    qrels = judged(queries, gallery, lambda q, i: q["category"] == i["category"])
    theirs = trec(qrels, predictions, {"success.1,5,10,20", "ndcg_cut.1,5,10,20", "map_cut.1,5,10,20"})
    for k in KS:
        assert ours[f"coarse_recall@{k}"] == pytest.approx(theirs[f"success_{k}"], abs=1e-9)
        assert ours[f"ndcg@{k}"] == pytest.approx(theirs[f"ndcg_cut_{k}"], abs=1e-9)
        # empty A_q: fine = coarse
        assert ours[f"map@{k}"] == pytest.approx(theirs[f"map_cut_{k}"], abs=1e-9)
        cut = trec(qrels, [ranking[:k] for ranking in predictions], {"recip_rank"})
        assert ours[f"mrr@{k}"] == pytest.approx(cut["recip_rank"], abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mode", ["strict", "leaderboard"])
def test_fine_recall_and_mrr_agree_with_trec_eval(seed, mode):
    gallery, queries, predictions = random_problem(seed, empty_query_attributes=False)
    ours = score_retrieval(predictions, queries, gallery, k=KS, mode=mode)

    def fine(query, item):
        pairs = lambda record: {(a["name"], a["value"]) for a in record["attributes"]}  # noqa: E731
        if query["category"] != item["category"]:
            return False
        return pairs(query) <= pairs(item) if mode == "strict" else query["main_attribute"] == item["main_attribute"]

    qrels = judged(queries, gallery, fine)
    theirs = trec(qrels, predictions, {"success.1,5,10,20", "map_cut.1,5,10,20"})
    for k in KS:
        assert ours[f"fine_recall@{k}"] == pytest.approx(theirs[f"success_{k}"], abs=1e-9)
        # MAP@K is trec_eval's map_cut: precision at each hit in the top K over all fine matches of the gallery
        assert ours[f"map@{k}"] == pytest.approx(theirs[f"map_cut_{k}"], abs=1e-9)
        # MRR@K: trec_eval's reciprocal rank of the run cut at K
        cut = trec(qrels, [ranking[:k] for ranking in predictions], {"recip_rank"})
        assert ours[f"mrr@{k}"] == pytest.approx(cut["recip_rank"], abs=1e-9)
    assert ours["map@1"] < ours["fine_recall@1"]  # several fine matches per query: AP@1 is normalised by all of them


def key(text):
    return " ".join(text.split()).casefold()


def brute_force(predictions, queries, gallery, ks, mode):
    """Every score by the definitions, one query and one gallery item at a time (no shared code)."""
    pairs = lambda record: {(key(a["name"]), key(a["value"])) for a in record["attributes"]}  # noqa: E731
    same = lambda query, item: key(query["category"]) == key(item["category"])  # noqa: E731

    def relevance(query, item):
        if not same(query, item):
            return 0.0
        return len(pairs(query) & pairs(item)) / len(pairs(query)) if pairs(query) else 1.0

    def fine(query, item):
        if not same(query, item):
            return False
        if mode == "strict":
            return pairs(query) <= pairs(item)
        return key(query["main_attribute"]) != "" and key(query["main_attribute"]) == key(item["main_attribute"])

    out = {}
    fine_hits = [[fine(q, gallery[i]) for i in ranking] for q, ranking in zip(queries, predictions)]
    for k in ks:
        out[f"fine_recall@{k}"] = 100 * np.mean([any(h[:k]) for h in fine_hits])
    for k in ks:
        out[f"coarse_recall@{k}"] = 100 * np.mean(
            [any(same(q, gallery[i]) for i in r[:k]) for q, r in zip(queries, predictions)]
        )
    for k in ks:
        values = []
        for q, ranking in zip(queries, predictions):
            dcg = sum(relevance(q, gallery[i]) / np.log2(rank + 2) for rank, i in enumerate(ranking[:k]))
            best = sorted((relevance(q, item) for item in gallery), reverse=True)[:k]
            idcg = sum(rel / np.log2(rank + 2) for rank, rel in enumerate(best))
            values.append(dcg / idcg if idcg > 0 else 0.0)
        out[f"ndcg@{k}"] = 100 * np.mean(values)
    for k in ks:
        out[f"mrr@{k}"] = 100 * np.mean([1 / (h.index(True) + 1) if True in h[:k] else 0.0 for h in fine_hits])
    outfits = {}
    for query, hits in zip(queries, fine_hits):
        if query.get("outfit_id"):
            outfits.setdefault(query["outfit_id"], []).append(hits)
    for k in ks if outfits else ():
        out[f"outfit_fine_recall@{k}"] = 100 * np.mean([all(any(h[:k]) for h in hits) for hits in outfits.values()])
    return out


def test_graded_scores_match_brute_force_with_many_attributes_and_small_blocks(monkeypatch):
    # 40 names x 5 values per category: more than 64 attribute pairs, so bitsets span several words;
    # a tiny block size makes the query x gallery overlap counts come in many blocks.
    monkeypatch.setattr(judging, "_BLOCK_WORDS", 64)
    rng = np.random.default_rng(7)
    names = [f"name{i}" for i in range(40)]

    def item():
        chosen = rng.choice(names, size=rng.integers(0, 25), replace=False)
        return {
            "category": str(rng.choice(["top", "dress"])),
            "main_attribute": str(rng.choice(["x", "y"])),
            "attributes": [{"name": str(n), "value": f"v{rng.integers(5)}"} for n in chosen],
        }

    gallery = [item() for _ in range(150)]
    queries = []
    for _ in range(40):
        source = gallery[rng.integers(len(gallery))]
        queries.append(dict(source, attributes=[a for a in source["attributes"] if rng.random() < 0.8]))
    predictions = [rng.permutation(len(gallery))[: rng.integers(1, 25)].tolist() for _ in queries]
    for mode in ("strict", "leaderboard"):
        ours = score_retrieval(predictions, queries, gallery, k=KS, mode=mode)
        expected = brute_force(predictions, queries, gallery, KS, mode)
        assert {k: ours[k] for k in expected} == pytest.approx(expected, abs=1e-9)
        assert 0 < ours["ndcg@20"] < 100


record = st.fixed_dictionaries(
    {
        "category": st.sampled_from(["top", "Top ", "dress"]),
        "main_attribute": st.sampled_from(["x", "y", ""]),
        "attributes": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(["n1", "n2", "n3"]), "value": st.sampled_from(["a", "b"])}),
            max_size=4,
        ),
        "outfit_id": st.sampled_from(["", "o1", "o2"]),
    }
)


@st.composite
def problems(draw):
    gallery = draw(st.lists(record, min_size=1, max_size=10))
    queries = draw(st.lists(record, min_size=1, max_size=6))
    predictions = [
        draw(st.permutations(range(len(gallery))))[: draw(st.integers(1, len(gallery)))] for _ in queries
    ]
    return gallery, queries, predictions


def scores_only(results):
    return {key: value for key, value in results.items() if key not in ("per_category", "ci95", "interval_method")}


@settings(max_examples=60, deadline=None)
@given(problems(), st.sampled_from(["strict", "leaderboard"]), st.randoms(use_true_random=False))
def test_properties(problem, mode, random):
    gallery, queries, predictions = problem
    ks = [1, 2, 3, 5, 10]
    results = score_retrieval(predictions, queries, gallery, k=ks, mode=mode)
    expected = brute_force(predictions, queries, gallery, ks, mode)
    assert {k: results[k] for k in expected} == pytest.approx(expected, abs=1e-9)

    order = list(range(len(queries)))
    random.shuffle(order)
    permuted = score_retrieval([predictions[i] for i in order], [queries[i] for i in order], gallery, k=ks, mode=mode)
    assert scores_only(permuted) == pytest.approx(scores_only(results), abs=1e-9)
    # the same members, averaged alike (the intervals are not compared: the seeded draws follow the query order)
    assert {c: scores_only(s) for c, s in permuted["per_category"].items()} == \
        {c: scores_only(s) for c, s in results["per_category"].items()}

    for small, large in zip(ks, ks[1:]):
        for key in ("fine_recall", "coarse_recall", "outfit_fine_recall"):
            if f"{key}@{small}" in results:
                assert results[f"{key}@{small}"] <= results[f"{key}@{large}"]
    for k in ks:
        assert results[f"fine_recall@{k}"] <= results[f"coarse_recall@{k}"]
        assert 0.0 <= results[f"ndcg@{k}"] <= 100.0
        if f"outfit_fine_recall@{k}" in results:
            assert results[f"outfit_fine_recall@{k}"] <= 100.0
    for k in ks:
        assert results["fine_recall@1"] <= results[f"mrr@{k}"] + 1e-9 and results[f"mrr@{k}"] <= results[f"fine_recall@{k}"] + 1e-9
        assert 0.0 <= results[f"map@{k}"] <= results[f"fine_recall@{k}"] + 1e-9
    for category in results["per_category"].values():
        assert category["fine_recall@1"] <= category["coarse_recall@1"]
    # a hit rate's Wilson interval holds its score and never shrinks to a point, at 0 % and 100 % too
    for key, method in results["interval_method"].items():
        lo, hi = results["ci95"][key]
        if method == "Wilson (effective n)":
            assert 0.0 <= lo <= results[key] + 1e-9 and results[key] - 1e-9 <= hi <= 100.0 and hi - lo > 0.0


@settings(max_examples=60, deadline=None)
@given(problems())
def test_the_mode_free_core_and_each_mode_are_score_queries(problem):
    """Issue 52 item 3: `score_mode(score_core(...), mode)` is `score_queries(..., mode)`, array for array, and one
    core serves both modes."""
    gallery, queries, predictions = problem
    core = judging.score_core(predictions, queries, gallery, k=[1, 2, 5])
    for mode in ("strict", "leaderboard"):
        shared, alone = judging.score_mode(core, mode), judging.score_queries(predictions, queries, gallery, [1, 2, 5], mode)
        assert list(shared) == list(alone)
        for key, value in alone.items():
            assert np.array_equal(shared[key], value) and np.asarray(shared[key]).dtype == np.asarray(value).dtype, key


def test_an_unknown_mode_is_refused_by_each_step():
    core = judging.score_core([[0]], [{"category": "top"}], [{"category": "top"}], k=[1])
    with pytest.raises(ValueError, match="^unknown mode 'fine'; expected one of"):
        judging.score_mode(core, "fine")
    with pytest.raises(ValueError, match="^unknown mode 'fine'; expected one of"):
        fine_miss_reasons({"category": "top"}, {"category": "top"}, "fine")


@pytest.mark.parametrize("query_main, item_main", [("", ""), (None, "red"), ("  ", " "), ("red", ""), ("red", "blue")])
def test_an_empty_or_other_main_attribute_is_a_leaderboard_reason(query_main, item_main):
    query = {"category": "top", "main_attribute": query_main, "attributes": [{"name": "colour", "value": "red"}]}
    item = dict(query, category="Top ", main_attribute=item_main)
    assert fine_miss_reasons(query, item, "leaderboard") == [("main", query_main or "", item_main)]
    assert fine_miss_reasons(query, item, "strict") == []
    assert fine_miss_reasons(query, dict(item, main_attribute=" RED"), "leaderboard") == (
        [] if (query_main or "").strip() == "red" else [("main", query_main or "", " RED")])
