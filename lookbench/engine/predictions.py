"""Saved rankings for error analysis: each query's top gallery rows as one Parquet file per subset.

docs/architecture.md §5 and §8. One row per (query, rank): ``query`` (1-based, in the order of the evaluated
queries), its ``query_item_id`` (for text queries also its words, ``query_text``) and annotation, ``rank``
(1-based), ``gallery_index`` (0-based into the subset
gallery followed by the noise gallery, as the metric sees it), the retrieved ``item_id``, its cosine ``score``
and annotation, and ``fine_hit`` / ``coarse_hit`` as the judge (``lookbench.results.judge``) flagged them when it
scored the ranking, so the file agrees with the result's Recall@K. ``datasets.load_dataset("parquet", data_files=...)`` reads it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lookbench.engine.scoring import Split, SubsetScore, SubsetTask

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
        table["query_text"] = queries["query_text"]
    judged = scored.judged is not None
    table.update({f"query_{name}": queries[name] for name in _ANNOTATION if judged})
    table.update({"rank": rank + 1, "gallery_index": index, "item_id": retrieved["item_id"], "score": score})
    if judged:
        table.update({name: retrieved[name] for name in _ANNOTATION})
        judgement = scored.judged if mode is None else scored.judgements[mode]
        table.update(fine_hit=judgement.fine[query, rank], coarse_hit=judgement.coarse[query, rank])
    return datasets.Dataset.from_dict({k: list(v) if not isinstance(v, np.ndarray) else v for k, v in table.items()})


def write(tables: dict, folder: Path) -> dict[str, Path]:
    """Each subset's table as ``folder/<subset>.parquet``; ``folder`` is a new folder that replaces the saved
    rankings whole when complete (``EvaluationResult.write_json``)."""
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, table in tables.items():
        paths[name] = folder / f"{name}.parquet"
        pq.write_table(table.data.table, paths[name])  # the Dataset's own Arrow table (to_parquet would draw a progress bar)
    return paths


def _attributes(kind) -> bool:
    import pyarrow as pa

    return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and pa.types.is_struct(kind.value_type) and all(
        kind.value_type.get_field_index(f) >= 0 and pa.types.is_string(kind.value_type.field(f).type) for f in ("name", "value"))


def _columns():
    """What a saved ranking must hold to be read back: column -> (type check, what it is, nulls allowed)."""
    import pyarrow as pa

    text = (lambda t: pa.types.is_string(t) or pa.types.is_large_string(t), "text", True)
    whole = (pa.types.is_integer, "an integer", False)
    flag = (pa.types.is_boolean, "true/false", False)
    listed = (_attributes, "a list of {name, value} attributes", True)
    return {"query": whole, "query_item_id": text, "query_category": text, "query_main_attribute": text,
            "query_attributes": listed, "rank": whole, "gallery_index": whole, "item_id": text,
            "score": (pa.types.is_floating, "a float", False), "category": text, "main_attribute": text,
            "attributes": listed, "fine_hit": flag, "coarse_hit": flag}


def read(path: Path, max_rows: int | None = None, max_bytes: int | None = None):
    """A saved ranking as a pyarrow Table, checked column by column; anything else is a one-line ``ValueError``
    naming the file and the column (never the table's contents). ``max_rows`` / ``max_bytes``: a file whose footer
    declares more rows, or more bytes once decoded, is refused before any page is read (a file from elsewhere)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lookbench.files import regular_file

    try:
        if max_rows is not None or max_bytes is not None:
            with pq.ParquetFile(regular_file(path)) as file:
                meta = file.metadata
                decoded = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
            if max_rows is not None and meta.num_rows > max_rows:
                raise ValueError(f"{path} holds {meta.num_rows:,} rows; its result's queries and K allow at most {max_rows:,}")
            if max_bytes is not None and decoded > max_bytes:
                raise ValueError(f"{path} decodes to {decoded:,} bytes, more than {max_bytes:,}")
        table = pq.read_table(regular_file(path), use_threads=False)  # a small file; no reader threads at exit
    except (OSError, pa.ArrowException) as err:
        first = (str(err).splitlines() or [type(err).__name__])[0][:200]
        raise ValueError(f"{path} cannot be read as a saved ranking ({first})") from None
    for column, (check, what, nullable) in _columns().items():
        if column not in table.column_names:
            raise ValueError(f"{path}: column {column} is missing")
        kind = table.schema.field(column).type
        if not check(kind):
            raise ValueError(f"{path}: column {column} is {kind}, not {what}")
        if not nullable and table[column].null_count:
            raise ValueError(f"{path}: column {column} has {table[column].null_count} empty value(s)")
    return table


def read_saved(result_json: Path, provenance: dict) -> dict:
    """Every saved ranking a stored result lists (subset -> ``datasets.Dataset``), each read and checked; a
    ``ValueError`` naming the file when one is missing or damaged, so it is never reused."""
    import datasets

    from lookbench.schema import SUBSETS
    from lookbench.results.store import predictions_folder

    saved = provenance.get("saved_predictions") or []
    if not isinstance(saved, list) or not all(isinstance(name, str) and name in SUBSETS for name in saved):
        raise ValueError(f"{result_json}: saved_predictions {str(saved)[:100]} is not a list of subsets")
    return {name: datasets.Dataset(read(predictions_folder(result_json) / f"{name}.parquet")) for name in saved}
