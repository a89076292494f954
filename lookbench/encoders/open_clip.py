"""An open_clip checkpoint's image tower as a transformers model folder (the Marqo fashion models).

open_clip needs torchvision, which does not install beside the CPU torch used here (docs/architecture.md §6), so
the weights are renamed once into transformers' own classes, as the GR-Lite checkpoint is:
- OpenAI-style ``VisionTransformer`` (``visual.conv1``, ``visual.transformer.resblocks.N``, ``visual.proj``) →
  ``CLIPVisionModelWithProjection``; the fused ``attn.in_proj_*`` split into q/k/v; activation GELU unless the
  config says ``quick_gelu``; ``image_embeds`` = ``ln_post(CLS) @ proj``, as open_clip pools (``pool_type="tok"``).
- timm SigLIP ViT (``visual.trunk.*``, ``timm_pool="map"``, ``timm_proj="none"``) → ``SiglipVisionModel``; the
  fused ``qkv`` split, the attention-pool latent → ``head.probe``, its ``q`` + ``kv`` → the head's
  ``in_proj_*``; activation exact GELU (timm's), LayerNorm eps 1e-6; ``pooler_output`` = the pooled latent.
Nothing is left over: every vision key is mapped or the conversion stops, naming it.
"""
from __future__ import annotations

import re
from pathlib import Path

from lookbench.encoders.base import read_model_json

_CLIP_DEFAULTS = {"pool_type": "tok", "final_ln_after_pool": False, "no_ln_pre": False, "attentional_pool": False,
                  "output_tokens": False}
# timm's SigLIP ViT names carry the size; the heads are not in the state dict.
_TIMM_HEADS = {"base": 12, "large": 16}


def load_open_clip(snapshot: Path) -> tuple[dict, dict]:
    """(``model_cfg``, the ``visual.*`` tensors) of a snapshot holding ``open_clip_config.json`` + weights."""
    import torch

    config = read_model_json(snapshot / "open_clip_config.json")["model_cfg"]
    if (snapshot / "open_clip_model.safetensors").is_file():
        from safetensors.torch import load_file

        state = load_file(str(snapshot / "open_clip_model.safetensors"))
    elif (snapshot / "open_clip_pytorch_model.bin").is_file():
        state = torch.load(snapshot / "open_clip_pytorch_model.bin", map_location="cpu", weights_only=True)
    else:
        raise ValueError(f"{snapshot} has neither open_clip_model.safetensors nor open_clip_pytorch_model.bin")
    return config, {k[len("visual."):]: v for k, v in state.items() if k.startswith("visual.")}


def convert_open_clip(snapshot: Path, output: Path) -> Path:
    """Write the converted folder (config.json + model.safetensors) into ``output``."""
    config, visual = load_open_clip(Path(snapshot))
    if "trunk.patch_embed.proj.weight" in visual:
        model, mapped = _siglip(config, visual)
    elif "conv1.weight" in visual:
        model, mapped = _clip(config, visual)
    else:
        raise ValueError(f"{snapshot}: visual tower is neither OpenAI-style (visual.conv1) nor timm (visual.trunk)")
    left = sorted(set(visual) - mapped)
    if left:
        raise ValueError(f"{snapshot}: {len(left)} vision weights have no place in the converted model: {', '.join(left)}")
    model.save_pretrained(output)
    return output


def _split_qkv(tensor, prefix: str) -> dict:
    q, k, v = tensor.chunk(3, dim=0)
    return {f"{prefix}.q_proj": q, f"{prefix}.k_proj": k, f"{prefix}.v_proj": v}


