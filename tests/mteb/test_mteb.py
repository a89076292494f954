"""LookBench inside mteb (lookbench.mteb): the task, the model wrapper, the export, and mteb's evaluator agreeing
with the engine. Offline: mteb runs the custom task on local folders, its result cache points into tmp_path."""
import io
import json
import os
import types
from pathlib import Path

import datasets
import numpy as np
import pytest
import torch.utils.data
from PIL import Image

import mteb

import lookbench
from lookbench.cli import main
from lookbench.encoders.base import to_rgb
from lookbench.encoders.registry import load_encoder
from lookbench.mteb import as_mteb_model, export_result, lookbench_tasks, task_name, to_task_result
from lookbench.metric.fine_recall.judging import DEFAULT_K
from lookbench.schema import TEST_SUBSETS
from tests.helpers.engine_data import CountingEncoder, graded_release, png, tiny_release, write_folder


def run_mteb(model, tasks, cache=None):
    return mteb.evaluate(model, tasks, cache=cache, show_progress_bar=False).task_results[0]


def by_subset(task_result) -> dict:
    return {s["hf_subset"]: s for s in task_result.scores["test"]}


def binary_ndcg(fine: np.ndarray, relevant: int, k: int) -> float:
    """trec_eval's nDCG@k with relevance 1 for a fine hit: DCG of the ranking over the DCG of `relevant` hits first."""
    discount = 1 / np.log2(np.arange(2, k + 2))
    ideal = discount[:min(k, relevant)].sum()
    return float((fine[:k] * discount[:len(fine[:k])]).sum() / ideal) if ideal else 0.0


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    """LookBench-Mini through both evaluators: `lookbench.evaluate` (with its rankings) and `mteb.evaluate`."""
    store = tmp_path_factory.mktemp("store")
    ours = lookbench.evaluate("raw-pixels", quiet=True, results_dir=store, save_predictions=True)
    tasks = lookbench_tasks()
    model = as_mteb_model("raw-pixels")
    theirs = run_mteb(model, tasks)
    return {"ours": ours, "tasks": tasks, "theirs": theirs, "model": model}


@pytest.mark.slow
def test_mteb_hit_rates_are_lookbench_strict_fine_recall_on_mini(mini):
    ours, theirs = mini["ours"], by_subset(mini["theirs"])
    assert sorted(theirs) == sorted(TEST_SUBSETS)
    for subset, scores in ours.subsets.items():
        for k in (1, 5, 10, 20):
            assert 100 * theirs[subset][f"hit_rate_at_{k}"] == pytest.approx(scores[f"fine_recall@{k}"], abs=1e-3), (subset, k)
            # MRR cut at K and MAP@K (trec's map_cut normalisation) are mteb's own definitions
            assert 100 * theirs[subset][f"mrr_at_{k}"] == pytest.approx(scores[f"mrr@{k}"], abs=1e-3), (subset, k)
            assert 100 * theirs[subset][f"map_at_{k}"] == pytest.approx(scores[f"map@{k}"], abs=1e-3), (subset, k)
        assert theirs[subset]["main_score"] == theirs[subset]["hit_rate_at_1"]


@pytest.mark.slow
def test_mteb_ndcg_is_the_binary_ndcg_of_fine_hits_not_lookbenchs_graded_one(mini):
    """The qrels hold only fine hits (relevance 1), so mteb's nDCG@K is binary: over the engine's own ranking (the saved
    predictions, judged by the metric), DCG of its fine hits over the DCG of min(K, fine hits in the corpus) hits
    first. LookBench's nDCG@K also credits same-category items by the share of query attributes they carry, so it
    is higher wherever near misses rank high, and the two differ on every subset."""
    ours, theirs, task = mini["ours"], by_subset(mini["theirs"]), mini["tasks"][0]
    task.load_data()
    for subset, ranking in ours.rankings.items():
        qrels = task.dataset[subset]["test"]["relevant_docs"]
        relevant = [sum(1 for v in qrels[f"query-{q:05d}"].values() if v > 0) for q in range(len(qrels))]
        fine = np.array(ranking["fine_hit"]).reshape(len(relevant), max(DEFAULT_K))
        for k in (1, 5, 10, 20):
            expected = np.mean([binary_ndcg(fine[q].astype(float), relevant[q], k) for q in range(len(relevant))])
            assert theirs[subset][f"ndcg_at_{k}"] == pytest.approx(expected, abs=1e-5), (subset, k)
        assert abs(100 * theirs[subset]["ndcg_at_5"] - ours.subsets[subset]["ndcg@5"]) > 1.0, subset


