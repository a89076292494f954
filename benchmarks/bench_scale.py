"""The engine at the published scale (issue 13): P8 (time against the decode + forward limit) and P9 (peak memory).

    python benchmarks/bench_scale.py --data /work/runs/test-published/lookbench --models raw-pixels gr-lite-mini \
        --sizes /work/runs/scale-2/lookbench /work/runs/scale-5/lookbench

Without ``--data`` it builds (once, into $HF_HOME/lookbench/bench) the published layout of LookBench-Mini:
``lookbench build --source mini --scale 9 --noise-scale 13`` (2,534 queries, 8,941 subset gallery and 58,500 noise
rows, 69,975 distinct images). Every measurement runs in a process of its own, so its peak RSS comes from the OS
(``wait4``), and its wall time is the whole process's. Per model, in one run:

pipeline  decode + preprocess + forward of every distinct image, with the engine's decode threads, batch size and
          allocator setting, from encoded bytes already in memory; no Arrow, cache, checks or search: windows of
          batches decoded on every thread, then forwarded (the CPU schedule of a torch model; for raw-pixels,
          whose forward is ≈1 % of it, decode + forward is the limit of the overlapped schedule too). The seconds
          exclude the process's start-up and the reading of the bytes (its RSS includes them)
search    exact search alone on the same shapes (faiss IndexFlatIP: all queries against the noise gallery, each
          subset's queries against its gallery), random unit vectors of the model's width
start-up  a process that imports what an evaluation imports and loads the model's weights
cold      ``lookbench evaluate`` with an empty embedding cache (its per-stage ``timings_s`` printed); warm: again

P8  encode stage ÷ pipeline (target ≤ 1.25 raw-pixels, ≤ 1.10 gr-lite-mini); cold run ÷ (pipeline + search +
    start-up) ≤ 1.3
P9  cold peak RSS ≤ embedding matrix + 1.5 GB; ``--sizes`` repeats the cold run of the first model on other sizes
    to show how the peak grows with the number of images
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

GB = 2**30


def run(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (bytes, ``wait4``'s ru_maxrss) and stdout of one child process; a failure stops here."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen does not wait again
        out.seek(0), err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err.read()[-3000:]}")
        return wall, usage.ru_maxrss * 1024, out.read()


def child(mode: str, *args: str) -> tuple[float, float, dict]:
    wall, rss, out = run([sys.executable, __file__, "--child", mode, *args])
    return wall, rss, json.loads(out.strip().splitlines()[-1])


def shapes(data: str) -> dict:
    """Queries, subset galleries and noise rows of the data, and its distinct images (by content hash)."""
    from lookbench.engine import BenchmarkImages, load_benchmark

    bench = load_benchmark(data)
    images = BenchmarkImages.of(bench)
    images.hash()
    distinct = {h for s in images.sources() for h in s.hashes}
    return {"queries": {n: len(s["query"]) for n, s in bench.subsets.items()},
            "galleries": {n: len(s["gallery"]) for n, s in bench.subsets.items()},
            "noise": len(bench.noise), "distinct": len(distinct)}


# ------------------------------------------------------------------------------------------------ child processes


def child_pipeline(model: str, data: str) -> dict:
    """The decode + preprocess + forward limit: the engine's schedule on a CPU without anything around it."""
    import io
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.compute as pc
    from PIL import Image

    from lookbench.encoders.base import as_batch
    from lookbench.encoders.registry import load_encoder
    from lookbench.engine import BenchmarkImages, Schedule, load_benchmark, reuse_freed_memory

    images = BenchmarkImages.of(load_benchmark(data))
    images.hash()
    blobs, seen = [], set()
    for source in images.sources():
        column = pc.struct_field(source.column.combine_chunks(), "bytes").to_pylist()
        for h, blob in zip(source.hashes, column):
            if h not in seen:
                seen.add(h)
                blobs.append(blob)
    encoder = load_encoder(model)
    schedule = Schedule.for_device(getattr(encoder, "device", "cpu"), forward_uses_all_cores=encoder.forward_uses_all_cores)

    def prepare(blob):
        with Image.open(io.BytesIO(blob)) as image:
            image.load()
            return encoder.preprocess(image)

    bs = schedule.batch_size
    window = 2 * schedule.workers * bs  # the engine's decode window on a CPU
    encoder.encode_batch(as_batch([prepare(b) for b in blobs[:bs]]))  # weights loaded before timing
    decode_s = forward_s = 0.0
    with reuse_freed_memory(), ThreadPoolExecutor(schedule.workers) as pool:
        for start in range(0, len(blobs), window):
            t0 = time.perf_counter()
            arrays = list(pool.map(prepare, blobs[start:start + window]))
            t1 = time.perf_counter()
            for i in range(0, len(arrays), bs):
                encoder.encode_batch(as_batch(arrays[i:i + bs]))
            forward_s += time.perf_counter() - t1
            decode_s += t1 - t0
    return {"images": len(blobs), "decode_s": decode_s, "forward_s": forward_s, "seconds": decode_s + forward_s,
            "workers": schedule.workers, "batch_size": bs}


