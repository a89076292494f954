"""Scoring speed of the `lookbench/fine_recall` metric at the public release's scale.

2,345 queries x top-100 rankings (a faiss-style 2-D int64 array) against a 62,000-item gallery with 10
attributes per item, drawn from a category-specific taxonomy. Times the public `FineRecall().compute`
(evaluate's own Arrow round trip included) and the pure scoring function, with the gallery as a
`datasets.Dataset` (read column-wise) and as a list of dicts, side by side in one run.

    python benchmarks/bench_fine_recall.py [--repeat 3] [--seed 0]
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import datasets  # noqa: E402
import numpy as np  # noqa: E402

from lookbench.metric.fine_recall.bootstrap import RESAMPLES, score_retrieval  # noqa: E402
from lookbench.metric.fine_recall.fine_recall import FineRecall  # noqa: E402

NUM_QUERIES, GALLERY_SIZE, TOP, ATTRIBUTES_PER_ITEM = 2345, 62_000, 100, 10
NUM_CATEGORIES, NAMES_PER_CATEGORY, VALUES_PER_NAME = 30, 16, 6


def synthetic_gallery(rng, count):
    """Annotation records with `ATTRIBUTES_PER_ITEM` distinct attribute names from their category's taxonomy."""
    categories = rng.integers(NUM_CATEGORIES, size=count)
    records = []
    for i, category in enumerate(categories):
        names = rng.choice(NAMES_PER_CATEGORY, size=ATTRIBUTES_PER_ITEM, replace=False)
        values = rng.integers(VALUES_PER_NAME, size=ATTRIBUTES_PER_ITEM)
        attributes = [{"name": f"c{category}-attr{n}", "value": f"v{v}"} for n, v in zip(names, values)]
        records.append(
            {
                "item_id": f"item-{i}",
                "category": f"category-{category}",
                "main_attribute": attributes[0]["value"],
                "attributes": attributes,
            }
        )
    return records


def queries_of(rng, gallery, count):
    """Queries photographed from gallery products: a product's annotation with a few attributes left
    unannotated, every other query in a street look; returns the queries and their matching gallery rows."""
    matches = rng.choice(len(gallery), size=count, replace=False)
    queries = []
    for i, row in enumerate(matches):
        attributes = [a for a in gallery[row]["attributes"] if rng.random() > 0.2]
        outfit_id = f"look-{i // 4}" if i % 2 == 0 else None
        queries.append(dict(gallery[row], item_id=f"query-{i}", attributes=attributes, outfit_id=outfit_id))
    return queries, matches


def rankings(rng, queries, matches, gallery):
    """Top-`TOP` distinct gallery rows per query, mostly from the query's category (as a model would), with
    the matching product at a geometrically distributed rank for 80% of the queries."""
    by_category = {}
    for row, record in enumerate(gallery):
        by_category.setdefault(record["category"], []).append(row)
    by_category = {c: np.array(rows) for c, rows in by_category.items()}
    result = np.empty((len(queries), TOP), dtype=np.int64)
    for q, record in enumerate(queries):
        candidates = np.concatenate(
            [rng.choice(by_category[record["category"]], 2 * TOP), rng.integers(len(gallery), size=TOP)]
        )
        candidates = candidates[candidates != matches[q]]
        candidates = candidates[rng.permutation(candidates.size)]
        _, first = np.unique(candidates, return_index=True)
        ranked = candidates[np.sort(first)][:TOP]
        if rng.random() < 0.8:
            ranked = np.insert(ranked[: TOP - 1], min(rng.geometric(0.3) - 1, TOP - 1), matches[q])
        result[q] = ranked
    return result


def best_of(repeat, function):
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    gallery_list = synthetic_gallery(rng, GALLERY_SIZE)
    gallery_dataset = datasets.Dataset.from_list(gallery_list)
    queries, matches = queries_of(rng, gallery_list, NUM_QUERIES)
    predictions = rankings(rng, queries, matches, gallery_list)
    print(
        f"{NUM_QUERIES} queries x top-{TOP}, gallery {GALLERY_SIZE} items x {ATTRIBUTES_PER_ITEM} attributes, "
        f"{NUM_CATEGORIES} categories; best / median of {args.repeat} runs"
    )
    metric = FineRecall()
    runs = {
        "FineRecall().compute, Dataset gallery": lambda: metric.compute(
            predictions=predictions, references=queries, gallery=gallery_dataset
        ),
        "FineRecall().compute, Dataset gallery, no intervals": lambda: metric.compute(
            predictions=predictions, references=queries, gallery=gallery_dataset, n_resamples=0
        ),
        "score_retrieval (pure), Dataset gallery, no intervals": lambda: score_retrieval(
            predictions, queries, gallery_dataset, n_resamples=0
        ),
        "score_retrieval (pure), list gallery, no intervals": lambda: score_retrieval(
            predictions, queries, gallery_list, n_resamples=0
        ),
        "FineRecall().compute, Dataset gallery, leaderboard": lambda: metric.compute(
            predictions=predictions, references=queries, gallery=gallery_dataset, mode="leaderboard"
        ),
    }
    timings, results = {}, {}
    for name, run in runs.items():
        best, median, results[name] = best_of(args.repeat, run)
        timings[name] = best
        print(f"  {name:<56} {best:7.3f} s (median {median:.3f} s)")
    public = timings["FineRecall().compute, Dataset gallery, no intervals"]
    pure = timings["score_retrieval (pure), Dataset gallery, no intervals"]
    print(f"  evaluate overhead: compute without intervals / pure = {public / pure:.2f}x")
    print(f"  intervals ({RESAMPLES} resamples): compute / compute without = "
          f"{timings['FineRecall().compute, Dataset gallery'] / public:.2f}x")
    as_list = timings["score_retrieval (pure), list gallery, no intervals"]
    print(f"  gallery as a list of dicts / as a Dataset = {as_list / pure:.2f}x")
    same = (results["FineRecall().compute, Dataset gallery, no intervals"]
            == results["score_retrieval (pure), list gallery, no intervals"])
    print(f"  Dataset and list gallery give identical results: {same}")
    strict = results["FineRecall().compute, Dataset gallery"]
    print(
        "  scores: "
        + ", ".join(f"{key}={strict[key]:.2f} [{strict['ci95'][key][0]:.2f}, {strict['ci95'][key][1]:.2f}]"
                    for key in ("fine_recall@1", "coarse_recall@1", "ndcg@10", "mrr@10"))
    )


if __name__ == "__main__":
    main()
