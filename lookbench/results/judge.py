"""The one judge: rankings + the data's annotations + settings -> per-query outcomes and every score.

docs/architecture.md §8. The engine, ``lookbench verify``, saved predictions and the mteb export all call these
functions, so a verified score can only be what the engine itself would write for the same rankings: nothing here
knows where the rankings came from. The metric's pure functions (``metric/fine_recall``) do the arithmetic.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lookbench.metric.fine_recall.judging import (DEFAULT_K, combine_subsets, score_core, score_mode, score_queries,
                                                  summarise)
from lookbench.metric.fine_recall.records import RECORD_FIELDS, GalleryColumns, check_mode
from lookbench.results.attributes import attribute_errors, marks
from lookbench.results.outcomes import Outcomes
from lookbench.results.per_release import per_release

# What a query record carries into a judgement: its annotation, its id and, where the data has them, its release
# and its words (a text query's).
_OPTIONAL = ("release", "query_text")


def query_columns(dataset) -> list[str]:
    """The columns of a query split the judge reads (the same selection wherever a ranking is judged)."""
    return [*RECORD_FIELDS, "item_id", *(c for c in _OPTIONAL if c in dataset.column_names)]


def gallery_columns(gallery, noise: GalleryColumns | None = None) -> GalleryColumns:
    """A subset gallery's annotations, factorised, with the shared noise gallery's appended behind them."""
    columns = gallery if isinstance(gallery, GalleryColumns) else GalleryColumns(gallery)
    return columns + noise if noise is not None else columns


@dataclass
class SubsetJudgement:
    """One subset's ranking judged: ``scores`` (the metric's means + ``num_queries``, and ``attribute_errors``),
    each query's ``outcomes`` (with its top-1's ``attributes.marks``),
    the per-rank ``fine``/``coarse`` hit flags (what saved predictions write) and the gallery's size."""

    scores: dict
    outcomes: Outcomes
    fine: np.ndarray
    coarse: np.ndarray
    gallery_size: int


def judge_subset(ranking: np.ndarray, queries, gallery: GalleryColumns, mode: str, k=DEFAULT_K) -> SubsetJudgement:
    """Judge one subset in one mode (``judge_modes`` with that mode alone)."""
    return judge_modes(ranking, queries, gallery, (mode,), k)[mode]


def judge_modes(ranking: np.ndarray, queries, gallery: GalleryColumns, modes,
                k=DEFAULT_K) -> dict[str, SubsetJudgement]:
    """Judge one subset in each of ``modes`` (in their order): ``ranking`` (queries x depth gallery rows, -1 pads) of
    the query records ``queries`` (a Dataset of ``query_columns``) in ``gallery``. Only the fine hits and AP depend
    on the mode, so the rest (coarse hits, overlaps, nDCG, the top-1 marks and attribute errors) is worked out once."""
    for mode in modes:
        check_mode(mode)
    core = score_core(ranking, queries, gallery, k=list(k))
    at_1 = marks(np.asarray(ranking), core.coarse, queries, GalleryColumns(gallery))
    errors = attribute_errors(at_1)
    out = {}
    for mode in modes:
        per_query = score_mode(core, mode)
        out[mode] = SubsetJudgement({**summarise(per_query), "attribute_errors": errors},
                                    Outcomes.of(per_query, queries, at_1), per_query["fine"], per_query["coarse"],
                                    len(gallery))
    return out


@dataclass
class Judgement:
    """A whole result judged: per subset its judgement, the query-weighted ``overall`` and the headline scores per
    release (with their intervals)."""

    subsets: dict[str, SubsetJudgement]
    overall: dict
    per_release: dict
    release_intervals: dict

    def outcomes(self) -> dict[str, Outcomes]:
        return {name: j.outcomes for name, j in self.subsets.items()}


def combine(subsets: dict[str, SubsetJudgement]) -> Judgement:
    """The subsets' judgements as one result: overall (with the ``attribute_errors`` of every subset's queries) and
    per release, as the engine writes them."""
    overall = combine_subsets({name: j.scores for name, j in subsets.items()})
    overall["attribute_errors"] = attribute_errors([m for j in subsets.values() for m in j.outcomes.attributes_at_1])
    releases, intervals = per_release({name: j.outcomes for name, j in subsets.items()})
    return Judgement(subsets, overall, releases, intervals)


def fine_matches(queries, gallery: GalleryColumns, mode: str) -> np.ndarray:
    """queries x gallery: is each gallery row a fine match of each query (the qrels of an export)."""
    everything = np.arange(len(gallery))
    return score_queries(np.broadcast_to(everything, (len(queries), len(everything))), queries, gallery, k=[1],
                         mode=mode)["fine"]
