"""The encoders behind one interface: EfficientNet-Lite0 (ImageNet), raw pixels, transformers models, user objects."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from lookbench.encoders.base import EncoderError, ObjectEncoder, TransformersEncoder, to_rgb
from lookbench.encoders.entries import REGISTRY
from lookbench.encoders.registry import load_encoder


def test_a_weights_file_that_is_not_a_plain_state_dict_is_refused(tmp_path):
    import pickle

    from lookbench.files import count_parameters

    path = tmp_path / "evil.pth"
    with open(path, "wb") as f:
        for preamble in (0x1950A86A20F9469CFC6C, 1001, {}):  # legacy torch.save: magic, protocol, system info
            pickle.dump(preamble, f)
        pickle.dump(print, f)  # any callable outside a state dict
    with pytest.raises(pickle.UnpicklingError, match="builtins.print is not part of a plain state dict"):
        count_parameters(path)


def test_missing_hub_model_offline_is_a_clear_error():
    with pytest.raises(EncoderError, match="'nobody/no-such-model' is not in the local Hugging Face cache"):
        load_encoder("nobody/no-such-model")


@pytest.mark.parametrize("mode", ["P", "RGBA", "LA", "CMYK", "L", "I;16"])
def test_to_rgb_handles_every_mode(mode):
    image = Image.new("RGB", (5, 4), (10, 200, 30)).convert(mode)
    rgb = to_rgb(image)
    assert rgb.mode == "RGB" and rgb.size == (5, 4)


def test_raw_pixels_are_mean_centred_thumbnails():
    enc = REGISTRY["raw-pixels"].build(REGISTRY["raw-pixels"])
    image = Image.new("RGB", (64, 48), (10, 20, 30))
    image.putpixel((0, 0), (255, 255, 255))
    out = enc.encode_batch([enc.preprocess(image)])
    assert out.shape == (1, 3072) and abs(out.mean()) < 1e-4
    assert enc.fingerprint == "raw-pixels:v1"


def test_efficientnet_lite0_gap_features_with_tf_normalisation():
    enc = load_encoder("efficientnet-lite0")
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (300, 200, 3), dtype=np.uint8))
    array = enc.preprocess(image)
    assert array.shape == (224, 224, 3) and array.dtype == np.uint8
    features = enc.encode_batch([array])
    assert features.shape == (1, 1280)
    # the same image normalised by hand, TF style: these are the pooled head features ...
    x = (torch.tensor(array).permute(2, 0, 1)[None].float() - 127.0) / 128.0
    with torch.inference_mode():
        pooled = enc.module.extract_features(x).mean(dim=(2, 3))
        # ... on which the ImageNet classifier of the wheel gives the model's own logits
        np.testing.assert_allclose(enc.module._fc(pooled).numpy(), enc.module(x).numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(features, pooled.numpy(), rtol=1e-5, atol=1e-5)
    assert len(enc.fingerprint.split(":")[1]) == 64  # weight file sha256


def test_efficientnet_lite0_runs_the_packages_arithmetic_bit_for_bit():
    """Its module pads inside the convolutions and applies ReLU6 in place (``_for_inference``): the features of the
    module its package builds from the same weights, exactly."""
    from efficientnet_lite_pytorch import EfficientNet

    enc = load_encoder("efficientnet-lite0")
    package = EfficientNet.from_name("efficientnet-lite0")
    package.load_state_dict(torch.load(enc.weights, map_location="cpu", weights_only=True))
    pixels = np.random.default_rng(0).integers(0, 256, (2, 224, 224, 3), dtype=np.uint8)
    x = (torch.from_numpy(pixels).permute(0, 3, 1, 2).float() - 127.0) / 128.0
    with torch.inference_mode():
        assert torch.equal(enc.module.extract_features(x), package.eval().extract_features(x))
    assert any(isinstance(m, torch.nn.ZeroPad2d) for m in package.modules())  # the package's own pads a copy
    assert not any(isinstance(m, torch.nn.ZeroPad2d) and len(set(m.padding)) == 1 for m in enc.module.modules())


def test_efficientnet_bf16_is_close_to_fp32():
    fp32, bf16 = load_encoder("efficientnet-lite0"), load_encoder("efficientnet-lite0", precision="bf16")
    array = fp32.preprocess(Image.linear_gradient("L").convert("RGB"))
    a, b = fp32.encode_batch([array])[0], bf16.encode_batch([array])[0]
    assert np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)) > 0.99


@pytest.fixture(scope="module")
def tiny_vit(tmp_path_factory):
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    folder = tmp_path_factory.mktemp("vit")
    torch.manual_seed(0)
    ViTModel(ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                       image_size=32, patch_size=8)).save_pretrained(folder)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def test_transformers_folder_uses_pooler_output(tiny_vit):
    from transformers import AutoModel

    enc = load_encoder(str(tiny_vit))
    assert isinstance(enc, TransformersEncoder) and enc._module is None  # weights are read only when needed
    array = enc.preprocess(Image.new("RGB", (50, 40), (200, 10, 10)))
    assert array.shape == (3, 32, 32)
    reference = AutoModel.from_pretrained(tiny_vit).eval()
    with torch.inference_mode():
        expected = reference(pixel_values=torch.from_numpy(array[None])).pooler_output.numpy()
    got = enc.encode_batch([array])
    assert got.shape == (1, 32)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert enc.provenance["model_type"] == "vit" and enc.preprocessing.startswith("hf:")


def test_transformers_get_image_features_is_preferred(tmp_path):
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    torch.manual_seed(0)
    config = CLIPConfig(
        text_config={"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32},
        vision_config={"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
                       "image_size": 32, "patch_size": 8},
        projection_dim=8,
    )
    model = CLIPModel(config).eval()
    model.save_pretrained(tmp_path)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(tmp_path)
    enc = load_encoder(str(tmp_path))
    array = enc.preprocess(Image.new("RGB", (40, 40), (1, 2, 3)))
    with torch.inference_mode():
        out = model.get_image_features(pixel_values=torch.from_numpy(array[None]))
    expected = (out if isinstance(out, torch.Tensor) else out.pooler_output).numpy()
    got = enc.encode_batch([array])
    assert got.shape == (1, 8)  # the projected embedding, not the 16-d backbone width
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_object_encoder_cache_identity_needs_a_revision():
    class Model:
        name = "mine"

        def encode(self, images):
            return np.ones((len(images), 2))

    assert ObjectEncoder(Model()).fingerprint is None
    Model.revision = "2024-05"
    assert ObjectEncoder(Model()).fingerprint == "object:mine:2024-05"


# ------------------------------------------------------------------ what a model folder or Hub id may name (issue 37)


def test_a_model_revision_that_is_a_path_is_refused_before_anything_loads(capsys, hub, tmp_path):
    """huggingface_hub reads ``refs/<revision>`` as a file: ``@/abs/file`` naming a folder outside the cache loaded
    that folder as the Hub id's model and recorded it as such."""
    from lookbench.cli import main
    from tests.helpers.engine_data import write_folder
    from tests.helpers.hub_cache import put_snapshot, tiny_clip, with_processor

    put_snapshot(hub, "someone/tiny-clip", "a" * 40, with_processor(tiny_clip(tmp_path / "clip"), 224))
    elsewhere = with_processor(tiny_clip(tmp_path / "elsewhere", image_size=64), 64)
    ref = tmp_path / "evil" / "ref"
    ref.parent.mkdir()
    ref.write_text(str(elsewhere))
    with pytest.raises(ValueError, match="starts with '/'"):
        load_encoder(f"someone/tiny-clip@{ref}")
    store, data = tmp_path / "store", write_folder(tmp_path / "data")
    capsys.readouterr()
    assert main(["evaluate", "--model", f"someone/tiny-clip@{ref}", "--data", str(data), "--quiet",
                 "--results", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "starts with '/'" in err and "never a path" in err
    assert not store.exists() or not any(store.rglob("*"))
    assert not (tmp_path / "home" / "lookbench" / "datasets").exists()  # refused before the data was loaded


MAX_CONFIG = 8 << 20  # lookbench.encoders.base.MAX_CONFIG_BYTES, typed


@pytest.mark.parametrize("content, words", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"model_type": 5}', "key model_type: 5 is not a string"),
    ('{"model_type": "vit", "auto_map": [1]}', "key auto_map: [1] is not an object"),
    ('{"model_type": "vit", "architectures": "ViTModel"}', "key architectures: 'ViTModel' is not a list of names"),
    ('{"model_type": "vit", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deep"),
    ('{"model_type": "vit", "pad": "' + "x" * MAX_CONFIG + '"}', f"larger than the {MAX_CONFIG}-byte limit"),
    (b'{"model_type": "\xff"}', "not valid JSON"),
    ('{"model_type": "no-such-type"}', "no-such-type"),  # transformers' own message, several lines long
])
def test_a_malformed_config_json_is_one_line_naming_the_file_and_key(tiny_vit, tmp_path, content, words):
    """It ended in an AttributeError or a RecursionError inside transformers, naming no file."""
    import shutil

    folder = shutil.copytree(tiny_vit, tmp_path / "model")
    config = folder / "config.json"
    config.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(EncoderError) as caught:
        load_encoder(str(folder))
    message = str(caught.value)
    assert "\n" not in message and str(config) in message and words in message
