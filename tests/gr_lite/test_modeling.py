"""GR-Lite's transformers code: config presets, the model's embedding and bf16, the processor against an independent
reference, registration in fresh processes both ways, and the committed model folder's code files as real copies."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image, ImageFilter

from lookbench.models.gr_lite import GrLiteConfig, GrLiteImageProcessor, GrLiteModel, processor_for
from tests.helpers.gr_lite import BLOCK_LOOKBENCH, CODE_FILES, GR_LITE_DIR, run_python, tiny_config

IMAGENET_MEAN = torch.tensor([0.485, 0.456, 0.406])[:, None, None]
IMAGENET_STD = torch.tensor([0.229, 0.224, 0.225])[:, None, None]


# ---------------------------------------------------------------- configuration and model


def test_presets_match_design():
    full = GrLiteConfig.from_preset("gr-lite")
    with torch.device("meta"):
        model = GrLiteModel(full)
    n_params = sum(p.numel() for p in model.parameters())
    assert 300e6 < n_params < 306e6  # DINOv3 ViT-L/16: 303M
    assert (full.image_size, full.embedding_dim, full.vision_config.num_register_tokens) == (336, 1024, 4)
    assert full.vision_config.image_size == 336 and full.normalize
    mini = GrLiteConfig.from_preset("gr-lite-mini")
    assert (mini.image_size, mini.embedding_dim) == (128, 192)
    assert GrLiteConfig.from_preset("gr-lite-mini", embed_dim=64).embedding_dim == 64
    with pytest.raises(ValueError, match="not a multiple of the patch size 16"):
        GrLiteConfig.from_preset("gr-lite", image_size=330)
    with pytest.raises(ValueError, match="Unknown GR-Lite preset 'gr-lite-xl'"):
        GrLiteConfig.from_preset("gr-lite-xl")


def test_embeddings_are_normalised_cls_and_bf16_works():
    torch.manual_seed(0)
    model = GrLiteModel(tiny_config(embed_dim=32)).eval()
    x = torch.randn(3, 3, 64, 64)
    with torch.no_grad():
        out = model(pixel_values=x)
        backbone = model.backbone(pixel_values=x)
    expected = F.normalize(model.projection(backbone.pooler_output), dim=-1)
    torch.testing.assert_close(out.image_embeds, expected)
    torch.testing.assert_close(out.pooler_output, backbone.last_hidden_state[:, 0])
    torch.testing.assert_close(model.get_image_features(x), out.image_embeds)
    model_bf16 = model.to(torch.bfloat16)
    with torch.no_grad():
        low = model_bf16(pixel_values=x).image_embeds
    assert low.dtype == torch.bfloat16 and low.shape == (3, 32)
    assert torch.allclose(low.float().norm(dim=-1), torch.ones(3), atol=1e-2)
    assert F.cosine_similarity(low.float(), out.image_embeds, dim=-1).min() > 0.99


# ---------------------------------------------------------------- processor


def reference_preprocess(image: Image.Image, size: int) -> torch.Tensor:
    """DINOv3's steps done independently: alpha onto white, RGB, /255, antialiased bilinear resize, ImageNet norm."""
    if "A" in image.getbands() or "transparency" in image.info:
        image = Image.alpha_composite(Image.new("RGBA", image.size, (255, 255, 255, 255)), image.convert("RGBA"))
    x = torch.from_numpy(np.asarray(image.convert("RGB"), dtype=np.float32) / 255).permute(2, 0, 1)[None]
    x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)[0]
    return (x - IMAGENET_MEAN) / IMAGENET_STD


def mode_zoo() -> dict[str, Image.Image]:
    rng = np.random.default_rng(0)
    base = Image.fromarray(rng.integers(0, 256, (150, 230, 3), dtype=np.uint8)).filter(ImageFilter.GaussianBlur(2))
    rgba = base.convert("RGBA")
    rgba.putalpha(Image.fromarray(rng.integers(0, 256, (150, 230), dtype=np.uint8)))
    palette_transparent = base.convert("P")
    palette_transparent.info["transparency"] = int(np.asarray(palette_transparent)[0, 0])
    return {
        "RGB": base, "RGBA": rgba, "P": base.convert("P"), "P+transparency": palette_transparent,
        "CMYK": base.convert("CMYK"), "L": base.convert("L"), "LA": rgba.convert("LA"), "1": base.convert("1"),
    }


@pytest.mark.parametrize("size", [336, 128, 64])
def test_processor_matches_reference_within_one_uint8_level(size):
    processor = GrLiteImageProcessor(size={"height": size, "width": size})
    for mode, image in mode_zoo().items():
        ours = processor(image, return_tensors="pt").pixel_values[0]
        ref = reference_preprocess(image, size)
        assert ours.shape == (3, size, size)
        levels = ((ours - ref) * IMAGENET_STD * 255).abs().max().item()
        assert levels <= 1.0, f"{mode} at {size}px differs by {levels:.3f} uint8 levels"
    # transparency really composites onto white, not black
    clear = Image.new("RGBA", (40, 40), (0, 0, 0, 0))
    white = (torch.ones(3, 1, 1) - IMAGENET_MEAN) / IMAGENET_STD
    torch.testing.assert_close(processor(clear, return_tensors="pt").pixel_values[0, :, :1, :1], white, atol=1e-5, rtol=0)


# ---------------------------------------------------------------- registration in fresh processes

