"""The LookBench dataset builder: sources, validation and export to a script-less Hub dataset folder."""
from .builder import LookBench, LookBenchConfig
from .export import BuildSummary, build_release, default_mini_dir, ensure_default_mini
from .sources import SourceError
from .validation import ValidationError

__all__ = [
    "LookBench", "LookBenchConfig", "BuildSummary", "build_release", "default_mini_dir", "ensure_default_mini",
    "SourceError", "ValidationError",
]
