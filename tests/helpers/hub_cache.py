"""A Hugging Face hub cache on disk, laid out as huggingface_hub writes it (``file_download``): per repo
``<cache>/<type>s--owner--name/`` with ``blobs/<hash>`` holding the bytes, ``snapshots/<commit>/<file>`` symlinks to
them and ``refs/<branch>`` naming the commit; and tiny random-weight models of each family of the published
leaderboard, saved in the layout their Hub repos use."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from safetensors.torch import save_file

# Commits for repos whose registry entry pins none (test values standing for whatever the Hub's head is).
TEST_HEAD = "0123456789abcdef0123456789abcdef01234567"


def put_snapshot(cache: Path, repo_id: str, commit: str, folder: Path, repo_type: str = "model", ref: str | None = "main") -> Path:
    """Copy every file of ``folder`` into ``cache`` as the snapshot ``commit`` of ``repo_id``; ``ref`` points at it."""
    storage = Path(cache) / f"{repo_type}s--{repo_id.replace('/', '--')}"
    snapshot = storage / "snapshots" / commit
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        data = path.read_bytes()
        blob = storage / "blobs" / hashlib.sha256(data).hexdigest()
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = snapshot / path.relative_to(folder)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    if ref:
        (storage / "refs").mkdir(parents=True, exist_ok=True)
        (storage / "refs" / ref).write_text(commit)
    return snapshot


# ------------------------------------------------------------------------------------------ tiny families

def _save(model, out: Path) -> Path:
    model.save_pretrained(out)
    return out


def with_processor(folder: Path, size: int) -> Path:
    """A preprocessor_config.json, as a generic (unregistered) Hub model carries one."""
    (folder / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "CLIPImageProcessorPil", "size": {"shortest_edge": size},
        "crop_size": {"height": size, "width": size}}))
    return folder


TOKENIZER_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-/.,"


def tiny_tokenizer(folder: Path) -> Path:
    """A character tokenizer built with the tokenizers library, saved as a repo saves one (tokenizer.json +
    tokenizer_config.json): lower-cased, one id per letter, digit or mark, [UNK] for anything else, 42 ids, so that
    every tiny text tower's vocabulary (64) holds it."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, **{c: i + 2 for i, c in enumerate(TOKENIZER_CHARS)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                       pre_tokenizers.Split(Regex("."), behavior="isolated")])
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]").save_pretrained(folder)
    return folder


def tiny_clip(out: Path, image_size: int = 224) -> Path:
    from transformers import CLIPConfig, CLIPModel

    config = CLIPConfig(
        text_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, vocab_size=64),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                           image_size=image_size, patch_size=32),
        projection_dim=8,
    )
    return tiny_tokenizer(_save(CLIPModel(config), out))


def tiny_siglip(out: Path, image_size: int = 224) -> Path:
    """The fixed-resolution SigLIP2 checkpoints (google/siglip2-*-patch16-<res>) are transformers' SigLIP classes."""
    from transformers import SiglipConfig, SiglipModel

    config = SiglipConfig(
        text_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, vocab_size=64),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                           image_size=image_size, patch_size=32),
    )
    return tiny_tokenizer(_save(SiglipModel(config), out))


def tiny_dinov2(out: Path) -> Path:
    from transformers import Dinov2Config, Dinov2Model

    return _save(Dinov2Model(Dinov2Config(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                          num_attention_heads=2, image_size=56, patch_size=28)), out)


def tiny_dinov3_vit(out: Path) -> Path:
    from transformers import DINOv3ViTConfig, DINOv3ViTModel

    return _save(DINOv3ViTModel(DINOv3ViTConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                num_attention_heads=2, patch_size=32, num_register_tokens=2)), out)


def tiny_dinov3_convnext(out: Path) -> Path:
    from transformers import DINOv3ConvNextConfig, DINOv3ConvNextModel

    return _save(DINOv3ConvNextModel(DINOv3ConvNextConfig(hidden_sizes=[8, 8, 8, 16], depths=[1, 1, 1, 1])), out)


