"""GR-Lite: config presets, processor vs a reference, bf16, converter, fresh-process registration, training recipe."""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image, ImageDraw, ImageFilter
from safetensors.torch import load_file, save_file
from transformers import DINOv3ViTModel

from lookbench.models.gr_lite import GrLiteConfig, GrLiteImageProcessor, GrLiteModel, processor_for, register_auto_classes
from lookbench.models.gr_lite.convert_gr_lite_checkpoint import convert, main as convert_main
from lookbench.schema import FEATURES

IMAGENET_MEAN = torch.tensor([0.485, 0.456, 0.406])[:, None, None]
IMAGENET_STD = torch.tensor([0.229, 0.224, 0.225])[:, None, None]


def tiny_config(**overrides) -> GrLiteConfig:
    """gr-lite-mini at 64 px with 2 layers: the real architecture, cheap enough for unit tests."""
    vision = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_register_tokens=4)
    return GrLiteConfig.from_preset("gr-lite-mini", vision_config=vision, image_size=64, **overrides)


def clean_env() -> dict:
    """The test's offline environment for subprocesses, without PYTHONPATH (lookbench comes from the install)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def run_python(code: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


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


# ---------------------------------------------------------------- converter


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

BLOCK_LOOKBENCH = """
import sys
class _BlockLookbench:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "lookbench":
            raise ImportError("lookbench is deliberately unavailable in this process")
sys.meta_path.insert(0, _BlockLookbench())
try:
    import lookbench
    raise SystemExit("lookbench should not be importable here")
except ImportError:
    pass
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


GR_LITE_DIR = Path(__file__).resolve().parents[2] / "models" / "gr_lite"
CODE_FILES = ("configuration_gr_lite.py", "modeling_gr_lite.py", "image_processing_gr_lite.py")


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


# ---------------------------------------------------------------- training recipe

COLOURS = {"red": (200, 30, 30), "blue": (30, 60, 200), "green": (30, 160, 60)}


def garment(category: str, colour: str, rng: random.Random, size: int = 80) -> Image.Image:
    """A flat-lay drawing whose class is visible: a T-shirt or a skirt silhouette in one colour."""
    image = Image.new("RGB", (size, size), (235, 235, 230))
    draw = ImageDraw.Draw(image)
    fill = tuple(max(0, min(255, c + rng.randint(-20, 20))) for c in COLOURS[colour])
    j = lambda: rng.randint(-5, 5)  # noqa: E731
    if category == "top":
        draw.rectangle([17 + j(), 20 + j(), 63 + j(), 67 + j()], fill=fill)
        draw.rectangle([6 + j(), 20 + j(), 18, 42 + j()], fill=fill)
        draw.rectangle([62, 20 + j(), 74 + j(), 42 + j()], fill=fill)
    else:
        draw.polygon([(33 + j(), 12 + j()), (47 + j(), 12 + j()), (71 + j(), 70 + j()), (9 + j(), 70 + j())], fill=fill)
    return image


@pytest.fixture(scope="module")
def train_folder(tmp_path_factory) -> Path:
    """A LookBench-schema train split of 6 classes × 16 images (two views per product), in a folder
    `load_dataset(DIR, split="train")` reads."""
    rng = random.Random(0)
    rows = {name: [] for name in FEATURES}
    for category in ("top", "skirt"):
        for colour in COLOURS:
            for i in range(16):
                rows["image"].append(garment(category, colour, rng))
                rows["item_id"].append(f"{category}-{colour}-{i // 2}")
                rows["category"].append(category)
                rows["main_attribute"].append(colour)
                rows["attributes"].append([{"name": "colour", "value": colour}, {"name": "fit", "value": "regular"}])
                rows["bbox"].append(None)
                rows["outfit_id"].append(None)
                rows["timestamp"].append(dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc))
                rows["release"].append("test")
                rows["source"].append("aigen")
                rows["raw_image"].append(None)
    folder = tmp_path_factory.mktemp("train-data")
    datasets.Dataset.from_dict(rows, features=FEATURES).to_parquet(str(folder / "train-00000-of-00001.parquet"))
    return folder


TRAIN_ARGS = ["--image-size", "64", "--batch-size", "16", "--lr", "1e-3", "--warmup-steps", "4", "--log-every", "4"]


def train(cwd: Path, data: Path, out: Path, *extra: str, launcher: list[str] | None = None, env: dict | None = None):
    cmd = (launcher or [sys.executable]) + ["-m", "lookbench.models.gr_lite.train_gr_lite", "--data", str(data),
                                           "--output", str(out), *TRAIN_ARGS, *extra]
    env = {**clean_env(), **(env or {})}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]


def test_class_key_is_category_plus_attribute_set():
    from lookbench.models.gr_lite.train_gr_lite import class_key

    a = [{"name": "colour", "value": "red"}, {"name": "fit", "value": "slim"}]
    assert class_key("top", a) == class_key("top", a[::-1]) == "top|colour=red;fit=slim"
    assert class_key("top", a) != class_key("skirt", a) != class_key("top", a[:1])


