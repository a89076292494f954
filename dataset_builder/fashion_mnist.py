"""Zalando's Fashion-MNIST as a LookBench source: real product photos, read from the four standard IDX files.

The one set of real fashion photos installable offline (Debian ``dataset-fashion-mnist``, MIT). The t10k split
is the release (``RealStudioFlat``: every tenth image a query, the rest the gallery, so no image is in both);
the train split is the training set (``--train-out``), in the same record schema as LookBench-Mini train. The
category is the class; the one attribute, ``shade``, is computed from the image (see ``shade``), so strict Fine
Recall asks for more than the class. Images are inverted (a dark product on white, as shop photos are) and
resized from 28 to ``SIZE`` px.
"""
from __future__ import annotations

import datetime as dt
import functools
import gzip
import io
import subprocess
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np
from PIL import Image

from lookbench.files import contained_file, read_at_most, read_regular

import lookbench.dataset_builder.sources as sources  # MAX_FILE_BYTES read at call time: tests lower it
from lookbench.dataset_builder.sources import TRAIN, SourceError
from lookbench.dataset_builder.taxonomy import Taxonomy

PACKAGE = "dataset-fashion-mnist"
FILES = {  # split -> (images, labels): the names Zalando publishes
    "t10k": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
}
CLASSES = ("t-shirt/top", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot")
IMAGE_MAGIC, LABEL_MAGIC, SIDE = 0x00000803, 0x00000801, 28
SIZE = 96  # px, the stored image side (bicubic upscale of the 28 px original)
QUERY_EVERY = 10  # t10k image i (0-based) is a query when i % 10 == 0
# The shade of a product: the mean original grey level (0-255, white product on black) of its pixels (value > 0).
SHADE_BINS = ((128, "light"), (170, "medium"), (256, "dark"))
# Fashion-MNIST's publication (arXiv:1708.07747, 25 August 2017): the date every row carries.
PUBLISHED = dt.datetime(2017, 8, 25, tzinfo=dt.timezone.utc)
RELEASE = f"v{PUBLISHED:%Y%m%d}"
CONFIG = "RealStudioFlat"
ID_PREFIX = "fashion-mnist-"  # item ids are ID_PREFIX + "<split>-<index>"
# The release's taxonomy: the ten classes, each with the one attribute ``shade`` (also the main attribute).
TAXONOMY = Taxonomy.of("fashion-mnist", "1", {c: {"shade": [name for _, name in SHADE_BINS]} for c in CLASSES},
                       "shade")


def package_folder() -> Path:
    """The folder of the installed Debian package's IDX files, from the package manager's file list."""
    try:
        listed = subprocess.run(["dpkg", "-L", PACKAGE], capture_output=True, text=True, check=False)
    except OSError:
        listed = None
    files = [Path(line) for line in (listed.stdout.splitlines() if listed and listed.returncode == 0 else [])]
    found = [p.parent for p in files if p.name == FILES["t10k"][0]]
    if not found:
        raise SourceError(f"--source fashion-mnist: the Debian package {PACKAGE} is not installed "
                          f"(apt-get install {PACKAGE}), so pass --input DIR with the four IDX .gz files")
    return found[0]


def shade(original: np.ndarray) -> str:
    """``light``, ``medium`` or ``dark``: the mean grey level of the product's pixels in the 28 px original."""
    ink = original[original > 0]
    level = float(ink.mean()) if ink.size else 0.0
    return next(name for limit, name in SHADE_BINS if level < limit)


def _read_idx(path: Path, magic: int, item_bytes: int) -> np.ndarray:
    """The records of one gzip IDX file as (n, item_bytes) uint8, after checking its header against its data.

    The compressed file is read like every file given from outside (regular, size-capped, non-blocking). The data
    is decompressed in chunks, at most one byte past what the header declares and never past the size limit of
    one file (``sources.MAX_FILE_BYTES``, like the compressed file; Fashion-MNIST's largest holds 47 MB), so a
    header that claims more than the file holds, or a gzip bomb, is refused before anything of the claimed size
    is allocated.
    """
    try:
        compressed = read_regular(path, sources.MAX_FILE_BYTES)
    except ValueError as err:
        raise SourceError(str(err)) from None
    limit = sources.MAX_FILE_BYTES
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(compressed), mode="rb") as file:
            header_size = 16 if magic == IMAGE_MAGIC else 8
            header = file.read(header_size)
            if len(header) < 8 or int.from_bytes(header[:4], "big") != magic:
                found = f"0x{int.from_bytes(header[:4], 'big'):08x}" if len(header) >= 4 else "no header"
                raise SourceError(f"{path}: wrong magic number {found} (an IDX {'image' if magic == IMAGE_MAGIC else 'label'} "
                                  f"file starts with 0x{magic:08x})")
            count = int.from_bytes(header[4:8], "big")
            if magic == IMAGE_MAGIC and (len(header) < 16 or header[8:16] != (SIDE).to_bytes(4, "big") * 2):
                raise SourceError(f"{path}: the header does not declare {SIDE}x{SIDE} images")
            if count == 0:
                raise SourceError(f"{path}: the header declares 0 records: the split is empty, and a Fashion-MNIST "
                                  "split needs at least one image")
            expected = count * item_bytes
            data = read_at_most(file, min(expected, limit))
    except (OSError, EOFError, zlib.error) as err:
        raise SourceError(f"{path}: truncated or not a gzip IDX file ({err})") from None
    if len(data) > limit:
        raise SourceError(f"{path}: the header declares {count} records of {item_bytes} byte(s), and the file holds "
                          f"more than {limit} byte(s) of data, the limit of one file")
    if len(data) != expected:
        state = "truncated" if len(data) < expected else "longer than its header says"
        raise SourceError(f"{path}: {state}: the header declares {count} records of {item_bytes} byte(s), "
                          f"the file holds {len(data)} byte(s) of data")
    return np.frombuffer(data, dtype=np.uint8).reshape(count, item_bytes)