GR_LITE_TINY = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, num_register_tokens=4)


def tiny_gr_lite_published(out: Path) -> Path:
    """srpone/gr-lite's layout: a DINOv3 ViT state dict with blocks named ``layer.N.*`` (what
    ``convert_gr_lite_checkpoint`` reads), and a config stating the backbone sizes."""
    from transformers import DINOv3ViTConfig, DINOv3ViTModel

    from lookbench.models.gr_lite.configuration_gr_lite import PRESETS

    backbone = DINOv3ViTModel(DINOv3ViTConfig(**{**PRESETS["gr-lite"]["vision_config"], **GR_LITE_TINY}))
    out.mkdir(parents=True)
    save_file({k.removeprefix("model."): v.contiguous() for k, v in backbone.state_dict().items()}, out / "model.safetensors")
    (out / "config.json").write_text(json.dumps(GR_LITE_TINY))
    return out


def open_clip_vit_state(width=16, layers=2, patch=32, image=224, embed=8, seed=0) -> dict:
    """Random tensors named as open_clip's OpenAI-style ``VisionTransformer`` names them (``visual.*``), plus a text key."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.2

    state = {"visual.conv1.weight": r(width, 3, patch, patch), "visual.class_embedding": r(width),
             "visual.positional_embedding": r((image // patch) ** 2 + 1, width), "visual.proj": r(width, embed),
             "visual.ln_pre.weight": 1 + r(width), "visual.ln_pre.bias": r(width),
             "visual.ln_post.weight": 1 + r(width), "visual.ln_post.bias": r(width), "logit_scale": torch.tensor(4.6)}
    for i in range(layers):
        b = f"visual.transformer.resblocks.{i}"
        state.update({f"{b}.ln_1.weight": 1 + r(width), f"{b}.ln_1.bias": r(width), f"{b}.ln_2.weight": 1 + r(width),
                      f"{b}.ln_2.bias": r(width), f"{b}.attn.in_proj_weight": r(3 * width, width),
                      f"{b}.attn.in_proj_bias": r(3 * width), f"{b}.attn.out_proj.weight": r(width, width),
                      f"{b}.attn.out_proj.bias": r(width), f"{b}.mlp.c_fc.weight": r(4 * width, width),
                      f"{b}.mlp.c_fc.bias": r(4 * width), f"{b}.mlp.c_proj.weight": r(width, 4 * width),
                      f"{b}.mlp.c_proj.bias": r(width)})
    return state


def open_clip_siglip_state(width=48, layers=2, patch=16, image=224, seed=0) -> dict:
    """Random tensors named as open_clip's timm SigLIP tower names them (``visual.trunk.*``, attention pool)."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.2

    t = "visual.trunk"
    state = {f"{t}.patch_embed.proj.weight": r(width, 3, patch, patch), f"{t}.patch_embed.proj.bias": r(width),
             f"{t}.pos_embed": r(1, (image // patch) ** 2, width), f"{t}.norm.weight": 1 + r(width), f"{t}.norm.bias": r(width),
             f"{t}.attn_pool.latent": r(1, 1, width), f"{t}.attn_pool.q.weight": r(width, width), f"{t}.attn_pool.q.bias": r(width),
             f"{t}.attn_pool.kv.weight": r(2 * width, width), f"{t}.attn_pool.kv.bias": r(2 * width),
             f"{t}.attn_pool.proj.weight": r(width, width), f"{t}.attn_pool.proj.bias": r(width),
             f"{t}.attn_pool.norm.weight": 1 + r(width), f"{t}.attn_pool.norm.bias": r(width),
             f"{t}.attn_pool.mlp.fc1.weight": r(4 * width, width), f"{t}.attn_pool.mlp.fc1.bias": r(4 * width),
             f"{t}.attn_pool.mlp.fc2.weight": r(width, 4 * width), f"{t}.attn_pool.mlp.fc2.bias": r(width),
             "logit_bias": torch.tensor(-10.0)}
    for i in range(layers):
        b = f"{t}.blocks.{i}"
        state.update({f"{b}.norm1.weight": 1 + r(width), f"{b}.norm1.bias": r(width), f"{b}.norm2.weight": 1 + r(width),
                      f"{b}.norm2.bias": r(width), f"{b}.attn.qkv.weight": r(3 * width, width), f"{b}.attn.qkv.bias": r(3 * width),
                      f"{b}.attn.proj.weight": r(width, width), f"{b}.attn.proj.bias": r(width),
                      f"{b}.mlp.fc1.weight": r(4 * width, width), f"{b}.mlp.fc1.bias": r(4 * width),
                      f"{b}.mlp.fc2.weight": r(width, 4 * width), f"{b}.mlp.fc2.bias": r(width)})
    return state


def open_clip_text_state(prefix="", width=16, layers=2, vocab=64, context=77, embed=8, proj_bias=False, seed=1) -> dict:
    """Random tensors named as open_clip's text transformer names them: at the top level for its CLIP class
    (``prefix`` "", ``text_projection`` a matrix), under ``text.`` for a SigLIP's (a projection with bias)."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(*shape, generator=g) * 0.2

    p = prefix
    state = {f"{p}token_embedding.weight": r(vocab, width), f"{p}positional_embedding": r(context, width),
             f"{p}ln_final.weight": 1 + r(width), f"{p}ln_final.bias": r(width)}
    if proj_bias:
        state.update({f"{p}text_projection.weight": r(embed, width), f"{p}text_projection.bias": r(embed)})
    else:
        state[f"{p}text_projection"] = r(width, embed)
    for i in range(layers):
        b = f"{p}transformer.resblocks.{i}"
        state.update({f"{b}.ln_1.weight": 1 + r(width), f"{b}.ln_1.bias": r(width), f"{b}.ln_2.weight": 1 + r(width),
                      f"{b}.ln_2.bias": r(width), f"{b}.attn.in_proj_weight": r(3 * width, width),
                      f"{b}.attn.in_proj_bias": r(3 * width), f"{b}.attn.out_proj.weight": r(width, width),
                      f"{b}.attn.out_proj.bias": r(width), f"{b}.mlp.c_fc.weight": r(4 * width, width),
                      f"{b}.mlp.c_fc.bias": r(4 * width), f"{b}.mlp.c_proj.weight": r(width, 4 * width),
                      f"{b}.mlp.c_proj.bias": r(width)})
    return state


MARQO_CLIP_TEXT_CFG = {"context_length": 77, "vocab_size": 64, "width": 16, "heads": 2, "layers": 2}
MARQO_SIGLIP_TEXT_CFG = {"context_length": 64, "vocab_size": 64, "width": 32, "heads": 2, "layers": 2,
                         "no_causal_mask": True, "proj_bias": True, "pool_type": "last", "norm_kwargs": {"eps": 1e-6}}


def marqo_clip_state() -> dict:
    return {**open_clip_vit_state(), **open_clip_text_state()}


def marqo_siglip_state() -> dict:
    return {**open_clip_siglip_state(), **open_clip_text_state("text.", width=32, context=64, embed=48, proj_bias=True),
            "logit_scale": torch.tensor(2.3)}


def write_open_clip(out: Path, state: dict, model_cfg: dict, mean, std) -> Path:
    """A Marqo-style open_clip repo: open_clip_config.json + open_clip_model.safetensors."""
    out.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in state.items()}, out / "open_clip_model.safetensors")
    (out / "open_clip_config.json").write_text(json.dumps({"model_cfg": model_cfg, "preprocess_cfg": {"mean": mean, "std": std}}))
    return out


def tiny_marqo_clip(out: Path, text: bool = True) -> Path:
    """Marqo-fashionCLIP's layout: both towers (``text``) with its tokenizer files, or the image tower alone."""
    cfg = {"embed_dim": 8, "vision_cfg": {"image_size": 224, "layers": 2, "width": 16, "patch_size": 32, "head_width": 8},
           "text_cfg": MARQO_CLIP_TEXT_CFG}
    folder = write_open_clip(out, marqo_clip_state() if text else open_clip_vit_state(), cfg,
                             [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711])
    return tiny_tokenizer(folder)


def tiny_marqo_siglip(out: Path, text: bool = True) -> Path:
    cfg = {"embed_dim": 48, "vision_cfg": {"image_size": 224, "timm_model_name": "vit_base_patch16_siglip_224",
                                           "timm_pool": "map", "timm_proj": "none"}, "text_cfg": MARQO_SIGLIP_TEXT_CFG}
    folder = write_open_clip(out, marqo_siglip_state() if text else open_clip_siglip_state(), cfg, [0.5] * 3, [0.5] * 3)
    return tiny_tokenizer(folder)


# registry name -> the tiny model of its family, in its Hub repo's layout
FAMILIES = {
    "clip-b32": tiny_clip,
    "siglip2-b16": tiny_siglip,
    "dinov2-vitl": tiny_dinov2,
    "dinov3-vitl": tiny_dinov3_vit,
    "dinov3-convnext-l": tiny_dinov3_convnext,
    "marqo-fashionclip": tiny_marqo_clip,
    "marqo-fashionsiglip": tiny_marqo_siglip,
    "gr-lite": tiny_gr_lite_published,
}


def cache_family(cache: Path, name: str, work: Path) -> str:
    """The tiny model of registry entry ``name`` in ``cache`` at the entry's pinned commit (else TEST_HEAD as main);
    returns the commit."""
    from lookbench.encoders.entries import REGISTRY

    meta = REGISTRY[name]
    commit = meta.hub_revision or TEST_HEAD
    put_snapshot(cache, meta.hub_id, commit, FAMILIES[name](work / name))
    return commit


def tiny_vlm(out: Path) -> Path:
    """A tiny random LLaVA (CLIP vision tower + Llama text model) saved with its processor, as an image-text-to-text
    repo on the Hub is: character tokenizer with an ``<image>`` token, a chat template, a CLIP image processor. Its
    answers are random text: what `lookbench annotate --proposer vlm:…` must count as invalid."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import (CLIPImageProcessorPil, CLIPVisionConfig, LlamaConfig, LlavaConfig,
                              LlavaForConditionalGeneration, LlavaProcessor, PreTrainedTokenizerFast)

    vocab = {"[PAD]": 0, "[UNK]": 1, "<s>": 2, "</s>": 3, "<image>": 4,
             **{c: i + 5 for i, c in enumerate(TOKENIZER_CHARS + ':{}"[]_ |')}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("<image>|."), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]", bos_token="<s>",
                                   eos_token="</s>", extra_special_tokens={"image_token": "<image>"})
    template = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>{% else %}"
                "{{ c['text'] }}{% endif %}{% endfor %}{% endfor %}{% if add_generation_prompt %}:{% endif %}")
    processor = LlavaProcessor(image_processor=CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
                               tokenizer=fast, patch_size=16, vision_feature_select_strategy="default",
                               chat_template=template, num_additional_image_tokens=1)
    torch.manual_seed(0)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                       image_size=32, patch_size=16),
        text_config=LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                num_key_value_heads=2, vocab_size=len(vocab), max_position_embeddings=4096, pad_token_id=0,
                                bos_token_id=2, eos_token_id=3),
        image_token_index=4, vision_feature_select_strategy="default", vision_feature_layer=-1)
    _save(LlavaForConditionalGeneration(config), out)
    processor.save_pretrained(out)
    return out