@pytest.mark.slow
def test_task_metadata_describes_the_data(mini):
    task = mini["tasks"][0]
    meta, provenance = task.metadata, mini["ours"].provenance["dataset"]
    assert meta.name == task_name("strict", provenance["revision"]) and meta.revision == provenance["revision"]
    assert meta.type == "Any2AnyRetrieval" and meta.category == "i2i" and meta.modalities == ["image"]
    assert meta.main_score == "hit_rate_at_1" and meta.hf_subsets == list(TEST_SUBSETS)
    assert meta.reference == "https://arxiv.org/abs/2601.14706" and meta.license == "apache-2.0"
    assert "gao2026lookbench" in meta.bibtex_citation
    folder = Path(meta.dataset["path"])
    stamps = [ts for config in (*TEST_SUBSETS, "noise") for split in datasets.load_dataset(str(folder), config).values()
              for ts in split["timestamp"]]
    assert meta.date == (min(stamps).date().isoformat(), max(stamps).date().isoformat())
    task.load_data()
    noise = provenance["noise_gallery"]
    for subset, counts in provenance["counts"].items():
        split = task.dataset[subset]["test"]
        assert len(split["queries"]) == counts["queries"] and len(split["corpus"]) == counts["gallery"] + noise
        assert split["corpus"]["id"][counts["gallery"]] == "noise-00000"


@pytest.mark.slow
def test_the_shared_noise_gallery_is_encoded_once_for_all_subsets(tmp_path):
    folder = write_folder(tmp_path / "data", graded_release())
    counter = CountingEncoder()
    model = as_mteb_model(counter, use_cache=False)
    run_mteb(model, lookbench_tasks(folder))
    release = graded_release()
    distinct = {row["image"]["bytes"] for splits in release.values() for rows in splits.values() for row in rows}
    assert counter.images == len(distinct) == model.forward_images  # 2 subsets, yet every noise image once


def engine_and_mteb(folder, **kwargs):
    ours = lookbench.evaluate("raw-pixels", data=folder, quiet=True, use_cache=False, **kwargs)
    tasks = lookbench_tasks(folder, **kwargs)
    return ours, tasks, by_subset(run_mteb(as_mteb_model("raw-pixels", use_cache=False), tasks))


def assert_hit_rates_equal(ours, theirs):
    for subset, scores in ours.subsets.items():
        for k in (1, 5, 10, 20):
            assert 100 * theirs[subset][f"hit_rate_at_{k}"] == pytest.approx(scores[f"fine_recall@{k}"], abs=1e-3), (subset, k)


@pytest.mark.slow
def test_an_image_identical_to_its_query_is_dropped_as_the_engine_drops_it(tmp_path):
    """tiny_release: RealStudioFlat query 0 is also in its gallery (row 7) and in the noise (row 4). Both copies carry
    the query's id, are not judged, and mteb's ignore_identical_ids drops them, as the engine drops them."""
    ours, tasks, theirs = engine_and_mteb(write_folder(tmp_path / "tiny", tiny_release()))
    assert ours.subsets["RealStudioFlat"]["self_matches_removed"] == 2
    assert_hit_rates_equal(ours, theirs)
    task = tasks[0]
    task.load_data()
    split = task.dataset["RealStudioFlat"]["test"]
    assert [i for i, cid in enumerate(split["corpus"]["id"]) if cid == "query-00000"] == [6, 7 + 3]
    assert "query-00000" not in split["relevant_docs"]["query-00000"]
    kept = type(task)(task._splits)  # the same task, but mteb keeps identical ids: the copy takes rank 1
    kept.ignore_identical_ids = False
    with_copy = by_subset(run_mteb(as_mteb_model("raw-pixels", use_cache=False), [kept]))
    assert with_copy["RealStudioFlat"]["hit_rate_at_1"] < theirs["RealStudioFlat"]["hit_rate_at_1"]
    # graded_release: a query's copy in the shared noise gallery only
    ours, _, theirs = engine_and_mteb(write_folder(tmp_path / "graded", graded_release()))
    assert ours.subsets["AIGen-Studio"]["self_matches_removed"] == 1
    assert_hit_rates_equal(ours, theirs)


