"""LookBench: a live, attribute-supervised fashion image-retrieval benchmark."""
from lookbench._version import __version__
from lookbench.schema import DEFAULT_CONFIG, NOISE, SUBSETS, TEST_SUBSETS, resolve_subset

__all__ = ["__version__", "FEATURES", "SUBSETS", "TEST_SUBSETS", "NOISE", "DEFAULT_CONFIG", "resolve_subset", "filter_after", "evaluate",
           "load_encoder"]


def __getattr__(name):
    """The parts that import heavy libraries load when first used: the engine (faiss, the metric), the encoder
    registry's ``load_encoder``, the contamination filter (pyarrow) and the datasets ``FEATURES``."""
    if name == "evaluate":
        from lookbench.engine import evaluate

        return evaluate
    if name == "load_encoder":
        from lookbench.encoders.registry import load_encoder

        return load_encoder
    if name == "filter_after":
        from lookbench.filtering import filter_after

        return filter_after
    if name == "FEATURES":
        from lookbench.schema import FEATURES

        return FEATURES
    raise AttributeError(f"module 'lookbench' has no attribute {name!r}")
