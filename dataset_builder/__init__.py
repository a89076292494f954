"""The LookBench dataset builder: sources, validation and export to a script-less Hub dataset folder."""
from .append import append_release
from .builder import LookBench, LookBenchConfig
from .export import BuildSummary, build_release, default_mini_dir, ensure_default_mini
from .sources import SourceError
from .validation import ValidationError

__all__ = [
    "LookBench", "LookBenchConfig", "BuildSummary", "append_release", "build_release", "default_mini_dir", "ensure_default_mini",
    "SourceError", "ValidationError",
]
