"""Both GR-Lite-mini cards' real-photo tables are what `lookbench evaluate` gives on the release `lookbench build
--source fashion-mnist` makes (the 10,000 t10k photos; needs the Debian package dataset-fashion-mnist, which .ci/run
installs). One file for both: GR-Lite-mini-text's image tower is GR-Lite-mini (lookbench.encoders.tower), so its run
reads the gallery from the embedding cache GR-Lite-mini's run filled, and the photos are encoded once."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lookbench.cli import main
from lookbench.encoders.entries import gr_lite_mini_folder, gr_lite_mini_text_folder
from tests.helpers.model_card import card_rows, check
from tests.helpers.photos import fashion_mnist_release

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return fashion_mnist_release(tmp_path_factory)


@pytest.fixture(scope="module")
def image_run(release, tmp_path_factory) -> Path:
    """``evaluate --model gr-lite-mini --no-distractors`` on the release, into an empty embedding cache (``cache``)."""
    folder = tmp_path_factory.mktemp("gr-lite-mini")
    assert main(["evaluate", "--data", str(release), "--model", "gr-lite-mini", "--no-distractors",
                 "--cache-dir", str(folder / "cache"), "--output", str(folder / "out"), "--no-save", "--quiet"]) == 0
    return folder


def test_gr_lite_mini_real_photo_table_is_reproduced(image_run):
    (expected,) = card_rows(gr_lite_mini_folder() / "README.md", "GR-Lite-mini (this model)", "real-photos",
                            ("strict",), subsets=()).values()
    result = json.loads((image_run / "out" / "results.json").read_text())
    counts = result["provenance"]["counts"]
    assert counts["cache_hits"] == 0 and counts["forward_images"] == counts["unique_images"] > 9_000, counts
    assert result["provenance"]["dataset"]["name"] == "Fashion-MNIST real photos in LookBench's format"
    assert result["provenance"]["distractors"] is False
    check(expected, result, "strict", subsets=())


def test_gr_lite_mini_text_real_photo_table_is_reproduced_from_the_cached_gallery(release, image_run, tmp_path):
    """No photo is encoded again (the gallery comes from GR-Lite-mini's cache, copied); the text queries are."""
    shutil.copytree(image_run / "cache", tmp_path / "cache")
    forms = card_rows(gr_lite_mini_text_folder() / "README.md", "GR-Lite-mini-text (this model)", "real-photos",
                      ("strict, short", "strict, long"), subsets=())
    for form, expected in forms.items():
        out = tmp_path / form.split(", ")[1]
        assert main(["evaluate", "--queries", "text", "--text-form", form.split(", ")[1], "--data", str(release),
                     "--model", "gr-lite-mini-text", "--no-distractors", "--cache-dir", str(tmp_path / "cache"),
                     "--output", str(out), "--no-save", "--quiet"]) == 0
        result = json.loads((out / "results.json").read_text())
        counts = result["provenance"]["counts"]
        assert counts["forward_images"] == 0 and counts["cache_hits"] == counts["unique_images"] > 0, counts
        assert counts["texts_encoded"] > 0
        check(expected, result, form, subsets=())
