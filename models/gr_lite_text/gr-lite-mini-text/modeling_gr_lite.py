"""GR-Lite: transformers' own `DINOv3ViTModel` (RoPE, register tokens) with a pooled, L2-normalised CLS embedding.

This file is copied next to saved weights for `trust_remote_code` loading, so it imports only `torch`,
`transformers` and its sibling configuration file.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import DINOv3ViTModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .configuration_gr_lite import GrLiteConfig


@dataclass
class GrLiteModelOutput(ModelOutput):
    """`image_embeds` is the retrieval embedding; the rest are the backbone's outputs, unchanged."""

    image_embeds: torch.Tensor | None = None
    last_hidden_state: torch.Tensor | None = None
    pooler_output: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


class GrLitePreTrainedModel(PreTrainedModel):
    config: GrLiteConfig
    config_class = GrLiteConfig
    base_model_prefix = "gr_lite"
    main_input_name = "pixel_values"
    input_modalities = ("image",)
    supports_gradient_checkpointing = True
    _no_split_modules = ["DINOv3ViTEmbeddings", "DINOv3ViTLayer"]
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_flex_attn = True
    _supports_attention_backend = True

    def _init_weights(self, module) -> None:
        """The backbone initialises itself (it is a PreTrainedModel); only the projection is ours."""
        super()._init_weights(module)
        if isinstance(module, nn.Linear):
            init.trunc_normal_(module.weight, mean=0.0, std=self.config.vision_config.initializer_range)
            if module.bias is not None:
                init.zeros_(module.bias)


class GrLiteModel(GrLitePreTrainedModel):
    """Image → `image_embeds` (batch, `config.embedding_dim`), unit length when `config.normalize`."""

    def __init__(self, config: GrLiteConfig):
        super().__init__(config)
        self.backbone = DINOv3ViTModel(config.vision_config)
        hidden = config.vision_config.hidden_size
        self.projection = nn.Linear(hidden, config.embed_dim) if config.embed_dim is not None else None
        self.post_init()

    def get_input_embeddings(self):
        return self.backbone.get_input_embeddings()

    def forward(self, pixel_values: torch.Tensor, **kwargs) -> GrLiteModelOutput:
        outputs = self.backbone(pixel_values=pixel_values, **kwargs)
        embeds = outputs.pooler_output
        if self.projection is not None:
            embeds = self.projection(embeds)
        if self.config.normalize:
            # normalise in float32 so bf16 embeddings still have unit length to bf16 precision
            embeds = nn.functional.normalize(embeds.float(), dim=-1).to(embeds.dtype)
        return GrLiteModelOutput(
            image_embeds=embeds,
            last_hidden_state=outputs.last_hidden_state,
            pooler_output=outputs.pooler_output,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
        )

    def get_image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """The retrieval embeddings only (what an index stores)."""
        return self.forward(pixel_values=pixel_values).image_embeds


GrLiteModel.register_for_auto_class("AutoModel")

__all__ = ["GrLiteModel", "GrLitePreTrainedModel", "GrLiteModelOutput"]
