"""Issue 55: a result on the Hub's own leaderboard — eval.yaml's tasks name only configs and splits the repo has,
`lookbench export --format eval-results` writes `.eval_results/lookbench.yaml` that huggingface_hub parses (images,
text queries, a sealed run refused), model-index and `.eval_results` from one list of scores, and bad input in one
line."""
from __future__ import annotations

import json

import pytest
import yaml
from huggingface_hub import parse_eval_result_entries

from lookbench.cli import main
from lookbench.results import hub_results
from lookbench.results.hub_results import benchmark_tasks, read_notes, task_id
from tests.helpers.results import synthetic

MODES = ("strict", "leaderboard")
SIZES = {"RealStudioFlat": 30, "AIGen-Studio": 20, "RealStreetLook": 24, "AIGen-StreetLook": 12}
CONFIGS = {"RealStudioFlat": ["query", "gallery"], "AIGen-Studio": ["query", "gallery"],
           "RealStreetLook": ["query", "gallery"], "AIGen-StreetLook": ["query", "gallery"], "noise": ["gallery"],
           "text": ["real_studio_flat", "aigen_studio", "real_streetlook", "aigen_streetlook"]}


def provenance(**changes) -> dict:
    return {"dataset": {"name": "LookBench", "data": "someone/look@" + "c" * 40, "key": "local-0123456789abcdef",
                        "revision": "local-0123456789abcdef", "commit": "c" * 40, "releases": ["v20251201"]},
            "model": {"name": "gr-lite-mini"}, "mode": "leaderboard", "distractors": True, "cutoff": None,
            "queries": "image", "evaluated_at": "2026-01-02T03:04:05+00:00", **changes}


def stored(tmp_path, name="result.json", **changes):
    path = tmp_path / name
    path.write_text(json.dumps(synthetic(1, SIZES, provenance(**changes))))
    return path


def test_task_ids_are_stable_names_of_subset_kind_and_mode():
    assert task_id("RealStreetLook", "leaderboard") == "realstreetlook-fine-r1-leaderboard"
    assert task_id(None, "leaderboard") == "overall-fine-r1-leaderboard"
    assert task_id("AIGen-Studio", "strict", "text-short") == "aigen-studio-text-short-fine-r1-strict"


def test_benchmark_tasks_name_only_configs_and_splits_the_repo_has():
    tasks = benchmark_tasks(CONFIGS, MODES)
    assert len(tasks) == 2 * 3 * 5 and len({t["id"] for t in tasks}) == len(tasks)
    for task in tasks:
        assert task["split"] in CONFIGS[task["config"]], task
    assert {"id": "overall-fine-r1-leaderboard", "config": "RealStreetLook", "split": "query"} in tasks
    assert {"id": "realstreetlook-text-long-fine-r1-strict", "config": "text", "split": "real_streetlook"} in tasks
    # a repo without the text config (a sealed release's public part may lack it) and with two subsets only
    public = {"RealStudioFlat": ["query", "gallery"], "AIGen-Studio": ["query", "gallery"], "noise": ["gallery"]}
    tasks = benchmark_tasks(public, MODES)
    assert [t["id"] for t in tasks] == [f"{s}-fine-r1-{m}" for m in MODES for s in ("overall", "realstudioflat",
                                                                                       "aigen-studio")]
    assert all(t["split"] in public[t["config"]] for t in tasks)
    assert benchmark_tasks({"noise": ["gallery"]}, MODES) == []