@pytest.mark.slow
def test_training_single_process_learns_and_resumes_exactly(tmp_path, train_folder):
    log = train(tmp_path, train_folder, tmp_path / "run", "--max-steps", "24", "--save-every", "10")
    assert [r["step"] for r in log] == [4, 8, 12, 16, 20, 24] and {r["world_size"] for r in log} == {1}
    losses = [r["loss"] for r in log]
    assert np.mean(losses[-2:]) < 0.8 * np.mean(losses[:2]), losses
    final = tmp_path / "run" / "model"
    summary = json.loads((final / "training_summary.json").read_text())
    assert summary["num_classes"] == 6 and summary["num_images"] == 96 and summary["steps"] == 24
    for name in CODE_FILES:  # save_pretrained copies the code: the folder loads wherever it is copied
        assert not (final / name).is_symlink() and (final / name).read_bytes() == (GR_LITE_DIR / name).read_bytes(), name
    card = (final / "README.md").read_text()
    assert "library_name: transformers" in card and "6 ArcFace classes" in card and "24 steps" in card
    assert "{{" not in card and "{%" not in card  # the template is filled completely

    # the trained embedding separates the ArcFace classes far better than the same network at random init
    from transformers import AutoImageProcessor, AutoModel

    register_auto_classes()
    model, processor = AutoModel.from_pretrained(final).eval(), AutoImageProcessor.from_pretrained(final)
    torch.manual_seed(0)
    untrained = GrLiteModel(model.config).eval()
    ds = datasets.load_dataset(str(train_folder), split="train")
    pixels = processor(list(ds["image"]), return_tensors="pt")
    labels = np.array([f"{c}/{a[0]['value']}" for c, a in zip(list(ds["category"]), list(ds["attributes"]))])
    same = torch.from_numpy(labels[:, None] == labels[None, :])

    def class_gap(m) -> float:  # mean cosine within a class minus mean cosine across classes
        with torch.no_grad():
            e = m(**pixels).image_embeds
        sims = e @ e.T
        return (sims[same].mean() - sims[~same].mean()).item()

    trained_gap, random_gap = class_gap(model), class_gap(untrained)
    assert trained_gap > 0.5 and trained_gap > 2 * random_gap, (trained_gap, random_gap)

    # interrupt after the mid-epoch checkpoint at step 10 (6 steps/epoch) and resume: identical weights
    resumed = tmp_path / "resumed"
    shutil.copytree(tmp_path / "run", resumed, ignore=shutil.ignore_patterns("model", "step-000020", "step-000024"))
    log2 = train(tmp_path, train_folder, resumed, "--max-steps", "24", "--save-every", "10", "--resume", "latest")
    assert [r["step"] for r in log2] == [4, 8, 12, 16, 20, 24]
    a, b = load_file(final / "model.safetensors"), load_file(resumed / "model" / "model.safetensors")
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.slow
def test_training_two_cpu_processes_with_accelerate_launch(tmp_path, train_folder, accelerate_two_cpu_processes):
    log = train(tmp_path, train_folder, tmp_path / "run2", "--max-steps", "24", "--save-every", "100",
                launcher=accelerate_two_cpu_processes, env={"ACCELERATE_USE_CPU": "1"})
    assert {r["world_size"] for r in log} == {2}
    losses = [r["loss"] for r in log]
    assert np.mean(losses[-2:]) < 0.8 * np.mean(losses[:2]), losses
    summary = json.loads((tmp_path / "run2" / "model" / "training_summary.json").read_text())
    assert summary["samples_per_rank_this_session"] == [24 * 8, 24 * 8]  # both ranks ran every step on half batches
    assert (tmp_path / "run2" / "model" / "model.safetensors").exists()


def test_build_labels_gives_arcface_classes_and_per_attribute_targets():
    from lookbench.models.gr_lite.train_gr_lite import build_labels

    rows = {
        "image": [None] * 3,
        "category": ["tops", "shoes", "tops"],
        "attributes": [
            [{"name": "color", "value": "red"}, {"name": "sleeve", "value": "long"}],
            [{"name": "color", "value": "blue"}],
            [{"name": "sleeve", "value": "long"}, {"name": "color", "value": "red"}],
        ],
    }
    labels, classes, facets, vocab = build_labels(datasets.Dataset.from_dict(rows))
    assert classes == ["shoes|color=blue", "tops|color=red;sleeve=long"] and labels == [1, 0, 1]
    assert vocab == {"category": ["shoes", "tops"], "color": ["blue", "red"], "sleeve": ["long"]}
    assert facets.tolist() == [[1, 1, 0], [0, 0, -100], [1, 1, 0]]


# ---------------------------------------------------------------- distillation, validation split, architecture flags


