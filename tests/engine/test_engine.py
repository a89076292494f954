"""The evaluation engine, CLI and Python API on tiny offline folders (raw pixels / a counting encoder object)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lookbench
from lookbench.cli import main
from lookbench.encoders.base import EncoderError
from lookbench.engine import EvaluationError, remove_self_matches, reuse_freed_memory

from tests.helpers.engine_data import CountingEncoder, png, record, tiny_release, write_folder

REPO = Path(__file__).resolve().parents[2]
UNIQUE_IMAGES = 19  # 11 + 6 subset images + 4 noise, minus the two byte copies of RealStudioFlat query 0


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("tiny") / "lookbench")


def scores(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "provenance"}


def test_cli_end_to_end(data, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["evaluate", "--data", str(data), "--model", "raw-pixels", "--output", str(out),
                 "--cache-dir", str(tmp_path / "cache"), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "RealStudioFlat" in printed and "AIGen-Studio" in printed and "overall" in printed
    assert "2 self-match(es) removed" in " ".join(printed.split())  # the footer wraps at the terminal's width
    result = json.loads((out / "results.json").read_text())
    assert set(result) == {"RealStudioFlat", "AIGen-Studio", "overall", "provenance"}
    flat = result["RealStudioFlat"]
    assert flat["fine_recall"] == {"@1": 100.0, "@5": 100.0, "@10": 100.0, "@20": 100.0}
    assert set(flat["coarse_recall"]) == {"@1", "@5", "@10", "@20"} and "@5" in flat["ndcg"]
    assert flat["num_queries"] == 4 and flat["self_matches_removed"] == 2 and flat["gallery_size"] == 7 + 4
    assert result["overall"]["num_queries"] == 7
    prov = result["provenance"]
    assert prov["lookbench_version"] == lookbench.__version__
    assert prov["dataset"]["releases"] == ["v20250101"] and prov["dataset"]["revision"].startswith("local-")
    assert prov["model"]["name"] == "raw-pixels" and prov["model"]["embedding_dim"] == 3072
    assert prov["counts"]["unique_images"] == UNIQUE_IMAGES and prov["counts"]["rows"] == 11 + 6 + 4
    assert prov["search"].startswith("exact") and prov["mode"] == "strict"
    # every score has its interval, per subset and overall, from each query's stored outcome
    assert prov["intervals"]["resamples"] == 1000 and prov["intervals"]["seed"] == 0 and "outfit_id" in prov["intervals"]["method"]
    for block in (flat, result["AIGen-Studio"], result["overall"]):
        for metric in ("fine_recall", "coarse_recall", "ndcg", "map", "mrr"):
            assert set(block["ci95"][metric]) == {"@1", "@5", "@10", "@20"}
            for at, (lo, hi) in block["ci95"][metric].items():
                assert lo <= block[metric][at] <= hi, (metric, at)
    assert flat["ci95"]["fine_recall"]["@1"] == [100.0, 100.0]  # every query is a hit: no spread
    per_query = flat["per_query"]
    assert per_query["first_fine_rank"] == [1, 1, 1, 1] and len(per_query["item_id"]) == 4
    assert per_query["release"] == ["v20250101"] * 4 and set(per_query["ndcg"]) == {"@1", "@5", "@10", "@20"}
    assert np.mean(per_query["ndcg"]["@5"]) * 100 == pytest.approx(flat["ndcg"]["@5"], abs=1e-4)
    table = printed[: printed.index("saved in the results store")] if "saved in" in printed else printed
    assert "100.0 ±0.0" in table
    for name in ("fine_vs_coarse_r1.png", "per_category_fine_r1.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_table_is_never_wider_than_asked(data, tmp_path):
    result = lookbench.evaluate("raw-pixels", data=data, cache_dir=tmp_path, quiet=True)
    for width in (60, 80, 120):
        lines = result.table(width).splitlines()
        assert max(map(len, lines)) <= width and any("±" in line for line in lines)
    assert len(result.table(120).splitlines()[2]) > len(result.table(60).splitlines()[2])  # more columns when wider


def test_cutoff_keeps_only_later_queries(data, tmp_path):
    result = lookbench.evaluate("raw-pixels", data=data, cutoff="2025-01-02", cache_dir=tmp_path, quiet=True).to_dict()
    counts = result["provenance"]["dataset"]["counts"]
    # RealStudioFlat queries are stamped on Jan 1..4, AIGen-Studio on Jan 5..7: strictly after Jan 2 leaves 2 + 3.
    assert counts["RealStudioFlat"] == {"queries_total": 4, "queries": 2, "gallery": 7, "queries_after_model_cutoff": None}
    assert counts["AIGen-Studio"]["queries"] == 3
    assert result["RealStudioFlat"]["num_queries"] == 2 and result["overall"]["num_queries"] == 5
    assert result["provenance"]["cutoff"] == "2025-01-02"


def test_custom_encoder_cached_rerun_and_distractors_encoded_once(data, tmp_path):
    seen = []

    class Recording(CountingEncoder):
        def encode(self, images):
            seen.extend(im.tobytes() for im in images)
            return super().encode(images)

    first = Recording()
    cold = lookbench.evaluate(first, data=data, cache_dir=tmp_path, quiet=True, batch_size=4)
    assert first.images == UNIQUE_IMAGES == len(set(seen))  # noise shared by both subsets, copies, all once
    assert cold.to_dict()["overall"]["fine_recall"]["@1"] == 100.0
    assert cold.provenance["model"]["name"] == "counting-colour"

    second = CountingEncoder()
    warm = lookbench.evaluate(second, data=data, cache_dir=tmp_path, quiet=True, batch_size=4)
    assert second.calls == 0 and warm.provenance["counts"]["forward_images"] == 0
    assert warm.provenance["counts"]["cache_hits"] == UNIQUE_IMAGES
    assert scores(warm.to_dict()) == scores(cold.to_dict())


def test_object_without_revision_is_not_cached(data, tmp_path):
    class Anonymous(CountingEncoder):
        revision = None

    for _ in range(2):
        enc = Anonymous()
        lookbench.evaluate(enc, data=data, cache_dir=tmp_path, quiet=True)
        assert enc.images == UNIQUE_IMAGES
    assert not any(tmp_path.rglob("*.emb"))


@pytest.mark.slow
def test_killed_run_resumes_with_only_missing_images(data, tmp_path):
    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "import lookbench\nfrom tests.helpers.engine_data import CountingEncoder\n"
        "lookbench.evaluate(CountingEncoder(fail_after=2), data=%r, cache_dir=%r, batch_size=4, quiet=True, workers=1)\n"
    ) % (str(Path(__file__).resolve().parents[2]), str(data), str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", script], env=dict(os.environ), capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr  # SIGKILLed in the third forward pass
    resumed = CountingEncoder()
    result = lookbench.evaluate(resumed, data=data, cache_dir=tmp_path, batch_size=4, quiet=True)
    assert resumed.images == UNIQUE_IMAGES - 2 * 4
    assert result.provenance["counts"]["cache_hits"] == 8
    assert result.to_dict()["overall"]["fine_recall"]["@1"] == 100.0


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupted_cache_is_detected_and_recomputed(data, tmp_path, damage):
    reference = lookbench.evaluate(CountingEncoder(), data=data, cache_dir=tmp_path, quiet=True).to_dict()
    (shard,) = list(tmp_path.rglob("*.emb"))  # one file after compaction
    raw = bytearray(shard.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) - 10]
    else:
        raw[-3] ^= 0xFF
    shard.write_bytes(bytes(raw))
    again = CountingEncoder()
    with pytest.warns(UserWarning, match="corrupted"):
        result = lookbench.evaluate(again, data=data, cache_dir=tmp_path, quiet=True)
    assert again.images == UNIQUE_IMAGES
    assert result.provenance["counts"]["corrupt_cache_files"] == [shard.name]
    assert scores(result.to_dict()) == scores(reference)


@pytest.mark.parametrize("damage", ["truncate", "flip-middle", "garbage-between"])
def test_a_damaged_cache_record_costs_only_its_own_images(data, tmp_path, monkeypatch, damage):
    from lookbench.engine import embedding_cache

    monkeypatch.setattr(embedding_cache, "RECORD_ROWS", 4)  # 19 entries -> records of 4, 4, 4, 4, 3
    reference = lookbench.evaluate(CountingEncoder(), data=data, cache_dir=tmp_path, quiet=True).to_dict()
    (shard,) = list(tmp_path.rglob("*.emb"))
    raw = bytearray(shard.read_bytes())
    starts = [i for i in range(len(raw)) if raw.startswith(embedding_cache.MAGIC, i)]
    assert len(starts) == 5
    if damage == "truncate":  # a torn last record: its 3 images
        raw, lost = raw[: len(raw) - 10], 3
    elif damage == "flip-middle":  # one flipped byte in the payload of the second record: its 4 images
        raw[starts[2] - 5] ^= 0xFF
        lost = 4
    else:  # bytes that belong to no record, between the second and third: nothing lost
        raw[starts[2]:starts[2]] = b"stray bytes"
        lost = 0
    shard.write_bytes(bytes(raw))
    again = CountingEncoder()
    with pytest.warns(UserWarning, match="corrupted"):
        result = lookbench.evaluate(again, data=data, cache_dir=tmp_path, quiet=True)
    assert again.images == lost
    assert result.provenance["counts"]["cache_hits"] == UNIQUE_IMAGES - lost
    assert scores(result.to_dict()) == scores(reference)
    third = CountingEncoder()  # the damaged file was replaced by a whole one
    lookbench.evaluate(third, data=data, cache_dir=tmp_path, quiet=True)
    assert third.images == 0 and len(list(tmp_path.rglob("*.emb"))) == 1


class WrongShape(CountingEncoder):
    name = "wrong-shape"

    def encode(self, images):
        return super().encode(images)[:-1]


class NaNs(CountingEncoder):
    name = "nan-model"

    def encode(self, images):
        out = super().encode(images)
        out[0, 0] = np.nan
        return out


class ZeroRows(CountingEncoder):
    name = "zero-model"

    def encode(self, images):
        out = super().encode(images)
        out[1] = 0.0
        return out


class NeedsGrad(CountingEncoder):
    name = "grad-model"

    def encode(self, images):
        import torch

        return torch.tensor(super().encode(images), requires_grad=True)


@pytest.mark.parametrize("model, message", [
    (WrongShape(), r"'wrong-shape' returned shape \(3, 48\) for a batch of 4 images"),
    (NaNs(), r"'nan-model' returned NaN/inf embeddings for 1 image\(s\): RealStudioFlat/query row 1 \(item p0\)"),
    (ZeroRows(), r"'zero-model' returned all-zero embeddings for 1 image\(s\): RealStudioFlat/query row 2 \(item p1\)"),
    (NeedsGrad(), r"'grad-model' returned a tensor that requires grad"),
])
def test_bad_encoder_output_is_rejected(data, tmp_path, model, message):
    with pytest.raises(EncoderError, match=message):
        lookbench.evaluate(model, data=data, cache_dir=tmp_path, quiet=True, batch_size=4)


def test_unreadable_image_stops_or_is_skipped(tmp_path):
    release = tiny_release()
    release["AIGen-Studio"]["gallery"][1] = dict(release["AIGen-Studio"]["gallery"][1], image={"bytes": b"not an image", "path": None})
    folder = write_folder(tmp_path / "bad", release)
    with pytest.raises(EvaluationError, match=r"Unreadable image at AIGen-Studio/gallery row 2 \(item s1\)"):
        lookbench.evaluate("raw-pixels", data=folder, cache_dir=tmp_path / "c", quiet=True)
    result = lookbench.evaluate("raw-pixels", data=folder, cache_dir=tmp_path / "c", quiet=True, skip_invalid=True)
    skipped = result.provenance["counts"]["invalid_images_skipped"]
    assert len(skipped) == 1 and skipped[0].startswith("AIGen-Studio/gallery row 2 (item s1)")
    assert result.subsets["AIGen-Studio"]["gallery_size"] == 2 + 4
    assert result.subsets["AIGen-Studio"]["fine_recall@1"] == pytest.approx(200 / 3)  # query s1 lost its match


def test_empty_gallery_is_an_error(tmp_path):
    release = tiny_release()
    for row in release["AIGen-Studio"]["gallery"]:
        row["image"] = {"bytes": b"broken", "path": None}
    folder = write_folder(tmp_path / "empty", release)
    with pytest.raises(EvaluationError, match="AIGen-Studio: the gallery is empty"):
        lookbench.evaluate("raw-pixels", data=folder, distractors=False, skip_invalid=True, cache_dir=tmp_path, quiet=True)


def test_hnsw_is_labelled_approximate_and_no_distractors(data, tmp_path):
    result = lookbench.evaluate("raw-pixels", data=data, distractors=False, index="hnsw", cache_dir=tmp_path, quiet=True)
    assert result.provenance["search"].startswith("approximate") and "approximate" in result.table()
    assert result.provenance["distractors"] is False and result.subsets["RealStudioFlat"]["gallery_size"] == 7
    assert result.subsets["RealStudioFlat"]["self_matches_removed"] == 1  # the noise copy is gone


PAGE_FAULTS_SCRIPT = """
import json, resource, numpy as np
from lookbench.engine import reuse_freed_memory