def test_two_queries_of_one_image_also_in_the_gallery_are_refused_by_name(tmp_path):
    release = tiny_release()  # RealStudioFlat query 0 is also in the gallery and the noise
    release["RealStudioFlat"]["query"].append(dict(release["RealStudioFlat"]["query"][0], item_id="p0-again"))
    with pytest.raises(ValueError, match="RealStudioFlat: queries query-00000 and query-00004 are the same image"):
        lookbench_tasks(write_folder(tmp_path / "data", release))


@pytest.mark.slow
def test_a_query_without_any_fine_hit_counts_as_a_miss_not_dropped(tmp_path):
    release = tiny_release()
    release["AIGen-Studio"]["query"][0]["attributes"].append({"name": "fabric", "value": "silk"})  # no item has it
    ours, tasks, theirs = engine_and_mteb(write_folder(tmp_path / "data", release))
    tasks[0].load_data()
    assert set(tasks[0].dataset["AIGen-Studio"]["test"]["relevant_docs"]["query-00000"].values()) == {0}
    assert ours.subsets["AIGen-Studio"]["fine_recall@20"] < 100 and ours.subsets["AIGen-Studio"]["num_queries"] == 3
    assert_hit_rates_equal(ours, theirs)


@pytest.mark.slow
def test_leaderboard_mode_qrels_are_same_category_and_main_attribute(tmp_path):
    folder = write_folder(tmp_path / "data", graded_release())
    runs = {mode: engine_and_mteb(folder, mode=mode) for mode in ("strict", "leaderboard")}
    for mode, (ours, tasks, theirs) in runs.items():
        assert tasks[0].metadata.name.startswith(f"LookBench-{mode}-")
        assert_hit_rates_equal(ours, theirs)
    assert runs["strict"][0].subsets != runs["leaderboard"][0].subsets  # the modes judge differently here


@pytest.mark.slow
def test_a_published_snapshot_without_distractors_is_converted_and_named_so(tmp_path):
    from tests.helpers.raw_release import write_upstream

    folder = write_upstream(tmp_path / "look-bench")  # srpone/look-bench layout, converted as --data converts it
    ours, tasks, theirs = engine_and_mteb(folder, distractors=False)
    assert_hit_rates_equal(ours, theirs)
    revision = ours.provenance["dataset"]["revision"]
    assert tasks[0].metadata.name == task_name("strict", revision, distractors=False) == f"LookBench-strict-no-distractors-{revision}"
    assert to_task_result(ours.to_dict()).task_name == tasks[0].metadata.name
    tasks[0].load_data()
    for subset, counts in ours.provenance["dataset"]["counts"].items():
        assert len(tasks[0].dataset[subset]["test"]["corpus"]) == counts["gallery"]