def test_teacher_features_are_efficientnet_features_of_exactly_these_images(tmp_path, train_folder):
    from lookbench.encoders.registry import load_encoder
    from lookbench.models.gr_lite import teacher_features

    path = tmp_path / "teacher.safetensors"
    teacher_features.main(["--data", str(train_folder), "--output", str(path), "--batch-size", "40"])
    ds = datasets.load_dataset(str(train_folder), split="train")
    features = teacher_features.load(path, ds, "the fixture")
    assert features.shape == (96, 1280)
    torch.testing.assert_close(features.norm(dim=1), torch.ones(96))
    encoder = load_encoder("efficientnet-lite0")
    expected = encoder.encode_batch([encoder.preprocess(ds[i]["image"]) for i in (0, 95)])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(features[[0, 95]].numpy(), expected, atol=1e-5)

    with pytest.raises(ValueError, match=r"holds teacher features of 96 images but the fixture has 95 rows"):
        teacher_features.load(path, ds.select(range(95)), "the fixture")
    swapped = ds.select([0, 1, 2, 3, 4, 6, 5, *range(7, 96)])
    with pytest.raises(ValueError, match=r"other images than the fixture: 2 of 96 rows differ \(first: row index 5\)"):
        teacher_features.load(path, swapped, "the fixture")
    save_file({"features": torch.zeros(96, 8)}, tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match="is not a efficientnet-lite0 teacher-feature file"):
        teacher_features.load(tmp_path / "other.safetensors", ds, "the fixture")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        teacher_features.load(tmp_path / "missing.safetensors", ds, "the fixture")


def test_distillation_losses():
    from lookbench.models.gr_lite.train_gr_lite import Distillation

    torch.manual_seed(0)
    teacher = F.normalize(torch.randn(6, 16), dim=-1)
    ones = torch.ones(6)
    similarity = Distillation(16, 16, "similarity")
    assert similarity.projection is None and not list(similarity.parameters())
    assert similarity(teacher * 3, teacher, ones)[0].item() < 1e-10  # same neighbourhoods, whatever the embedding's norm
    student = torch.randn(6, 16)
    plain, weighted = similarity(student, teacher, 100 * ones)
    assert plain.item() > 0.01
    torch.testing.assert_close(weighted, 100 * plain)  # one weight for every row: the weighted mean is a multiple
    errors = (F.normalize(student, dim=-1) @ F.normalize(student, dim=-1).T - teacher @ teacher.T) ** 2
    # rows 0-2 of a set weighted 4, rows 3-5 of one weighted 0: only the 6 ordered pairs among 0-2 count, of 30
    plain, weighted = similarity(student, teacher, torch.tensor([4.0, 4, 4, 0, 0, 0]))
    torch.testing.assert_close(weighted, 4 * (errors[:3, :3].sum() - errors[:3, :3].diagonal().sum()) / 30)
    torch.testing.assert_close(plain, (errors.sum() - errors.diagonal().sum()) / 30)
    # weights 9 and 1: a pair across the two sets weighs 3, the geometric mean
    _, mixed = similarity(student, teacher, torch.tensor([9.0, 9, 9, 1, 1, 1]))
    off = ~torch.eye(6, dtype=torch.bool)
    pair_weights = torch.tensor([[9.0] * 3 + [3.0] * 3] * 3 + [[3.0] * 3 + [1.0] * 3] * 3)
    torch.testing.assert_close(mixed, (pair_weights * errors)[off].mean())
    cosine = Distillation(8, 16, "cosine")
    student = torch.randn(6, 8)
    errors = 1 - F.cosine_similarity(F.normalize(student, dim=-1) @ cosine.projection.weight.T, teacher, dim=-1)
    plain, weighted = cosine(student, teacher, torch.tensor([2.0, 2, 2, 0, 0, 0]))
    torch.testing.assert_close(plain, errors.mean())
    torch.testing.assert_close(weighted, 2 * errors[:3].sum() / 6)


def test_distill_weight_per_training_set(tmp_path, train_folder, single_view_folder):
    from lookbench.models.gr_lite import teacher_features
    from lookbench.models.gr_lite import GrLiteConfig, processor_for
    from lookbench.models.gr_lite.train_gr_lite import Augment, TrainData, TrainImages, build_learner, parse_args

    files = []
    for folder in (train_folder, single_view_folder):
        ds = datasets.load_dataset(str(folder), split="train")
        features = F.normalize(torch.randn(len(ds), 8), dim=-1).numpy()
        files.append(tmp_path / f"{folder.name}.safetensors")
        teacher_features.save(files[-1], features, teacher_features.image_hashes(ds), str(folder))
    common = ["--data", str(train_folder), str(single_view_folder), "--output", "o", "--validation-fraction", "0.5",
              "--teacher-features", *map(str, files), "--width", "64", "--depth", "1", "--image-size", "32"]
    data = TrainData.load(parse_args([*common, "--distill-weight", "100", "10"]))
    photo = np.array([i.startswith("solo-") for i in data.ds["item_id"]])
    assert 0 < photo.sum() < len(photo) and len(data.distill_weights) == len(data.ds)  # the held-out rows are not in it
    assert set(data.distill_weights[photo].tolist()) == {10.0} and set(data.distill_weights[~photo].tolist()) == {100.0}
    one = TrainData.load(parse_args([*common, "--distill-weight", "100"]))
    assert set(one.distill_weights.tolist()) == {100.0}
    images = TrainImages(data, processor_for(GrLiteConfig(image_size=32)), Augment(), seed=0)
    batch = torch.utils.data.default_collate([images[int(i)] for i in (*np.flatnonzero(photo)[:2], *np.flatnonzero(~photo)[:2])])
    assert batch["distill_weight"].tolist() == [10.0, 10.0, 100.0, 100.0] and batch["teacher"].shape == (4, 8)
    learner = build_learner(parse_args([*common, "--distill-weight", "100", "10"]), data).eval()
    terms = learner(**batch)  # the loss adds the weighted distillation; the log keeps the plain one
    _, weighted = learner.distillation(learner.model(pixel_values=batch["pixel_values"]).image_embeds, batch["teacher"], batch["distill_weight"])
    torch.testing.assert_close(terms["loss"], terms["arcface"] + terms["attributes"] + weighted)
    assert weighted.item() > 10 * terms["distill"].item()
    for bad in (["--distill-weight", "1", "2", "3"], ["--distill-weight", "100", "-1"], ["--distill-weight", "0", "0"]):
        with pytest.raises(SystemExit):
            parse_args([*common, *bad])


