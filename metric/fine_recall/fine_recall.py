"""LookBench Fine Recall: attribute-aware scoring of fashion image retrieval runs.

A retrieval only counts as *fine* when the retrieved item has the query's category and carries the query's
annotated attributes, which is what the LookBench paper reports; plain category matches are scored
separately as *coarse* recall. The scoring itself is numpy, in the modules beside this file: `records.py`
(annotation records), `judging.py` (per-query judgements and their means) and `bootstrap.py` (intervals).
evaluate's loader copies a sibling along (from a folder and from the Hub) only when this script imports it
relatively and does not follow the siblings' own imports, so every sibling is imported here. The LookBench
engine imports the same modules, so there is one implementation of the scoring. The folder needs numpy,
datasets and evaluate only.
"""

import numpy as np

import datasets
import evaluate

from .bootstrap import RESAMPLES
from .bootstrap import score_retrieval
from .judging import DEFAULT_K
from .judging import check_lengths
from .judging import check_rankings
from .judging import combine_subsets
from .records import project_records


_CITATION = """\
@article{gao2026lookbench,
  title   = {LookBench: A Live and Holistic Open Benchmark for Fashion Image Retrieval},
  author  = {Gao, Chao and Xue, Siqiao and Peng, Yimin and Fu, Jiwen and Gu, Tingyi and Li, Shanshan and Zhou, Fan},
  journal = {arXiv preprint arXiv:2601.14706},
  year    = {2026}
}
"""

