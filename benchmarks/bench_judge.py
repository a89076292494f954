"""Judging one ranking in both modes: once per mode in full, against one shared mode-free core (issue 52 item 3).

The data of `bench_fine_recall.py` (2,345 queries x top-100 against a 62,000-item gallery with 10 attributes per
item). "Before" is what a run without `--mode` did: a full `judge_subset` per mode (the metric's `score_queries`,
the top-1 marks and attribute errors each time); "after" is `judge_modes`, which works the mode-free part out once.
Timed alternately, side by side in one run, and the judgements compared for equality.

    python benchmarks/bench_judge.py [--repeat 5] [--seed 0]
"""
import argparse
import time

import numpy as np

from bench_fine_recall import queries_of, rankings, synthetic_gallery  # sets the offline environment too

import datasets  # noqa: E402

from lookbench.metric.fine_recall.records import MODES, GalleryColumns  # noqa: E402
from lookbench.results.judge import judge_modes, judge_subset, query_columns  # noqa: E402


def same(a, b) -> bool:
    """Two judgements of one subset alike: scores, outcomes (as stored) and the per-rank hit flags."""
    return (a.scores == b.scores and a.outcomes.to_json() == b.outcomes.to_json() and np.array_equal(a.fine, b.fine)
            and np.array_equal(a.coarse, b.coarse) and a.gallery_size == b.gallery_size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    gallery_list = synthetic_gallery(rng, 62_000)
    records, matches = queries_of(rng, gallery_list, 2345)
    ranking = rankings(rng, records, matches, gallery_list)
    queries = datasets.Dataset.from_list(records)
    queries = queries.select_columns(query_columns(queries))
    gallery = GalleryColumns(datasets.Dataset.from_list(gallery_list))
    print(f"{len(queries)} queries x top-{ranking.shape[1]}, gallery {len(gallery)} items; modes {', '.join(MODES)}; "
          f"best / median of {args.repeat} runs, alternating")

    runs = {"before: judge_subset once per mode": lambda: {m: judge_subset(ranking, queries, gallery, m) for m in MODES},
            "after: judge_modes, one shared core": lambda: judge_modes(ranking, queries, gallery, MODES)}
    times = {name: [] for name in runs}
    judged = {}
    for _ in range(args.repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            judged[name] = run()
            times[name].append(time.perf_counter() - start)
    for name, values in times.items():
        print(f"  {name:<40} {min(values):7.3f} s (median {np.median(values):.3f} s)")
    before, after = (min(values) for values in times.values())
    print(f"  after / before = {after:.3f} / {before:.3f} = {after / before:.2f}x")
    print(f"  identical judgements in every mode: {all(same(*(j[m] for j in judged.values())) for m in MODES)}")


if __name__ == "__main__":
    main()