def test_card_names_each_sets_distillation_weight_and_classes(tmp_path):
    """Per-set flags read as prose in the card, one value as a plain number (the committed run's facts, varied)."""
    from lookbench.models.gr_lite.train_gr_lite import write_card
    from lookbench.encoders.registry import gr_lite_mini_folder

    facts = json.loads((gr_lite_mini_folder() / "training_summary.json").read_text())
    facts["distillation"] = {**facts["distillation"], "weight": {"mini/train": 100.0, "photos/train": 10.0}}
    facts["arcface_classes"] = {"mini/train": "attributes", "photos/train": "category"}
    write_card(tmp_path, facts)
    card = (tmp_path / "README.md").read_text()
    assert "similarity loss, weight 100.0 on `mini/train`, 10.0 on `photos/train`\n" in card
    assert "ArcFace classes (`mini/train`: category × full attribute set; `photos/train`: category alone)" in card
    facts["distillation"]["weight"], facts["arcface_classes"] = 100.0, "category"
    write_card(tmp_path, facts)
    card = (tmp_path / "README.md").read_text()
    assert "similarity loss, weight 100.0\n" in card and "ArcFace classes (category alone)" in card

def test_arcface_classes_per_training_set(tmp_path, train_folder, single_view_folder):
    from lookbench.models.gr_lite.train_gr_lite import TrainData, build_labels, parse_args

    rows = {"image": [None] * 3, "category": ["tops", "tops", "shoes"],
            "attributes": [[{"name": "color", "value": "red"}], [{"name": "color", "value": "blue"}], [{"name": "color", "value": "red"}]]}
    labels, classes, facets, _ = build_labels(datasets.Dataset.from_dict(rows), by_category=[True, True, False])
    assert classes == ["shoes|color=red", "tops|"] and labels == [1, 1, 0]
    assert facets.tolist() == [[1, 1], [1, 0], [0, 1]]  # the colour head still tells the two tops apart

    common = ["--data", str(train_folder), str(single_view_folder), "--output", "o"]
    full = TrainData.load(parse_args(common))
    coarse = TrainData.load(parse_args([*common, "--arcface-classes", "attributes", "category"]))
    assert sorted(c for c in full.classes if c.startswith("dress")) == [f"dress|colour={c};fit=regular" for c in sorted(COLOURS)]
    assert [c for c in coarse.classes if c.startswith("dress")] == ["dress|"]
    assert [c for c in coarse.classes if not c.startswith("dress")] == [c for c in full.classes if not c.startswith("dress")]
    dress = np.array(coarse.ds["category"]) == "dress"
    assert {coarse.classes[i] for i in np.array(coarse.labels)[dress]} == {"dress|"}
    assert coarse.vocab == full.vocab and (coarse.facet_labels == full.facet_labels).all()
    everything = TrainData.load(parse_args([*common, "--arcface-classes", "category"]))
    assert everything.classes == ["dress|", "skirt|", "top|"]
    for bad in (["--arcface-classes", "category", "category", "category"], ["--arcface-classes", "colour"]):
        with pytest.raises(SystemExit):
            parse_args([*common, *bad])


def test_validation_split_holds_out_whole_products_and_queries_their_first_view(train_folder):
    from lookbench.models.gr_lite.holdout import RetrievalValidation, split_rows

    ds = datasets.load_dataset(str(train_folder), split="train")
    train_rows, validation_rows = split_rows(ds, 0.25)
    assert sorted(train_rows + validation_rows) == list(range(96)) and 8 <= len(validation_rows) <= 40
    ids = ds["item_id"]
    assert not {ids[i] for i in train_rows} & {ids[i] for i in validation_rows}
    assert split_rows(ds.select(range(95, -1, -1)), 0.25)[1] == sorted(95 - i for i in validation_rows)  # order-free
    validation = RetrievalValidation(ds.select(validation_rows))
    held = [ids[i] for i in validation_rows]
    assert [held[i] for i in validation.queries] == list(dict.fromkeys(held))  # the first view of every product
    assert sorted(validation.queries + validation.gallery) == list(range(len(held)))
    with pytest.raises(ValueError, match=r"must be in \[0, 1\)"):
        split_rows(ds, 1.0)


