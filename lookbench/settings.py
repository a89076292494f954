"""Every run setting in one place: its choices and its default, the leaderboard's metrics and its default reference.

Importable without torch, datasets or faiss (the CLI's ``--help`` reads it). The scoring modes are the metric's
``MODES``, read from its numpy core, which imports neither datasets nor evaluate. docs/architecture.md §5.
"""
from __future__ import annotations

from lookbench.metric.fine_recall.judging import MODES

INDEXES = ("flat", "hnsw")  # exact faiss knn (IndexFlatIP for the Space) or IndexHNSWFlat (approximate), both cosine
PRECISIONS = ("fp32", "bf16")

DEFAULT_MODE = "strict"  # the paper's Fine Recall: same category and every annotated attribute
DEFAULT_INDEX = "flat"  # exact search
DEFAULT_PRECISION = "fp32"
DEFAULT_DISTRACTORS = True  # the shared noise gallery joins every subset's gallery, as the paper evaluates
EMBEDDED_MINI = "LookBench-Mini (embedded)"  # a result's data label when it ran on the default (data=None, rebuilt anywhere)
# The leaderboard Space card's list of the Hub datasets its board may load (and the labels repos it pins).
BOARD_DATA_KEY = "lookbench_data"
# What a query is: its image, or its words (the release's text config, lookbench.dataset_builder.text_queries) in one
# of two forms; the gallery, the noise and the metric are the same either way.
QUERY_KINDS = ("image", "text")
DEFAULT_QUERIES = "image"
TEXT_FORMS = ("short", "long")
DEFAULT_TEXT_FORM = "short"

# The leaderboard's metric names → the result's score keys.
METRICS = {"fine": "fine_recall", "coarse": "coarse_recall", "ndcg": "ndcg"}
# The published leaderboard shipped as data (lookbench/leaderboard/published/<name>.json) that results are ranked beside.
DEFAULT_REFERENCE = "release_v2601"

__all__ = ["BOARD_DATA_KEY", "DEFAULT_DISTRACTORS", "DEFAULT_INDEX", "DEFAULT_MODE", "DEFAULT_PRECISION", "DEFAULT_QUERIES",
           "DEFAULT_REFERENCE", "DEFAULT_TEXT_FORM", "EMBEDDED_MINI", "INDEXES", "METRICS", "MODES", "PRECISIONS",
           "QUERY_KINDS", "TEXT_FORMS"]
