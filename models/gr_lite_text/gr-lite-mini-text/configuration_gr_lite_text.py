"""GR-Lite-text configuration: a frozen GR-Lite image tower beside a small BERT text tower (LiT, docs/architecture.md §1).

This file is copied next to saved weights for `trust_remote_code` loading, so it imports only `transformers` and its
sibling GR-Lite configuration (a remote-code folder resolves relative imports inside itself only, which is why the
companion's code lives beside GR-Lite's).
"""
from __future__ import annotations

from transformers import BertConfig, PreTrainedConfig

from .configuration_gr_lite import GrLiteConfig

# gr-lite-mini-text's text tower: 3 BERT layers of width 128 (4 heads of 32, MLP 4x) over a word vocabulary trained on
# the training texts; a query is a few words to one sentence, so 64 positions are plenty.
TEXT_PRESET = dict(hidden_size=128, num_hidden_layers=3, num_attention_heads=4, intermediate_size=512,
                   max_position_embeddings=64, type_vocab_size=1, pad_token_id=0)


class GrLiteTextConfig(PreTrainedConfig):
    r"""
    vision_config (`dict` or `GrLiteConfig`): the image tower (GR-Lite-mini's, frozen in training).
    text_config (`dict` or `BertConfig`): the text tower; its mean-pooled tokens are projected to the image
        tower's embedding width.
    logit_scale_init_value (`float`): initial log of the contrastive temperature's inverse (CLIP's ln(1/0.07)).
    """

    model_type = "gr_lite_text"
    sub_configs_defaults = {"vision_config": GrLiteConfig, "text_config": BertConfig}

    vision_config: dict | PreTrainedConfig | None = None
    text_config: dict | PreTrainedConfig | None = None
    logit_scale_init_value: float = 2.6592

    @property
    def embedding_dim(self) -> int:
        """Width of both towers' embeddings: the image tower's."""
        return self.vision_config.embedding_dim


GrLiteTextConfig.register_for_auto_class()

__all__ = ["GrLiteTextConfig", "TEXT_PRESET"]
