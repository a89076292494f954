"""The text track's baselines (issue 39 item 5): what a model's reading of the words adds is measured against them.

- ``random``: every image and every text is its own random unit vector, seeded by its content (the image's pixels,
  the text's characters), so a run is reproducible and a query is no nearer its match than chance — the floor.
- ``category-text``: an oracle, not a model. It is told the category of each query and of each gallery row (the
  ground truth, row by row) and nothing else, and ranks every gallery row of the query's category first, in a fixed
  random order (by the row's image content), then the rest. That is the best a model that reads the category word and
  nothing else can do: its strict Fine Recall@1 is about the chance that a gallery row of the right category carries
  every attribute asked for. The engine serves it through its oracle path (``oracle = True``:
  ``encode_queries(categories)`` and ``encode_gallery(categories, keys)`` instead of words and pixels), the same way
  for image and text queries, since it reads neither.
"""
from __future__ import annotations

import hashlib

import numpy as np

from lookbench.encoders.base import Encoder, EncoderError, as_batch, to_rgb


def _seed(kind: str, content: bytes) -> int:
    return int.from_bytes(hashlib.sha256(kind.encode() + b"\0" + content).digest()[:8], "big")


def _unit(kind: str, content: bytes, dim: int) -> np.ndarray:
    vector = np.random.default_rng(_seed(kind, content)).standard_normal(dim)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


class RandomEncoder(Encoder):
    """The chance floor: a random unit vector per image (by its pixels) and per text (by its characters)."""

    forward_uses_all_cores = False  # a hash and a few numbers per image: decoding may overlap it

    def __init__(self, meta):
        self.name, self.embed_dim = meta.name, meta.embed_dim
        self.preprocessing = "rgb pixels -> sha256 -> seeded normal vector"
        self.text_tower = "utf-8 text -> sha256 -> seeded normal vector (reads nothing)"
        self.fingerprint = f"{self.name}:{meta.revision}"
        self.provenance = {"model": self.name}

    def preprocess(self, image):
        return np.frombuffer(hashlib.sha256(to_rgb(image).tobytes()).digest(), dtype=np.uint8)

    def encode_batch(self, arrays):
        return np.stack([_unit("image", bytes(digest), self.embed_dim) for digest in as_batch(arrays)])

    def encode_text(self, texts):
        return np.stack([_unit("text", text.encode("utf-8"), self.embed_dim) for text in texts])


class CategoryTextOracle(Encoder):
    """Knows only categories: a query is its category's axis; a gallery row is its category's axis times ``a`` plus
    ``sqrt(1 - a^2)`` on an axis no query uses, ``a`` in [0.5, 1) fixed by the row's image content. The cosine of a
    query and a row is then ``a`` for the same category and exactly 0 for any other: same-category rows first, in the
    order of their ``a``. Axes are handed out to categories as they are first seen (at most ``dim - 1`` of them)."""

    oracle = True
    forward_uses_all_cores = False

    def __init__(self, meta):
        self.name, self.embed_dim = meta.name, meta.embed_dim
        self.preprocessing = "the ground-truth category of each gallery row (oracle); pixels are not read"
        self.text_tower = "the ground-truth category of each query (oracle); the words are not read"
        self.fingerprint = f"{self.name}:{meta.revision}"
        self.provenance = {"model": self.name, "oracle": "told every query's and gallery row's category"}
        self.axes: dict[str, int] = {}

    def _axis(self, category: str) -> int:
        if category not in self.axes:
            if len(self.axes) == self.embed_dim - 1:
                raise EncoderError(f"Model {self.name!r} has room for {self.embed_dim - 1} categories; the data has more")
            self.axes[category] = len(self.axes)
        return self.axes[category]

    def encode_queries(self, categories: list[str]) -> np.ndarray:
        out = np.zeros((len(categories), self.embed_dim), dtype=np.float32)
        out[np.arange(len(categories)), [self._axis(c) for c in categories]] = 1.0
        return out

    def encode_gallery(self, categories: list[str], keys: list[bytes]) -> np.ndarray:
        """One row per gallery image: ``keys`` (its content hash) fixes its place among its category's rows."""
        a = np.array([0.5 + 0.5 * (_seed("order", key) / 2.0**64) for key in keys], dtype=np.float64)
        out = np.zeros((len(categories), self.embed_dim), dtype=np.float32)
        out[np.arange(len(categories)), [self._axis(c) for c in categories]] = a
        out[:, -1] = np.sqrt(1.0 - a**2)
        return out

    def encode_batch(self, arrays):
        raise EncoderError(f"Model {self.name!r} is an oracle: it reads categories, never pixels")

    def encode_text(self, texts):
        raise EncoderError(f"Model {self.name!r} is an oracle: it reads categories, never words")