def faults(n=20, nbytes=3 * 2**19):  # 1.5 MB: above glibc's mmap threshold, below a transparent huge page
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        buffer = np.ones(nbytes // 8)  # every page written, like an activation tensor
        del buffer
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

with reuse_freed_memory():
    inside = faults()
print(json.dumps({"inside": inside, "after": faults()}))
"""


@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc", reason="mallopt tuning is glibc-only")
def test_encoding_reuses_freed_memory_and_restores_the_allocator():
    # A fresh process: how glibc serves a buffer depends on everything the process allocated before.
    proc = subprocess.run([sys.executable, "-c", PAGE_FAULTS_SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    faults = json.loads(proc.stdout.strip().splitlines()[-1])
    pages = 3 * 2**19 // os.sysconf("SC_PAGE_SIZE")
    assert faults["inside"] <= 2 * pages  # the first buffer grows the heap once; the other 19 reuse it
    assert faults["after"] >= 10 * pages  # glibc's fixed defaults are back: each buffer is mapped and faulted in anew


@pytest.mark.parametrize("model", ["raw-pixels", "gr-lite-mini"])
def test_overlapped_and_alternating_decoding_give_the_same_embeddings(data, model):
    """The accelerator schedule (decode pool beside the forward passes, batches handed over by ``host_batch``)
    run on this CPU gives bit-identical embeddings to the CPU schedule, for a numpy and a torch model."""
    from lookbench.encoders.registry import load_encoder
    from lookbench.engine import BenchmarkImages, encode_images, load_benchmark

    images = BenchmarkImages.of(load_benchmark(data))
    images.hash()
    runs = {overlap: encode_images(load_encoder(model), images.sources(), batch_size=3, workers=2, use_cache=False,
                                   overlap=overlap) for overlap in (True, False)}
    overlapped, alternating = runs[True], runs[False]
    assert overlapped.ids == alternating.ids
    assert overlapped.stats.forward_images == alternating.stats.forward_images == UNIQUE_IMAGES
    assert overlapped.valid.all() and np.abs(overlapped.matrix).sum(axis=1).min() > 0
    np.testing.assert_array_equal(overlapped.matrix, alternating.matrix)


def test_a_torch_model_takes_a_handed_over_tensor_batch_like_an_array():
    """What ``host_batch`` hands over on CUDA (a pinned tensor) reaches the same forward pass as the stacked array."""
    import torch

    from lookbench.encoders.registry import load_encoder

    encoder = load_encoder("gr-lite-mini")
    rng = np.random.default_rng(0)
    batch = np.stack([encoder.preprocess(png_image(rng)) for _ in range(3)])
    assert encoder.host_batch(batch) is batch  # on a CPU: handed over as it is
    np.testing.assert_array_equal(encoder.encode_batch(torch.from_numpy(batch.copy())), encoder.encode_batch(batch))


def png_image(rng):
    from PIL import Image

    return Image.fromarray(rng.integers(0, 256, (40, 30, 3), dtype=np.uint8))


def test_schedule_defaults_come_from_the_device():
    from lookbench.engine import Schedule

    cores = len(os.sched_getaffinity(0))
    cpu, gpu = Schedule.for_device("cpu"), Schedule.for_device("cuda:0")
    assert (cpu.workers, cpu.batch_size, cpu.overlap) == (cores, 32, False)
    assert (gpu.workers, gpu.batch_size, gpu.overlap) == (cores, 128, True)
    assert Schedule.for_device("cpu", forward_uses_all_cores=False).overlap is True  # a one-thread forward pass
    assert Schedule.for_device("cuda", world=cores * 2).workers == 1  # never fewer than one decode thread
    given = Schedule.for_device("cuda", workers=3, batch_size=7, overlap=False)
    assert (given.workers, given.batch_size, given.overlap) == (3, 7, False)


def test_stage_timings_are_recorded(data, tmp_path):
    from lookbench.engine.timings import STAGES

    prov = lookbench.evaluate("raw-pixels", data=data, cache_dir=tmp_path, quiet=True).provenance
    timings = prov["timings_s"]
    assert list(timings) == list(STAGES) == ["load", "hash", "encode", "search", "score"]
    assert all(isinstance(t, float) and t >= 0 for t in timings.values())
    assert timings["encode"] > 0 and sum(timings.values()) <= prov["wall_time_s"] + 0.005  # rounding of each


def test_exact_search_in_gallery_blocks_equals_a_flat_index(monkeypatch):
    import importlib

    import faiss

    search_module = importlib.import_module("lookbench.engine.search")  # the package exports the function by that name
    rng = np.random.default_rng(1)
    matrix = rng.standard_normal((500, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    rows, queries = rng.permutation(500)[:300], matrix[:40]
    monkeypatch.setattr(search_module, "GALLERY_BLOCK_BYTES", 64 * 16 * 4)  # blocks of 64 rows: 5 blocks
    hits = search_module.search(matrix, rows, queries, 25, "flat")
    index = faiss.IndexFlatIP(16)
    index.add(matrix[rows])
    scores, ids = index.search(queries, 25)
    np.testing.assert_array_equal(hits.ids, ids)
    np.testing.assert_allclose(hits.scores, scores, rtol=1e-6)
    assert search_module.search(matrix, rows[:10], queries, 25, "flat").ids.shape == (40, 10)  # a smaller gallery


def test_compacting_the_cache_keeps_entries_of_other_images(tmp_path):
    from lookbench.engine.embedding_cache import EmbeddingCache

    rng = np.random.default_rng(2)
    other = [bytes([i]) * 16 for i in range(5)]  # another dataset's images, cached earlier
    first = EmbeddingCache(tmp_path, "m", "p", "fp32")
    first.write(other, rng.standard_normal((5, 4)).astype(np.float32))
    first.close()
    ours = [bytes([100 + i]) * 16 for i in range(3)]
    matrix = rng.standard_normal((3, 4)).astype(np.float32)
    cache = EmbeddingCache(tmp_path, "m", "p", "fp32")
    before = {h: v.copy() for block, vectors in cache.records() for h, v in zip(block, vectors)}
    cache.write(ours[:2], matrix[:2])  # this run's log: a second file, so the end of the run compacts
    cache.compact(ours, matrix, np.array([True, True, False]))
    (merged,) = tmp_path.rglob("*.emb")
    after = {h: v for block, vectors in EmbeddingCache(tmp_path, "m", "p", "fp32").records() for h, v in zip(block, vectors)}
    assert set(after) == set(other) | set(ours[:2])  # the invalid third row is not cached
    for h in other:
        np.testing.assert_array_equal(after[h], before[h])
    np.testing.assert_array_equal(after[ours[1]], matrix[1])


def test_remove_self_matches_keeps_rank_order():
    ids = np.array([[3, 0, 2, 1, -1], [1, 2, 3, 0, 4]])
    gallery_uid = np.array([10, 11, 12, 10, 13])
    ranking = remove_self_matches(ids, np.array([10, 99]), gallery_uid, 3)
    assert ranking.ids.tolist() == [[2, 1, -1], [1, 2, 3]] and ranking.self_matches_removed == 2


def test_cli_errors_are_one_line(data, tmp_path):
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "lookbench", "evaluate", "--data", str(data), "--model", "raw-pixel",
                           "--quiet"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "Did you mean 'raw-pixels'" in proc.stderr


@pytest.mark.slow
def test_two_accelerate_processes_match_one(data, tmp_path, accelerate_two_cpu_processes):
    single = lookbench.evaluate("raw-pixels", data=data, cache_dir=tmp_path / "c1", quiet=True, batch_size=4).to_dict()
    env = dict(os.environ, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")
    cmd = accelerate_two_cpu_processes + ["-m", "lookbench", "evaluate", "--data", str(data), "--model", "raw-pixels", "--batch-size", "4",
           "--cache-dir", str(tmp_path / "c2"), "--output", str(tmp_path / "out"), "--results", str(tmp_path / "store"), "--quiet"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("overall") == 1  # only the main process prints
    multi = json.loads((tmp_path / "out" / "results.json").read_text())
    assert multi["provenance"]["processes"] == 2
    # 5 batches of up to 4 images dealt round-robin: batches 0, 2, 4 (4 + 4 + 3 images) to rank 0, 1 and 3 to rank 1
    assert multi["provenance"]["counts"]["forward_images_per_process"] == [11, 8]
    assert scores(multi) == scores(single)
