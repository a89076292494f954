"""Issue 55 items 1, 2 and 4 on the staged mirror: the dataset repo is a Hub Benchmark (its eval.yaml names only
configs and splits the repo has), and GR-Lite-mini's and GR-Lite-mini-text's repos carry `.eval_results` that
huggingface_hub parses, pointing at that dataset and at tasks of its eval.yaml, with the values of their model-index;
pushed, the loopback Hub's leaderboard of the dataset shows them."""
from __future__ import annotations

import pytest
import yaml
from huggingface_hub import ModelCard, metadata_load, parse_eval_result_entries

from lookbench.results.hub_results import read_notes
from tests.helpers.shared import sealed_mini

MODELS = ("gr-lite-mini", "gr-lite-mini-text")


def eval_spec(hub):
    return yaml.safe_load((hub / "lookbench/eval.yaml").read_text())


@pytest.mark.slow
def test_eval_yaml_names_only_configs_and_splits_the_dataset_repo_has(hub):
    spec = eval_spec(hub)
    assert spec["evaluation_framework"] == "lookbench" and spec["name"] and spec["description"]
    card = metadata_load(hub / "lookbench/README.md")
    has = {c["config_name"]: {f["split"] for f in c["data_files"]} for c in card["configs"]}
    ids = [t["id"] for t in spec["tasks"]]
    assert len(ids) == len(set(ids)) and {"overall-fine-r1-leaderboard", "realstreetlook-fine-r1-leaderboard",
                                          "overall-fine-r1-strict", "aigen-streetlook-text-short-fine-r1-strict"} <= set(ids)
    for task in spec["tasks"]:
        assert set(task) == {"id", "config", "split"} and task["split"] in has[task["config"]], task
    assert "eval.yaml" in (hub / "repos.json").read_text()  # push sends it


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_the_model_repos_carry_eval_results_of_their_model_index(hub, model):
    text = (hub / f"lookbench/{model}/.eval_results/lookbench.yaml").read_text()
    entries = parse_eval_result_entries(yaml.safe_load(text))
    ids = {t["id"] for t in eval_spec(hub)["tasks"]}
    assert entries and all(e.dataset_id == "lookbench/lookbench" and e.task_id in ids for e in entries)
    legacy = ModelCard.load(hub / f"lookbench/{model}/README.md").data.eval_results
    headline = {(r.dataset_config, r.metric_name): r.metric_value for r in legacy
                if r.metric_name.startswith("Fine R@1 (") and r.source_name == entries[0].source_name}
    assert len(entries) == len(headline)  # each task once: one table's values
    for entry in entries:
        task, measured = read_notes(entry.notes)
        assert task == entry.task_id and measured.trust == "not checked"
        config = next((c for c, _ in headline if c != "all" and task.startswith(c.lower() + "-")), "all")
        name = f"Fine R@1 ({measured.mode})" if measured.queries == "image" else \
            f"Fine R@1 ({measured.mode}, {measured.queries})"
        assert headline[(config, name)] == entry.value, entry
    if model == "gr-lite-mini-text":
        assert {read_notes(e.notes)[1].queries for e in entries} == {"text-short", "text-long"}


@pytest.mark.slow
def test_pushed_model_repos_show_on_the_loopback_hubs_leaderboard(hub, tmp_path):
    from tests.helpers.fake_results_hub import FakeResultsHub
    from tests.helpers.staged_hub import TOKEN, run_cli

    with FakeResultsHub() as fake:
        pushed = run_cli("push", "--hub", str(hub), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        assert pushed.returncode == 0, pushed.stderr
        assert "eval.yaml" in fake.contents["dataset/lookbench/lookbench"]
        rows = fake.leaderboard("lookbench/lookbench")
        board = run_cli("leaderboard", "--results", str(tmp_path / "none"), "--reference", "none", "--hub",
                        "--format", "json", endpoint=fake.url, token=None, cwd=tmp_path)
    assert {r["modelId"] for r in rows} == {"lookbench/gr-lite-mini", "lookbench/gr-lite-mini-text"}
    assert board.returncode == 0, board.stderr
    assert "lookbench/gr-lite-mini (Hub)" in board.stdout and "not checked: Hub community result" in board.stdout


@pytest.mark.slow
def test_a_sealed_release_names_only_its_public_part(tmp_path, tmp_path_factory, photos):
    from lookbench.upload_scripts.stage import stage

    data, labels = sealed_mini(tmp_path_factory, tmp_path)
    mirror = tmp_path / "HUB"
    stage(mirror, data=data, namespace="sealer", photos=photos, labels=labels)
    public = metadata_load(mirror / "lookbench/README.md")
    has = {c["config_name"]: {f["split"] for f in c["data_files"]} for c in public["configs"]}
    tasks = eval_spec(mirror)["tasks"]
    assert tasks and all(t["split"] in has[t["config"]] for t in tasks)
    assert not (mirror / "sealer/lookbench-labels/eval.yaml").exists()  # the private labels are no Benchmark
    assert all(t["config"] != "text" for t in tasks) or "text" in has


@pytest.mark.slow
def test_every_releases_card_says_how_scores_reach_the_hubs_leaderboard(tmp_path):
    """A real release and the embedded LookBench-Mini: `lookbench stage` makes either the Benchmark of its repo."""
    from lookbench.dataset_builder import build_release, ensure_default_mini
    from tests.helpers.raw_release import write_release

    build_release("raw", tmp_path / "data", input_path=write_release(tmp_path / "raw"), release="v20251201")
    for folder in (tmp_path / "data", ensure_default_mini()):
        card = " ".join((folder / "README.md").read_text().split())
        assert "## On the Hub's leaderboard" in card and "lookbench export RESULT --format eval-results" in card
        assert "--model-repo" in card and "overall-fine-r1-leaderboard" in card