EMBED_SNIPPET = """
import sys, numpy as np, torch
from PIL import Image
from transformers import AutoImageProcessor, AutoModel
model = AutoModel.from_pretrained({folder!r}, {kwargs}).eval()
processor = AutoImageProcessor.from_pretrained({folder!r}, {kwargs})
images = [Image.open(p) for p in {images!r}]
with torch.no_grad():
    embeds = model(**processor(images, return_tensors="pt")).image_embeds
np.save({out!r}, embeds.numpy())
print(type(model).__module__, type(processor).__module__, any(m.split(".")[0] == "lookbench" for m in sys.modules))
"""


@pytest.mark.slow
def test_fresh_process_registration_both_ways(tmp_path):
    torch.manual_seed(2)
    config = tiny_config()
    folder = tmp_path / "gr-lite-tiny"
    model = GrLiteModel(config).eval()
    model.save_pretrained(folder)
    processor_for(config).save_pretrained(folder)
    saved = json.loads((folder / "config.json").read_text())
    assert saved["model_type"] == "gr_lite"
    assert saved["auto_map"] == {"AutoConfig": "configuration_gr_lite.GrLiteConfig", "AutoModel": "modeling_gr_lite.GrLiteModel"}
    assert json.loads((folder / "preprocessor_config.json").read_text())["auto_map"] == {
        "AutoImageProcessor": "image_processing_gr_lite.GrLiteImageProcessor"
    }
    for code in CODE_FILES:  # save_pretrained copies the package's code: real files, loadable wherever the folder goes
        assert not (folder / code).is_symlink() and (folder / code).read_bytes() == (GR_LITE_DIR / code).read_bytes()
        assert "lookbench" not in (folder / code).read_text().replace("LookBench", "")
    assert not list(folder.glob("*.bin")) and not list(folder.glob("*.pt"))

    images = []
    for i, mode in enumerate(["RGB", "RGBA", "L"]):
        path = tmp_path / f"img{i}.png"
        Image.fromarray(np.random.default_rng(i).integers(0, 256, (90, 70, 3), dtype=np.uint8)).convert(mode).save(path)
        images.append(str(path))
    with torch.no_grad():
        expected = model(**processor_for(config)([Image.open(p) for p in images], return_tensors="pt")).image_embeds.numpy()

    a = run_python("from lookbench.models.gr_lite import register_auto_classes\nregister_auto_classes()\n" + EMBED_SNIPPET.format(folder=str(folder), kwargs="", images=images, out=str(tmp_path / "a.npy")), tmp_path)
    assert a.stdout.split() == ["lookbench.models.gr_lite.modeling_gr_lite", "lookbench.models.gr_lite.image_processing_gr_lite", "True"]
    code_b = BLOCK_LOOKBENCH + EMBED_SNIPPET.format(folder=str(folder), kwargs="trust_remote_code=True", images=images, out=str(tmp_path / "b.npy"))
    b = run_python(code_b, tmp_path)
    module_model, module_processor, lookbench_loaded = b.stdout.split()
    assert module_model.startswith("transformers_modules.") and module_model.endswith(".modeling_gr_lite")
    assert module_processor.endswith(".image_processing_gr_lite") and lookbench_loaded == "False"
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    np.testing.assert_allclose(np.load(tmp_path / "a.npy"), expected, atol=1e-6)


def test_committed_model_folder_code_files_are_real_copies_of_the_package_source():
    """gr-lite-mini's code files are what save_pretrained copies (generated artifacts): regular files, never links,
    byte-identical to models/gr_lite/, so they cannot drift from the code the package imports."""
    for name in CODE_FILES:
        shipped = GR_LITE_DIR / "gr-lite-mini" / name
        assert shipped.is_file() and not shipped.is_symlink(), name
        assert shipped.read_bytes() == (GR_LITE_DIR / name).read_bytes(), f"{name} drifted from models/gr_lite/{name}"


@pytest.mark.slow
def test_a_copy_of_the_committed_model_folder_loads_without_lookbench(tmp_path):
    """A copy that keeps links as links (what cp -r or an upload that follows none makes) still loads with
    trust_remote_code in a process that cannot import lookbench, and embeds as the package does."""
    copy = tmp_path / "gr-lite-mini"
    shutil.copytree(GR_LITE_DIR / "gr-lite-mini", copy, symlinks=True)
    assert not [p.name for p in copy.iterdir() if p.is_symlink()]
    images = []
    for i in range(3):
        path = tmp_path / f"img{i}.png"
        Image.fromarray(np.random.default_rng(i).integers(0, 256, (90, 70, 3), dtype=np.uint8)).save(path)
        images.append(str(path))
    proc = run_python(BLOCK_LOOKBENCH + EMBED_SNIPPET.format(folder=str(copy), kwargs="trust_remote_code=True", images=images,
                                                             out=str(tmp_path / "remote.npy")), tmp_path)
    assert proc.stdout.split()[0].startswith("transformers_modules.") and proc.stdout.split()[-1] == "False"
    model = GrLiteModel.from_pretrained(GR_LITE_DIR / "gr-lite-mini").eval()
    processor = GrLiteImageProcessor.from_pretrained(GR_LITE_DIR / "gr-lite-mini")
    with torch.no_grad():
        expected = model(**processor([Image.open(p) for p in images], return_tensors="pt")).image_embeds.numpy()
    np.testing.assert_array_equal(np.load(tmp_path / "remote.npy"), expected)
