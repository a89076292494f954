"""A ``lookbench evaluate`` result as an mteb ``TaskResult`` (``lookbench export mteb RESULT --out DIR``).

docs/architecture.md §5. Scores become fractions, per subset (``hf_subset``), under the task name and dataset
revision that ``lookbench_tasks`` gives the same data and mode. Fine Recall@K is mteb's ``hit_rate_at_K`` (the main
score is ``hit_rate_at_1``), LookBench's MRR@K and MAP@K (binary fine relevance, trec's ``map_cut``) are mteb's ``mrr_at_K`` and ``map_at_K``; the scores mteb has no equivalent
for keep their LookBench names with a ``lookbench_`` prefix (``lookbench_ndcg_at_5`` is the graded nDCG, not mteb's
binary ``ndcg_at_5``). mteb's ``TaskResult.get_score()`` is the *unweighted* mean over subsets, whereas LookBench's
overall is weighted by each subset's number of queries (``combine_subsets``): the two headlines differ.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from lookbench.errors import EvaluationError
from lookbench.files import replacing
from lookbench.results.result import EvaluationResult
from lookbench.mteb.tasks import LANGUAGES, SPLIT, TEXT_LANGUAGES, task_name

COUNTS = ("num_queries", "num_outfits", "gallery_size", "self_matches_removed")


def _scores(name: str, scores: dict, languages=LANGUAGES) -> dict:
    """One subset's LookBench scores (percent) as an mteb scores dict (fractions)."""
    out = {"hf_subset": name, "languages": languages}
    for key, value in scores.items():
        if key in COUNTS:
            out[key] = int(value)
        elif not isinstance(value, (int, float)) or isinstance(value, bool):
            continue  # per_category and other nested entries have no mteb counterpart
        elif key.startswith("fine_recall@"):
            out[f"hit_rate_at_{key.split('@')[1]}"] = value / 100
        elif key.startswith(("mrr@", "map@")):  # MRR cut at K and MAP@K with trec's map_cut normalisation: mteb's own
            metric, k = key.split("@")
            out[f"{metric}_at_{k}"] = value / 100
        elif "@" in key:
            metric, k = key.split("@")
            out[f"lookbench_{metric}_at_{k}"] = value / 100
    out["main_score"] = out["hit_rate_at_1"]
    return out


def to_task_result(result: dict):
    """An mteb ``TaskResult`` of a result's ``to_dict()`` JSON (an ``EvaluationResult``'s or a stored one)."""
    import mteb
    from mteb.results import TaskResult

    try:
        evaluation = EvaluationResult.from_dict(result)
        p = evaluation.meta
        mode, revision = p.need("mode"), p.dataset.need("revision")
    except (KeyError, TypeError, AttributeError) as err:
        raise EvaluationError(f"not a LookBench result JSON ({type(err).__name__}: {err})") from err
    if p.cutoff:
        raise EvaluationError("mteb's LookBench task scores every query: a result with a cutoff has no mteb counterpart")
    queries = p.queries  # a text-query result is the text-to-image task's
    languages = LANGUAGES if queries == "image" else TEXT_LANGUAGES
    return TaskResult(
        dataset_revision=revision or "unknown",
        task_name=task_name(mode, revision, True if p.distractors is None else p.distractors, queries),
        mteb_version=mteb.__version__,
        scores={SPLIT: [_scores(name, scores, languages) for name, scores in evaluation.subsets.items()]},
        evaluation_time=p.wall_time_s,
        date=dt.datetime.fromisoformat(p.evaluated_at) if p.evaluated_at else None,
    )


def export_result(result_path, out) -> Path:
    """Write ``<out>/<task name>.json`` (mteb's ``TaskResult.to_disk``) for the result JSON at ``result_path``."""
    from lookbench.results.store import read_json

    try:
        result = read_json(result_path)
    except ValueError as err:
        raise EvaluationError(f"{result_path} is not a LookBench result JSON: {err}") from err
    from lookbench.results.outcomes import check_result
    from lookbench.results.provenance import is_sealed

    if is_sealed(result):
        raise EvaluationError(f"{result_path} is a run on a sealed release: it holds rankings and no score, so it has "
                              "no mteb counterpart (the leaderboard scores it)")
    try:
        check_result(result, str(result_path))  # the scores exported are the ones its outcomes give
    except ValueError as err:
        raise EvaluationError(str(err)) from err
    try:
        task_result = to_task_result(result)
    except EvaluationError as err:
        raise EvaluationError(f"{result_path}: {err}") from err
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{task_result.task_name}.json"
    with replacing(path) as tmp:  # a new file, written whole, then swapped in: a failure leaves the old file
        task_result.to_disk(tmp)
    return path
