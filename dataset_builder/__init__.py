"""The LookBench dataset builder: sources, validation and export to a script-less Hub dataset folder."""
from lookbench.dataset_builder.append import append_release
from lookbench.dataset_builder.builder import LookBench, LookBenchConfig
from lookbench.dataset_builder.export import BuildSummary, build_release, default_mini_dir, ensure_default_mini
from lookbench.dataset_builder.sources import SourceError
from lookbench.dataset_builder.validation import ValidationError

__all__ = [
    "LookBench", "LookBenchConfig", "BuildSummary", "append_release", "build_release", "default_mini_dir", "ensure_default_mini",
    "SourceError", "ValidationError",
]
