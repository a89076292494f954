"""Fixtures of the encoder tests: a hub cache of the test's own, and the published harness's preprocessing."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

# The upstream harness's get_transform constants, typed from look-bench models/{clip,siglip,dinov2}_model.py.
HARNESS_NORMALISATION = {
    "clip": ([0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]),
    "siglip": ([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
    "dinov2": ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
}


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty hub cache and LookBench home of this test's own (huggingface_hub reads both at call time)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "home"))
    return tmp_path / "hub"


@pytest.fixture
def harness():
    """``harness(image, size, family)``: what torchvision's Resize((s, s)) + ToTensor + Normalize give for a PIL
    image, in torch."""

    def transform(image: Image.Image, size: int, family: str) -> np.ndarray:
        mean, std = HARNESS_NORMALISATION[family]
        x = torch.from_numpy(np.array(image.convert("RGB").resize((size, size), Image.BILINEAR))).permute(2, 0, 1).float() / 255
        return ((x - torch.tensor(mean)[:, None, None]) / torch.tensor(std)[:, None, None]).numpy()

    return transform
