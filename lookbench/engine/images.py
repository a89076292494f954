"""Stage 2: every split's images as an ``ImageSource`` (Arrow column, not decoded) and their content hashes.

docs/architecture.md §8. An image is identified by the sha256 of its encoded bytes, so a picture that appears in
several splits (a query also in the noise gallery, a gallery shared by subsets) is decoded and encoded once, and
a gallery row byte-identical to its query is recognised as a self-match.
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from PIL import Image

from lookbench.engine.embedding_cache import HASH_BYTES
from lookbench.encoders.base import Encoder, as_batch
from lookbench.schema import NOISE
from lookbench.errors import EvaluationError


@dataclass
class ImageSource:
    """One split's images: the Arrow image column (not decoded), item ids and, once hashed, content hashes."""

    label: str  # "<subset>/<split>", how messages name it
    column: pa.ChunkedArray
    item_ids: list
    hashes: list = field(default_factory=list)

    @classmethod
    def of(cls, label: str, dataset) -> "ImageSource":
        table = dataset.select_columns(["image", "item_id"]).with_format("arrow")[:]
        return cls(label, table.column("image"), table.column("item_id").to_pylist())

    def __len__(self) -> int:
        return len(self.item_ids)

    def where(self, row: int) -> str:
        """How a message names a row: 1-based, like the line numbers of a raw release's JSONL files."""
        return f"{self.label} row {row + 1} (item {self.item_ids[row]})"

    @cached_property
    def _chunks(self) -> tuple[np.ndarray, list, list]:
        """First row of each Arrow chunk, and each chunk's ``bytes`` and ``path`` fields (zero-copy views)."""
        chunks = self.column.chunks
        starts = np.cumsum([0] + [len(c) for c in chunks])
        return starts, [pc.struct_field(c, "bytes") for c in chunks], [pc.struct_field(c, "path") for c in chunks]

    def image_bytes(self, rows) -> list:
        """Encoded bytes of some rows; images stored by path are read from disk.

        Taken chunk by chunk: a ``take`` on the whole chunked column costs time in proportion to its number of
        chunks (9 ms a batch on 131 chunks, measured), which made fetching every batch quadratic in the split size.
        """
        starts, byte_chunks, path_chunks = self._chunks
        rows = np.asarray(rows, dtype=np.int64)
        chunk_of = np.searchsorted(starts, rows, side="right") - 1
        blobs, paths = [None] * len(rows), [None] * len(rows)
        for c in np.unique(chunk_of).tolist():
            at = np.flatnonzero(chunk_of == c)
            local = pa.array(rows[at] - starts[c])
            for i, blob, path in zip(at.tolist(), byte_chunks[c].take(local).to_pylist(), path_chunks[c].take(local).to_pylist()):
                blobs[i], paths[i] = blob, path
        out = []
        for row, blob, path in zip(rows.tolist(), blobs, paths):
            if blob is None and path:
                try:
                    blob = Path(path).read_bytes()
                except OSError as err:
                    raise EvaluationError(f"{self.where(row)}: cannot read {path}: {err}") from err
            out.append(blob)
        return out

    def hash(self, progress=None) -> None:
        """Content hash (sha256, first 16 bytes) of every row's encoded image bytes, chunk by chunk."""
        self.hashes = []
        for chunk in self.column.chunks:
            start = len(self.hashes)
            blobs = pc.struct_field(chunk, "bytes").to_pylist()
            if any(b is None for b in blobs):
                blobs = self.image_bytes(list(range(start, start + len(chunk))))
            for i, blob in enumerate(blobs):
                if blob is None:
                    raise EvaluationError(f"{self.where(start + i)} has no image")
                self.hashes.append(hashlib.sha256(blob).digest()[:HASH_BYTES])
            if progress is not None:
                progress.update(len(chunk))


@dataclass
class SubsetImages:
    """The query and gallery images of one subset."""

    query: ImageSource
    gallery: ImageSource


@dataclass
class BenchmarkImages:
    """Every image source of a ``Benchmark``, by subset name, and the shared noise gallery."""

    subsets: dict  # subset -> SubsetImages
    noise: ImageSource | None

    @classmethod
    def of(cls, bench) -> "BenchmarkImages":
        subsets = {name: SubsetImages(ImageSource.of(f"{name}/query", splits["query"]),
                                      ImageSource.of(f"{name}/gallery", splits["gallery"]))
                   for name, splits in bench.subsets.items()}
        noise = ImageSource.of(f"{NOISE}/gallery", bench.noise) if bench.noise is not None else None
        return cls(subsets, noise)

    def sources(self) -> list[ImageSource]:
        """All sources, noise last: the order in which content ids are handed out."""
        out = [s for images in self.subsets.values() for s in (images.query, images.gallery)]
        return out + ([self.noise] if self.noise is not None else [])

    def gallery_sources(self) -> list[ImageSource]:
        """The galleries and the noise, in the order of ``sources``: what text queries search."""
        return [s for s in self.sources() if not s.label.endswith("/query")]

    def hash(self, progress=None) -> None:
        if progress is not None:
            progress.reset(total=sum(len(s) for s in self.sources()))
        for source in self.sources():
            source.hash(progress)


@dataclass
class Decoded:
    """One decoded batch: the model inputs of its readable images, and per image an error message or None."""

    inputs: list | np.ndarray  # or what ``Encoder.host_batch`` made of the stacked array (a pinned tensor)
    errors: list


def decode(encoder: Encoder, blobs: list) -> Decoded:
    """Decode + preprocess one batch (runs in a worker thread).

    Equal-shaped array inputs are stacked here (``as_batch``) and handed to ``encoder.host_batch`` (pinned memory
    for an accelerator), so neither copy is made on the forward thread.
    """
    inputs, errors = [], []
    for blob in blobs:
        buffer = io.BytesIO(blob)
        try:
            with Image.open(buffer) as image:
                image.load()
                inputs.append(encoder.preprocess(image))
            errors.append(None)
        except Exception as err:  # PIL raises many types for a bad file; all mean "unreadable image"
            # PIL names the file it was given, here an in-memory buffer: "<_io.BytesIO object at 0x…>" says nothing.
            errors.append(f"{type(err).__name__}: {str(err).replace(repr(buffer), f'the image ({len(blob)} bytes)')}")
    if inputs and all(isinstance(x, np.ndarray) and x.shape == inputs[0].shape for x in inputs):
        return Decoded(encoder.host_batch(as_batch(inputs)), errors)
    return Decoded(inputs, errors)
