"""The ranking file format: each subset's ranked gallery rows as one Parquet file beside its result JSON, where it
lies (``<stem>.predictions/<subset>.parquet``), its columns, its writer and its one reader.

One row per (query, rank): ``query`` (1-based, in the order of the evaluated queries), its ``query_item_id`` (for text
queries also its words, ``query_text``) and annotation, ``rank`` (1-based), ``gallery_index`` (0-based into the subset
gallery followed by the noise gallery, as the metric sees it), the retrieved ``item_id``, its cosine ``score`` and
annotation, and ``fine_hit`` / ``coarse_hit`` as the judge flagged them; a sealed release's carries ids (the opaque
row ids its public part gives, never item ids), ranks and scores only. ``datasets.load_dataset("parquet", data_files=...)`` reads it.

A ranking may come from a stranger, so the reader bounds every cost before it is paid: rows are capped from the
footer, the decoded size is taken from the page headers themselves (a footer can understate what its pages hold; the
headers are what the Parquet reader allocates and checks each page against), read with a minimal Thrift
compact-protocol walker, ids are refused past ``MAX_ID_CHARS`` and stay dictionary-encoded.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lookbench.errors import clip

MAX_RANKING_BYTES = 256 * 1024 * 1024  # one subset's ranking file, and the decoded size of the columns read
MAX_RANKING_ROWS = 1 << 22  # 200,000 queries x 20 ranks; a file of more rows is never decoded
MAX_ID_CHARS = 1024  # an item id longer than this is no product id
COLUMNS = {"query": "int", "query_item_id": "str", "rank": "int", "gallery_index": "int", "item_id": "str"}
TEXT_COLUMN = "query_text"  # a text query's words, which a text ranking carries
_FOLDER = ".predictions"  # beside ``<stem>.json``: ``<stem>.predictions/``


def predictions_folder(result_json) -> Path:
    """The saved rankings of a result: ``<stem>.predictions/<subset>.parquet`` beside its JSON."""
    result_json = Path(result_json)
    return result_json.with_name(result_json.stem + _FOLDER)


def ranking_file(result_name: str, subset: str) -> str:
    """A subset's ranking relative to the folder of the result named ``result_name``."""
    return f"{predictions_folder(Path(result_name)).name}/{subset}.parquet"


def is_predictions_folder(name: str) -> bool:
    """Whether a folder's name is a result's rankings folder (never a result of its own)."""
    return name.endswith(_FOLDER)


@dataclass
class Ranking:
    """The columns of one subset's ranking that verify and submit read: per row the query (1-based) and its item id,
    the rank (1-based), the gallery row (0-based, noise rows after the subset's) and the retrieved item id;
    ``query_text`` the words of each row's query when the ranking is of text queries."""

    query: np.ndarray
    query_item_id: np.ndarray
    rank: np.ndarray
    gallery_index: np.ndarray
    item_id: np.ndarray
    query_text: np.ndarray | None = None

    def shallowest(self) -> tuple[int, int]:
        """(depth, query) of the query ranked least deep."""
        queries, depth = np.unique(self.query, return_counts=True)
        at = int(np.argmin(depth)) if depth.size else 0
        return (int(depth[at]), int(queries[at])) if depth.size else (0, 0)


def write(tables: dict, folder: Path) -> dict[str, Path]:
    """Each subset's table (a ``datasets.Dataset``) as ``folder/<subset>.parquet``; ``folder`` is a new folder that
    replaces the saved rankings whole when complete (``store.write_result``)."""
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, table in tables.items():
        paths[name] = folder / f"{name}.parquet"
        pq.write_table(table.data.table, paths[name])  # the Dataset's own Arrow table (to_parquet would draw a progress bar)
    return paths


# ------------------------------------------------------------------------------------------ the columns read

