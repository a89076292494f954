"""convert_gr_lite_checkpoint: the published checkpoint's layout into a GR-Lite folder, exactly, or a named refusal."""
from __future__ import annotations

import datetime as dt

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import DINOv3ViTModel

from lookbench.models.gr_lite import GrLiteConfig, GrLiteModel
from lookbench.models.gr_lite.convert_gr_lite_checkpoint import convert, main as convert_main
from tests.helpers.gr_lite import tiny_config


def published_checkpoint(config: GrLiteConfig) -> tuple[DINOv3ViTModel, dict[str, torch.Tensor]]:
    """A random DINOv3 backbone and its state dict in the published GR-Lite layout (`layer.N.*`)."""
    torch.manual_seed(1)
    backbone = DINOv3ViTModel(config.vision_config).eval()
    ours = backbone.state_dict()
    assert "model.layer.0.attention.q_proj.weight" in ours  # what transformers' DINOv3ViTModel expects
    published = {k.removeprefix("model."): v.clone() for k, v in ours.items()}
    assert "layer.0.attention.q_proj.weight" in published and "embeddings.register_tokens" in published
    return backbone, published


def test_converter_reproduces_dinov3_embeddings_from_safetensors_and_pt(tmp_path):
    config = tiny_config()
    backbone, published = published_checkpoint(config)
    save_file(published, tmp_path / "gr_lite.safetensors")
    torch.save({"state_dict": published}, tmp_path / "gr_lite.pt")
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        expected = F.normalize(backbone(pixel_values=x).pooler_output, dim=-1)
    config.to_json_file(tmp_path / "tiny.json")
    for source in ("gr_lite.safetensors", "gr_lite.pt"):
        out = tmp_path / f"converted-{source}"
        convert_main(["--checkpoint", str(tmp_path / source), "--output", str(out), "--config", str(tmp_path / "tiny.json")])
        assert sorted(p.name for p in out.glob("*.safetensors")) == ["model.safetensors"]
        assert not list(out.glob("*.bin")) and (out / "preprocessor_config.json").exists()
        card = (out / "README.md").read_text()
        assert "license: other" in card and "license_name: dinov3-license" in card and f"Converted from `{source}`" in card
        model = GrLiteModel.from_pretrained(out).eval()
        with torch.no_grad():
            torch.testing.assert_close(model(pixel_values=x).image_embeds, expected, atol=1e-6, rtol=1e-5)


def test_converter_refuses_partial_load_and_pickles(tmp_path):
    config = tiny_config()
    _, published = published_checkpoint(config)
    del published["layer.1.mlp.up_proj.weight"]
    published["head.weight"] = torch.zeros(3)
    save_file(published, tmp_path / "partial.safetensors")
    with pytest.raises(ValueError) as err:
        convert(tmp_path / "partial.safetensors", tmp_path / "out", config)
    assert "backbone.model.layer.1.mlp.up_proj.weight" in str(err.value) and "--allow-missing" in str(err.value)
    assert "backbone.head.weight" in str(err.value) and not (tmp_path / "out").exists()
    model = convert(tmp_path / "partial.safetensors", tmp_path / "out", config, allow_missing=True, allow_unexpected=True)
    assert torch.equal(model.backbone.model.layer[0].mlp.up_proj.weight, published["layer.0.mlp.up_proj.weight"])
    # a wrong preset is a shape error naming the key, not a silent partial load
    with pytest.raises(ValueError, match=r"embeddings.cls_token: checkpoint \(1, 1, 64\) vs model \(1, 1, 192\)"):
        convert(tmp_path / "partial.safetensors", tmp_path / "out2", GrLiteConfig.from_preset("gr-lite-mini"), allow_missing=True)
    # arbitrary pickled objects are never unpickled
    torch.save({"layer.0.x": torch.zeros(1), "evil": dt.timezone.utc}, tmp_path / "pickled.pt")
    with pytest.raises(ValueError, match="not a weights-only PyTorch state dict"):
        convert(tmp_path / "pickled.pt", tmp_path / "out3", config)