@pytest.mark.slow
def test_mteb_result_cache_never_serves_a_score_of_other_data(tmp_path):
    """mteb finds a cached result by task and model name and, once every subset is there, does not compare dataset
    revisions: the data revision in the task name keeps a changed folder from being answered from the cache."""
    release = graded_release()
    first = write_folder(tmp_path / "a", release)
    release["RealStudioFlat"]["gallery"] = release["RealStudioFlat"]["gallery"][3:]  # the data changes
    second = write_folder(tmp_path / "b", release)
    cache = mteb.ResultCache(cache_path=tmp_path / "mteb-cache")
    model = as_mteb_model("raw-pixels", use_cache=False)
    a = run_mteb(model, lookbench_tasks(first), cache=cache)
    b_tasks = lookbench_tasks(second)
    b = run_mteb(model, b_tasks, cache=cache)
    assert a.dataset_revision != b.dataset_revision == b_tasks[0].metadata.revision and a.task_name != b.task_name
    fresh = run_mteb(model, lookbench_tasks(second))
    assert by_subset(b)["RealStudioFlat"]["hit_rate_at_5"] == by_subset(fresh)["RealStudioFlat"]["hit_rate_at_5"]
    assert sorted(p.name for p in (tmp_path / "mteb-cache").rglob("LookBench-*.json")) == sorted([f"{a.task_name}.json", f"{b.task_name}.json"])


@pytest.mark.slow
def test_descriptive_statistics_are_mtebs_and_stay_out_of_site_packages(tmp_path):
    folder = write_folder(tmp_path / "data", tiny_release())
    task = lookbench_tasks(folder)[0]
    stats = task.calculate_descriptive_statistics()
    path = task.metadata.descriptive_stat_path
    assert path.is_file() and str(path).startswith(os.environ["HF_HOME"]) and "site-packages" not in str(path)
    assert task.metadata.descriptive_stats == stats
    per_subset = stats["test"]["hf_subset_descriptive_stats"]
    assert per_subset["RealStudioFlat"]["num_queries"] == 4 and per_subset["RealStudioFlat"]["num_documents"] == 7 + 4
    assert per_subset["AIGen-Studio"]["num_queries"] == 3 and stats["test"]["num_queries"] == 7
    assert lookbench_tasks(folder, subsets=["aigen_studio"])[0].metadata.hf_subsets == ["AIGen-Studio"]
    with pytest.raises(ValueError, match="mode must be one of"):
        lookbench_tasks(folder, mode="lenient")


def test_model_meta_is_filled_from_the_registry():
    meta = as_mteb_model("efficientnet-lite0").mteb_model_meta
    from lookbench.encoders.entries import REGISTRY

    entry = REGISTRY["efficientnet-lite0"]
    assert meta.name == "lookbench/efficientnet-lite0" and meta.revision == entry.revision
    assert meta.embed_dim == 1280 and meta.license == "apache-2.0" and meta.release_date == "2020-03-01"
    assert meta.n_parameters == entry.n_parameters > 0 and meta.similarity_fn_name.value == "cosine"
    assert meta.modalities == ["image"]
    assert as_mteb_model("raw-pixels").mteb_model_meta.embed_dim == 3072
    folder = Path(REGISTRY["gr-lite-mini"].weights()).parent  # a transformers model folder, unregistered by path
    by_path = as_mteb_model(str(folder))
    assert by_path.mteb_model_meta.name == "local/gr-lite-mini" and by_path.mteb_model_meta.framework == ["PyTorch"]
    assert by_path.mteb_model_meta.revision == by_path.model.fingerprint and by_path.model._module is None  # not loaded
    obj = as_mteb_model(CountingEncoder()).mteb_model_meta
    assert obj.name == "local/counting-colour" and obj.revision == "1" and obj.framework == ["NumPy"]


def test_a_dataloader_of_pil_images_in_any_mode_is_encoded_as_the_engine_encodes_rgb():
    rgb = Image.open(io.BytesIO(png((200, 30, 30), 1)))
    images = [rgb.convert("P"), rgb.convert("RGBA"), rgb.convert("L"), rgb.convert("CMYK"), rgb]
    loader = torch.utils.data.DataLoader([{"image": im} for im in images], batch_size=2,
                                         collate_fn=lambda rows: {"image": [r["image"] for r in rows]})
    model = as_mteb_model("raw-pixels", use_cache=False)
    got = model.encode(loader, task_metadata=types.SimpleNamespace(name="pil"), hf_split="test", hf_subset="x")
    encoder = load_encoder("raw-pixels")
    want = encoder.encode_batch([encoder.preprocess(to_rgb(im)) for im in images])
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert np.allclose(np.linalg.norm(got, axis=1), 1)