def _text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _attributes(kind) -> bool:
    import pyarrow as pa

    return (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and pa.types.is_struct(kind.value_type) and all(
        kind.value_type.get_field_index(f) >= 0 and pa.types.is_string(kind.value_type.field(f).type) for f in ("name", "value"))


def _schema(saved: bool) -> dict:
    """What a ranking must hold: column -> (type check on the value type, what it is, nulls allowed). ``saved``: every
    column the engine saves beside a judged result (the report reads them all); else the ranked ids alone."""
    import pyarrow as pa

    whole, ids = (pa.types.is_integer, "an integer", False), (_text, "text", False)
    if not saved:
        return {name: whole if kind == "int" else ids for name, kind in COLUMNS.items()} | {TEXT_COLUMN: ids}
    text = (_text, "text", True)
    flag = (pa.types.is_boolean, "true/false", False)
    listed = (_attributes, "a list of {name, value} attributes", True)
    return {"query": whole, "query_item_id": text, "query_category": text, "query_main_attribute": text,
            "query_attributes": listed, "rank": whole, "gallery_index": whole, "item_id": text,
            "score": (pa.types.is_floating, "a float", False), "category": text, "main_attribute": text,
            "attributes": listed, "fine_hit": flag, "coarse_hit": flag}


# ------------------------------------------------------------------------------------------ the one reader

class _Thrift:
    """Just enough of Thrift's compact protocol to read a Parquet page header's sizes and skip everything else."""

    def __init__(self, data: bytes, at: int):
        self.data, self.at = data, at

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise ValueError("a page header runs past the end of the file")
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        shift = value = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise ValueError("a page header holds an over-long integer")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def skip(self, kind: int, depth: int = 0) -> None:
        if depth > 16:
            raise ValueError("a page header is nested too deep")
        if kind in (1, 2):  # booleans are in the field header
            return
        if kind == 3:
            self.byte()
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.at += 8
        elif kind == 8:
            length = self.varint()  # read before ``self.at`` is: ``self.at += self.varint()`` loses the length's bytes
            self.at += length
        elif kind in (9, 10):
            head = self.byte()
            size, element = head >> 4, head & 0x0F
            size = self.varint() if size == 15 else size
            for _ in range(size):
                self.byte() if element in (1, 2) else self.skip(element, depth + 1)
        elif kind == 11:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    self.skip(types >> 4, depth + 1)
                    self.skip(types & 0x0F, depth + 1)
        elif kind == 12:
            self.struct(depth + 1)
        else:
            raise ValueError(f"a page header holds an unknown Thrift type {kind}")
        if self.at > len(self.data):
            raise ValueError("a page header runs past the end of the file")

    def struct(self, depth: int = 0) -> dict[int, int]:
        """The integer fields of one struct by id; the others skipped."""
        fields, last = {}, 0
        while True:
            head = self.byte()
            kind = head & 0x0F
            if kind == 0:
                return fields
            delta = head >> 4
            last = last + delta if delta else self.zigzag()
            if kind in (5, 6):
                fields[last] = self.zigzag()
            else:
                self.skip(kind, depth)


def _decoded_size(data: bytes, chunk) -> int:
    """The bytes the pages of one column chunk decompress to, as their own headers state (PageHeader field 2,
    uncompressed_page_size; field 3 the compressed size to skip). The walk covers the chunk's whole byte range, as
    the reader does."""
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    start = min(start, chunk.data_page_offset) if start is not None else chunk.data_page_offset
    end = start + chunk.total_compressed_size
    if start < 0 or end > len(data):
        raise ValueError("a column chunk lies outside the file")
    at, total = start, 0
    while at < end:
        reader = _Thrift(data, at)
        header = reader.struct()
        uncompressed, compressed = header.get(2, -1), header.get(3, -1)
        if uncompressed < 0 or compressed < 0:
            raise ValueError("a page header states no size")
        total += uncompressed
        at = reader.at + compressed
    return total


def read(data: bytes, shown: str, max_rows: int = MAX_RANKING_ROWS, saved: bool = False):
    """A ranking's Parquet bytes as a pyarrow Table of the columns read, each checked (type, no empty value where
    none may be); ``saved``: every column, as the engine saved them beside a judged result, else the ranked ids (and a
    text query's words). Rows are checked against ``max_rows`` and the pages' decoded sizes against
    ``MAX_RANKING_BYTES`` before any page is decoded; anything wrong is a one-line ``ValueError`` naming ``shown``
    (never the table's contents)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema(saved)
    try:
        meta = pq.ParquetFile(pa.BufferReader(data)).metadata
        if meta.num_rows > max_rows:
            raise ValueError(f"{shown} holds {meta.num_rows} rows; its result allows at most {max_rows} "
                             "(its queries times the deepest K it reports)")
        names = meta.schema.to_arrow_schema().names
        missing = [c for c in schema if c != TEXT_COLUMN and c not in names]
        if missing:
            raise ValueError(f"{shown}: column {missing[0]} is missing")
        columns = names if saved else [c for c in schema if c in names]
        decoded = 0
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(meta.num_columns):
                chunk = group.column(c)
                if chunk.path_in_schema.split(".")[0] in columns:  # a nested column's leaves count with it
                    decoded += max(_decoded_size(data, chunk), chunk.total_uncompressed_size)
        if decoded > MAX_RANKING_BYTES:
            raise ValueError(f"{shown} decodes to {decoded} bytes; a ranking's columns hold at most {MAX_RANKING_BYTES}")
        ids = [] if saved else [c for c in columns if schema[c][1] == "text"]
        # one thread: pyarrow's reader threads, left at exit, abort the interpreter now and then (pyarrow 26)
        table = pq.read_table(pa.BufferReader(data), columns=columns, read_dictionary=ids, use_threads=False)
    except (OSError, pa.ArrowException) as err:
        first = (str(err).splitlines() or [type(err).__name__])[0][:200]
        raise ValueError(f"{shown} cannot be read as a saved ranking ({first})") from None
    if table.num_rows > max_rows:  # the footer understated the rows
        raise ValueError(f"{shown} holds {table.num_rows} rows; its result allows at most {max_rows}")
    for name, (check, what, nullable) in schema.items():
        if name not in table.column_names:
            continue
        kind = table.schema.field(name).type
        if not check(kind.value_type if pa.types.is_dictionary(kind) else kind):
            raise ValueError(f"{shown}: column {name} is {clip(str(kind), 60)}, not {what}")
        if not nullable and table[name].null_count:
            raise ValueError(f"{shown}: column {name} has {table[name].null_count} empty value(s)")
    return table


def parse_ranking(data: bytes, shown: str, max_rows: int = MAX_RANKING_ROWS) -> Ranking:
    """The ranked ids of a ranking's Parquet bytes (``read``), as numpy columns; an id longer than ``MAX_ID_CHARS``
    is refused."""
    table = read(data, shown, max_rows)
    return Ranking(**{name: table[name].to_numpy().astype(np.int64) if COLUMNS.get(name) == "int"
                      else _strings(table[name], name, shown) for name in table.column_names})


def _strings(column, name: str, shown: str) -> np.ndarray:
    """A dictionary-encoded text column as an object array sharing one str per distinct value; a value longer than
    ``MAX_ID_CHARS`` is refused (item ids; a text query's words are bounded by the same length)."""
    import pyarrow.compute as pc

    parts = []
    for chunk in column.chunks:
        values = chunk.dictionary if hasattr(chunk, "dictionary") else chunk
        if len(values) and pc.max(pc.utf8_length(values)).as_py() > MAX_ID_CHARS:
            raise ValueError(f"{shown}: column {name} holds a value longer than {MAX_ID_CHARS} characters")
        parts.append(np.asarray(values.to_pylist(), dtype=object)[chunk.indices.to_numpy(zero_copy_only=False)]
                     if hasattr(chunk, "dictionary") else np.asarray(chunk.to_pylist(), dtype=object))
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)