_DESCRIPTION = """\
Fine Recall@K is LookBench's primary retrieval score: a query counts as a hit if one of its top-K retrieved
gallery items has the query's category AND every attribute annotated on the query (strict mode, the paper's
definition), or the same category and main attribute (leaderboard mode, what the published leaderboard
computes). The module also reports Coarse Recall@K (category only), graded nDCG@K with attribute-overlap
relevance, MAP@K over binary fine relevance (trec_eval's map_cut: normalised by the query's fine matches in the
whole gallery), MRR@K of the first fine hit (0 beyond rank K), outfit-level Fine Recall@K for street looks, and a per-category
breakdown. All scores are percentages.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `list` of `int`, or a 2-D integer `numpy.ndarray`): for every query, the ranked
        row indices into `gallery`, best first (any length >= 1), as a faiss search returns them. Trailing
        `-1` entries (faiss padding) mean "no result".
    references (`list` of `dict`): for every query, its annotation record: `category` (str),
        `main_attribute` (str), `attributes` (list of `{"name": str, "value": str}`) and optionally
        `outfit_id` (str; the item queries of one street look share it). Other fields are ignored.
    gallery (`datasets.Dataset` or `list` of `dict`): the annotation record of every gallery row (same
        fields as a reference). A `Dataset` is read column-wise; its images are never decoded.
    k (`list` of `int`, defaults to `[1, 5, 10, 20]`): the cut-offs K, at most 256 of them; a K above 20 must
        not exceed both the ranking depth (`-1` padding included) and the gallery size.
    mode (`str`, defaults to `"strict"`): `"strict"` (same category and the query's attributes are a subset
        of the item's) or `"leaderboard"` (same category and same main attribute).
    n_resamples (`int`, defaults to 1000): bootstrap resamples of the 95 % intervals; 0 leaves `ci95` and
        `interval_method` out; at most 100,000.
    random_state (`int`, defaults to 0): the bootstrap's seed, so the same inputs give the same intervals.
Returns:
    `fine_recall@K`, `coarse_recall@K`, `ndcg@K`, `map@K`, `mrr@K` for each K, `outfit_fine_recall@K` (only when some
    query has an outfit id), all in percent; `num_queries`, `num_outfits`; `per_category`, mapping each
    (normalised) query category to its `fine_recall@1`, `coarse_recall@1` and `num_queries`; `ci95`, the
    `[low, high]` 95 % interval of every score, also inside each `per_category` entry; and `interval_method`, how
    each was computed: `"Wilson (effective n)"` for the hit rates (Fine/Coarse Recall@K, outfit recall: a Wilson
    score interval on the queries divided by the design effect of a bootstrap that draws an outfit's queries
    together; at 0 % and 100 % each outfit counts as one observation), `"bootstrap"` (that bootstrap's
    percentiles) for nDCG, MAP and MRR.
Examples:
    >>> import evaluate
    >>> fine_recall = evaluate.load("lookbench/fine_recall")
    >>> gallery = [
    ...     {"category": "top", "main_attribute": "crew neck",
    ...      "attributes": [{"name": "neckline", "value": "crew"}, {"name": "sleeve", "value": "long"}]},
    ...     {"category": "top", "main_attribute": "v-neck",
    ...      "attributes": [{"name": "neckline", "value": "v"}, {"name": "sleeve", "value": "long"}]},
    ...     {"category": "dress", "main_attribute": "midi",
    ...      "attributes": [{"name": "length", "value": "midi"}, {"name": "pattern", "value": "floral"}]},
    ...     {"category": "dress", "main_attribute": "midi",
    ...      "attributes": [{"name": "length", "value": "midi"}, {"name": "pattern", "value": "solid"}]},
    ... ]
    >>> references = [dict(gallery[0], outfit_id="look-1"), dict(gallery[2], outfit_id="look-1")]
    >>> results = fine_recall.compute(predictions=[[1, 0, 2], [3, 2, 0]], references=references,
    ...                               gallery=gallery, k=[1, 2])
    >>> results["fine_recall@1"], results["fine_recall@2"], results["coarse_recall@1"], results["mrr@2"]
    (0.0, 100.0, 100.0, 50.0)
    >>> round(results["ndcg@1"], 2), round(results["ndcg@2"], 2)
    (50.0, 85.97)
    >>> results["map@1"], results["map@2"], results["mrr@1"], results["mrr@2"]
    (0.0, 50.0, 0.0, 50.0)
    >>> results["outfit_fine_recall@1"], results["outfit_fine_recall@2"], results["num_outfits"]
    (0.0, 100.0, 1)
    >>> # 2 of 2 hits, but two queries of one outfit are one observation: a Wilson interval on n = 1
    >>> [round(x, 2) for x in results["ci95"]["fine_recall@2"]], results["interval_method"]["fine_recall@2"]
    ([20.65, 100.0], 'Wilson (effective n)')
    >>> leaderboard = fine_recall.compute(predictions=[[1, 0, 2], [3, 2, 0]], references=references,
    ...                                   gallery=gallery, k=[1, 2], mode="leaderboard")
    >>> leaderboard["fine_recall@1"], leaderboard["mrr@2"], leaderboard["map@2"]
    (50.0, 75.0, 75.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class FineRecall(evaluate.Metric):
    """LookBench Fine Recall@K, Coarse Recall@K, graded nDCG@K, MAP@K, MRR@K and outfit-level recall."""

    # Reachable from a module loaded with `evaluate.load`, whose file is not importable by name.
    combine_subsets = staticmethod(combine_subsets)

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.List(datasets.Value("int64")),
                    "references": {
                        "category": datasets.Value("string"),
                        "main_attribute": datasets.Value("string"),
                        "attributes": datasets.List(
                            {"name": datasets.Value("string"), "value": datasets.Value("string")}
                        ),
                        "outfit_id": datasets.Value("string"),
                    },
                }
            ),
            reference_urls=["https://arxiv.org/abs/2601.14706", "https://huggingface.co/datasets/srpone/look-bench"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of rankings and query annotations; records are projected onto the declared fields
        first and a faiss result array is turned into lists."""
        if references is None:  # evaluate's own check would fail on len(None)
            raise ValueError("references is required: one annotation record per query")
        check_rankings(predictions)
        references = project_records(references)
        check_lengths(len(predictions), len(references), scope=" of this batch")
        if isinstance(predictions, np.ndarray):
            predictions = predictions.tolist()
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one ranking and its query annotation, projected onto the declared fields."""
        if prediction is not None:
            check_rankings([prediction])
        if isinstance(prediction, np.ndarray):
            prediction = prediction.tolist()
        if reference is not None:
            reference = project_records([reference], "reference")[0]
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, gallery=None, k=DEFAULT_K, mode="strict", n_resamples=RESAMPLES,
                 random_state=0):
        return score_retrieval(predictions, references, gallery, k=k, mode=mode, n_resamples=n_resamples,
                               random_state=random_state)
