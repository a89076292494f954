"""The engine against a numpy brute force on a release it does not saturate, and its search stages alone."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import lookbench
from lookbench.engine import Hits, merge_noise, search_depth
from lookbench.metric.fine_recall.bootstrap import score_retrieval
from lookbench.metric.fine_recall.judging import DEFAULT_K
from lookbench.metric.fine_recall.records import RECORD_FIELDS

from tests.helpers.engine_data import CountingEncoder, graded_release, write_folder


def colour_embedding(blob: bytes) -> np.ndarray:
    """What CountingEncoder computes, from the bytes: the 4x4 RGB thumbnail, at unit length."""
    x = np.asarray(Image.open(io.BytesIO(blob)).convert("RGB").resize((4, 4)), dtype=np.float32).ravel()
    return x / np.linalg.norm(x)


def brute_force(release: dict, subset: str, mode: str) -> tuple[dict, list]:
    """(scores, rankings): cosine over the subset gallery followed by the noise gallery, the query's own image
    dropped, ties to the lower gallery index, scored by the metric's pure function."""
    gallery = release[subset]["gallery"] + release["noise"]["gallery"]
    g_bytes = [r["image"]["bytes"] for r in gallery]
    g = np.stack([colour_embedding(b) for b in g_bytes])
    rankings = []
    for query in release[subset]["query"]:
        scores = g @ colour_embedding(query["image"]["bytes"])
        order = [i for i in np.lexsort((np.arange(len(g)), -scores)) if g_bytes[i] != query["image"]["bytes"]]
        rankings.append(order[:max(DEFAULT_K)])
    project = [{f: r[f] for f in RECORD_FIELDS} for r in gallery]
    return score_retrieval(rankings, [{f: r[f] for f in RECORD_FIELDS} for r in release[subset]["query"]], project,
                           k=list(DEFAULT_K), mode=mode, n_resamples=0), rankings  # the scores; intervals: test_stats


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_release(), write_folder(tmp_path_factory.mktemp("graded") / "lookbench", graded_release())


@pytest.mark.parametrize("mode", ["strict", "leaderboard"])
def test_engine_matches_brute_force_on_a_non_saturated_release(graded, tmp_path, mode):
    release, folder = graded
    result = lookbench.evaluate(CountingEncoder(), data=folder, cache_dir=tmp_path, mode=mode, quiet=True)
    for subset in ("RealStudioFlat", "AIGen-Studio"):
        expected, rankings = brute_force(release, subset, mode)
        got = dict(result.subsets[subset])
        assert got.pop("per_category") == expected.pop("per_category")
        # attribute_errors: not a metric score; tests/results/test_attributes.py holds it against a brute-force count
        kept = {k: v for k, v in got.items() if k not in ("self_matches_removed", "gallery_size", "attribute_errors")}
        assert kept == pytest.approx(expected)
        assert 0 < got["fine_recall@1"] < got["coarse_recall@1"] <= 100 and got["fine_recall@1"] < got["fine_recall@20"]
        size = len(release[subset]["gallery"])
        first_five = np.array([r[:5] for r in rankings])
        assert (first_five < size).any() and (first_five >= size).any()  # noise interleaved with the subset gallery
    assert result.subsets["AIGen-Studio"]["self_matches_removed"] == 1  # the byte copy in the noise
    assert result.subsets["RealStudioFlat"]["self_matches_removed"] == 0


def test_noise_merge_orders_by_score_ties_to_the_subset_gallery():
    gallery = Hits(np.array([[0.9, 0.5, 0.1]], np.float32), np.array([[2, 0, 1]]))
    noise = Hits(np.array([[0.7, 0.5, 0.0]], np.float32), np.array([[1, 0, -1]]))
    assert merge_noise(gallery, noise, offset=3, depth=6).tolist() == [[2, 4, 0, 3, 1, -1]]
    assert merge_noise(gallery, noise, offset=3, depth=2).tolist() == [[2, 4]]


def test_search_depth_covers_every_copy_of_the_query_image():
    query, gallery = np.array([5, 6]), np.array([5, 5, 7])
    assert search_depth(query, gallery, None, 20) == 22
    assert search_depth(query, gallery, np.array([5, 8]), 20) == 23  # copies in the noise count too
    assert search_depth(np.array([9]), gallery, np.array([8]), 20) == 20


def test_galleries_factorised_once_and_joined_score_as_the_concatenated_dataset():
    import datasets

    from lookbench.metric.fine_recall.records import GalleryColumns

    release = graded_release()
    _, rankings = brute_force(release, "RealStudioFlat", "strict")
    def project(rows):
        return datasets.Dataset.from_list([{f: r[f] for f in RECORD_FIELDS} for r in rows])

    subset, noise = project(release["RealStudioFlat"]["gallery"]), project(release["noise"]["gallery"])
    queries = project(release["RealStudioFlat"]["query"])
    expected = score_retrieval(rankings, queries, datasets.concatenate_datasets([subset, noise]))
    joined = GalleryColumns(subset) + GalleryColumns(noise)
    assert len(joined) == len(subset) + len(noise)
    assert score_retrieval(rankings, queries, joined) == expected
    assert score_retrieval(rankings, queries, GalleryColumns(subset.to_list()) + noise) == expected  # records + Dataset
