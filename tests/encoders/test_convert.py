"""A Hub entry's snapshot at its pin (``lookbench.encoders.convert``): one line naming what to download when it is
missing; published checkpoints converted once per commit, to what the published backbone computes; a failed
conversion is one line and leaves no folder."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from lookbench.cli import main
from lookbench.encoders.base import EncoderError
from lookbench.encoders.registry import load_encoder
from lookbench.models.gr_lite.configuration_gr_lite import PRESETS
from lookbench.paths import converted_models_dir
from tests.helpers.engine_data import write_folder
from tests.helpers.hub_cache import GR_LITE_TINY, TEST_HEAD, cache_family, put_snapshot, tiny_clip, tiny_gr_lite_published

GR_LITE_PIN = "a8057f8aadaaab91670ad37949f6e1b5aa187e29"  # the registry's pin, typed from its public source


def test_a_pinned_model_missing_from_the_cache_is_one_line_naming_what_to_download(capsys, hub, tmp_path):
    put_snapshot(hub, "openai/clip-vit-base-patch32", "f" * 40, tiny_clip(tmp_path / "other"))  # another commit only
    data = write_folder(tmp_path / "data")
    capsys.readouterr()
    assert main(["evaluate", "--model", "clip-b32", "--data", str(data), "--no-save", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "clip-b32" in err
    assert err.endswith("hf download openai/clip-vit-base-patch32 --revision 3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268")


def test_converted_checkpoints_are_cached_per_commit(hub, harness, tmp_path):
    commit = cache_family(hub, "gr-lite", tmp_path)
    first = load_encoder("gr-lite")
    converted = first.folder
    assert converted.parent.name == "srpone--gr-lite" and converted.name == commit == GR_LITE_PIN
    stamp = (converted / "model.safetensors").stat().st_mtime_ns
    again = load_encoder("gr-lite")
    assert again.folder == converted and (converted / "model.safetensors").stat().st_mtime_ns == stamp
    assert again.fingerprint == first.fingerprint
    # the embedding is the published DINOv3 backbone's L2-normalised CLS on the harness's 518 px input
    from safetensors.torch import load_file
    from transformers import DINOv3ViTConfig, DINOv3ViTModel

    published = load_file(str(hub / "models--srpone--gr-lite" / "snapshots" / commit / "model.safetensors"))
    backbone = DINOv3ViTModel(DINOv3ViTConfig(**{**PRESETS["gr-lite"]["vision_config"], **GR_LITE_TINY})).eval()
    backbone.load_state_dict({("model." + k if k.startswith("layer.") else k): v for k, v in published.items()})
    image = Image.fromarray(np.random.default_rng(3).integers(0, 256, (50, 40, 3), dtype=np.uint8))
    x = harness(image, 518, "dinov2")
    with torch.no_grad():
        expected = F.normalize(backbone(pixel_values=torch.from_numpy(x)[None]).pooler_output, dim=-1)
    np.testing.assert_allclose(again.encode_batch([again.preprocess(image)]), expected.numpy(), atol=1e-5)


def test_a_checkpoint_that_does_not_convert_is_one_line_and_leaves_no_folder(hub, tmp_path):
    source = tiny_gr_lite_published(tmp_path / "src")
    (source / "config.json").write_text(json.dumps({**GR_LITE_TINY, "hidden_size": 32}))  # the weights are 16 wide
    put_snapshot(hub, "srpone/gr-lite", GR_LITE_PIN, source)
    with pytest.raises(EncoderError) as err:
        load_encoder("gr-lite")
    assert str(err.value).startswith(f"gr-lite: cannot convert srpone/gr-lite@{GR_LITE_PIN[:12]}: ")
    assert "shape mismatches" in str(err.value) and "\n" not in str(err.value)
    assert not any((converted_models_dir() / "srpone--gr-lite").iterdir())




def test_a_conversion_never_writes_through_a_planted_link_and_clears_a_killed_ones_leftovers(hub, tmp_path):
    """Issue 37: the conversion staged into the predictable ``<commit>.partial``: a link planted there met a bare
    FileExistsError; staging is now a new sibling, and what a killed conversion left is cleared by the next."""
    commit = cache_family(hub, "gr-lite", tmp_path)
    family = converted_models_dir() / "srpone--gr-lite"
    family.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (family / f"{commit}.partial").symlink_to(outside)
    (family / f".{commit}.converting-0123456789ab").mkdir()
    assert load_encoder("gr-lite").folder == family / commit
    assert list(outside.iterdir()) == [] and (family / commit / "config.json").is_file()
    assert sorted(p.name for p in family.iterdir()) == [commit, f"{commit}.partial"]
