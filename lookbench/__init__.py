"""LookBench: a live, attribute-supervised fashion image-retrieval benchmark."""
__version__ = "0.1.0"

from .filtering import filter_after
from .models.gr_lite import register_auto_classes
from .schema import DEFAULT_CONFIG, FEATURES, NOISE, SUBSETS, TEST_SUBSETS, resolve_subset

# GR-Lite loads with AutoConfig / AutoModel / AutoImageProcessor as soon as lookbench is imported.
register_auto_classes()

__all__ = ["__version__", "FEATURES", "SUBSETS", "TEST_SUBSETS", "NOISE", "DEFAULT_CONFIG", "resolve_subset", "filter_after", "evaluate"]


def __getattr__(name):
    """``lookbench.evaluate`` imports the engine (faiss, the metric) only when first used."""
    if name == "evaluate":
        from .engine import evaluate

        return evaluate
    raise AttributeError(f"module 'lookbench' has no attribute {name!r}")