def _load(model, state: dict):
    """Load every tensor of the model, refusing missing or unexpected keys."""
    result = model.load_state_dict(state, strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise ValueError(f"conversion incomplete: missing {result.missing_keys}, unexpected {result.unexpected_keys}")
    return model.eval()


def _clip(config: dict, visual: dict):
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    vision = config["vision_cfg"]
    # Settings that change the forward pass without adding weights: only open_clip's defaults convert.
    odd = {k: vision[k] for k, default in _CLIP_DEFAULTS.items() if vision.get(k, default) != default}
    if odd:
        raise ValueError(f"open_clip vision settings this conversion does not reproduce: {odd}")
    width, layers, patch = int(vision["width"]), int(vision["layers"]), int(vision["patch_size"])
    hf = CLIPVisionConfig(
        hidden_size=width, intermediate_size=int(width * vision.get("mlp_ratio", 4.0)), num_hidden_layers=layers,
        num_attention_heads=width // int(vision.get("head_width", 64)), image_size=int(vision["image_size"]),
        patch_size=patch, projection_dim=int(config["embed_dim"]),
        hidden_act="quick_gelu" if config.get("quick_gelu") else "gelu", layer_norm_eps=1e-5,
    )
    state = {
        "vision_model.embeddings.patch_embedding.weight": visual["conv1.weight"],
        "vision_model.embeddings.class_embedding": visual["class_embedding"],
        "vision_model.embeddings.position_embedding.weight": visual["positional_embedding"],
        "visual_projection.weight": visual["proj"].T.contiguous(),
    }
    mapped = {"conv1.weight", "class_embedding", "positional_embedding", "proj"}
    for ours, theirs in (("pre_layrnorm", "ln_pre"), ("post_layernorm", "ln_post")):
        for p in ("weight", "bias"):
            state[f"vision_model.{ours}.{p}"] = visual[f"{theirs}.{p}"]
            mapped.add(f"{theirs}.{p}")
    names = {"ln_1": "layer_norm1", "ln_2": "layer_norm2", "mlp.c_fc": "mlp.fc1", "mlp.c_proj": "mlp.fc2",
             "attn.out_proj": "self_attn.out_proj"}
    for i in range(layers):
        src, dst = f"transformer.resblocks.{i}", f"vision_model.encoder.layers.{i}"
        for p in ("weight", "bias"):
            for theirs, ours in names.items():
                state[f"{dst}.{ours}.{p}"] = visual[f"{src}.{theirs}.{p}"]
                mapped.add(f"{src}.{theirs}.{p}")
            for key, tensor in _split_qkv(visual[f"{src}.attn.in_proj_{p}"], f"{dst}.self_attn").items():
                state[f"{key}.{p}"] = tensor
            mapped.add(f"{src}.attn.in_proj_{p}")
    return _load(CLIPVisionModelWithProjection(hf), state), mapped


def _siglip(config: dict, visual: dict):
    from transformers import SiglipVisionConfig, SiglipVisionModel

    vision = config["vision_cfg"]
    timm_name = vision.get("timm_model_name", "")
    size = re.match(r"vit_(\w+?)_patch", timm_name)
    if not size or size.group(1) not in _TIMM_HEADS:
        raise ValueError(f"timm model {timm_name!r}: only {', '.join(f'vit_{s}_*' for s in _TIMM_HEADS)} SigLIP towers convert")
    if vision.get("timm_pool") != "map" or vision.get("timm_proj", "none") != "none":
        raise ValueError(f"timm tower {timm_name!r}: only attention pooling (timm_pool='map') without projection converts")
    patch_weight = visual["trunk.patch_embed.proj.weight"]
    width, patch = patch_weight.shape[0], patch_weight.shape[-1]
    layers = len({k.split(".")[2] for k in visual if k.startswith("trunk.blocks.")})
    hf = SiglipVisionConfig(
        hidden_size=width, intermediate_size=visual["trunk.blocks.0.mlp.fc1.weight"].shape[0], num_hidden_layers=layers,
        num_attention_heads=_TIMM_HEADS[size.group(1)], image_size=int(vision["image_size"]), patch_size=patch,
        hidden_act="gelu", layer_norm_eps=1e-6, vision_use_head=True,
    )
    state = {
        f"embeddings.patch_embedding.weight": patch_weight,
        f"embeddings.patch_embedding.bias": visual["trunk.patch_embed.proj.bias"],
        f"embeddings.position_embedding.weight": visual["trunk.pos_embed"][0],
        f"head.probe": visual["trunk.attn_pool.latent"],
    }
    mapped = {"trunk.patch_embed.proj.weight", "trunk.patch_embed.proj.bias", "trunk.pos_embed", "trunk.attn_pool.latent"}

    def take(theirs: str, ours: str):
        for p in ("weight", "bias"):
            state[f"{ours}.{p}"] = visual[f"trunk.{theirs}.{p}"]
            mapped.add(f"trunk.{theirs}.{p}")

    take("norm", "post_layernorm")
    names = {"norm1": "layer_norm1", "norm2": "layer_norm2", "mlp.fc1": "mlp.fc1", "mlp.fc2": "mlp.fc2",
             "attn.proj": "self_attn.out_proj"}
    for i in range(layers):
        for theirs, ours in names.items():
            take(f"blocks.{i}.{theirs}", f"encoder.layers.{i}.{ours}")
        for p in ("weight", "bias"):
            for key, tensor in _split_qkv(visual[f"trunk.blocks.{i}.attn.qkv.{p}"], f"encoder.layers.{i}.self_attn").items():
                state[f"{key}.{p}"] = tensor
            mapped.add(f"trunk.blocks.{i}.attn.qkv.{p}")
    for theirs, ours in (("attn_pool.norm", "head.layernorm"), ("attn_pool.mlp.fc1", "head.mlp.fc1"),
                         ("attn_pool.mlp.fc2", "head.mlp.fc2"), ("attn_pool.proj", "head.attention.out_proj")):
        take(theirs, ours)
    import torch

    for p in ("weight", "bias"):
        state[f"head.attention.in_proj_{p}"] = torch.cat(
            [visual[f"trunk.attn_pool.q.{p}"], visual[f"trunk.attn_pool.kv.{p}"]], dim=0)
        mapped |= {f"trunk.attn_pool.q.{p}", f"trunk.attn_pool.kv.{p}"}
    return _load(SiglipVisionModel(hf), state), mapped