def read_split(root: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(images n×28×28, labels n) of ``split`` (``t10k`` or ``train``) under ``root``, checked against each other.

    A build reads each split several times (count, validate, write): the decoded files are kept while unchanged.
    """
    try:
        paths = [contained_file(root, name) for name in FILES[split]]
    except ValueError as err:
        raise SourceError(f"Fashion-MNIST folder {root}: {err}") from None
    return _read_split(root, split, tuple((p.stat().st_mtime_ns, p.stat().st_size) for p in paths))


@functools.lru_cache(maxsize=2)
def _read_split(root: Path, split: str, stamps: tuple) -> tuple[np.ndarray, np.ndarray]:
    image_name, label_name = FILES[split]
    images = _read_idx(root / image_name, IMAGE_MAGIC, SIDE * SIDE).reshape(-1, SIDE, SIDE)
    labels = _read_idx(root / label_name, LABEL_MAGIC, 1)[:, 0]
    if len(images) != len(labels):
        raise SourceError(f"{root / label_name}: {len(labels)} labels, but {image_name} holds {len(images)} images")
    bad = np.flatnonzero(labels >= len(CLASSES))
    if len(bad):
        raise SourceError(f"{root / label_name}: label {labels[bad[0]]} of record {bad[0] + 1} is not a class (0-{len(CLASSES) - 1})")
    return images, labels


def photo(original: np.ndarray) -> bytes:
    """The stored image: inverted (dark product on white) and resized to SIZE px, as greyscale PNG."""
    image = Image.fromarray(255 - original, mode="L").resize((SIZE, SIZE), Image.BICUBIC)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


class FashionMnistSource:
    """The reader (the interface of ``sources.RawSource``) for a folder holding the four IDX ``.gz`` files."""

    def __init__(self, root=None, release: str | None = None):
        self.root = Path(root) if root is not None else package_folder()
        if not self.root.is_dir():
            raise SourceError(f"Fashion-MNIST folder {self.root} does not exist")
        self.release = release or RELEASE

    def _split(self, config: str) -> str:
        return "train" if config == TRAIN else "t10k"

    def has(self, config: str, split: str) -> bool:
        return config in (CONFIG, TRAIN)

    def taxonomy(self) -> Taxonomy:
        return TAXONOMY

    def location(self, config: str, split: str) -> str:
        return FILES[self._split(config)][0]

    def _indices(self, config: str, split: str) -> range | np.ndarray:
        n = len(read_split(self.root.resolve(), self._split(config))[1])
        if config == TRAIN:
            return range(n)
        every = np.arange(n)
        return every[every % QUERY_EVERY == 0] if split == "query" else every[every % QUERY_EVERY != 0]

    def num_rows(self, config: str, split: str) -> int:
        return len(self._indices(config, split))

    def iter_rows(self, config: str, split: str) -> Iterator[dict]:
        part = self._split(config)
        images, labels = read_split(self.root.resolve(), part)
        for index in self._indices(config, split):
            value = shade(images[index])
            yield {
                "_file": FILES[part][0], "_line": int(index) + 1, "_errors": {},
                "item_id": f"{ID_PREFIX}{part}-{index:05d}", "category": CLASSES[labels[index]],
                "main_attribute": value, "attributes": [{"name": "shade", "value": value}],
                "timestamp": PUBLISHED, "release": self.release, "source": "real", "bbox": None, "outfit_id": None,
                "image": {"bytes": photo(images[index]), "path": None}, "raw_image": None,
            }


CARD_NOTES = f"""## About this source

Real product photos from Zalando's Fashion-MNIST (70,000 images, 28 × 28 px greyscale, 10 classes), converted:

- **Split.** The t10k split (10,000 photos) is the release, one `{CONFIG}` subset: t10k image *i* (0-based) is a
  query when *i* mod {QUERY_EVERY} = 0 (1,000 queries), every other one is in the gallery (9,000), so query and
  gallery share no image. It has no noise gallery; evaluate with `--no-distractors`. The train split (60,000
  photos) is written only as a training set (`--train-out`); the t10k release is for evaluation only.
- **Images.** Inverted, so the product is dark on a white background as shop photos are, and resized from 28 to
  {SIZE} × {SIZE} px (bicubic), stored as greyscale PNG.
- **category** is the Fashion-MNIST class, lower-case: {", ".join(CLASSES)}.
- **shade** (the one attribute, also `main_attribute`) is derived from the image: the mean grey level of the
  product's pixels (those above 0 in the original white-on-black 28 px image, on 0–255) is `light` below
  {SHADE_BINS[0][0]}, `medium` from {SHADE_BINS[0][0]} to below {SHADE_BINS[1][0]}, `dark` from {SHADE_BINS[1][0]}
  (roughly thirds of the train split). Strict Fine Recall asks for the same class and the same shade; Coarse
  Recall for the class only.
- **Timestamps and release.** Every row is time-stamped {PUBLISHED:%Y-%m-%d}, the date Fashion-MNIST was
  published (arXiv:1708.07747), and belongs to the release `{RELEASE}` (`--release` renames it).
- **item_id** is `fashion-mnist-<split>-<index>`: one product per photo.
"""
