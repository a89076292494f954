"""The LookBench dataset builder: sources, validation and export to a script-less Hub dataset folder.

The names below load on first use, so that reading ``catalog`` (``lookbench build --help`` does) imports neither
datasets nor pyarrow.
"""
import importlib

_HOMES = {  # name → the module of this package that defines it
    "append_release": "append", "LookBench": "builder", "LookBenchConfig": "builder", "BuildSummary": "export",
    "build_release": "export", "default_mini_dir": "export", "ensure_default_mini": "export", "SourceError": "sources",
    "ValidationError": "validation", "Taxonomy": "taxonomy",
}

__all__ = list(_HOMES)


def __getattr__(name):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
