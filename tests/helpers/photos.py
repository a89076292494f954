"""A small real-photo source for the demo's second gallery: the first images of Fashion-MNIST's t10k split (from the
Debian package dataset-fashion-mnist) as the two IDX files ``lookbench build --source fashion-mnist --input`` reads,
so a test stages or serves real photos without encoding all 10,000; and the default real-photo release of all of
them, built once per run for the tests that score it."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest


def small_photos(folder: Path, n: int = 200) -> Path:
    """``folder`` holding the first ``n`` t10k photos and their labels (skips the test without the Debian package)."""
    from lookbench.dataset_builder import SourceError
    from lookbench.dataset_builder import fashion_mnist as fm

    try:
        source = fm.package_folder()
    except SourceError as err:
        pytest.skip(str(err))
    images, labels = fm.read_split(source, "t10k")
    folder.mkdir(parents=True, exist_ok=True)
    image_name, label_name = fm.FILES["t10k"]
    header = fm.IMAGE_MAGIC.to_bytes(4, "big") + n.to_bytes(4, "big") + (fm.SIDE).to_bytes(4, "big") * 2
    (folder / image_name).write_bytes(gzip.compress(header + np.ascontiguousarray(images[:n], np.uint8).tobytes(), mtime=0))
    (folder / label_name).write_bytes(gzip.compress(fm.LABEL_MAGIC.to_bytes(4, "big") + n.to_bytes(4, "big")
                                                    + np.ascontiguousarray(labels[:n], np.uint8).tobytes(), mtime=0))
    return folder


def fashion_mnist_release(tmp_path_factory) -> Path:
    """The release ``lookbench build --source fashion-mnist`` makes by default (the 10,000 t10k photos), built once per
    run (tests/helpers/shared.py) and only read (skips the test without the Debian package)."""
    from lookbench.dataset_builder import SourceError, build_release

    from tests.helpers.shared import built_once

    try:
        return built_once(tmp_path_factory, "fashion-mnist", lambda folder: build_release("fashion-mnist", folder))
    except SourceError as err:
        if "is not installed" not in str(err):
            raise
        pytest.skip(f"needs the Debian package dataset-fashion-mnist: {err}")
