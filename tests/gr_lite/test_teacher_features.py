"""teacher_features: EfficientNet-Lite0's features of exactly the training images, refused for any other images."""
from __future__ import annotations

import datasets
import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from lookbench.encoders.registry import load_encoder
from lookbench.training import teacher_features
from lookbench.training.training_data import load_teacher_features


@pytest.mark.slow
def test_teacher_features_are_efficientnet_features_of_exactly_these_images(tmp_path, train_folder):
    path = tmp_path / "teacher.safetensors"
    teacher_features.main(["--data", str(train_folder), "--output", str(path), "--batch-size", "40"])
    ds = datasets.load_dataset(str(train_folder), split="train")
    features = load_teacher_features(path, ds, "the fixture")
    assert features.shape == (96, 1280)
    torch.testing.assert_close(features.norm(dim=1), torch.ones(96))
    encoder = load_encoder("efficientnet-lite0")
    expected = encoder.encode_batch([encoder.preprocess(ds[i]["image"]) for i in (0, 95)])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(features[[0, 95]].numpy(), expected, atol=1e-5)

    with pytest.raises(ValueError, match=r"holds teacher features of 96 images but the fixture has 95 rows"):
        load_teacher_features(path, ds.select(range(95)), "the fixture")
    swapped = ds.select([0, 1, 2, 3, 4, 6, 5, *range(7, 96)])
    with pytest.raises(ValueError, match=r"other images than the fixture: 2 of 96 rows differ \(first: row index 5\)"):
        load_teacher_features(path, swapped, "the fixture")
    save_file({"features": torch.zeros(96, 8)}, tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match="is not a efficientnet-lite0 teacher-feature file"):
        load_teacher_features(tmp_path / "other.safetensors", ds, "the fixture")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_teacher_features(tmp_path / "missing.safetensors", ds, "the fixture")
