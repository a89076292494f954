"""Issue 55 item 2: `lookbench submit --model-repo` also opens a pull request adding the scores as the Hub's
`.eval_results/lookbench.yaml` on the model's own repo (the `community` badge), beside the results-repo pull request,
on the loopback fake Hub; the file parses with huggingface_hub, points at the submission's pull request and names
tasks of the benchmark; the loopback Hub's leaderboard then lists the model as a community row."""
from __future__ import annotations

import json

import pytest
import yaml
from huggingface_hub import parse_eval_result_entries

from lookbench.results.hub_results import benchmark_tasks, read_notes, task_id
from lookbench.settings import MODES
from tests.helpers.fake_results_hub import FakeResultsHub
from tests.helpers.staged_hub import TOKEN, run_cli
from tests.helpers.submissions import MODEL_ID

SUBSETS = ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook")


@pytest.mark.slow
def test_submit_with_model_repo_opens_the_model_pull_request_beside_the_results_one(honest, tmp_path):
    with FakeResultsHub() as hub:
        proc = run_cli("submit", str(honest), "--repo", "someone/results", "--allow-synthetic", "--model-id", MODEL_ID,
                       "--model-repo", "lookbench/gr-lite-mini", endpoint=hub.url, token=TOKEN, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        rows = hub.leaderboard("lookbench/lookbench")
        again = run_cli("submit", str(honest), "--repo", "someone/results", "--allow-synthetic", "--model-id",
                        MODEL_ID, "--model-repo", "lookbench/gr-lite-mini", endpoint=hub.url, token=TOKEN, cwd=tmp_path)
    assert [p["repo"] for p in hub.pulls] == ["dataset/someone/results", "model/lookbench/gr-lite-mini"]
    results, model = hub.pulls
    assert model["paths"] == [".eval_results/lookbench.yaml"] and model["status"] == "open"
    assert results["title"].split("[")[-1] == model["title"].split("[")[-1]  # the one submission's mark
    text = hub.contents["model/lookbench/gr-lite-mini"][".eval_results/lookbench.yaml"].decode()
    entries = parse_eval_result_entries(yaml.safe_load(text))
    result = json.loads(honest.read_text())
    mode = result["provenance"]["mode"]
    assert {e.task_id for e in entries} == {task_id(s, mode) for s in (None, *SUBSETS)}
    assert {e.task_id for e in entries} <= {t["id"] for t in benchmark_tasks({s: ["query"] for s in SUBSETS}, MODES)}
    pull_url = f"{hub.url}/datasets/someone/results/discussions/1"
    for entry in entries:
        assert entry.dataset_id == "lookbench/lookbench" and entry.source_url == pull_url
        assert read_notes(entry.notes)[1].trust == "pending"
    overall = next(e for e in entries if e.task_id.startswith("overall-"))
    assert overall.value == round(result["overall"]["fine_recall"]["@1"], 2)
    said = " ".join(proc.stdout.split())
    assert f"opened pull request #1 on someone/results: {pull_url}" in said
    assert f"opened pull request #2 on lookbench/gr-lite-mini: {hub.url}/models/lookbench/gr-lite-mini/discussions/2" \
        in said
    assert {r["modelId"] for r in rows} == {"lookbench/gr-lite-mini"} and all(r["pullRequest"] == 2 for r in rows)
    assert again.returncode == 0 and len(hub.pulls) == 2 and again.stdout.count("already submitted") == 2


def test_dry_run_with_model_repo_writes_the_file_it_would_send(honest, tmp_path):
    from tests.helpers.submissions import lookbench

    out = tmp_path / "out"
    proc = lookbench("submit", honest, "--dry-run", "--out", out, "--allow-synthetic", "--model-id", MODEL_ID,
                     "--model-repo", "lookbench/gr-lite-mini", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = out / "lookbench/gr-lite-mini/.eval_results/lookbench.yaml"
    entries = parse_eval_result_entries(yaml.safe_load(written.read_text()))
    assert entries and all(e.source_url.startswith("https://huggingface.co/datasets/lookbench/results/tree/main/"
                                                   "submissions/lookbench/gr-lite-mini/") for e in entries)


def test_a_bad_model_repo_is_one_line_before_any_request(honest, tmp_path):
    with FakeResultsHub() as hub:
        proc = run_cli("submit", str(honest), "--allow-synthetic", "--model-id", MODEL_ID, "--model-repo", "not a repo",
                       endpoint=hub.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "--model-repo" in proc.stderr
    assert not hub.requests