@pytest.mark.slow
def test_export_writes_a_task_result_mteb_reads_back(mini, tmp_path, capsys):
    ours, theirs, task = mini["ours"], mini["theirs"], mini["tasks"][0]
    assert main(["export", "mteb", str(ours.stored), "--out", str(tmp_path / "out")]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path == tmp_path / "out" / f"{task.metadata.name}.json"
    loaded = mteb.results.TaskResult.from_disk(path)
    assert loaded.task_name == theirs.task_name and loaded.dataset_revision == theirs.dataset_revision
    exported, evaluated = by_subset(loaded), by_subset(theirs)
    for subset in TEST_SUBSETS:
        for key in ("hit_rate_at_1", "hit_rate_at_5", "hit_rate_at_10", "hit_rate_at_20", "mrr_at_10", "map_at_10",
                    "main_score"):
            assert exported[subset][key] == pytest.approx(evaluated[subset][key], abs=1e-5), (subset, key)
        assert exported[subset]["lookbench_ndcg_at_5"] == pytest.approx(ours.subsets[subset]["ndcg@5"] / 100, abs=1e-6)
        assert exported[subset]["num_queries"] == ours.subsets[subset]["num_queries"]
    # mteb's headline is the unweighted mean of the subsets' main scores; LookBench's overall weights by queries
    counts = [ours.subsets[s]["num_queries"] for s in TEST_SUBSETS]
    r1 = [exported[s]["hit_rate_at_1"] for s in TEST_SUBSETS]
    assert loaded.get_score() == pytest.approx(np.mean(r1))
    assert ours.overall["fine_recall@1"] / 100 == pytest.approx(np.average(r1, weights=counts), abs=1e-5)
    assert abs(loaded.get_score() - np.average(r1, weights=counts)) > 1e-3


def test_export_refuses_a_result_mteb_has_no_task_for(tmp_path):
    result = {"RealStudioFlat": {"fine_recall": {"@1": 50.0}, "num_queries": 2}, "overall": {},
              "provenance": {"mode": "strict", "dataset": {"revision": "local-x"}, "cutoff": "2025-01-01", "distractors": True}}
    with pytest.raises(ValueError, match="cutoff"):
        to_task_result(result)
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["export", "mteb", str(tmp_path / "bad.json"), "--out", str(tmp_path / "out")]) == 2
    with pytest.raises(ValueError, match="not a LookBench result"):
        export_result(tmp_path / "bad.json", tmp_path / "out")


def test_export_never_writes_through_a_symlink_planted_at_its_temporary_name(tmp_path):
    """Issue 37: the old partial file had a predictable name; a symlink planted there was written through."""
    from tests.helpers.results import synthetic

    result = tmp_path / "result.json"
    result.write_text(json.dumps(synthetic(1, {"RealStudioFlat": 8, "AIGen-Studio": 6})))
    name = to_task_result(json.loads(result.read_text())).task_name
    out, outside = tmp_path / "out", tmp_path / "outside.txt"
    out.mkdir()
    outside.write_text("precious")
    (out / f".{name}.json.partial").symlink_to(outside)
    assert main(["export", "mteb", str(result), "--out", str(out)]) == 0
    assert outside.read_text() == "precious"
    exported = mteb.results.TaskResult.from_disk(out / f"{name}.json")
    assert by_subset(exported)["AIGen-Studio"]["num_queries"] == 6
    assert not (out / f"{name}.json").is_symlink()


