"""GR-Lite for LookBench: configuration, model, processor, checkpoint conversion and training recipe."""
from .configuration_gr_lite import PRESETS, GrLiteConfig
from .image_processing_gr_lite import GrLiteImageProcessor
from .modeling_gr_lite import GrLiteModel, GrLiteModelOutput, GrLitePreTrainedModel


def register_auto_classes() -> None:
    """Make AutoConfig / AutoModel / AutoImageProcessor resolve model_type "gr_lite" without remote code.

    Idempotent: `import lookbench` calls it, and calling it again is harmless.
    """
    from transformers import AutoConfig, AutoImageProcessor, AutoModel

    AutoConfig.register(GrLiteConfig.model_type, GrLiteConfig, exist_ok=True)
    AutoModel.register(GrLiteConfig, GrLiteModel, exist_ok=True)
    AutoImageProcessor.register(GrLiteConfig, image_processor_classes={"pil": GrLiteImageProcessor}, exist_ok=True)


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
    "processor_for",
    "register_auto_classes",
]
