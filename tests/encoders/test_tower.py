"""GR-Lite-mini-text's image tower is GR-Lite-mini: it reads GR-Lite-mini's cached image embeddings, and only while
that holds — other tower weights, another preprocessing or other embeddings of the same weights keep their own."""
from __future__ import annotations

import json
import shutil

import pytest
from safetensors.torch import load_file, save_file

from lookbench.cli import main
from lookbench.encoders.base import TransformersEncoder
from lookbench.encoders.entries import gr_lite_mini_text_folder
from lookbench.encoders.registry import find, load_encoder
from lookbench.encoders.tower import image_key
from tests.helpers.engine_data import write_folder

TEXT = "gr-lite-mini-text"


def counts(folder) -> dict:
    return json.loads((folder / "results.json").read_text())["provenance"]["counts"]


def test_the_text_model_reads_the_gallery_gr_lite_mini_encoded(tmp_path):
    data = write_folder(tmp_path / "tiny" / "lookbench", texts=True)
    common = ["--data", str(data), "--cache-dir", str(tmp_path / "cache"), "--no-save", "--quiet"]
    assert main(["evaluate", "--model", "gr-lite-mini", "--output", str(tmp_path / "image"), *common]) == 0
    assert main(["evaluate", "--model", TEXT, "--queries", "text", "--output", str(tmp_path / "text"), *common]) == 0
    image, text = counts(tmp_path / "image"), counts(tmp_path / "text")
    assert image["cache_hits"] == 0 and image["forward_images"] == image["unique_images"] > 0
    assert text["forward_images"] == 0 and text["cache_hits"] == text["unique_images"] > 0 and text["texts_encoded"] > 0
    assert image_key(load_encoder(TEXT)) == load_encoder("gr-lite-mini").fingerprint != load_encoder(TEXT).fingerprint


def _copy(tmp_path, name):
    folder = tmp_path / name
    shutil.copytree(gr_lite_mini_text_folder(), folder)
    return folder


@pytest.mark.parametrize("change", ["tower weights", "preprocessing", "embeddings"])
def test_a_claimed_tower_that_is_not_the_model_keeps_its_own_embeddings(tmp_path, change):
    folder = _copy(tmp_path, change.replace(" ", "-"))
    if change == "tower weights":
        weights = load_file(folder / "model.safetensors")
        name = next(k for k in sorted(weights) if k.startswith("vision_model.") and weights[k].is_floating_point())
        weights[name] = weights[name] + 1e-3
        save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    elif change == "preprocessing":
        stated = json.loads((folder / "preprocessor_config.json").read_text())
        (folder / "preprocessor_config.json").write_text(json.dumps({**stated, "size": {"height": 96, "width": 96}}))
    else:  # the same weights and preprocessing; unnormalised embeddings
        stated = json.loads((folder / "config.json").read_text())
        stated["vision_config"]["normalize"] = False
        (folder / "config.json").write_text(json.dumps(stated))
    encoder = TransformersEncoder(str(folder), find(TEXT))  # as the registered entry, which claims the tower
    assert encoder.image_tower == ("gr-lite-mini", "vision_model.")
    assert image_key(encoder) == encoder.fingerprint != load_encoder("gr-lite-mini").fingerprint


def test_a_damaged_weight_file_shares_nothing_and_raises_nothing_here(tmp_path):
    """An unreadable safetensors file is not a tower: the model keeps its own key (its own load then says what is
    wrong, as it would without the claim)."""
    folder = _copy(tmp_path, "damaged")
    (folder / "model.safetensors").write_bytes(b"\x10" + b"\x00" * 7 + b'{"a":1}not a tensor')
    encoder = TransformersEncoder(str(folder), find(TEXT))
    assert image_key(encoder) == encoder.fingerprint != load_encoder("gr-lite-mini").fingerprint