def test_category_weight_adds_the_category_heads_loss_once_more(train_folder):
    from lookbench.models.gr_lite.train_gr_lite import TrainData, build_learner, parse_args

    args = ["--data", str(train_folder), "--output", "o", "--width", "64", "--depth", "1", "--image-size", "32", "--attribute-weight", "2"]
    data = TrainData.load(parse_args(args))
    assert list(data.vocab) == ["category", "colour", "fit"]
    torch.manual_seed(0)
    plain = build_learner(parse_args(args), data)
    torch.manual_seed(0)
    weighted = build_learner(parse_args([*args, "--category-weight", "3"]), data)
    plain.eval(), weighted.eval()  # the same weights, and no dropout in either forward pass
    batch = dict(pixel_values=torch.randn(4, 3, 32, 32), labels=torch.tensor(data.labels[:4]),
                 facet_labels=torch.from_numpy(data.facet_labels[:4]))
    before, after = plain(**batch), weighted(**batch)
    assert "category" not in before
    heads = plain.attribute_heads(plain.model(pixel_values=batch["pixel_values"]).image_embeds, batch["facet_labels"])
    torch.testing.assert_close(after["category"], heads[0])  # the category head's own cross-entropy
    torch.testing.assert_close(after["attributes"], heads.mean())
    torch.testing.assert_close(after["loss"], before["loss"] + 3 * heads[0])
    for bad in (["--attribute-weight", "0", "--category-weight", "1"], ["--category-weight", "-1"]):
        with pytest.raises(SystemExit):
            parse_args(["--data", "d", "--output", "o", *bad])


def test_architecture_and_distillation_flags():
    from lookbench.models.gr_lite.train_gr_lite import model_config, parse_args

    config = model_config(parse_args(["--data", "d", "--output", "o", "--width", "256", "--depth", "8", "--image-size", "160"]))
    vision = config.vision_config
    assert (vision.hidden_size, vision.intermediate_size, vision.num_attention_heads, vision.num_hidden_layers) == (256, 1024, 4, 8)
    assert config.image_size == 160 and vision.num_register_tokens == 4
    assert model_config(parse_args(["--data", "d", "--output", "o"])).to_dict() == GrLiteConfig.from_preset("gr-lite-mini").to_dict()
    for bad in (["--width", "200"], ["--distill-weight", "1"], ["--teacher-features", "t.safetensors"], ["--init", "m", "--depth", "2"]):
        with pytest.raises(SystemExit):
            parse_args(["--data", "d", "--output", "o", *bad])


@pytest.mark.slow
def test_distillation_training_learns_validates_and_resumes_exactly(tmp_path, train_folder):
    from lookbench.models.gr_lite import teacher_features

    teacher = tmp_path / "teacher.safetensors"
    teacher_features.main(["--data", str(train_folder), "--output", str(teacher)])
    extra = ["--max-steps", "24", "--save-every", "10", "--teacher-features", str(teacher), "--distill-weight", "100",
             "--distill-loss", "similarity", "--validation-fraction", "0.25", "--validate-every", "12", "--width", "128", "--depth", "3"]
    log = train(tmp_path, train_folder, tmp_path / "run", *extra, "--resume", "latest")  # no checkpoint yet: step 0
    distill = [r["distill_loss"] for r in log]  # in-batch similarities approach the teacher's (a 3-layer ViT at 64 px)
    assert np.mean(distill[-2:]) < 0.9 * np.mean(distill[:2]), distill
    for r in log:
        assert r["loss"] == pytest.approx(r["arcface_loss"] + r["attributes_loss"] + 100 * r["distill_loss"], rel=1e-5)
    validation = [json.loads(line) for line in (tmp_path / "run" / "validation.jsonl").read_text().splitlines()]
    assert [v["step"] for v in validation] == [12, 24] and all(0 < v["coarse_recall@1"] <= 100 for v in validation)
    summary = json.loads((tmp_path / "run" / "model" / "training_summary.json").read_text())
    assert summary["num_images"] < 96 and summary["validation"]["scores"] == validation[-1]
    assert summary["architecture"]["width"] == 128 and summary["distillation"]["loss"] == "similarity"
    card = (tmp_path / "run" / "model" / "README.md").read_text()
    assert "Distillation from efficientnet-lite0" in card and f"strict Fine R@1 {validation[-1]['fine_recall@1']}" in card
    from lookbench.encoders.registry import card_training_cutoff

    # the card declares the date its training data ends, which `lookbench evaluate --cutoff model` reads
    assert summary["training_cutoff"] == "2025-06-01" == card_training_cutoff(tmp_path / "run" / "model")

    # the run's split rebuilt from train_args.json scores its model as training did, and the teacher as its features say
    from lookbench.models.gr_lite import holdout, score_validation

    model_line, teacher_line = score_validation.main(["--run", str(tmp_path / "run"), "--model", str(tmp_path / "run" / "model"), "--teacher"])
    assert {key: model_line[key] for key in holdout.REPORTED} == {key: validation[-1][key] for key in holdout.REPORTED}
    ds = datasets.load_dataset(str(train_folder), split="train")
    held = holdout.split_rows(ds, 0.25)[1]
    stored = teacher_features.load(teacher, ds, "the fixture").numpy()[held]
    split = holdout.RetrievalValidation(ds.select(held))
    expected = split.score_embeddings(stored[split.queries], stored[split.gallery])
    assert {key: teacher_line[key] for key in holdout.REPORTED} == {key: expected[key] for key in holdout.REPORTED}
    assert teacher_line["distractors"] == 0 and teacher_line["queries"] == len(split.queries)

    # killed while writing step 20: that checkpoint has no trainer_state.json yet, so `latest` is step 10
    resumed = tmp_path / "resumed"
    shutil.copytree(tmp_path / "run", resumed, ignore=shutil.ignore_patterns("model", "trainer_state.json", "step-000024"))
    shutil.copy(tmp_path / "run" / "checkpoints" / "step-000010" / "trainer_state.json", resumed / "checkpoints" / "step-000010")
    train(tmp_path, train_folder, resumed, *extra, "--resume", "latest")
    a, b = load_file(tmp_path / "run" / "model" / "model.safetensors"), load_file(resumed / "model" / "model.safetensors")
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert (resumed / "validation.jsonl").read_text() == (tmp_path / "run" / "validation.jsonl").read_text()


