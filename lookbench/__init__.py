"""LookBench: a live, attribute-supervised fashion image-retrieval benchmark."""
__version__ = "0.1.0"

from . import auto_classes
from .schema import DEFAULT_CONFIG, NOISE, SUBSETS, TEST_SUBSETS, resolve_subset

# GR-Lite loads with AutoConfig / AutoModel / AutoImageProcessor once transformers' Auto classes are first used.
auto_classes.install()

__all__ = ["__version__", "FEATURES", "SUBSETS", "TEST_SUBSETS", "NOISE", "DEFAULT_CONFIG", "resolve_subset", "filter_after", "evaluate",
           "load_encoder"]


def __getattr__(name):
    """The parts that import heavy libraries load when first used: the engine (faiss, the metric), the encoder
    registry's ``load_encoder``, the contamination filter (pyarrow) and the datasets ``FEATURES``."""
    if name == "evaluate":
        from .engine import evaluate

        return evaluate
    if name == "load_encoder":
        from .registry import load_encoder

        return load_encoder
    if name == "filter_after":
        from .filtering import filter_after

        return filter_after
    if name == "FEATURES":
        from .schema import FEATURES

        return FEATURES
    raise AttributeError(f"module 'lookbench' has no attribute {name!r}")
