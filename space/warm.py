"""The demo's models, loaded and warmed before the first request: each encoder's weights read and one image encoded
at start (not on a visitor's first search), and the text towers that read words into a model's image space.
docs/architecture.md §5.
"""
from __future__ import annotations

# The model whose image space a text tower writes into: GR-Lite-mini-text's image tower is GR-Lite-mini's, frozen
# (tests/gr_lite_text check the weights), so words are searched in GR-Lite-mini's prepared index.
READERS = {"gr-lite-mini": "gr-lite-mini-text"}


def warm_encoders(names, loaded: dict, given: dict) -> None:
    """Add to ``loaded`` the encoder of each model of ``names`` it lacks (``given``'s, else the registry's), each
    having encoded one blank image."""
    from PIL import Image

    from lookbench.encoders.registry import load_encoder

    for name in names:
        if name not in loaded:
            encoder = given.get(name) or load_encoder(name)
            encoder.encode_batch([encoder.preprocess(Image.new("RGB", (64, 64), "white"))])
            loaded[name] = encoder


def readers(models, given: dict) -> dict:
    """Model -> the encoder whose text tower reads words into its image space (``READERS``), for the models served
    whose reader's weights are here (GR-Lite-mini-text is left out of an installation without it), each having read
    one word."""
    from lookbench.encoders.registry import find, load_encoder

    out = {m: given.get(READERS[m]) or load_encoder(READERS[m]) for m in models
           if m in READERS and find(READERS[m]).available()}
    for reader in out.values():
        reader.encode_text(["top"])
    return out
