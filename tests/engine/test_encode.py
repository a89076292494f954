"""Encoding every distinct image once (lookbench.engine.encode): images shared by subsets encoded once, a cached
rerun encoding none, output checks on what a model returns, and the overlapped decode schedule and its hand-over
of batches giving the embeddings of the plain one."""
from __future__ import annotations

import numpy as np
import pytest

import lookbench
from lookbench.encoders.base import EncoderError

from tests.helpers.engine_data import CountingEncoder, UNIQUE_IMAGES, scores


def test_custom_encoder_cached_rerun_and_distractors_encoded_once(data, tmp_path):
    seen = []

    class Recording(CountingEncoder):
        def encode(self, images):
            seen.extend(im.tobytes() for im in images)
            return super().encode(images)

    first = Recording()
    cold = lookbench.evaluate(first, data=data, cache_dir=tmp_path, quiet=True, batch_size=4)
    assert first.images == UNIQUE_IMAGES == len(set(seen))  # noise shared by both subsets, copies, all once
    assert cold.to_dict()["overall"]["fine_recall"]["@1"] == 100.0
    assert cold.provenance["model"]["name"] == "counting-colour"

    second = CountingEncoder()
    warm = lookbench.evaluate(second, data=data, cache_dir=tmp_path, quiet=True, batch_size=4)
    assert second.calls == 0 and warm.provenance["counts"]["forward_images"] == 0
    assert warm.provenance["counts"]["cache_hits"] == UNIQUE_IMAGES
    assert scores(warm.to_dict()) == scores(cold.to_dict())


def test_object_without_revision_is_not_cached(data, tmp_path):
    class Anonymous(CountingEncoder):
        revision = None

    for _ in range(2):
        enc = Anonymous()
        lookbench.evaluate(enc, data=data, cache_dir=tmp_path, quiet=True)
        assert enc.images == UNIQUE_IMAGES
    assert not any(tmp_path.rglob("*.emb"))


class WrongShape(CountingEncoder):
    name = "wrong-shape"

    def encode(self, images):
        return super().encode(images)[:-1]


class NaNs(CountingEncoder):
    name = "nan-model"

    def encode(self, images):
        out = super().encode(images)
        out[0, 0] = np.nan
        return out


class ZeroRows(CountingEncoder):
    name = "zero-model"

    def encode(self, images):
        out = super().encode(images)
        out[1] = 0.0
        return out


class NeedsGrad(CountingEncoder):
    name = "grad-model"

    def encode(self, images):
        import torch

        return torch.tensor(super().encode(images), requires_grad=True)


@pytest.mark.parametrize("model, message", [
    (WrongShape(), r"'wrong-shape' returned shape \(3, 48\) for a batch of 4 images"),
    (NaNs(), r"'nan-model' returned NaN/inf embeddings for 1 image\(s\): RealStudioFlat/query row 1 \(item p0\)"),
    (ZeroRows(), r"'zero-model' returned all-zero embeddings for 1 image\(s\): RealStudioFlat/query row 2 \(item p1\)"),
    (NeedsGrad(), r"'grad-model' returned a tensor that requires grad"),
])
def test_bad_encoder_output_is_rejected(data, tmp_path, model, message):
    with pytest.raises(EncoderError, match=message):
        lookbench.evaluate(model, data=data, cache_dir=tmp_path, quiet=True, batch_size=4)


@pytest.mark.parametrize("model", ["raw-pixels", "gr-lite-mini"])
def test_overlapped_and_alternating_decoding_give_the_same_embeddings(data, model):
    """The accelerator schedule (decode pool beside the forward passes, batches handed over by ``host_batch``)
    run on this CPU gives bit-identical embeddings to the CPU schedule, for a numpy and a torch model."""
    from lookbench.encoders.registry import load_encoder
    from lookbench.engine import BenchmarkImages, encode_images, load_benchmark

    images = BenchmarkImages.of(load_benchmark(data))
    images.hash()
    runs = {overlap: encode_images(load_encoder(model), images.sources(), batch_size=3, workers=2, use_cache=False,
                                   overlap=overlap) for overlap in (True, False)}
    overlapped, alternating = runs[True], runs[False]
    assert overlapped.ids == alternating.ids
    assert overlapped.stats.forward_images == alternating.stats.forward_images == UNIQUE_IMAGES
    assert overlapped.valid.all() and np.abs(overlapped.matrix).sum(axis=1).min() > 0
    np.testing.assert_array_equal(overlapped.matrix, alternating.matrix)


def test_a_torch_model_takes_a_handed_over_tensor_batch_like_an_array():
    """What ``host_batch`` hands over on CUDA (a pinned tensor) reaches the same forward pass as the stacked array."""
    import torch

    from lookbench.encoders.registry import load_encoder

    encoder = load_encoder("gr-lite-mini")
    rng = np.random.default_rng(0)
    batch = np.stack([encoder.preprocess(png_image(rng)) for _ in range(3)])
    assert encoder.host_batch(batch) is batch  # on a CPU: handed over as it is
    np.testing.assert_array_equal(encoder.encode_batch(torch.from_numpy(batch.copy())), encoder.encode_batch(batch))


def png_image(rng):
    from PIL import Image

    return Image.fromarray(rng.integers(0, 256, (40, 30, 3), dtype=np.uint8))