def test_export_writes_eval_results_huggingface_hub_parses(tmp_path, capsys):
    path = stored(tmp_path)
    assert main(["export", str(path), "--format", "eval-results", "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out/.eval_results/lookbench.yaml").read_text()
    entries = parse_eval_result_entries(yaml.safe_load(text))
    result = json.loads(path.read_text())
    by_task = {e.task_id: e for e in entries}
    assert set(by_task) == {task_id(s, "leaderboard") for s in (None, *SIZES)}
    assert by_task["overall-fine-r1-leaderboard"].value == round(result["overall"]["fine_recall"]["@1"], 2)
    assert by_task["realstreetlook-fine-r1-leaderboard"].value == round(result["RealStreetLook"]["fine_recall"]["@1"], 2)
    for entry in entries:
        assert entry.dataset_id == "someone/look" and entry.dataset_revision == "c" * 40
        assert entry.date == "2026-01-02T03:04:05+00:00" and entry.source_url.endswith("spaces/lookbench/leaderboard")
        task, measured = read_notes(entry.notes)
        assert task == entry.task_id and measured.trust == "not checked" and measured.data == "local-0123456789abcdef"
        assert (measured.mode, measured.distractors, measured.cutoff, measured.queries) == ("leaderboard", True, None,
                                                                                            "image")
    assert "per_query" not in text and "first_fine" not in text  # headline figures only
    assert "wrote" in capsys.readouterr().out
    # the legacy form still works, and says the same
    assert main(["export", "eval-results", str(path), "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again/.eval_results/lookbench.yaml").read_text() == text


def test_a_text_query_result_goes_to_the_text_tasks(tmp_path):
    path = stored(tmp_path, queries="text-short", cutoff="2025-06-01")
    assert main(["export", str(path), "--format", "eval-results", "--out", str(tmp_path / "out")]) == 0
    entries = hub_results.parse((tmp_path / "out/.eval_results/lookbench.yaml").read_text(), "it",
                                {t["id"] for t in benchmark_tasks(CONFIGS, MODES)})
    assert {e.task_id for e in entries} == {task_id(s, "leaderboard", "text-short") for s in (None, *SIZES)}
    assert all(read_notes(e.notes)[1].cutoff == "2025-06-01" for e in entries)


def test_a_sealed_run_claims_no_score_and_nothing_is_written(tmp_path, capsys):
    sealed = {s: {"num_queries": n, "gallery_size": 100, "self_matches_removed": 0} for s, n in SIZES.items()}
    data = {**sealed, "overall": {"num_queries": sum(SIZES.values())},
            "provenance": provenance(dataset={**provenance()["dataset"], "sealed": {"release": "v20251201"}})}
    (tmp_path / "sealed.json").write_text(json.dumps(data))
    assert main(["export", str(tmp_path / "sealed.json"), "--format", "eval-results", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "sealed release" in err and "claims no Fine Recall@1" in err
    assert not (tmp_path / "o").exists()


def test_a_scored_sealed_row_exports_only_its_headline_figures(tmp_path):
    """A sealed submission the board scored (its shown half): the public part's tasks, no per-query figure."""
    result = synthetic(1, SIZES, provenance(dataset={**provenance()["dataset"], "sealed": {"release": "v20251201"}}))
    for block in result.values():
        block.pop("per_query", None) if isinstance(block, dict) else None
    found = hub_results.entries(result, "lookbench/lookbench", "https://example.org/row", "scored (sealed)")
    text = hub_results.to_yaml(found)
    assert "per_query" not in text and {e.task_id for e in hub_results.parse(text, "it")} <= {
        t["id"] for t in benchmark_tasks({s: ["query", "gallery"] for s in SIZES}, MODES)}


def test_a_task_the_benchmark_lacks_and_a_malformed_file_are_one_line(tmp_path, capsys):
    path = stored(tmp_path, queries="text-long")
    spec = tmp_path / "eval.yaml"
    spec.write_text(yaml.safe_dump({"name": "x", "tasks": benchmark_tasks({s: ["query"] for s in SIZES}, MODES)}))
    assert main(["export", str(path), "--format", "eval-results", "--out", str(tmp_path / "o"),
                 "--benchmark", str(spec)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "is not a task of the benchmark's eval.yaml" in err
    assert not (tmp_path / "o/.eval_results/lookbench.yaml").exists()
    spec.write_text("tasks: 3\n")
    assert main(["export", str(path), "--format", "eval-results", "--out", str(tmp_path / "o"),
                 "--benchmark", str(spec)]) == 2
    assert "has no list of tasks" in capsys.readouterr().err
    for bad in ("- {dataset: {id: x}}\n", "{]", "3\n"):
        with pytest.raises(ValueError, match="is not an .eval_results file"):
            hub_results.parse(bad, "bad.yaml")
    assert main(["export", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "--format" in capsys.readouterr().err


def test_model_index_and_eval_results_come_from_the_same_scores():
    result = synthetic(1, SIZES, provenance())
    scores = hub_results.headline_scores(result)
    legacy = hub_results.model_index(scores, "lookbench/lookbench", "LookBench", "local-0123456789abcdef",
                                     "leaderboard", "https://example.org", "table")
    settings = hub_results.Measured("leaderboard", True, None, "image", "local-0123456789abcdef", "not checked")
    back = hub_results.from_model_index(legacy, "lookbench/lookbench", settings)
    assert {(e.task_id, e.value) for e in back} == {(s.task, s.value) for s in scores}
    direct = hub_results.entries(result, "lookbench/lookbench", "https://example.org", "not checked")
    assert {(e.task_id, e.value) for e in direct} == {(e.task_id, e.value) for e in back}