def test_check_disjoint_counts_shared_item_ids_and_images(tmp_path, train_folder, capsys):
    from lookbench.models.gr_lite.check_disjoint import main as check_main

    ds = datasets.load_dataset(str(train_folder), split="train")
    overlapping, disjoint = tmp_path / "overlapping", tmp_path / "disjoint"
    overlapping.mkdir(), disjoint.mkdir()
    ds.select([0, 1, 40]).to_parquet(str(overlapping / "test-00000-of-00001.parquet"))  # ids top-red-0 (2 rows), top-green-4
    fresh = ds.select(range(3)).map(lambda row: {"item_id": "x-" + row["item_id"], "image": row["image"].rotate(90)})
    fresh.to_parquet(str(disjoint / "test-00000-of-00001.parquet"))
    assert check_main(["--train", str(train_folder), "--test", str(disjoint)]) == 0
    assert "shared with train: 0 item ids, 0 images" in capsys.readouterr().out
    assert check_main(["--train", str(train_folder), "--test", str(disjoint), str(overlapping)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"train {train_folder}: 96 rows, 48 item ids, 96 distinct images")
    assert out[2].endswith("3 rows, 2 item ids, 3 distinct images; shared with train: 2 item ids, 3 images (e.g. ['top-green-4', 'top-red-0'])")



@pytest.mark.parametrize("script, args", [
    ("train_gr_lite", ["--data", "{missing}", "--output", "{tmp}/run"]),
    ("teacher_features", ["--data", "{missing}", "--output", "{tmp}/teacher.safetensors"]),
    ("score_validation", ["--run", "{missing}", "--teacher"]),
    ("check_disjoint", ["--train", "{missing}", "--test", "{tmp}"]),
    ("convert_gr_lite_checkpoint", ["--checkpoint", "{missing}", "--output", "{tmp}/model"]),
])
def test_model_scripts_report_bad_input_in_one_line(tmp_path, script, args):
    """As `lookbench` does: the user sees the cause and the path, exit 2, no traceback."""
    missing = tmp_path / "missing"
    argv = [a.format(missing=missing, tmp=tmp_path) for a in args]
    proc = subprocess.run([sys.executable, "-m", f"lookbench.models.gr_lite.{script}", *argv], env=clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{script}: error: ") and str(missing) in lines[0], proc.stderr[-2000:]
    assert not missing.exists()

def test_validation_scores_embeddings_with_the_metric(train_folder):
    from lookbench.models.gr_lite.holdout import RetrievalValidation, split_rows

    ds = datasets.load_dataset(str(train_folder), split="train")
    validation = RetrievalValidation(ds.select(split_rows(ds, 0.25)[1]))
    held = validation.ds
    # a one-hot direction per product: every query's nearest gallery row is its other view
    product = {item_id: i for i, item_id in enumerate(dict.fromkeys(held["item_id"]))}
    onehot = np.eye(len(product), dtype=np.float32)[[product[i] for i in held["item_id"]]]
    perfect = validation.score_embeddings(onehot[validation.queries], onehot[validation.gallery])
    assert perfect["fine_recall@1"] == perfect["coarse_recall@1"] == perfect["mrr@10"] == 100.0
    # colour only: tops and skirts of a colour tie, so some top hits have the wrong category
    colour = {c: i for i, c in enumerate(COLOURS)}
    by_colour = np.eye(3, dtype=np.float32)[[colour[m] for m in held["main_attribute"]]]
    blurred = validation.score_embeddings(by_colour[validation.queries], by_colour[validation.gallery])
    assert 0 < blurred["fine_recall@1"] < 100.0


@pytest.fixture(scope="module")
def single_view_folder(tmp_path_factory, train_folder) -> Path:
    """A second training set of one-view products (as Fashion-MNIST's photos are), in another category."""
    ds = datasets.load_dataset(str(train_folder), split="train").select(range(0, 96, 2))
    ds = ds.map(lambda row, i: {"item_id": f"solo-{i}", "category": "dress"}, with_indices=True)
    folder = tmp_path_factory.mktemp("single-view-data")
    ds.to_parquet(str(folder / "train-00000-of-00001.parquet"))
    return folder


def test_training_reads_several_sets_and_validates_each(train_folder, single_view_folder):
    from lookbench.models.gr_lite.holdout import SINGLE_QUERY_SHARE
    from lookbench.models.gr_lite.train_gr_lite import TrainData, parse_args

    args = parse_args(["--data", str(train_folder), str(single_view_folder), "--output", "o", "--validation-fraction", "0.5"])
    data = TrainData.load(args)
    validation = data.validation
    assert len(data.ds) + len(validation.ds) == 96 + 48
    assert {c.split("|")[0] for c in data.classes} == {"top", "skirt", "dress"} and "dress" in data.vocab["category"]
    groups = dict(zip(validation.queries, validation.query_groups))
    solo = [i for i, g in groups.items() if g == str(single_view_folder)]
    held_solo = sum(1 for i in validation.ds["item_id"] if i.startswith("solo-"))
    # a one-view product cannot query its own other view: a share of them are queries, the rest their gallery
    assert 0 < len(solo) < held_solo and len(solo) <= 3 * SINGLE_QUERY_SHARE * held_solo + 1
    assert {validation.ds[i]["category"] for i in solo} == {"dress"}
    rng = np.random.default_rng(0)
    embeds = rng.normal(size=(len(validation.ds), 8)).astype(np.float32)
    embeds /= np.linalg.norm(embeds, axis=1, keepdims=True)
    scores = validation.score_embeddings(embeds[validation.queries], embeds[validation.gallery])
    assert set(scores["groups"]) == {str(train_folder), str(single_view_folder)}
    n = {name: sum(1 for g in validation.query_groups if g == name) for name in scores["groups"]}
    for key in ("fine_recall@1", "coarse_recall@1"):  # the overall score is the query-weighted mean of the sets'
        weighted = sum(scores["groups"][name][key] * n[name] for name in n) / len(validation.queries)
        assert scores[key] == pytest.approx(weighted, abs=0.02)
    with pytest.raises(SystemExit):
        parse_args(["--data", "a", "b", "--output", "o", "--teacher-features", "t.safetensors", "--distill-weight", "1"])


def test_data_repeat_weights_a_set_within_each_epoch(train_folder, single_view_folder):
    from lookbench.models.gr_lite import processor_for, GrLiteConfig
    from lookbench.models.gr_lite.train_gr_lite import Augment, TrainData, TrainImages, parse_args

    common = ["--data", str(train_folder), str(single_view_folder), "--output", "o", "--validation-fraction", "0.5"]
    plain = TrainData.load(parse_args(common))
    data = TrainData.load(parse_args(common + ["--data-repeat", "3", "1"]))
    assert len(data.ds) == len(plain.ds) and data.classes == plain.classes  # the same rows, visited more often
    first = sum(1 for i in data.ds["item_id"] if not i.startswith("solo-"))
    assert len(data.epoch_rows) == 3 * first + (len(data.ds) - first)
    counts = np.bincount(data.epoch_rows, minlength=len(data.ds))
    assert set(counts[:first]) == {3} and set(counts[first:]) == {1}
    assert np.array_equal(plain.epoch_rows, np.arange(len(plain.ds)))
    images = TrainImages(data, processor_for(GrLiteConfig(image_size=32)), Augment(), seed=0)
    assert len(images) == len(data.epoch_rows)
    copies = [i for i, row in enumerate(data.epoch_rows) if row == 0]
    a, b = (images[i] for i in copies[:2])
    assert a["labels"] == b["labels"] and not torch.equal(a["pixel_values"], b["pixel_values"])  # augmented apart


@pytest.mark.parametrize("repeat", [["2"], ["0", "1"]])
def test_data_repeat_needs_one_positive_count_per_set(train_folder, single_view_folder, repeat, capsys):
    from lookbench.models.gr_lite.train_gr_lite import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--data", str(train_folder), str(single_view_folder), "--output", "o", "--data-repeat", *repeat])
    assert "--data-repeat needs one integer >= 1 per --data folder (2)" in capsys.readouterr().err


@pytest.fixture(scope="module")
def distractor_folder(tmp_path_factory, train_folder) -> Path:
    """A build folder with a `noise` config only: 12 dresses, as `lookbench build --subsets noise` writes one."""
    ds = datasets.load_dataset(str(train_folder), split="train").select(range(0, 96, 8))
    ds = ds.map(lambda row, i: {"item_id": f"noise-{i}", "category": "dress"}, with_indices=True)
    folder = tmp_path_factory.mktemp("distractors")
    (folder / "noise").mkdir()
    ds.to_parquet(str(folder / "noise" / "gallery-00000-of-00001.parquet"))
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: noise\n  data_files:\n  - split: gallery\n    path: noise/gallery-*.parquet\n---\n")
    return folder


def test_validation_distractors_join_the_gallery_and_take_rank_one_from_a_model_that_lets_them(train_folder, distractor_folder):
    from lookbench.models.gr_lite.train_gr_lite import TrainData, parse_args

    common = ["--data", str(train_folder), "--output", "o", "--validation-fraction", "0.25"]
    plain = TrainData.load(parse_args(common)).validation
    validation = TrainData.load(parse_args(common + ["--validation-distractors", str(distractor_folder)])).validation
    held = len(plain.ds)
    assert validation.queries == plain.queries and validation.distractors == 12
    assert validation.gallery == plain.gallery + list(range(held, held + 12))  # gallery only, never a query
    assert validation.ds["category"][held:] == ["dress"] * 12 and "12 of them distractors" in repr(validation)
    # one direction per held-out product, the gallery views a little off it; distractor j sits exactly on the
    # direction of query j's product, so it outranks the true view and (another category) is a coarse miss
    product = {item_id: i for i, item_id in enumerate(dict.fromkeys(validation.ds["item_id"][:held]))}
    dims = len(product) + 1
    embeds = np.zeros((held + 12, dims), dtype=np.float32)
    for i, item_id in enumerate(validation.ds["item_id"][:held]):
        embeds[i, product[item_id]], embeds[i, -1] = 1.0, 0.0 if i in validation.queries else 0.5
    targeted = validation.queries[:5]
    for j, q in enumerate(targeted):
        embeds[held + j] = embeds[q]
    embeds[held + len(targeted):, -1] = 1.0  # the other distractors are far from every product
    embeds /= np.linalg.norm(embeds, axis=1, keepdims=True)
    scores = validation.score_embeddings(embeds[validation.queries], embeds[validation.gallery])
    assert plain.score_embeddings(embeds[plain.queries], embeds[plain.gallery])["coarse_recall@1"] == 100.0
    assert scores["coarse_recall@1"] == round(100 * (1 - len(targeted) / len(validation.queries)), 2)


def test_validation_distractors_are_checked(tmp_path, train_folder, capsys):
    from lookbench.models.gr_lite.train_gr_lite import TrainData, parse_args

    with pytest.raises(SystemExit):
        parse_args(["--data", str(train_folder), "--output", "o", "--validation-distractors", str(tmp_path)])
    assert "--validation-distractors needs --validation-fraction > 0" in capsys.readouterr().err
    common = ["--data", str(train_folder), "--output", "o", "--validation-fraction", "0.25", "--validation-distractors"]
    with pytest.raises(FileNotFoundError, match="--validation-distractors .*missing does not exist"):
        TrainData.load(parse_args(common + [str(tmp_path / "missing")]))
    with pytest.raises(ValueError, match=f"--validation-distractors {train_folder} has no 'noise' config"):
        TrainData.load(parse_args(common + [str(train_folder)]))


def test_score_validation_names_bad_runs_models_and_distractor_schemas(tmp_path, train_folder, distractor_folder):
    from lookbench.models.gr_lite import holdout, score_validation
    from lookbench.models.gr_lite.train_gr_lite import parse_args

    with pytest.raises(FileNotFoundError, match=f"--run {tmp_path} has no train_args.json"):
        score_validation.main(["--run", str(tmp_path), "--teacher"])
    run = tmp_path / "run"
    run.mkdir()
    (run / "train_args.json").write_text(json.dumps(vars(parse_args(["--data", str(train_folder), "--output", str(run),
                                                                     "--validation-fraction", "0.25"]))))
    with pytest.raises(ValueError, match=r"--model .*missing is not a GR-Lite model folder"):
        score_validation.main(["--run", str(run), "--model", str(tmp_path / "missing")])
    # a run from before per-set distillation weights recorded one number, and teacher files not needed for the split
    old = run.parent / "old-run"
    old.mkdir()
    recorded = {**json.loads((run / "train_args.json").read_text()), "distill_weight": 100.0, "teacher_features": ["gone.safetensors"]}
    (old / "train_args.json").write_text(json.dumps(recorded))
    from lookbench.models.gr_lite.train_gr_lite import TrainData

    rebuilt = TrainData.load(score_validation.run_args(old, None)).validation
    assert rebuilt.ds["item_id"] == TrainData.load(score_validation.run_args(run, None)).validation.ds["item_id"]
    ds = datasets.load_dataset(str(train_folder), split="train")
    noise = datasets.load_dataset(str(distractor_folder), "noise", split="gallery").remove_columns("outfit_id")
    noise = noise.add_column("outfit_id", [1] * len(noise))
    with pytest.raises(ValueError, match=r"distractors' columns \['outfit_id'\] are not the training set's"):
        holdout.RetrievalValidation(ds.select(holdout.split_rows(ds, 0.25)[1]), distractors=noise)
