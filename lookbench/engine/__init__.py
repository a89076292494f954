"""The evaluation engine behind ``lookbench evaluate`` and ``lookbench.evaluate``, as stages with named hand-offs.

docs/architecture.md §8: ``options`` checks and parses a run's options before anything loads → ``data`` loads a
``Benchmark`` → ``images`` turns its splits into ``BenchmarkImages`` and hashes their bytes → ``encode`` makes one
``Embeddings`` matrix of every distinct image (cache, processes, decode schedule from ``runtime``) → ``scoring``
searches each ``SubsetTask`` (``search``: faiss, noise merge, self-match removal) and has the one judge
(``lookbench.results.judge``) score it → ``lookbench.results`` holds the ``EvaluationResult``. ``run`` chains them
(``evaluate``); with a results store (``lookbench.results.store``) an identical stored evaluation is returned before
``images``, and ``predictions`` saves the rankings. This package only names the stages: the Space, the benchmarks
and the tests use them directly.
"""
from __future__ import annotations

from lookbench.errors import EvaluationError
from lookbench.results.result import EvaluationResult
from lookbench.engine.data import Benchmark, DataSource, load_benchmark, resolve_data
from lookbench.engine.encode import Embeddings, EncodeStats, check_output, encode_images
from lookbench.engine.images import BenchmarkImages, Decoded, ImageSource, SubsetImages, decode
from lookbench.engine.options import Options, check_options
from lookbench.engine.run import evaluate
from lookbench.engine.runtime import Processes, Schedule, reuse_freed_memory
from lookbench.engine.scoring import Split, SubsetScore, SubsetTask, score_subsets
from lookbench.engine.search import Hits, Ranking, merge_noise, remove_self_matches, search, search_depth
from lookbench.engine.timings import StageTimes

__all__ = [
    "Benchmark", "BenchmarkImages", "DataSource", "Decoded", "Embeddings", "EncodeStats", "EvaluationError", "EvaluationResult",
    "Hits", "ImageSource", "Options", "Processes", "Ranking", "Schedule", "Split", "StageTimes", "SubsetImages", "SubsetScore", "SubsetTask",
    "check_options", "check_output", "decode", "encode_images", "evaluate", "load_benchmark", "merge_noise",
    "remove_self_matches", "resolve_data", "reuse_freed_memory", "score_subsets", "search", "search_depth",
]
