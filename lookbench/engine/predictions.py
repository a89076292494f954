"""Saved rankings for error analysis: each query's top gallery rows as one Parquet file per subset.

docs/architecture.md §5 and §8. One row per (query, rank): ``query`` (1-based, in the order of the evaluated
queries), its ``query_item_id`` and annotation, ``rank`` (1-based), ``gallery_index`` (0-based into the subset
gallery followed by the noise gallery, as the metric sees it), the retrieved ``item_id``, its cosine ``score``
and annotation, and ``fine_hit`` / ``coarse_hit`` as the metric's ``score_queries`` judges them, so the file agrees
with the result's Recall@K. ``datasets.load_dataset("parquet", data_files=...)`` reads it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..metric.fine_recall.core import GalleryColumns, score_queries
from .scoring import Split, SubsetScore, SubsetTask

_ANNOTATION = ("category", "main_attribute", "attributes")


def rankings(matrix: np.ndarray, task: SubsetTask, noise: Split | None, scored: SubsetScore, mode: str):
    """The saved ranking of one subset as a ``datasets.Dataset``."""
    import datasets

    gallery = task.gallery.annotations
    columns = GalleryColumns(gallery)
    if len(scored.gallery_rows) > len(task.gallery.rows):  # the noise gallery was appended
        gallery = datasets.concatenate_datasets([gallery, noise.annotations])
        columns = columns + GalleryColumns(noise.annotations)
    flags = score_queries(scored.ranking, task.queries.annotations, columns, k=[1], mode=mode)
    query, rank = np.nonzero(scored.ranking >= 0)
    index = scored.ranking[query, rank]
    vectors = matrix[task.queries.rows[query]]
    score = np.einsum("ij,ij->i", vectors, matrix[scored.gallery_rows[index]])
    queries = task.queries.annotations.select(query)
    retrieved = gallery.select(index)
    table = {"query": query + 1, "query_item_id": queries["item_id"]}
    table.update({f"query_{name}": queries[name] for name in _ANNOTATION})
    table.update({"rank": rank + 1, "gallery_index": index, "item_id": retrieved["item_id"], "score": score})
    table.update({name: retrieved[name] for name in _ANNOTATION})
    table.update(fine_hit=flags["fine"][query, rank], coarse_hit=flags["coarse"][query, rank])
    return datasets.Dataset.from_dict({k: list(v) if not isinstance(v, np.ndarray) else v for k, v in table.items()})


def write(tables: dict, folder: Path) -> dict[str, Path]:
    """Each subset's table as ``folder/<subset>.parquet`` (through a temporary name, replaced when complete)."""
    import os

    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, table in tables.items():
        path = folder / f"{name}.parquet"
        tmp = folder / f".{name}.parquet.tmp"
        pq.write_table(table.data.table, tmp)  # the Dataset's own Arrow table (to_parquet would draw a progress bar)
        os.replace(tmp, path)
        paths[name] = path
    return paths
