"""Searching the gallery (lookbench.engine.search): HNSW labelled approximate, exact search in gallery blocks equal
to a flat index, self-match removal keeping the rank order."""
from __future__ import annotations

import numpy as np

import lookbench
from lookbench.engine import remove_self_matches


def test_hnsw_is_labelled_approximate_and_no_distractors(data, tmp_path):
    result = lookbench.evaluate("raw-pixels", data=data, distractors=False, index="hnsw", cache_dir=tmp_path, quiet=True)
    assert result.provenance["search"].startswith("approximate") and "approximate" in result.table()
    assert result.provenance["distractors"] is False and result.subsets["RealStudioFlat"]["gallery_size"] == 7
    assert result.subsets["RealStudioFlat"]["self_matches_removed"] == 1  # the noise copy is gone


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


def test_remove_self_matches_keeps_rank_order():
    ids = np.array([[3, 0, 2, 1, -1], [1, 2, 3, 0, 4]])
    gallery_uid = np.array([10, 11, 12, 10, 13])
    ranking = remove_self_matches(ids, np.array([10, 99]), gallery_uid, 3)
    assert ranking.ids.tolist() == [[2, 1, -1], [1, 2, 3]] and ranking.self_matches_removed == 2
