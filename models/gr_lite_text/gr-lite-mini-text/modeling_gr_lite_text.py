"""GR-Lite-text: GR-Lite's image tower (`GrLiteModel`, unchanged) and a small BERT text tower in one embedding space.

Locked-image tuning (LiT): the image tower is a trained GR-Lite and stays frozen, so `get_image_features` gives
exactly GR-Lite's embeddings; the text tower (mean-pooled BERT tokens, a linear projection to the image width,
L2-normalised) is trained to land next to the images its words describe. This file is copied next to saved weights
for `trust_remote_code` loading, so it imports only `torch`, `transformers` and its sibling files.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import BertModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .configuration_gr_lite_text import GrLiteTextConfig
from .modeling_gr_lite import GrLiteModel


@dataclass
class GrLiteTextOutput(ModelOutput):
    """Unit-length embeddings of whichever inputs were given, and, with both, their scaled cosine similarities."""

    text_embeds: torch.Tensor | None = None
    image_embeds: torch.Tensor | None = None
    logits_per_text: torch.Tensor | None = None
    logits_per_image: torch.Tensor | None = None


class GrLiteTextPreTrainedModel(PreTrainedModel):
    config: GrLiteTextConfig
    config_class = GrLiteTextConfig
    base_model_prefix = "gr_lite_text"
    main_input_name = "input_ids"
    input_modalities = ("image", "text")
    _no_split_modules = ["DINOv3ViTEmbeddings", "DINOv3ViTLayer", "BertLayer"]
    _supports_sdpa = True

    def _init_weights(self, module) -> None:
        """The towers initialise themselves (they are PreTrainedModels); the projection and the scale are ours."""
        super()._init_weights(module)
        if isinstance(module, GrLiteTextModel):
            init.trunc_normal_(module.text_projection.weight, mean=0.0, std=self.config.text_config.hidden_size**-0.5)
            init.constant_(module.logit_scale, self.config.logit_scale_init_value)


class GrLiteTextModel(GrLiteTextPreTrainedModel):
    """Text → `text_embeds`, image → `image_embeds`, both (batch, `config.embedding_dim`) and unit length."""

    def __init__(self, config: GrLiteTextConfig):
        super().__init__(config)
        self.vision_model = GrLiteModel(config.vision_config)
        self.text_model = BertModel(config.text_config, add_pooling_layer=False)
        self.text_projection = nn.Linear(config.text_config.hidden_size, config.embedding_dim, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(config.logit_scale_init_value))
        self.post_init()

    def get_input_embeddings(self):
        return self.text_model.get_input_embeddings()

    def get_text_features(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs) -> torch.Tensor:
        """The retrieval embedding of each text: its tokens' mean (padding excluded), projected, unit length."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        tokens = self.text_model(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
        pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1)
        embeds = self.text_projection(pooled)
        return nn.functional.normalize(embeds.float(), dim=-1).to(embeds.dtype)

    def get_image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """GR-Lite's retrieval embeddings, unchanged (what an image index stores)."""
        return self.vision_model.get_image_features(pixel_values)

    def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                pixel_values: torch.Tensor | None = None, **kwargs) -> GrLiteTextOutput:
        text = None if input_ids is None else self.get_text_features(input_ids, attention_mask, **kwargs)
        image = None if pixel_values is None else self.get_image_features(pixel_values)
        if text is None or image is None:
            return GrLiteTextOutput(text_embeds=text, image_embeds=image)
        logits = self.logit_scale.exp() * text @ image.T
        return GrLiteTextOutput(text_embeds=text, image_embeds=image, logits_per_text=logits, logits_per_image=logits.T)


GrLiteTextModel.register_for_auto_class("AutoModel")

__all__ = ["GrLiteTextModel", "GrLiteTextPreTrainedModel", "GrLiteTextOutput"]
