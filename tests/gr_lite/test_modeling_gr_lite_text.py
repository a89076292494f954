"""GR-Lite-text's transformers code: its image tower is GR-Lite exactly, its text embedding is unit length and blind to
padding, and a saved folder loads in a fresh process both ways (registered, and as remote code without lookbench)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from lookbench.models.gr_lite import GrLiteModel, GrLiteTextConfig, GrLiteTextModel, processor_for
from lookbench.models.gr_lite.configuration_gr_lite_text import TEXT_PRESET
from tests.helpers.gr_lite import BLOCK_LOOKBENCH, GR_LITE_DIR, run_python, tiny_config

TEXT_CODE_FILES = ("configuration_gr_lite_text.py", "modeling_gr_lite_text.py", "configuration_gr_lite.py", "modeling_gr_lite.py")
TINY_TEXT = dict(TEXT_PRESET, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, vocab_size=20)


def tiny_text_model(seed: int = 0) -> tuple[GrLiteTextModel, GrLiteModel]:
    """A tiny GR-Lite and a text model holding its weights as the image tower (as training builds one)."""
    torch.manual_seed(seed)
    tower = GrLiteModel(tiny_config()).eval()
    model = GrLiteTextModel(GrLiteTextConfig(vision_config=tower.config.to_dict(), text_config=TINY_TEXT))
    model.vision_model.load_state_dict(tower.state_dict())
    return model.eval(), tower


def test_image_features_are_the_towers_and_text_features_unit_length_and_blind_to_padding():
    model, tower = tiny_text_model()
    pixels = torch.randn(3, 3, 64, 64)
    with torch.no_grad():
        torch.testing.assert_close(model.get_image_features(pixels), tower.get_image_features(pixels), atol=0, rtol=0)
        ids = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 10, 11, 12]])
        mask = (ids != 0).long()
        text = model.get_text_features(ids, mask)
        alone = model.get_text_features(ids[:1, :3], mask[:1, :3])
        out = model(input_ids=ids, attention_mask=mask, pixel_values=pixels)
    assert text.shape == (2, model.config.embedding_dim) == (2, 64)
    torch.testing.assert_close(text.norm(dim=-1), torch.ones(2))
    torch.testing.assert_close(alone[0], text[0], atol=1e-6, rtol=0)  # padding changes nothing
    assert not torch.allclose(text[0], text[1])
    torch.testing.assert_close(out.logits_per_text, model.logit_scale.exp() * text @ out.image_embeds.T)
    torch.testing.assert_close(out.logits_per_image, out.logits_per_text.T)
    assert model.logit_scale.item() == pytest.approx(2.6592)  # CLIP's ln(1/0.07) until trained


EMBED_SNIPPET = """
import sys, numpy as np, torch
from PIL import Image
from transformers import AutoImageProcessor, AutoModel
model = AutoModel.from_pretrained({folder!r}, {kwargs}).eval()
processor = AutoImageProcessor.from_pretrained({folder!r}, {kwargs})
with torch.no_grad():
    image = model.get_image_features(**processor([Image.open(p) for p in {images!r}], return_tensors="pt"))
    text = model.get_text_features(torch.tensor([[3, 4, 5], [6, 7, 0]]), torch.tensor([[1, 1, 1], [1, 1, 0]]))
np.save({out!r}, np.concatenate([image.numpy(), text.numpy()]))
print(type(model).__module__, any(m.split(".")[0] == "lookbench" for m in sys.modules))
"""


@pytest.mark.slow
def test_saved_folder_loads_in_fresh_processes_registered_and_as_remote_code(tmp_path):
    model, tower = tiny_text_model(seed=3)
    folder = tmp_path / "gr-lite-text-tiny"
    model.save_pretrained(folder)
    processor_for(tower.config).save_pretrained(folder)
    saved = json.loads((folder / "config.json").read_text())
    assert saved["model_type"] == "gr_lite_text" and saved["vision_config"]["model_type"] == "gr_lite"
    assert saved["auto_map"] == {"AutoConfig": "configuration_gr_lite_text.GrLiteTextConfig",
                                 "AutoModel": "modeling_gr_lite_text.GrLiteTextModel"}
    for code in TEXT_CODE_FILES:  # the companion's code and the GR-Lite code it imports travel with the weights
        assert not (folder / code).is_symlink() and (folder / code).read_bytes() == (GR_LITE_DIR / code).read_bytes(), code
        assert "lookbench" not in (folder / code).read_text().replace("LookBench", "")
    images = []
    for i in range(2):
        path = tmp_path / f"img{i}.png"
        Image.fromarray(np.random.default_rng(i).integers(0, 256, (50, 40, 3), dtype=np.uint8)).save(path)
        images.append(str(path))

    a = run_python("from lookbench.models.gr_lite import register_auto_classes\nregister_auto_classes()\n"
                   + EMBED_SNIPPET.format(folder=str(folder), kwargs="", images=images, out=str(tmp_path / "a.npy")), tmp_path)
    assert a.stdout.split() == ["lookbench.models.gr_lite.modeling_gr_lite_text", "True"]
    b = run_python(BLOCK_LOOKBENCH + EMBED_SNIPPET.format(folder=str(folder), kwargs="trust_remote_code=True", images=images,
                                                          out=str(tmp_path / "b.npy")), tmp_path)
    module, lookbench_loaded = b.stdout.split()
    assert module.startswith("transformers_modules.") and module.endswith(".modeling_gr_lite_text") and lookbench_loaded == "False"
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))
    with torch.no_grad():
        expected = tower.get_image_features(processor_for(tower.config)([Image.open(p) for p in images], return_tensors="pt")["pixel_values"])
    np.testing.assert_allclose(np.load(tmp_path / "a.npy")[:2], expected.numpy(), atol=1e-6)
