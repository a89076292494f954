"""Stage 5: rank every subset's gallery (+ the shared noise) and score it with the metric's core.

docs/architecture.md §8. Each ranking is judged by the one judge (``lookbench.results.judge``, the functions
``lookbench verify`` re-runs on a submission), so what the engine writes is what verify recomputes. The noise
annotations are read and factorised once for all subsets.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lookbench.metric.fine_recall.judging import DEFAULT_K
from lookbench.metric.fine_recall.records import GalleryColumns
from lookbench.results.judge import SubsetJudgement, gallery_columns, judge_modes, query_columns
from lookbench.results.outcomes import Outcomes
from lookbench.engine.encode import Embeddings
from lookbench.errors import EvaluationError
from lookbench.engine.images import ImageSource
from lookbench.engine.search import merge_noise, remove_self_matches, search, search_depth
from lookbench.engine.timings import StageTimes
from lookbench.settings import DEFAULT_INDEX, DEFAULT_MODE, Modes


@dataclass
class Split:
    """Images of one split to search with or in: their rows of the embedding matrix and their annotation records.

    Text queries (``of_texts``) search with ``vectors``, their words' embeddings; their ``rows`` are the rows of
    their images where those are in the gallery too (-1 elsewhere), so the gallery rows that are the query's own
    image are left out as they are for image queries, and both kinds search the same gallery."""

    rows: np.ndarray
    annotations: object  # a Dataset (or list) of annotation records (+ item_id), one per row
    vectors: np.ndarray | None = None  # what the queries search with, when not ``matrix[rows]``

    @classmethod
    def of(cls, source: ImageSource, dataset, embeddings: Embeddings) -> "Split":
        """The encoded rows of one split (images skipped as unreadable are left out, with their annotations)."""
        keep = embeddings.encoded(source)
        return cls(embeddings.rows(source)[keep], dataset.select_columns(query_columns(dataset)).select(keep))

    @classmethod
    def of_texts(cls, source: ImageSource, dataset, embeddings: Embeddings, vectors: np.ndarray) -> "Split":
        """Every query of one split, searching with ``vectors`` (unit length, one per query)."""
        rows = np.fromiter((embeddings.ids.get(h, -1) for h in source.hashes), dtype=np.int64, count=len(source.hashes))
        return cls(rows, dataset.select_columns(query_columns(dataset)), vectors)

    def search_vectors(self, matrix: np.ndarray) -> np.ndarray:
        return matrix[self.rows] if self.vectors is None else self.vectors


@dataclass
class SubsetTask:
    """One subset to score: its queries (rows + annotation records) and its own gallery."""

    queries: Split
    gallery: Split


@dataclass
class SubsetScore:
    """The judge's verdicts on one subset's ranking, one per mode (``judgements``, headline mode first), and what the
    search did for it: each judgement holds the scores, each query's outcome and the per-rank hit flags, ``ranking``
    every query's top gallery rows (indices into the subset gallery followed by the noise, -1 pads) and
    ``gallery_rows`` the embedding row of each of those gallery rows. ``judged``, ``scores`` and ``outcomes`` are the
    headline mode's."""

    judgements: dict[str, SubsetJudgement]  # per mode; empty: a sealed release's ranking, never judged
    self_matches_removed: int
    ranking: np.ndarray
    gallery_rows: np.ndarray

    @property
    def judged(self) -> SubsetJudgement | None:
        return next(iter(self.judgements.values()), None)  # None: a sealed release's ranking

    @property
    def scores(self) -> dict:
        return self.judged.scores if self.judged is not None else {"num_queries": int(len(self.ranking))}

    @property
    def outcomes(self) -> Outcomes:
        return self.judged.outcomes

    @property
    def gallery_size(self) -> int:
        return self.judged.gallery_size if self.judged is not None else int(len(self.gallery_rows))


def score_subsets(matrix: np.ndarray, tasks: dict, noise: Split | None = None, *, modes=DEFAULT_MODE,
                  index=DEFAULT_INDEX, progress=None, timings: StageTimes | None = None, judge: bool = True) -> dict:
    """``{subset: SubsetScore}``: every subset's queries searched once against its gallery + the shared noise
    gallery, and the ranking judged in each of ``modes`` (a ``Modes``, a mode's name, or several).

    ``matrix`` holds L2-normalised embeddings indexed by content id. ``progress`` (a tqdm bar) advances once
    for the noise search and once per subset; ``timings`` gets the seconds of searching and of scoring. ``judge=False``
    (a sealed release: no labels) ranks only; no annotation is read.
    """
    timings = timings or StageTimes()
    modes = Modes.of(modes)
    kmax = max(DEFAULT_K)
    noise_rows = None if noise is None else noise.rows
    depths = {}
    for name, task in tasks.items():
        if len(task.gallery.rows) + (0 if noise is None else len(noise.rows)) == 0:
            raise EvaluationError(f"{name}: the gallery is empty; nothing to retrieve")
        depths[name] = search_depth(task.queries.rows, task.gallery.rows, noise_rows, kmax)
    if progress is not None:
        progress.reset(total=len(tasks) + 1)
    noise_hits, noise_columns = {}, None
    if noise is not None and len(noise.rows):
        with timings.stage("search"):
            queries = np.concatenate([t.queries.search_vectors(matrix) for t in tasks.values()])
            hits = search(matrix, noise.rows, queries, max(depths.values()), index)
            start = 0
            for name, task in tasks.items():
                noise_hits[name] = hits.take(slice(start, start + len(task.queries.rows)), depths[name])
                start += len(task.queries.rows)
        with timings.stage("score"):
            noise_columns = GalleryColumns(noise.annotations) if judge else None
    if progress is not None:
        progress.update(1)
    out = {}
    for name, task in tasks.items():
        q, g = task.queries.rows, task.gallery.rows
        with timings.stage("search"):
            hits = search(matrix, g, task.queries.search_vectors(matrix), depths[name], index)
            ids, all_rows = hits.ids, g
            if name in noise_hits:
                ids = merge_noise(hits, noise_hits[name], len(g), depths[name])
                all_rows = np.concatenate([g, noise.rows])
            ranking = remove_self_matches(ids, q, all_rows, kmax)
        judged = {}
        if judge:
            with timings.stage("score"):
                columns = gallery_columns(task.gallery.annotations, noise_columns if name in noise_hits else None)
                judged = judge_modes(ranking.ids, task.queries.annotations, columns, modes)
        out[name] = SubsetScore(judged, ranking.self_matches_removed, ranking.ids, all_rows)
        if progress is not None:
            progress.update(1)
    return out
