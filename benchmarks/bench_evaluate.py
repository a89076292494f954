"""Evaluation-engine benchmarks P1–P5 (issue 5), each a ratio of times measured side by side in this one run.

    python benchmarks/bench_evaluate.py --scale 0.4 --noise-scale 13 --model efficientnet-lite0 --repeat 5

P1 cold evaluate ÷ pure forward time of the same model on the same unique images (already preprocessed); best of
   --repeat interleaved runs of each
P2 forward passes ÷ images in all query+gallery rows of the naive per-subset layout (here, and analytically on
   the published release's proportions)
P3 warm re-run ÷ the cold run just before it (and the warm run's forward count)
P4 search + metrics: 2,345 queries × 62,000 gallery × 1024-d random-but-clustered embeddings (seconds)
P5 cold run ÷ the naive reference harness (benchmarks/naive_harness.py) on the same model and data; also shown
   against the naive harness given the engine's allocator setting, to separate that gain from the engine's design
The datasets Arrow cache is prepared and the libraries imported before timing in both harnesses; every cold run
starts with an empty embedding cache.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

sys.path.insert(0, str(Path(__file__).parent))
from naive_harness import naive_evaluate  # noqa: E402

import lookbench  # noqa: E402
from lookbench.encoders.base import as_batch  # noqa: E402
from lookbench.encoders.registry import load_encoder  # noqa: E402
from lookbench.engine import Split, SubsetTask, load_benchmark, reuse_freed_memory, score_subsets  # noqa: E402
from lookbench.metric.fine_recall.fine_recall import DEFAULT_K  # noqa: E402
from lookbench.paths import bench_dir  # noqa: E402
from lookbench.schema import SUBSETS, TEST_SUBSETS  # noqa: E402


def build_mini(scale: float, noise_scale: float) -> Path:
    from lookbench.dataset_builder import build_release

    out = bench_dir() / f"mini-scale{scale:g}-noise{noise_scale:g}"
    if not (out / "README.md").is_file():
        build_release("mini", out, scale=scale, noise_scale=noise_scale)
    return out


def unique_arrays(model: str, bench):
    """The encoder and every distinct image of the benchmark, decoded and preprocessed beforehand."""
    import datasets
    from PIL import Image

    encoder = load_encoder(model)
    seen, arrays = set(), []
    for ds in [s for splits in bench.subsets.values() for s in splits.values()] + [bench.noise]:
        for blob in ds.cast_column("image", datasets.Image(decode=False))["image"]:
            h = hashlib.sha256(blob["bytes"]).digest()
            if h not in seen:
                seen.add(h)
                arrays.append(encoder.preprocess(Image.open(io.BytesIO(blob["bytes"]))))
    return encoder, arrays


def pure_forward(encoder, batches: list) -> float:
    """Seconds of encode_batch alone over the given batches of preprocessed, stacked images."""
    with reuse_freed_memory():  # the engine's allocator setting: P1 compares like with like
        start = time.perf_counter()
        for batch in batches:
            encoder.encode_batch(batch)
        return time.perf_counter() - start


def p4_search(seed: int = 0) -> tuple[float, int]:
    """Search + metrics on published-size random clustered embeddings, through the engine's own code path."""
    import datasets

    rng = np.random.default_rng(seed)
    sizes = {n: (SUBSETS[n].published_queries, SUBSETS[n].published_gallery) for n in TEST_SUBSETS}
    n_noise, d, n_clusters = 58275, 1024, 400
    centres = rng.standard_normal((n_clusters, d)).astype(np.float32)
    total = sum(q + g for q, g in sizes.values()) + n_noise
    cluster = rng.integers(0, n_clusters, total)
    matrix = centres[cluster] + 0.8 * rng.standard_normal((total, d), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    cats = [f"cat{i % 20}" for i in range(n_clusters)]

    def annotations(rows):
        c = cluster[rows]
        return datasets.Dataset.from_dict({
            "category": [cats[x] for x in c], "main_attribute": [f"m{x % 7}" for x in c],
            "attributes": [[{"name": "colour", "value": f"c{x % 5}"}, {"name": "fit", "value": f"f{x % 3}"}] for x in c],
            "outfit_id": [None] * len(rows),
        })

    tasks, start = {}, 0
    for name, (q, g) in sizes.items():
        q_uid, g_uid = np.arange(start, start + q), np.arange(start + q, start + q + g)
        tasks[name] = SubsetTask(Split(q_uid, annotations(q_uid)), Split(g_uid, annotations(g_uid)))
        start += q + g
    noise_uid = np.arange(start, total)
    noise = Split(noise_uid, annotations(noise_uid))

    t0 = time.perf_counter()
    scored = score_subsets(matrix, tasks, noise)
    return time.perf_counter() - t0, sum(s.scores["num_queries"] for s in scored.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=2.0)
    parser.add_argument("--noise-scale", type=float, default=1.0,
                        help="grow the noise gallery alone; about 13 gives the published noise : subset proportions")
    parser.add_argument("--model", default="efficientnet-lite0")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3, help="cold evaluate and pure forward runs (best of each for P1)")
    parser.add_argument("--skip-naive", action="store_true")
    args = parser.parse_args()

    data = build_mini(args.scale, args.noise_scale)
    bench = load_benchmark(data)  # prepares the datasets Arrow cache for both harnesses
    rows_naive = sum(len(s["query"]) + len(s["gallery"]) + len(bench.noise) for s in bench.subsets.values())

    # Library imports are process start-up, excluded from every timing below, as torch's is from the pure forward.
    import faiss  # noqa: F401
    import lookbench.metric.fine_recall.fine_recall  # noqa: F401

    encoder, arrays = unique_arrays(args.model, bench)
    n_unique = len(arrays)
    batches = [as_batch(arrays[i:i + args.batch_size]) for i in range(0, n_unique, args.batch_size)]
    encoder.encode_batch(batches[0])  # load the weights outside the timed forward loops
    colds, fwds = [], []
    for rep in range(args.repeat):  # interleaved, so a slow spell of the shared machine hits both sides
        with tempfile.TemporaryDirectory() as cache:
            t0 = time.perf_counter()
            cold = lookbench.evaluate(args.model, data=data, cache_dir=cache, batch_size=args.batch_size, quiet=True)
            colds.append(time.perf_counter() - t0)
            if rep == 0:
                t0 = time.perf_counter()
                warm = lookbench.evaluate(args.model, data=data, cache_dir=cache, batch_size=args.batch_size, quiet=True)
                t_warm = time.perf_counter() - t0
        fwds.append(pure_forward(encoder, batches))
    t_cold, t_fwd = min(colds), min(fwds)
    forwards = cold.provenance["counts"]["forward_images"]
    published = sum(s.published_queries + s.published_gallery for s in SUBSETS.values() if s.name in TEST_SUBSETS)
    noise = SUBSETS["noise"].published_gallery
    p2_published = (published + noise) / (published + len(TEST_SUBSETS) * noise)

    print(f"data: LookBench-Mini --scale {args.scale:g} --noise-scale {args.noise_scale:g} ({n_unique} unique images, {rows_naive} naive per-subset rows); "
          f"model {args.model}; batch {args.batch_size}; torch threads {__import__('torch').get_num_threads()}")
    print(f"cold evaluate runs: {', '.join(f'{t:.1f}' for t in colds)} s; pure forward runs: {', '.join(f'{t:.1f}' for t in fwds)} s")
    print(f"P1 cold evaluate / pure forward      = {t_cold:.1f} s / {t_fwd:.1f} s = {t_cold / t_fwd:.3f}   (best of {args.repeat} each; target <= 1.15)")
    print(f"P2 forward passes / naive rows        = {forwards} / {rows_naive} = {forwards / rows_naive:.3f}; "
          f"published proportions {p2_published:.3f}   (target <= 0.30)")
    print(f"P3 warm / cold                        = {t_warm:.2f} s / {colds[0]:.1f} s = {t_warm / colds[0]:.4f}; "
          f"warm forward passes {warm.provenance['counts']['forward_images']}   (target <= 0.03, 0)")
    t_p4, nq = p4_search()
    print(f"P4 search + metrics, {nq} q x 62,226..62,275 x 1024-d = {t_p4:.2f} s   (target <= 4 s)")
    if not args.skip_naive:
        t0 = time.perf_counter()
        naive = naive_evaluate(encoder, str(data), list(bench.subsets), args.batch_size)
        t_naive = time.perf_counter() - t0
        t_slow = max(colds)  # the slowest cold run against a single naive run: no best-of-N in the engine's favour
        print(f"P5 cold evaluate / naive harness      = {t_slow:.1f} s / {t_naive:.1f} s = {t_slow / t_naive:.3f}   "
              f"(slowest cold run; target <= 0.33; naive forward passes {naive['forward_images']})")
        # Not a target: how much of P5 is the engine's structure (dedup, overlap, vectorised scoring) rather than
        # its allocator setting — the same naive harness with the allocator setting the engine uses.
        t0 = time.perf_counter()
        with reuse_freed_memory():
            naive_evaluate(encoder, str(data), list(bench.subsets), args.batch_size)
        t_naive_heap = time.perf_counter() - t0
        print(f"   P5 without the allocator gain: cold evaluate / naive harness in reuse_freed_memory = "
              f"{t_slow:.1f} s / {t_naive_heap:.1f} s = {t_slow / t_naive_heap:.3f}   (information)")
        for name, by_k in naive["fine_recall"].items():
            engine = [cold.subsets[name][f"fine_recall@{k}"] for k in DEFAULT_K]
            print(f"   check {name}: Fine R@1/5/10/20 engine {', '.join(f'{v:.1f}' for v in engine)} | naive "
                  f"{', '.join(f'{by_k[k]:.1f}' for k in DEFAULT_K)} (self-matches removed: {cold.subsets[name]['self_matches_removed']})")


if __name__ == "__main__":
    main()