def child_search(shape_json: str, dim: str) -> dict:
    """Exact search on random unit vectors of the benchmark's shapes, with a plain faiss IndexFlatIP."""
    import faiss
    import numpy as np

    from lookbench.metric.fine_recall.fine_recall import DEFAULT_K

    s, d = json.loads(shape_json), int(dim)
    rng = np.random.default_rng(0)

    def unit(n):
        x = rng.standard_normal((n, d), dtype=np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    queries = {n: unit(q) for n, q in s["queries"].items()}
    galleries = {n: unit(g) for n, g in s["galleries"].items()}
    noise = unit(s["noise"])
    depth = max(DEFAULT_K)
    t0 = time.perf_counter()
    index = faiss.IndexFlatIP(d)
    index.add(noise)
    index.search(np.concatenate(list(queries.values())), depth)
    for n, q in queries.items():
        index = faiss.IndexFlatIP(d)
        index.add(galleries[n])
        index.search(q, min(depth, len(galleries[n])))
    return {"seconds": time.perf_counter() - t0}


def child_startup(model: str) -> dict:
    """What an evaluation imports, and the model with its weights."""
    t0 = time.perf_counter()
    import faiss  # noqa: F401

    import lookbench.commands.evaluate  # noqa: F401
    import lookbench.engine  # noqa: F401
    from lookbench.encoders.registry import load_encoder

    encoder = load_encoder(model)
    getattr(encoder, "module", None)
    return {"seconds": time.perf_counter() - t0}


# ------------------------------------------------------------------------------------------------ the benchmark


def evaluate(model: str, data: str, cache: str) -> tuple[float, float, dict]:
    """One ``lookbench evaluate`` process (results store of its own, so nothing is reused): wall, peak RSS, result."""
    with tempfile.TemporaryDirectory() as store:
        wall, rss, _ = run([sys.executable, "-m", "lookbench", "evaluate", "--model", model, "--data", data, "--quiet",
                            "--cache-dir", cache, "--results", store])
        (path,) = [p for p in Path(store).rglob("*.json")]
        return wall, rss, json.loads(path.read_text())


def build_published() -> str:
    from lookbench.dataset_builder import build_release
    from lookbench.paths import bench_dir

    out = bench_dir() / "mini-scale9-noise13"
    if not (out / "README.md").is_file():
        build_release("mini", out, scale=9, noise_scale=13)
    return str(out)


def fmt_stages(t: dict) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in t.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="a built published-layout folder to reuse (default: build it once)")
    parser.add_argument("--models", nargs="+", default=["raw-pixels", "gr-lite-mini"])
    parser.add_argument("--sizes", nargs="*", default=[], help="more data folders for the first model's cold peak RSS")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, *rest = args.child
        print(json.dumps({"pipeline": child_pipeline, "search": child_search, "startup": child_startup}[mode](*rest)))
        return

    from lookbench.encoders.entries import REGISTRY

    data = args.data or build_published()
    shape = shapes(data)  # also prepares the datasets Arrow cache every process below reads
    print(f"data: {data}: {sum(shape['queries'].values())} queries, {sum(shape['galleries'].values())} subset gallery "
          f"rows, {shape['noise']} noise rows, {shape['distinct']} distinct images; {os.cpu_count()} cores; "
          f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    targets = {"raw-pixels": 1.25, "gr-lite-mini": 1.10}
    colds = {}
    for model in args.models:
        dim = REGISTRY[model].embed_dim
        matrix = shape["distinct"] * dim * 4
        _, rss_pipe, pipe = child("pipeline", model, data)
        _, rss_search, search = child("search", json.dumps(shape), str(dim))
        _, _, startup = child("startup", model)
        with tempfile.TemporaryDirectory() as cache:
            cold_wall, cold_rss, cold = evaluate(model, data, cache)
            warm_wall, warm_rss, warm = evaluate(model, data, cache)
        colds[model] = cold_wall, cold_rss
        ct, wt = cold["provenance"]["timings_s"], warm["provenance"]["timings_s"]
        limit = pipe["seconds"] + search["seconds"] + startup["seconds"]
        print(f"\n{model} ({dim}-d; embedding matrix {matrix / GB:.2f} GB; {pipe['workers']} decode threads, batch {pipe['batch_size']})")
        print(f"  pipeline limit   {pipe['seconds']:.1f} s (decode + preprocess {pipe['decode_s']:.1f} s, forward "
              f"{pipe['forward_s']:.1f} s; {pipe['images'] / pipe['seconds']:.0f} img/s), peak RSS {rss_pipe / GB:.2f} GB")
        print(f"  exact search     {search['seconds']:.1f} s, peak RSS {rss_search / GB:.2f} GB")
        print(f"  start-up         {startup['seconds']:.1f} s")
        print(f"  cold evaluate    {cold_wall:.1f} s wall (stages: {fmt_stages(ct)}), peak RSS {cold_rss / GB:.2f} GB; "
              f"{cold['provenance']['counts']['forward_images']} forward passes")
        print(f"  warm evaluate    {warm_wall:.1f} s wall (stages: {fmt_stages(wt)}), peak RSS {warm_rss / GB:.2f} GB; "
              f"{warm['provenance']['counts']['forward_images']} forward passes")
        print(f"  P8 encode / pipeline             = {ct['encode']:.1f} / {pipe['seconds']:.1f} = "
              f"{ct['encode'] / pipe['seconds']:.3f}   (target <= {targets.get(model, 1.25):.2f})")
        print(f"  P8 cold / (pipeline + search + start-up) = {cold_wall:.1f} / {limit:.1f} = {cold_wall / limit:.3f}   (target <= 1.30)")
        print(f"  P9 cold peak RSS - matrix        = {cold_rss / GB:.2f} - {matrix / GB:.2f} = {(cold_rss - matrix) / GB:.2f} GB   "
              f"(target <= 1.50); warm {(warm_rss - matrix) / GB:.2f} GB")
    if args.sizes:
        model = args.models[0]
        dim = REGISTRY[model].embed_dim
        print(f"\nP9 growth, {model} cold evaluate:")
        for folder in [*args.sizes, data]:
            if folder == data:  # the cold run above
                n, (wall, rss) = shape["distinct"], colds[model]
            else:
                n = shapes(folder)["distinct"]
                with tempfile.TemporaryDirectory() as cache:
                    wall, rss, _ = evaluate(model, folder, cache)
            print(f"  {n:6d} distinct images: matrix {n * dim * 4 / GB:.2f} GB, peak RSS {rss / GB:.2f} GB, "
                  f"peak - matrix {(rss - n * dim * 4) / GB:.2f} GB ({wall:.1f} s)")


if __name__ == "__main__":
    main()
