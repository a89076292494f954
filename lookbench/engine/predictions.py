"""Saved rankings for error analysis: the table of one subset's ranking built from the engine's search and judgement.

docs/architecture.md §5 and §8. The file format (its columns, where it lies, its writer and reader) is
``lookbench.results.rankings``'s; the hit flags are those the judge (``lookbench.results.judge``) set when it scored
the ranking, so the file agrees with the result's Recall@K.
"""
from __future__ import annotations

import numpy as np

from lookbench.engine.scoring import Split, SubsetScore, SubsetTask
from lookbench.results.rankings import TEXT_COLUMN

_ANNOTATION = ("category", "main_attribute", "attributes")


def rankings(matrix: np.ndarray, task: SubsetTask, noise: Split | None, scored: SubsetScore, mode: str | None = None):
    """The saved ranking of one subset as a ``datasets.Dataset``, its hit flags those of ``mode`` (default: the
    headline mode's); of a sealed release (never judged), ids, ranks and scores only: nothing that carries a label."""
    import datasets

    gallery = task.gallery.annotations
    if len(scored.gallery_rows) > len(task.gallery.rows):  # the noise gallery was appended
        gallery = datasets.concatenate_datasets([gallery, noise.annotations])
    query, rank = np.nonzero(scored.ranking >= 0)
    index = scored.ranking[query, rank]
    vectors = task.queries.search_vectors(matrix)[query]
    score = np.einsum("ij,ij->i", vectors, matrix[scored.gallery_rows[index]])
    queries = task.queries.annotations.select(query)
    retrieved = gallery.select(index)
    table = {"query": query + 1, "query_item_id": queries["item_id"]}
    if "query_text" in queries.column_names:  # a text query's words
        table[TEXT_COLUMN] = queries["query_text"]
    judged = scored.judged is not None
    table.update({f"query_{name}": queries[name] for name in _ANNOTATION if judged})
    table.update({"rank": rank + 1, "gallery_index": index, "item_id": retrieved["item_id"], "score": score})
    if judged:
        table.update({name: retrieved[name] for name in _ANNOTATION})
        judgement = scored.judged if mode is None else scored.judgements[mode]
        table.update(fine_hit=judgement.fine[query, rank], coarse_hit=judgement.coarse[query, rank])
    return datasets.Dataset.from_dict({k: list(v) if not isinstance(v, np.ndarray) else v for k, v in table.items()})
