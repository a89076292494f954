"""Text towers (lookbench.encoders.text): the preprocessing each family's harness applies, the registry's text towers
on tiny random models of each family in a fake Hub cache, and which folders read."""
import json

import numpy as np
import pytest

from lookbench.cli import main
from lookbench.encoders.entries import REGISTRY
from lookbench.encoders.registry import load_encoder
from lookbench.encoders.text import TextTower
from tests.helpers.engine_data import write_folder
from tests.helpers.hub_cache import cache_family, put_snapshot, tiny_clip, tiny_dinov2, with_processor


def test_the_cleanings_are_the_harnesses():
    assert TextTower(64).prepare("Striped Red V-Neck top") == "Striped Red V-Neck top"
    assert TextTower(64, clean="lower").prepare("Striped Red V-Neck top") == "striped red v-neck top"
    # open_clip's "canonicalize": lower-cased, punctuation removed, whitespace collapsed
    assert TextTower(64, clean="canonicalize").prepare("A  t-shirt/top,  dark_grey.") == "a tshirttop dark grey"
    assert TextTower(77, template="a photo of {}").prepare("red top") == "a photo of red top"
    assert TextTower(64, "longest", attention_mask=False).key == (
        "tokenizer, max_length 64, padding longest, clean none, template '{}', attention mask not passed")


# ------------------------------------------------------------------ the registry's text towers (issue 39 item 3)

TINY_WIDTH = {"clip-b32": 8, "siglip2-b16": 16, "marqo-fashionclip": 8, "marqo-fashionsiglip": 48}


@pytest.mark.parametrize("name", sorted(TINY_WIDTH))
def test_each_text_tower_reads_offline_in_its_image_space_as_declared(name, hub, tmp_path):
    cache_family(hub, name, tmp_path)
    encoder = load_encoder(name)
    assert encoder.text_tower == REGISTRY[name].text.key and len(encoder.text_fingerprint) == 64
    texts = ["striped red long-sleeved v-neck top", "An item in the category shoes whose color is black.", "dark ankle boot"]
    vectors = encoder.encode_text(texts)
    assert vectors.shape == (3, TINY_WIDTH[name]) and np.isfinite(vectors).all() and not np.allclose(vectors[0], vectors[1])
    assert np.allclose(vectors, encoder.encode_text(texts))  # one text, one vector, whatever the batch
    assert np.allclose(vectors[2], encoder.encode_text(texts[2:])[0], atol=1e-6)
    if REGISTRY[name].text.clean != "none":  # lower-cased before the tokenizer, as the family's harness does
        assert np.allclose(encoder.encode_text(["DARK Ankle Boot"]), vectors[2:], atol=1e-6)


def test_a_marqo_checkpoint_is_converted_with_its_tokenizer_once(hub, tmp_path):
    commit = cache_family(hub, "marqo-fashionsiglip", tmp_path)
    encoder = load_encoder("marqo-fashionsiglip")
    assert encoder.folder.name == f"{commit}.v2" and (encoder.folder / "tokenizer.json").is_file()
    assert type(encoder.module).__name__ == "SiglipModel"


def test_evaluate_reads_text_with_a_hub_clip_offline_and_refuses_an_image_only_model(hub, tmp_path, capsys):
    """Issue 39: `lookbench evaluate --model <a CLIP Hub id> --queries text` on a tiny model in a fake Hub cache; an
    image-only model, registered or not, is refused in one line."""
    put_snapshot(hub, "someone/tiny-clip", "a" * 40, with_processor(tiny_clip(tmp_path / "clip"), 224))
    data = write_folder(tmp_path / "data", texts=True)
    out = tmp_path / "out"
    assert main(["evaluate", "--model", "someone/tiny-clip", "--queries", "text", "--text-form", "long", "--data",
                 str(data), "--quiet", "--output", str(out), "--no-save"]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["provenance"]["queries"] == "text-long" and result["overall"]["num_queries"] == 7
    assert result["provenance"]["model"]["text_tower"].startswith("tokenizer, max_length 77, padding longest")
    put_snapshot(hub, "someone/tiny-dino", "b" * 40, with_processor(tiny_dinov2(tmp_path / "dino"), 56))
    cache_family(hub, "dinov2-vitl", tmp_path)
    capsys.readouterr()
    for model in ("someone/tiny-dino", "dinov2-vitl"):
        assert main(["evaluate", "--model", model, "--queries", "text", "--data", str(data), "--quiet", "--no-save"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "has no text tower, so it cannot read text queries" in err, err


def test_a_registered_text_tower_whose_folder_lacks_its_tokenizer_is_named(hub, tmp_path, capsys):
    commit = cache_family(hub, "clip-b32", tmp_path)
    snapshot = hub / "models--openai--clip-vit-base-patch32" / "snapshots" / commit
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (snapshot / name).unlink()
    data = write_folder(tmp_path / "data", texts=True)
    capsys.readouterr()
    assert main(["evaluate", "--model", "clip-b32", "--queries", "text", "--data", str(data), "--no-save", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and (f"model clip-b32 has a text tower, but {snapshot} holds no tokenizer (tokenizer.json, "
                                     "tokenizer_config.json, special_tokens_map.json, ...)") in err, err


def test_the_gr_lite_mini_text_entry_reads_a_gr_lite_text_folder(tmp_path):
    """The default text model's entry on a folder as GR-Lite-text's training writes one (lookbench.training): its
    word tokenizer, padded to the longest text with the mask passed, and GR-Lite's image tower."""
    import torch
    from PIL import Image

    from lookbench.encoders.base import TransformersEncoder
    from lookbench.models.gr_lite import GrLiteTextConfig, GrLiteTextModel, processor_for
    from lookbench.models.gr_lite.configuration_gr_lite_text import TEXT_PRESET
    from lookbench.training.tokenizer import train_tokenizer
    from tests.helpers.gr_lite import tiny_config

    torch.manual_seed(0)
    text = dict(TEXT_PRESET, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, vocab_size=20)
    model = GrLiteTextModel(GrLiteTextConfig(vision_config=tiny_config().to_dict(), text_config=text)).eval()
    model.save_pretrained(tmp_path / "model")
    processor_for(model.config.vision_config).save_pretrained(tmp_path / "model")
    train_tokenizer(["striped red top", "dark ankle boot"]).save_pretrained(tmp_path / "model")
    encoder = TransformersEncoder(str(tmp_path / "model"), REGISTRY["gr-lite-mini-text"])
    vectors = encoder.encode_text(["striped red top", "dark ankle boot", "red top"])
    alone = encoder.encode_text(["red top"])
    assert vectors.shape == (3, 64) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.allclose(vectors[2], alone[0], atol=1e-5)  # padding to the longest text changes nothing (masked)
    image = encoder.encode_batch([encoder.preprocess(Image.new("RGB", (40, 30), "red"))])
    assert image.shape == (1, 64)
