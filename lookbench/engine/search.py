"""Stage 4: exact (or labelled approximate) cosine search with faiss, the noise merge and self-match removal.

docs/architecture.md §8. The shared noise gallery is indexed and searched once for the queries of every subset;
each subset's own gallery is searched separately and the two hit lists are merged by score into one ranking of
"subset gallery rows, then noise rows". Gallery rows byte-identical to the query (its own image) are dropped,
so the search goes deep enough that ``k`` results remain after dropping them.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from lookbench.settings import INDEXES
from lookbench.errors import EvaluationError


@dataclass
class Hits:
    """A faiss search result: per query the scores and gallery rows of its nearest neighbours, -1 padding."""

    scores: np.ndarray
    ids: np.ndarray

    def take(self, queries: slice, depth: int) -> "Hits":
        return Hits(self.scores[queries, :depth], self.ids[queries, :depth])


@dataclass
class Ranking:
    """Gallery rows per query, best first, after self-match removal (-1 pads), and how many were removed."""

    ids: np.ndarray
    self_matches_removed: int


def build_index(vectors: np.ndarray, kind: str):
    """An inner-product faiss index over unit vectors, i.e. cosine (never faiss's L2 default)."""
    import faiss

    d = vectors.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 80
    else:
        raise EvaluationError(f"--index must be one of {INDEXES}, got {kind!r}")
    index.add(vectors)
    return index


GALLERY_BLOCK_BYTES = 32 * 2**20  # gallery rows gathered per exact-search step


def search(matrix: np.ndarray, rows: np.ndarray, queries: np.ndarray, depth: int, kind: str) -> Hits:
    """The ``depth`` nearest of the gallery ``matrix[rows]`` to every query (fewer when the gallery is smaller).

    Exact search reads the gallery in blocks of ``GALLERY_BLOCK_BYTES`` straight from the embedding matrix
    (``faiss.knn`` per block, merged in a ``faiss.ResultHeap``): an ``IndexFlatIP`` would hold a second copy of
    the gallery, 720 MB for 58,500 noise rows of 3072-d. HNSW needs its graph, so it indexes a copy.
    """
    if len(rows) == 0:
        return Hits(np.empty((len(queries), 0), np.float32), np.empty((len(queries), 0), np.int64))
    depth = min(depth, len(rows))
    if kind != "flat":
        index = build_index(matrix[rows], kind)
        index.hnsw.efSearch = max(64, 2 * depth)
        scores, ids = index.search(queries, depth)
        return Hits(scores, ids)
    import faiss

    heap = faiss.ResultHeap(len(queries), depth, keep_max=True)
    step = max(1, GALLERY_BLOCK_BYTES // (4 * matrix.shape[1]))
    for start in range(0, len(rows), step):
        block = matrix[rows[start:start + step]]
        scores, ids = faiss.knn(queries, block, min(depth, len(block)), metric=faiss.METRIC_INNER_PRODUCT)
        heap.add_result(scores, ids + start)
    heap.finalize()
    return Hits(heap.D, heap.I)


def merge_noise(gallery: Hits, noise: Hits, offset: int, depth: int) -> np.ndarray:
    """One ranking of the combined gallery (subset rows, then noise rows from ``offset``), ``depth`` long.

    By score, best first; a tie goes to the subset gallery, then to the earlier rank; -1 padding sorts last.
    """
    scores = np.concatenate([gallery.scores, noise.scores], axis=1)
    ids = np.concatenate([gallery.ids, np.where(noise.ids >= 0, noise.ids + offset, -1)], axis=1)
    order = np.argsort(-np.where(ids >= 0, scores, -np.inf), axis=1, kind="stable")[:, :depth]
    return np.take_along_axis(ids, order, axis=1)


def remove_self_matches(ids: np.ndarray, query_uid: np.ndarray, gallery_uid: np.ndarray, k: int) -> Ranking:
    """Drop gallery rows whose image content equals the query's; keep the first ``k``, rank order kept; -1 pads."""
    valid = ids >= 0
    same = valid & (gallery_uid[np.where(valid, ids, 0)] == query_uid[:, None])
    order = np.argsort(same, axis=1, kind="stable")  # non-matches first, rank order preserved
    kept = np.take_along_axis(np.where(same, -1, ids), order, axis=1)[:, :k]
    if kept.shape[1] < k:
        kept = np.pad(kept, ((0, 0), (0, k - kept.shape[1])), constant_values=-1)
    return Ranking(kept, int(same.sum()))


def search_depth(query_uid: np.ndarray, gallery_uid: np.ndarray, noise_uid: np.ndarray | None, k: int) -> int:
    """How deep to search so that ``k`` results remain after dropping every copy of each query's own image."""
    copies = Counter(gallery_uid.tolist())
    if noise_uid is not None:
        copies.update(noise_uid.tolist())
    return k + max((copies.get(u, 0) for u in query_uid.tolist()), default=0)
