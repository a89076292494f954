"""A result on the Hub's own leaderboard ("Community Evals", docs/publishing.md#the-dataset-as-a-hub-benchmark): the
tasks of the dataset's ``eval.yaml``, a result's headline scores as ``.eval_results`` entries (huggingface_hub's
``EvalResultEntry``) and as the legacy ``model-index`` (``EvalResult``), both made from one list of ``HubScore``, and
the notes that say what a score was measured on, written and read here only.

A task is one subset (or the query-weighted overall), one query kind and one mode, scored by Fine Recall@1; its id is
stable across releases (``realstreetlook-fine-r1-leaderboard``), as the Hub keys a model's scores by it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lookbench.errors import shorten
from lookbench.schema import DEFAULT_CONFIG, SUBSETS, TEST_SUBSETS
from lookbench.settings import DEFAULT_QUERIES, TEXT_FORMS

FRAMEWORK = "lookbench"  # eval.yaml's evaluation_framework: the Hub takes its own name of a harness (docs/publishing.md)
EVAL_YAML = "eval.yaml"
RESULTS_FILE = ".eval_results/lookbench.yaml"
OVERALL = "overall"
TEXT_CONFIG = "text"  # the text queries' config (dataset_builder.text_queries), one split per subset's alias
HEADLINE = ("fine_recall", "@1")
METRIC_ID = "lookbench/fine_recall"
_NOTES_START = "LookBench:"
_NOTE_KEYS = ("task", "mode", "distractors", "cutoff", "queries", "data", "trust")


def task_id(subset: str | None, mode: str, queries: str = DEFAULT_QUERIES) -> str:
    """The task of ``subset`` (``None``: the overall) in ``mode`` for one query kind (``image`` or ``text-<form>``)."""
    slug = OVERALL if subset is None else subset.lower()
    kind = "" if queries == DEFAULT_QUERIES else f"{queries}-"
    return f"{slug}-{kind}fine-r1-{mode}"


def benchmark_tasks(configs: dict[str, list[str]], modes) -> list[dict]:
    """``eval.yaml``'s tasks for a dataset repo whose card declares ``configs`` (config name -> its splits): per mode
    the overall and each subset with a ``query`` split, on images; on text queries too when the ``text`` config has
    the subset's split. Each task names a config and split the repo has (the overall: the card's default subset)."""
    subsets = [s for s in TEST_SUBSETS if "query" in configs.get(s, ())]
    if not subsets:
        return []
    kinds = {DEFAULT_QUERIES: {s: (s, "query") for s in subsets}}
    texts = {s: (TEXT_CONFIG, SUBSETS[s].alias) for s in subsets if SUBSETS[s].alias in configs.get(TEXT_CONFIG, ())}
    kinds.update({f"text-{form}": texts for form in TEXT_FORMS if texts})
    tasks = []
    for mode in modes:
        for queries, where in kinds.items():
            first = where.get(DEFAULT_CONFIG) or next(iter(where.values()))
            for subset, (config, split) in [(None, first), *where.items()]:
                tasks.append({"id": task_id(subset, mode, queries), "config": config, "split": split})
    return tasks


def eval_yaml(name: str, configs: dict[str, list[str]], modes) -> dict:
    """The dataset repo's ``eval.yaml`` (the Hub's Benchmark spec: name, description, evaluation_framework, tasks)."""
    return {"name": name,
            "description": "LookBench, a live fashion image retrieval benchmark: each task is one subset (or the "
                           "query-weighted overall), one query kind and one mode, scored by Fine Recall@1 in percent, "
                           "the shared noise gallery appended. Scores reach this leaderboard as .eval_results files "
                           "`lookbench export --format eval-results` writes; LookBench's own leaderboard Space says "
                           "how far each was checked.",
            "evaluation_framework": FRAMEWORK, "tasks": benchmark_tasks(configs, modes)}


@dataclass(frozen=True)
class Measured:
    """What a Hub score was measured on, as its notes say: the settings LookBench groups rows by."""

    mode: str
    distractors: bool
    cutoff: str | None
    queries: str
    data: str  # the data's key (content revision, or the published snapshot)
    trust: str  # the level the row has on LookBench's own board (``lookbench.results.trust``)

    def notes(self, task: str) -> str:
        values = {"task": task, "mode": self.mode, "distractors": "with" if self.distractors else "without",
                  "cutoff": self.cutoff or "none", "queries": self.queries, "data": self.data, "trust": self.trust}
        return f"{_NOTES_START} " + "; ".join(f"{key} {values[key]}" for key in _NOTE_KEYS)


def read_notes(notes) -> tuple[str, Measured] | None:
    """(task id, what it was measured on) from notes ``Measured.notes`` wrote; ``None`` for any other notes."""
    if not isinstance(notes, str) or not notes.startswith(_NOTES_START):
        return None
    fields = dict(part.strip().partition(" ")[::2] for part in notes[len(_NOTES_START):].split(";"))
    if set(fields) != set(_NOTE_KEYS) or fields["distractors"] not in ("with", "without") or not all(fields.values()):
        return None
    return fields["task"], Measured(fields["mode"], fields["distractors"] == "with",
                                    None if fields["cutoff"] == "none" else fields["cutoff"], fields["queries"],
                                    fields["data"], fields["trust"])


@dataclass(frozen=True)
class HubScore:
    """One headline score of a result: its task, subset (``None``: overall) and Fine Recall@1 in percent."""

    task: str
    subset: str | None
    value: float


def headline_scores(result: dict, name: str = "the result") -> list[HubScore]:
    """Fine Recall@1 of every subset the result scores and of its overall, one ``HubScore`` per task; a result that
    claims no score (a run on a sealed release, before the leaderboard scores it) is a one-line ValueError."""
    from lookbench.results.provenance import Provenance

    provenance = Provenance.of(result)
    mode, queries = provenance.mode, provenance.queries
    metric, at = HEADLINE
    scores = []
    for subset in (*TEST_SUBSETS, None):
        block = result.get(OVERALL if subset is None else subset)
        value = block.get(metric, {}).get(at) if isinstance(block, dict) and isinstance(block.get(metric), dict) else None
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
            raise ValueError(f"{name}: {subset or OVERALL} {metric} {at} is {shorten(value)}, not a percentage")
        scores.append(HubScore(task_id(subset, mode, queries), subset, round(float(value), 2)))
    if not scores:
        sealed = provenance.dataset.is_sealed
        raise ValueError(f"{name} claims no Fine Recall@1 score" + (
            ": it is a run on a sealed release, which the leaderboard scores once submitted (`lookbench submit`); "
            "export its scored row from the board" if sealed else ""))
    return scores


def measured(result: dict) -> Measured:
    """The settings of a result as the notes of its Hub scores say them (``trust`` left to the caller)."""
    from lookbench.results.provenance import Provenance

    m = Provenance.of(result).measured()
    return Measured(m.mode, m.distractors, m.cutoff, m.queries, m.key, "")


def entries(result: dict, dataset_id: str, source: str, trust: str, name: str = "the result") -> list:
    """The result's headline scores as ``EvalResultEntry``s on ``dataset_id``: the dataset's commit (else its content
    revision), the date it was evaluated, ``source`` (the board's row or the submission's pull request) and notes."""
    from huggingface_hub import EvalResultEntry

    from lookbench.results.provenance import Provenance

    provenance = Provenance.of(result)
    data = provenance.dataset
    revision = data.commit if isinstance(data.commit, str) else data.revision
    when = provenance.evaluated_at if isinstance(provenance.evaluated_at, str) else None
    settings = Measured(**{**vars(measured(result)), "trust": trust})
    return [EvalResultEntry(dataset_id=dataset_id, task_id=score.task, value=score.value,
                            dataset_revision=revision if isinstance(revision, str) else None, date=when,
                            source_url=source, source_name="LookBench", notes=settings.notes(score.task))
            for score in headline_scores(result, name)]


def _metric_name(mode: str, queries: str) -> str:
    return f"Fine R@1 ({mode})" if queries == DEFAULT_QUERIES else f"Fine R@1 ({mode}, {queries})"


_METRIC_NAME = re.compile(r"Fine R@1 \((\w+)(?:, (text-\w+))?\)")


def model_index(scores: list[HubScore], dataset_id: str, dataset_name: str, revision: str | None, mode: str,
                source: str, source_name: str, queries: str = DEFAULT_QUERIES) -> list:
    """The same scores as the legacy ``model-index`` (huggingface_hub's ``EvalResult``): config ``all`` for the
    overall, the subset's name else; metric ``Fine R@1 (<mode>)`` (text queries: ``Fine R@1 (<mode>, text-<form>)``)."""
    from huggingface_hub import EvalResult

    return [EvalResult(task_type="image-feature-extraction", task_name="Fashion image retrieval",
                       dataset_type=dataset_id, dataset_name=dataset_name, dataset_split="query",
                       dataset_revision=revision, dataset_config=score.subset or "all", metric_type=METRIC_ID,
                       metric_config=mode, metric_name=_metric_name(mode, queries), metric_value=score.value,
                       source_name=source_name, source_url=source) for score in scores]


def from_model_index(results: list, dataset_id: str, settings: Measured, source: str | None = None) -> list:
    """A model card's ``model-index`` entries on ``dataset_id`` as ``.eval_results`` entries (the inverse of
    ``model_index``): each ``Fine R@1`` of config ``all`` or a subset is the headline of one task; the first table's
    (``source_name``) only, or the table measured on ``settings.data`` when one was, so a task has one value."""
    from huggingface_hub import EvalResultEntry

    wanted = [r for r in results if r.dataset_type == dataset_id and _METRIC_NAME.fullmatch(r.metric_name or "")
              and (r.dataset_config == "all" or r.dataset_config in TEST_SUBSETS)]
    tables = list(dict.fromkeys(r.source_name for r in wanted))
    same = [t for t in tables if any(r.source_name == t and r.dataset_revision == settings.data for r in wanted)]
    table = (same or tables or [None])[0]
    out = []
    for r in wanted:
        if r.source_name != table:
            continue
        mode, queries = _METRIC_NAME.fullmatch(r.metric_name).groups()
        queries = queries or DEFAULT_QUERIES
        task = task_id(None if r.dataset_config == "all" else r.dataset_config, mode, queries)
        notes = Measured(**{**vars(settings), "mode": mode, "queries": queries,
                            "data": r.dataset_revision or settings.data}).notes(task)
        out.append(EvalResultEntry(dataset_id=dataset_id, task_id=task, value=float(r.metric_value),
                                   dataset_revision=r.dataset_revision, source_url=source or r.source_url,
                                   source_name=r.source_name, notes=notes))
    return out


def to_yaml(found: list) -> str:
    """``.eval_results/*.yaml`` text: huggingface_hub's own serialisation, dumped as YAML."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    return yaml.safe_dump(eval_result_entries_to_yaml(found), sort_keys=False, allow_unicode=True)


def parse(text: str, name: str, tasks=None) -> list:
    """The entries of an ``.eval_results`` file (huggingface_hub's ``parse_eval_result_entries``), each task id one of
    ``tasks`` when given: anything else is a one-line ValueError naming ``name``."""
    import yaml
    from huggingface_hub import parse_eval_result_entries

    try:
        raw = yaml.safe_load(text)
        found = parse_eval_result_entries(raw if isinstance(raw, list) else [])
    except (yaml.YAMLError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{name} is not an .eval_results file: {type(err).__name__} {shorten(str(err), 120)}") from None
    if not found or not isinstance(raw, list) or len(found) != len(raw):
        raise ValueError(f"{name} is not an .eval_results file: no list of results")
    unknown = next((e.task_id for e in found if tasks is not None and e.task_id not in tasks), None)
    if unknown is not None:
        raise ValueError(f"{name}: task {shorten(unknown, 80)} is not a task of the benchmark's {EVAL_YAML}")
    return found


def benchmark_task_ids(path) -> set[str]:
    """The task ids of a benchmark's ``eval.yaml`` (a staged dataset repo's), read through the one bounded reader:
    a file that is not one is a one-line ValueError."""
    import yaml

    from lookbench.files import read_regular

    try:
        spec = yaml.safe_load(read_regular(path, 1 << 20).decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} is not an {EVAL_YAML}: {type(err).__name__}") from None
    tasks = spec.get("tasks") if isinstance(spec, dict) else None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and isinstance(t.get("id"), str) for t in tasks):
        raise ValueError(f"{path} is not an {EVAL_YAML}: it has no list of tasks with ids")
    return {t["id"] for t in tasks}


def write(found: list, out, tasks=None) -> Path:
    """``out/.eval_results/lookbench.yaml`` holding ``found``, written atomically; with ``tasks`` (a benchmark's task
    ids) every entry's task must be one of them, checked before anything is written."""
    from pathlib import Path

    from lookbench.files import replacing

    text = to_yaml(found)
    parse(text, RESULTS_FILE, tasks)  # what the Hub will read: huggingface_hub's parser, the benchmark's tasks
    path = Path(out) / RESULTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
