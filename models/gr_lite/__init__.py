"""GR-Lite for LookBench: configuration, model, processor and checkpoint conversion; and the transformers code of
its reading companion, GR-Lite-text (beside GR-Lite's, which its remote code imports; its shipped folder is
`lookbench.models.gr_lite_text`). Their training recipes are `lookbench.training` (models/training)."""
from lookbench.models.gr_lite.configuration_gr_lite import PRESETS, GrLiteConfig
from lookbench.models.gr_lite.configuration_gr_lite_text import GrLiteTextConfig
from lookbench.models.gr_lite.image_processing_gr_lite import GrLiteImageProcessor
from lookbench.models.gr_lite.modeling_gr_lite import GrLiteModel, GrLiteModelOutput, GrLitePreTrainedModel
from lookbench.models.gr_lite.modeling_gr_lite_text import GrLiteTextModel, GrLiteTextOutput


def register_auto_classes() -> None:
    """Make AutoConfig / AutoModel / AutoImageProcessor resolve model_types "gr_lite" and "gr_lite_text" without remote code.

    Explicit, not on import: `from transformers import AutoModel` costs about twice `import torch, transformers`, so
    only what loads a GR-Lite folder (the encoders, or a user) pays for it. Idempotent.
    """
    from transformers import AutoConfig, AutoImageProcessor, AutoModel

    AutoConfig.register(GrLiteConfig.model_type, GrLiteConfig, exist_ok=True)
    AutoModel.register(GrLiteConfig, GrLiteModel, exist_ok=True)
    AutoImageProcessor.register(GrLiteConfig, image_processor_classes={"pil": GrLiteImageProcessor}, exist_ok=True)
    AutoConfig.register(GrLiteTextConfig.model_type, GrLiteTextConfig, exist_ok=True)
    AutoModel.register(GrLiteTextConfig, GrLiteTextModel, exist_ok=True)
    AutoImageProcessor.register(GrLiteTextConfig, image_processor_classes={"pil": GrLiteImageProcessor}, exist_ok=True)


def processor_for(config: GrLiteConfig) -> GrLiteImageProcessor:
    """The processor matching a config's input size."""
    return GrLiteImageProcessor(size={"height": config.image_size, "width": config.image_size})


__all__ = [
    "PRESETS",
    "GrLiteConfig",
    "GrLiteImageProcessor",
    "GrLiteModel",
    "GrLiteModelOutput",
    "GrLitePreTrainedModel",
    "GrLiteTextConfig",
    "GrLiteTextModel",
    "GrLiteTextOutput",
    "processor_for",
    "register_auto_classes",
]
