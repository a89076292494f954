"""GR-Lite-text, the reading companion of GR-Lite-mini: the shipped `gr-lite-mini-text/` folder. The transformers
classes live beside GR-Lite's (`lookbench.models.gr_lite`: `GrLiteTextConfig`, `GrLiteTextModel`), because a
remote-code folder imports only the files beside it; its tokenizer and LiT recipe are `lookbench.training`."""
from lookbench.models.gr_lite import GrLiteTextConfig, GrLiteTextModel, GrLiteTextOutput, register_auto_classes

__all__ = ["GrLiteTextConfig", "GrLiteTextModel", "GrLiteTextOutput", "register_auto_classes"]
