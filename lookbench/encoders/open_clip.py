"""An open_clip checkpoint as a transformers model folder (the Marqo fashion models): its image tower, and its text
tower with its tokenizer files when the checkpoint has one.

open_clip needs torchvision, which does not install beside the CPU torch used here (docs/architecture.md §6), so
the weights are renamed once into transformers' own classes, as the GR-Lite checkpoint is:
- OpenAI-style ``VisionTransformer`` (``visual.conv1``, ``visual.transformer.resblocks.N``, ``visual.proj``) →
  ``CLIPVisionModelWithProjection``; the fused ``attn.in_proj_*`` split into q/k/v; activation GELU unless the
  config says ``quick_gelu``; ``image_embeds`` = ``ln_post(CLS) @ proj``, as open_clip pools (``pool_type="tok"``).
- timm SigLIP ViT (``visual.trunk.*``, ``timm_pool="map"``, ``timm_proj="none"``) → ``SiglipVisionModel``; the
  fused ``qkv`` split, the attention-pool latent → ``head.probe``, its ``q`` + ``kv`` → the head's
  ``in_proj_*``; activation exact GELU (timm's), LayerNorm eps 1e-6; ``pooler_output`` = the pooled latent.
- the text tower beside it: OpenAI-style (``token_embedding``, ``transformer.resblocks.N``, ``ln_final``,
  ``text_projection``; causal, pooled at the end token = the highest id, as open_clip's ``argmax``) →
  ``CLIPModel`` with ``eos_token_id`` 2, transformers' spelling of that ``argmax``; open_clip's ``TextTransformer``
  of a SigLIP (``text.*``: no causal mask, pooled at the last position, a projection with bias) → ``SiglipModel``'s
  text tower, exact GELU as open_clip's ``nn.GELU``, LayerNorm eps 1e-6; ``logit_scale`` (and ``logit_bias``) kept.
  A checkpoint without a text tower converts to the vision class alone.
Nothing is left over: every key is mapped or the conversion stops, naming it.
"""
from __future__ import annotations

import re
from pathlib import Path

from lookbench.encoders.base import read_model_json
from lookbench.encoders.text import tokenizer_files

_CLIP_DEFAULTS = {"pool_type": "tok", "final_ln_after_pool": False, "no_ln_pre": False, "attentional_pool": False,
                  "output_tokens": False}
# timm's SigLIP ViT names carry the size; the heads are not in the state dict.
_TIMM_HEADS = {"base": 12, "large": 16}


def load_open_clip(snapshot: Path) -> tuple[dict, dict, dict]:
    """(``model_cfg``, the ``visual.*`` tensors, every other tensor) of a snapshot holding ``open_clip_config.json``
    + weights."""
    import torch

    config = read_model_json(snapshot / "open_clip_config.json")["model_cfg"]
    if (snapshot / "open_clip_model.safetensors").is_file():
        from safetensors.torch import load_file

        state = load_file(str(snapshot / "open_clip_model.safetensors"))
    elif (snapshot / "open_clip_pytorch_model.bin").is_file():
        state = torch.load(snapshot / "open_clip_pytorch_model.bin", map_location="cpu", weights_only=True)
    else:
        raise ValueError(f"{snapshot} has neither open_clip_model.safetensors nor open_clip_pytorch_model.bin")
    return (config, {k[len("visual."):]: v for k, v in state.items() if k.startswith("visual.")},
            {k: v for k, v in state.items() if not k.startswith("visual.")})


def convert_open_clip(snapshot: Path, output: Path) -> Path:
    """Write the converted folder (config.json + model.safetensors, and the tokenizer's files when the text tower
    is converted) into ``output``."""
    import shutil

    snapshot = Path(snapshot)
    config, visual, rest = load_open_clip(snapshot)
    siglip = "trunk.patch_embed.proj.weight" in visual
    if not siglip and "conv1.weight" not in visual:
        raise ValueError(f"{snapshot}: visual tower is neither OpenAI-style (visual.conv1) nor timm (visual.trunk)")
    vision, state, mapped = (_siglip if siglip else _clip)(config, visual)
    left = sorted(set(visual) - mapped)
    if left:
        raise ValueError(f"{snapshot}: {len(left)} vision weights have no place in the converted model: {', '.join(left)}")
    logits = {k for k in ("logit_scale", "logit_bias") if k in rest}
    if set(rest) - logits:  # a text tower: both towers in transformers' two-tower class
        text, text_state, mapped = (_siglip_text if siglip else _clip_text)(config, rest)
        left = sorted(set(rest) - mapped - logits)
        if left:
            raise ValueError(f"{snapshot}: {len(left)} text weights have no place in the converted model: {', '.join(left)}")
        model = _two_towers(siglip, vision, text, config)
        state = ({f"vision_model.{k}": v for k, v in state.items()} if siglip else state) | text_state
        state |= {k: rest[k].reshape(model.state_dict()[k].shape) for k in logits if k in model.state_dict()}
        model = _load(model, state)
    else:
        from transformers import CLIPVisionModelWithProjection, SiglipVisionModel

        model = _load((SiglipVisionModel if siglip else CLIPVisionModelWithProjection)(vision), state)
    model.save_pretrained(output)
    if set(rest) - logits:
        for path in tokenizer_files(snapshot):
            shutil.copyfile(path, Path(output) / path.name)
    return output


