"""Decoding the benchmark's images (lookbench.engine.images): an unreadable image stops the run, or is skipped and
named when asked."""
from __future__ import annotations

import pytest

import lookbench
from lookbench.engine import EvaluationError

from tests.helpers.engine_data import tiny_release, write_folder


def test_unreadable_image_stops_or_is_skipped(tmp_path):
    release = tiny_release()
    release["AIGen-Studio"]["gallery"][1] = dict(release["AIGen-Studio"]["gallery"][1], image={"bytes": b"not an image", "path": None})
    folder = write_folder(tmp_path / "bad", release)
    with pytest.raises(EvaluationError, match=r"Unreadable image at AIGen-Studio/gallery row 2 \(item s1\)"):
        lookbench.evaluate("raw-pixels", data=folder, cache_dir=tmp_path / "c", quiet=True)
    result = lookbench.evaluate("raw-pixels", data=folder, cache_dir=tmp_path / "c", quiet=True, skip_invalid=True)
    skipped = result.provenance["counts"]["invalid_images_skipped"]
    assert len(skipped) == 1 and skipped[0].startswith("AIGen-Studio/gallery row 2 (item s1)")
    assert result.subsets["AIGen-Studio"]["gallery_size"] == 2 + 4
    assert result.subsets["AIGen-Studio"]["fine_recall@1"] == pytest.approx(200 / 3)  # query s1 lost its match
