"""The open_clip conversion (``lookbench.encoders.open_clip``) against its layout: the converted transformers model
reproduces open_clip's (and timm's) forward written out from the checkpoint's own tensors, image and text towers;
what it cannot map is refused."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lookbench.encoders.open_clip import convert_open_clip
from tests.helpers.hub_cache import (MARQO_CLIP_TEXT_CFG, marqo_clip_state, marqo_siglip_state, open_clip_siglip_state,
                                     open_clip_vit_state, tiny_marqo_clip, tiny_marqo_siglip, write_open_clip)


def _layer_norm(x, state, key, eps):
    return F.layer_norm(x, x.shape[-1:], state[f"{key}.weight"], state[f"{key}.bias"], eps)


def open_clip_vit_reference(state: dict, pixels: torch.Tensor, heads: int) -> torch.Tensor:
    """open_clip's VisionTransformer forward, written from its layout: conv1, class token, positions, ln_pre,
    resblocks (nn.MultiheadAttention on in_proj_*), ln_post on the class token, @ proj."""
    v = {k[len("visual."):]: t for k, t in state.items() if k.startswith("visual.")}
    x = F.conv2d(pixels, v["conv1.weight"], stride=v["conv1.weight"].shape[-1]).flatten(2).transpose(1, 2)
    x = torch.cat([v["class_embedding"].expand(x.shape[0], 1, -1), x], dim=1) + v["positional_embedding"]
    x = _layer_norm(x, v, "ln_pre", 1e-5)
    width = x.shape[-1]
    for i in range(sum(k.endswith(".attn.in_proj_weight") for k in v)):
        b = f"transformer.resblocks.{i}"
        attn = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        attn.load_state_dict({"in_proj_weight": v[f"{b}.attn.in_proj_weight"], "in_proj_bias": v[f"{b}.attn.in_proj_bias"],
                              "out_proj.weight": v[f"{b}.attn.out_proj.weight"], "out_proj.bias": v[f"{b}.attn.out_proj.bias"]})
        h = _layer_norm(x, v, f"{b}.ln_1", 1e-5)
        x = x + attn(h, h, h, need_weights=False)[0]
        h = F.linear(F.gelu(F.linear(_layer_norm(x, v, f"{b}.ln_2", 1e-5), v[f"{b}.mlp.c_fc.weight"], v[f"{b}.mlp.c_fc.bias"])),
                     v[f"{b}.mlp.c_proj.weight"], v[f"{b}.mlp.c_proj.bias"])
        x = x + h
    return _layer_norm(x[:, 0], v, "ln_post", 1e-5) @ v["proj"]


def timm_siglip_reference(state: dict, pixels: torch.Tensor, heads: int) -> torch.Tensor:
    """timm's SigLIP ViT with attention pooling, written from its layout: patch_embed + pos_embed, blocks with a
    fused qkv, final norm, then the latent query attending to the tokens (q, kv, proj) and a residual MLP."""
    t = {k[len("visual.trunk."):]: v for k, v in state.items() if k.startswith("visual.trunk.")}
    w = t["patch_embed.proj.weight"]
    x = F.conv2d(pixels, w, t["patch_embed.proj.bias"], stride=w.shape[-1]).flatten(2).transpose(1, 2) + t["pos_embed"]
    n, width = x.shape[0], x.shape[-1]

    def split(y):
        return y.reshape(n, -1, heads, width // heads).transpose(1, 2)

    for i in range(sum(k.endswith(".attn.qkv.weight") for k in t)):
        b = f"blocks.{i}"
        q, k, v = F.linear(_layer_norm(x, t, f"{b}.norm1", 1e-6), t[f"{b}.attn.qkv.weight"], t[f"{b}.attn.qkv.bias"]).chunk(3, -1)
        a = F.scaled_dot_product_attention(split(q), split(k), split(v)).transpose(1, 2).reshape(n, -1, width)
        x = x + F.linear(a, t[f"{b}.attn.proj.weight"], t[f"{b}.attn.proj.bias"])
        h = _layer_norm(x, t, f"{b}.norm2", 1e-6)
        x = x + F.linear(F.gelu(F.linear(h, t[f"{b}.mlp.fc1.weight"], t[f"{b}.mlp.fc1.bias"])), t[f"{b}.mlp.fc2.weight"], t[f"{b}.mlp.fc2.bias"])
    x = _layer_norm(x, t, "norm", 1e-6)
    q = F.linear(t["attn_pool.latent"].expand(n, -1, -1), t["attn_pool.q.weight"], t["attn_pool.q.bias"])
    k, v = F.linear(x, t["attn_pool.kv.weight"], t["attn_pool.kv.bias"]).chunk(2, -1)
    a = F.scaled_dot_product_attention(split(q), split(k), split(v)).transpose(1, 2).reshape(n, -1, width)
    p = F.linear(a, t["attn_pool.proj.weight"], t["attn_pool.proj.bias"])
    h = _layer_norm(p, t, "attn_pool.norm", 1e-6)
    p = p + F.linear(F.gelu(F.linear(h, t["attn_pool.mlp.fc1.weight"], t["attn_pool.mlp.fc1.bias"])),
                     t["attn_pool.mlp.fc2.weight"], t["attn_pool.mlp.fc2.bias"])
    return p[:, 0]


def test_open_clip_vit_conversion_reproduces_the_open_clip_forward(tmp_path):
    from transformers import CLIPVisionModelWithProjection


    out = convert_open_clip(tiny_marqo_clip(tmp_path / "src", text=False), tmp_path / "out")
    converted = CLIPVisionModelWithProjection.from_pretrained(out).eval()
    pixels = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours = converted(pixel_values=pixels).image_embeds
    expected = open_clip_vit_reference(open_clip_vit_state(), pixels, heads=16 // 8)
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-4)


def test_open_clip_siglip_conversion_reproduces_the_timm_forward(tmp_path):
    from transformers import SiglipVisionModel


    converted = SiglipVisionModel.from_pretrained(convert_open_clip(tiny_marqo_siglip(tmp_path / "src", text=False),
                                                                    tmp_path / "out")).eval()
    pixels = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours = converted(pixel_values=pixels).pooler_output
    expected = timm_siglip_reference(open_clip_siglip_state(), pixels, heads=12)  # vit_base: 12 heads
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-4)


def test_an_open_clip_checkpoint_with_an_unmapped_vision_key_is_refused(tmp_path):

    state = {**open_clip_vit_state(), "visual.attn_pool.query": torch.zeros(2)}
    cfg = {"embed_dim": 8, "vision_cfg": {"image_size": 224, "layers": 2, "width": 16, "patch_size": 32, "head_width": 8}}
    with pytest.raises(ValueError, match="attn_pool.query"):
        convert_open_clip(write_open_clip(tmp_path / "src", state, cfg, [0.5] * 3, [0.5] * 3), tmp_path / "out")


def test_an_open_clip_setting_the_conversion_cannot_reproduce_is_refused(tmp_path):

    cfg = {"embed_dim": 8, "vision_cfg": {"image_size": 224, "layers": 2, "width": 16, "patch_size": 32, "head_width": 8,
                                          "pool_type": "avg"}}
    with pytest.raises(ValueError, match="does not reproduce: {'pool_type': 'avg'}"):
        convert_open_clip(write_open_clip(tmp_path / "src", open_clip_vit_state(), cfg, [0.5] * 3, [0.5] * 3), tmp_path / "out")


def open_clip_text_reference(state: dict, ids: torch.Tensor, heads: int, prefix: str = "", siglip: bool = False):
    """open_clip's text transformer, written from its layout: token + position embeddings, resblocks (causal for its
    CLIP class, unmasked for a SigLIP's), ln_final, pooled at the highest id (CLIP's argmax) or the last position, and
    projected (a matrix; a linear layer with bias for a SigLIP)."""
    t = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix) and not k.startswith("visual.")}
    eps = 1e-6 if siglip else 1e-5
    x = t["token_embedding.weight"][ids] + t["positional_embedding"][: ids.shape[1]]
    length, width = ids.shape[1], x.shape[-1]
    mask = None if siglip else torch.full((length, length), float("-inf")).triu(1)
    for i in range(sum(k.endswith(".attn.in_proj_weight") for k in t)):
        b = f"transformer.resblocks.{i}"
        attn = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        attn.load_state_dict({"in_proj_weight": t[f"{b}.attn.in_proj_weight"], "in_proj_bias": t[f"{b}.attn.in_proj_bias"],
                              "out_proj.weight": t[f"{b}.attn.out_proj.weight"], "out_proj.bias": t[f"{b}.attn.out_proj.bias"]})
        h = _layer_norm(x, t, f"{b}.ln_1", eps)
        x = x + attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        h = F.linear(F.gelu(F.linear(_layer_norm(x, t, f"{b}.ln_2", eps), t[f"{b}.mlp.c_fc.weight"], t[f"{b}.mlp.c_fc.bias"])),
                     t[f"{b}.mlp.c_proj.weight"], t[f"{b}.mlp.c_proj.bias"])
        x = x + h
    x = _layer_norm(x, t, "ln_final", eps)
    if siglip:
        return F.linear(x[:, -1], t["text_projection.weight"], t["text_projection.bias"])
    return x[torch.arange(len(ids)), ids.argmax(dim=-1)] @ t["text_projection"]


def test_marqo_clip_keeps_its_text_tower_and_both_reproduce_open_clip(tmp_path):
    """Issue 39 item 3: both towers in CLIPModel, the tokenizer beside them; image features as the image-only
    conversion gives them, text features as open_clip computes them."""
    from transformers import AutoTokenizer, CLIPModel

    out = convert_open_clip(tiny_marqo_clip(tmp_path / "src"), tmp_path / "out")
    assert {"tokenizer.json", "tokenizer_config.json"} <= {p.name for p in out.iterdir()}
    model = CLIPModel.from_pretrained(out).eval()
    ids = AutoTokenizer.from_pretrained(out)(["striped red v-neck top", "dark ankle boot"], padding="max_length",
                                             max_length=77, return_tensors="pt")["input_ids"]
    pixels = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        text, image = model.get_text_features(input_ids=ids), model.get_image_features(pixel_values=pixels)
    text, image = (x if hasattr(x, "shape") else x.pooler_output for x in (text, image))
    state = marqo_clip_state()
    torch.testing.assert_close(text, open_clip_text_reference(state, ids, heads=MARQO_CLIP_TEXT_CFG["heads"]),
                               atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(image, open_clip_vit_reference(state, pixels, heads=16 // 8), atol=1e-5, rtol=1e-4)


def test_marqo_siglip_keeps_its_text_tower_and_both_reproduce_open_clip(tmp_path):
    from transformers import AutoTokenizer, SiglipModel

    out = convert_open_clip(tiny_marqo_siglip(tmp_path / "src"), tmp_path / "out")
    model = SiglipModel.from_pretrained(out).eval()
    ids = AutoTokenizer.from_pretrained(out)(["polka-dot pink bucket hat", "a"], padding="max_length", max_length=64,
                                             return_tensors="pt")["input_ids"]
    pixels = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        text, image = model.get_text_features(input_ids=ids), model.get_image_features(pixel_values=pixels)
    text, image = (x if hasattr(x, "shape") else x.pooler_output for x in (text, image))
    state = marqo_siglip_state()
    torch.testing.assert_close(text, open_clip_text_reference(state, ids, heads=2, prefix="text.", siglip=True),
                               atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(image, timm_siglip_reference(state, pixels, heads=12), atol=1e-5, rtol=1e-4)
    assert float(model.logit_scale) == pytest.approx(2.3) and float(model.logit_bias) == pytest.approx(-10.0)


def test_a_text_tower_the_conversion_cannot_reproduce_or_place_is_refused(tmp_path):
    cfg = {"embed_dim": 8, "vision_cfg": {"image_size": 224, "layers": 2, "width": 16, "patch_size": 32, "head_width": 8},
           "text_cfg": {**MARQO_CLIP_TEXT_CFG, "pool_type": "first"}}
    with pytest.raises(ValueError, match="text settings this conversion does not reproduce: {'pool_type': 'first'}"):
        convert_open_clip(write_open_clip(tmp_path / "a", marqo_clip_state(), cfg, [0.5] * 3, [0.5] * 3), tmp_path / "x")
    cfg["text_cfg"] = MARQO_CLIP_TEXT_CFG
    state = {**marqo_clip_state(), "text_decoder.weight": torch.zeros(2)}
    with pytest.raises(ValueError, match="1 text weights have no place in the converted model: text_decoder.weight"):
        convert_open_clip(write_open_clip(tmp_path / "b", state, cfg, [0.5] * 3, [0.5] * 3), tmp_path / "y")
