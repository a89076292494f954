"""Scoring each subset (lookbench.engine.scoring): a subset left with no gallery is an error, not a score."""
from __future__ import annotations

import pytest

import lookbench
from lookbench.engine import EvaluationError

from tests.helpers.engine_data import tiny_release, write_folder


def test_empty_gallery_is_an_error(tmp_path):
    release = tiny_release()
    for row in release["AIGen-Studio"]["gallery"]:
        row["image"] = {"bytes": b"broken", "path": None}
    folder = write_folder(tmp_path / "empty", release)
    with pytest.raises(EvaluationError, match="AIGen-Studio: the gallery is empty"):
        lookbench.evaluate("raw-pixels", data=folder, distractors=False, skip_invalid=True, cache_dir=tmp_path, quiet=True)