def test_export_refuses_a_result_whose_outcomes_do_not_give_its_scores(tmp_path):
    """Issue 37: export carried a claimed score its own per-query outcomes contradict into mteb's format."""
    from tests.helpers.results import synthetic

    edited = synthetic(1, {"RealStudioFlat": 8, "AIGen-Studio": 6})
    edited["RealStudioFlat"]["fine_recall"]["@1"] = 99.0
    result = tmp_path / "result.json"
    result.write_text(json.dumps(edited))
    with pytest.raises(ValueError, match=r"result.json: damaged or edited: RealStudioFlat claimed fine_recall@1 99"):
        export_result(result, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# ------------------------------------------------------------------ text to image (issue 39 item 6)

COLOURS = {"red": (200, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 200), "yellow": (220, 220, 40),
           "cyan": (40, 220, 220), "magenta": (220, 40, 220), "grey": (120, 120, 120)}


class ColourReader:
    """Mean colour of an image; the colour its words name, for a text (tests/engine/test_evaluate.py's reader)."""

    name = "colour-reader"
    revision = "1"

    def encode(self, images):
        return np.stack([np.asarray(im, dtype=np.float32).reshape(-1, 3).mean(axis=0) for im in images])

    def encode_text(self, texts):
        return np.stack([np.asarray(next(COLOURS[w] for w in t.split() if w in COLOURS), dtype=np.float32) for t in texts])


@pytest.mark.slow
def test_mteb_t2i_hit_rates_are_lookbench_text_query_fine_recall_on_mini(tmp_path):
    """mteb's evaluator on the text-to-image task gives the hit rates, MRR and MAP of `lookbench evaluate --queries
    text` on the embedded Mini, for the long form (the random baseline: a text tower that reads nothing)."""
    ours = lookbench.evaluate("random", queries="text", text_form="long", quiet=True)
    tasks = lookbench_tasks(queries="text", text_form="long")
    meta = tasks[0].metadata
    assert meta.name == task_name("strict", ours.provenance["dataset"]["revision"], queries="text-long")
    assert (meta.category, meta.modalities, meta.type) == ("t2i", ["text", "image"], "Any2AnyRetrieval")
    theirs = by_subset(run_mteb(as_mteb_model("random", use_cache=False), tasks))
    assert sorted(theirs) == sorted(TEST_SUBSETS)
    for subset, scores in ours.subsets.items():
        for k in (1, 5, 10, 20):
            for mine, mtebs in ((f"fine_recall@{k}", f"hit_rate_at_{k}"), (f"mrr@{k}", f"mrr_at_{k}"), (f"map@{k}", f"map_at_{k}")):
                assert 100 * theirs[subset][mtebs] == pytest.approx(scores[mine], abs=1e-3), (subset, mine)
    assert any(theirs[s]["hit_rate_at_20"] > 0 for s in theirs)  # not a comparison of zeros


@pytest.mark.slow
def test_a_text_query_leaves_out_its_own_image_in_mteb_as_in_the_engine(tmp_path):
    """tiny_release: RealStudioFlat query 0's image is in its gallery and the noise; the text query does not
    retrieve it in either evaluator, and a text result exports to the t2i task's name."""
    folder = write_folder(tmp_path / "tiny", tiny_release(), texts=True)
    ours = lookbench.evaluate(ColourReader(), data=folder, queries="text", quiet=True, use_cache=False,
                              results_dir=tmp_path / "store")
    tasks = lookbench_tasks(folder, queries="text")
    model = as_mteb_model(ColourReader(), use_cache=False)
    assert model.mteb_model_meta.modalities == ["image", "text"]
    theirs = by_subset(run_mteb(model, tasks))
    assert ours.subsets["RealStudioFlat"]["self_matches_removed"] == 2
    assert_hit_rates_equal(ours, theirs)
    assert ours.subsets["RealStudioFlat"]["fine_recall@1"] == 100.0
    assert main(["export", "mteb", str(ours.stored), "--out", str(tmp_path / "out")]) == 0
    exported = mteb.results.TaskResult.from_disk(tmp_path / "out" / f"{tasks[0].metadata.name}.json")
    assert by_subset(exported)["RealStudioFlat"]["hit_rate_at_1"] == theirs["RealStudioFlat"]["hit_rate_at_1"] == 1.0
    assert by_subset(exported)["RealStudioFlat"]["languages"] == ["eng-Latn"]
