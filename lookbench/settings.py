"""Every run setting in one place: its choices and its default, the leaderboard's metrics and its default reference.

Importable without torch, datasets or faiss (the CLI's ``--help`` reads it). The scoring modes are the metric's
``MODES``, read from its numpy core, which imports neither datasets nor evaluate. docs/architecture.md §5.
"""
from __future__ import annotations

from dataclasses import dataclass

from lookbench.metric.fine_recall.records import MODES

INDEXES = ("flat", "hnsw")  # exact faiss knn (IndexFlatIP for the Space) or IndexHNSWFlat (approximate), both cosine
PRECISIONS = ("fp32", "bf16")

DEFAULT_MODE = "strict"  # the paper's Fine Recall: same category and every annotated attribute
# A run with no mode named judges its rankings in every mode (one encode, one search); the first is its headline.
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



@dataclass(frozen=True)
class QueryKind:
    """What a query is, decided once per run: its image, or its words in one form. ``label`` is how results, store
    file names and leaderboard sections spell it (``image``, ``text-short``, ``text-long``)."""

    kind: str = DEFAULT_QUERIES
    form: str | None = None  # the text form; None for image queries

    @classmethod
    def of(cls, queries: str = DEFAULT_QUERIES, text_form: str = DEFAULT_TEXT_FORM) -> "QueryKind":
        """``queries`` (``image``/``text``) and ``text_form``, which only text queries read: a ``ValueError`` names a
        value that is none of the choices."""
        for name, value, choices in (("queries", queries, QUERY_KINDS), ("text_form", text_form, TEXT_FORMS)):
            if value not in choices:
                raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
        return cls(queries, text_form if queries == "text" else None)

    @property
    def text(self) -> bool:
        return self.kind == "text"

    @property
    def label(self) -> str:
        return f"text-{self.form}" if self.text else "image"


@dataclass(frozen=True)
class Modes:
    """The scoring modes one run judges its rankings in, headline first: every mode when none is named."""

    names: tuple[str, ...] = MODES

    @classmethod
    def of(cls, mode=None) -> "Modes":
        """``None`` (every mode, ``DEFAULT_MODE`` first), one mode's name, or several; a ``ValueError`` names a
        value that is no mode."""
        if isinstance(mode, Modes):
            return mode
        wanted = [DEFAULT_MODE, *(m for m in MODES if m != DEFAULT_MODE)] if mode is None else (
            [mode] if isinstance(mode, str) else list(mode))
        bad = [m for m in wanted if m not in MODES]
        if bad or not wanted:
            raise ValueError(f"mode must be one of {', '.join(MODES)} (or None: all of them); got {(bad[0] if bad else mode)!r}")
        return cls(tuple(dict.fromkeys(wanted)))

    @property
    def headline(self) -> str:
        return self.names[0]

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


# The leaderboard's metric names → the result's score keys.
METRICS = {"fine": "fine_recall", "coarse": "coarse_recall", "ndcg": "ndcg"}
# The published leaderboard shipped as data (lookbench/leaderboard/published/<name>.json) that results are ranked beside.
DEFAULT_REFERENCE = "release_v2601"

__all__ = ["BOARD_DATA_KEY", "DEFAULT_DISTRACTORS", "DEFAULT_INDEX", "DEFAULT_MODE", "DEFAULT_PRECISION", "DEFAULT_QUERIES",
           "DEFAULT_REFERENCE", "DEFAULT_TEXT_FORM", "EMBEDDED_MINI", "INDEXES", "METRICS", "MODES", "PRECISIONS",
           "Modes", "QUERY_KINDS", "QueryKind", "TEXT_FORMS"]
