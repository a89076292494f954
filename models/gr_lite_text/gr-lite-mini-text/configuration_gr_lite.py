"""GR-Lite configuration: a DINOv3 ViT backbone plus the embedding head settings (docs/architecture.md §1).

This file is copied next to saved weights for `trust_remote_code` loading, so it imports only `transformers`.
"""
from __future__ import annotations

from transformers import DINOv3ViTConfig, PreTrainedConfig

# DINOv3 ViT-L/16 (facebook/dinov3-vitl16-pretrain-lvd1689m) as GR-Lite uses it: 336 px, 4 registers, RoPE.
_GR_LITE_BACKBONE = dict(
    patch_size=16,
    hidden_size=1024,
    intermediate_size=4096,
    num_hidden_layers=24,
    num_attention_heads=16,
    num_register_tokens=4,
    layerscale_value=1.0,
    rope_theta=100.0,
    key_bias=False,
)

# gr-lite-mini: the same architecture at ViT-Tiny width, 6 layers (2.8M parameters, 64 patches at 128 px), sized so
# the attribute-supervised recipe trains it in ~20 minutes on a 2-core CPU.
_GR_LITE_MINI_BACKBONE = dict(_GR_LITE_BACKBONE, hidden_size=192, intermediate_size=768, num_hidden_layers=6, num_attention_heads=3)

PRESETS: dict[str, dict] = {
    "gr-lite": {"vision_config": _GR_LITE_BACKBONE, "image_size": 336},
    "gr-lite-mini": {"vision_config": _GR_LITE_MINI_BACKBONE, "image_size": 128},
}


class GrLiteConfig(PreTrainedConfig):
    r"""
    vision_config (`dict` or `DINOv3ViTConfig`): the backbone; defaults to DINOv3 ViT-S/16.
    embed_dim (`int`, *optional*): width of an optional linear projection of the CLS token; `None` keeps
        the backbone width (GR-Lite: 1024).
    image_size (`int`): square input size the processor resizes to (GR-Lite: 336); also written to the backbone.
    normalize (`bool`): L2-normalise the embedding, so inner product = cosine similarity.

    Use `GrLiteConfig.from_preset("gr-lite")` or `"gr-lite-mini"` for the two shipped sizes.
    """

    model_type = "gr_lite"
    sub_configs_defaults = {"vision_config": DINOv3ViTConfig}

    vision_config: dict | PreTrainedConfig | None = None
    embed_dim: int | None = None
    image_size: int = 336
    normalize: bool = True

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        patch = self.vision_config.patch_size
        if self.image_size % patch:
            raise ValueError(f"GrLiteConfig: image_size {self.image_size} is not a multiple of the patch size {patch}.")
        if self.embed_dim is not None and self.embed_dim <= 0:
            raise ValueError(f"GrLiteConfig: embed_dim must be positive or None, got {self.embed_dim}.")
        self.vision_config.image_size = self.image_size

    @property
    def embedding_dim(self) -> int:
        """Width of `image_embeds`: the projection width if there is one, else the backbone's CLS width."""
        return self.embed_dim or self.vision_config.hidden_size

    @classmethod
    def from_preset(cls, name: str, **overrides) -> "GrLiteConfig":
        """Build a shipped preset (`gr-lite`, `gr-lite-mini`); keyword overrides win over the preset."""
        if name not in PRESETS:
            raise ValueError(f"Unknown GR-Lite preset {name!r}; choose one of {', '.join(PRESETS)}.")
        preset = PRESETS[name]
        kwargs = {"vision_config": dict(preset["vision_config"]), "image_size": preset["image_size"]}
        kwargs.update(overrides)
        return cls(**kwargs)


# Every saved GR-Lite folder carries auto_map + these code files, so it also loads with trust_remote_code.
GrLiteConfig.register_for_auto_class()

__all__ = ["GrLiteConfig", "PRESETS"]