def _two_towers(siglip: bool, vision, text, config: dict):
    from transformers import CLIPConfig, CLIPModel, SiglipConfig, SiglipModel

    if siglip:
        return SiglipModel(SiglipConfig(text_config=text.to_dict(), vision_config=vision.to_dict()))
    return CLIPModel(CLIPConfig(text_config=text.to_dict(), vision_config=vision.to_dict(),
                                projection_dim=int(config["embed_dim"])))


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
    """(vision config, state in ``CLIPVisionModelWithProjection``'s = ``CLIPModel``'s names, the keys mapped)."""
    from transformers import CLIPVisionConfig

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
    return hf, state, mapped


def _siglip(config: dict, visual: dict):
    """(vision config, state in ``SiglipVisionModel``'s names, the keys mapped)."""
    from transformers import SiglipVisionConfig

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
    return hf, state, mapped


# Text settings that change the forward pass without adding weights: open_clip's defaults (its CLIP class: causal,
# pooled by argmax, a projection matrix without bias), and the values the SigLIP text tower converts with.
_TEXT_DEFAULTS = {"pool_type": "argmax", "no_causal_mask": False, "proj_bias": False, "embed_cls": False}
_SIGLIP_TEXT = {"pool_type": "last", "no_causal_mask": True, "proj_bias": True, "embed_cls": False}


def _text_layers(text: dict, prefix: str, dst: str, state: dict, mapped: set) -> int:
    """The resblocks of an open_clip text transformer (``prefix`` + ``transformer.resblocks.N``) into transformers'
    encoder layers under ``dst``; returns how many there are."""
    layers = len({k.split(".")[2 + prefix.count(".")] for k in text if k.startswith(f"{prefix}transformer.resblocks.")})
    names = {"ln_1": "layer_norm1", "ln_2": "layer_norm2", "mlp.c_fc": "mlp.fc1", "mlp.c_proj": "mlp.fc2",
             "attn.out_proj": "self_attn.out_proj"}
    for i in range(layers):
        src, out = f"{prefix}transformer.resblocks.{i}", f"{dst}.encoder.layers.{i}"
        for p in ("weight", "bias"):
            for theirs, ours in names.items():
                state[f"{out}.{ours}.{p}"] = text[f"{src}.{theirs}.{p}"]
                mapped.add(f"{src}.{theirs}.{p}")
            for key, tensor in _split_qkv(text[f"{src}.attn.in_proj_{p}"], f"{out}.self_attn").items():
                state[f"{key}.{p}"] = tensor
            mapped.add(f"{src}.attn.in_proj_{p}")
    return layers


def _text_common(config: dict, text: dict, prefix: str, defaults: dict, converts: dict):
    """What both text towers share: the settings checked, embeddings, final norm; (text cfg, state, mapped, sizes)."""
    cfg = config.get("text_cfg", {})
    odd = {k: cfg.get(k, defaults[k]) for k in converts if cfg.get(k, defaults[k]) != converts[k]}
    if odd:
        raise ValueError(f"open_clip text settings this conversion does not reproduce: {odd}")
    tokens = text[f"{prefix}token_embedding.weight"]
    state = {"text_model.embeddings.token_embedding.weight": tokens,
             "text_model.embeddings.position_embedding.weight": text[f"{prefix}positional_embedding"]}
    mapped = {f"{prefix}token_embedding.weight", f"{prefix}positional_embedding"}
    for p in ("weight", "bias"):
        state[f"text_model.final_layer_norm.{p}"] = text[f"{prefix}ln_final.{p}"]
        mapped.add(f"{prefix}ln_final.{p}")
    layers = _text_layers(text, prefix, "text_model", state, mapped)
    width = tokens.shape[1]
    sizes = dict(vocab_size=tokens.shape[0], hidden_size=width, num_hidden_layers=layers,
                 num_attention_heads=int(cfg.get("heads", width // 64)),
                 intermediate_size=text[f"{prefix}transformer.resblocks.0.mlp.c_fc.weight"].shape[0],
                 max_position_embeddings=text[f"{prefix}positional_embedding"].shape[0])
    return cfg, state, mapped, sizes


def _clip_text(config: dict, text: dict):
    """OpenAI-style text tower (open_clip's CLIP class: keys at the top level) → ``CLIPModel``'s."""
    from transformers import CLIPTextConfig

    cfg, state, mapped, sizes = _text_common(config, text, "", _TEXT_DEFAULTS, _TEXT_DEFAULTS)
    state["text_projection.weight"] = text["text_projection"].T.contiguous()
    mapped.add("text_projection")
    hf = CLIPTextConfig(**sizes, hidden_act="quick_gelu" if config.get("quick_gelu") else "gelu", layer_norm_eps=1e-5,
                        eos_token_id=2)  # 2: pooled at the highest token id, open_clip's argmax
    return hf, state, mapped


def _siglip_text(config: dict, text: dict):
    """open_clip's ``TextTransformer`` of a SigLIP (``text.*``) → ``SiglipModel``'s text tower."""
    from transformers import SiglipTextConfig

    prefix = "text."
    cfg, state, mapped, sizes = _text_common(config, text, prefix, _TEXT_DEFAULTS, _SIGLIP_TEXT)
    for p in ("weight", "bias"):
        state[f"text_model.head.{p}"] = text[f"{prefix}text_projection.{p}"]
        mapped.add(f"{prefix}text_projection.{p}")
    eps = float((cfg.get("norm_kwargs") or {}).get("eps", 1e-5))
    hf = SiglipTextConfig(**sizes, hidden_act="gelu", layer_norm_eps=eps, bos_token_id=None, eos_token_id=None,
                          projection_size=text[f"{prefix}text_projection.weight"].shape[0])
    return hf, state, mapped
