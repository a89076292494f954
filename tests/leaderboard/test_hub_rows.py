"""Issue 55 item 3: `lookbench leaderboard --hub` reads the Hub's own leaderboard of the dataset (the loopback fake's
GET /api/datasets/<id>/leaderboard, built from model repos' .eval_results) and shows each row in its comparable group
as `not checked: Hub community result`, never merged into a checked row, linked to the model's LookBench submission;
a malformed answer or a failed request is one line, a row it cannot place is skipped with its reason."""
from __future__ import annotations

import json

import huggingface_hub
import pytest

from lookbench.leaderboard.hub_rows import hub_entries
from lookbench.leaderboard.load import entry_from_result
from lookbench.results import hub_results
from lookbench.results.trust import HUB_COMMUNITY, NOT_CHECKED
from tests.helpers.fake_results_hub import FakeResultsHub
from tests.helpers import leaderboard as helpers
from tests.helpers.leaderboard import run_cli, scored

DATASET = "someone/lookbench"


@pytest.fixture
def online(monkeypatch):
    """huggingface_hub allowed to ask the loopback fake (and only it: the endpoint is set per test)."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    return monkeypatch


def eval_results(data: dict) -> str:
    return helpers.eval_results(data, DATASET)


def test_hub_rows_stand_in_their_group_as_not_checked_and_link_a_submission(tmp_path, online, capsys):
    store = tmp_path / "store"
    store.mkdir()
    mine = scored("someone/model-a", 55.0)
    mine["provenance"]["submission"] = {"model": "someone/model-a", "revision": "b" * 40}
    (store / "a.json").write_text(json.dumps(scored("local-model", 50.0)))
    with FakeResultsHub() as hub:
        online.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        hub.serve_eval_results("someone/model-a", eval_results(mine))
        hub.serve_eval_results("other/model-b", eval_results(scored("other/model-b", 61.5, cutoff="2025-06-01")))
        code, out, err = run_cli(capsys, "--results", str(store), "--reference", "none", "--hub", DATASET,
                                 "--format", "json")
        known = [entry_from_result(mine, "submission", "consistent")]
        known[0].extra["submitted"] = "someone/model-a"
        entries, skipped = hub_entries(DATASET, known)
    assert code == 0, err
    assert any(r["path"].startswith(f"/api/datasets/{DATASET}/leaderboard") for r in hub.requests)
    sections = [s for s in json.loads(out) if "title" in s]
    rows = {row["model"]: (section["title"], row) for section in sections for row in section["rows"]}
    title, row = rows["someone/model-a (Hub)"]
    assert row["verified"] == HUB_COMMUNITY and row["overall fine R@1"] == 55.0
    assert "local-abc" in title and "leaderboard mode" in title and "queries after" not in title
    local_title, local = rows["local-model"]
    assert local_title == title and local["verified"] == NOT_CHECKED  # one comparable group, side by side
    cut_title, _ = rows["other/model-b (Hub)"]
    assert "queries after 2025-06-01" in cut_title  # a group of its own: another cutoff
    # its subsets' scores are its one row's; it merges into no other row
    assert row["RealStreetLook"] == 55.0
    assert sum(1 for s in sections for r in s["rows"] if r["model"].startswith("someone/model-a")) == 1
    linked = {e.model for e in entries}
    assert f"someone/model-a (Hub; LookBench row {known[0].model})" in linked and not skipped
    assert all(e.verified == HUB_COMMUNITY for e in entries) and len(entries) == 2


def test_trusted_leaves_the_hub_rows_out(tmp_path, online, capsys):
    with FakeResultsHub() as hub:
        online.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        hub.serve_eval_results("other/model-b", eval_results(scored("other/model-b", 61.5)))
        code, out, _ = run_cli(capsys, "--results", str(tmp_path), "--hub", DATASET, "--trusted", "--format", "json")
    assert code == 0 and "(Hub)" not in out


@pytest.mark.parametrize("answer", [{"not": "a list"}, [{"rank": 1}], "text", [3]])
def test_a_malformed_leaderboard_answer_is_one_line(tmp_path, online, capsys, answer):
    with FakeResultsHub() as hub:
        online.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        hub.leaderboards[DATASET] = answer
        code, out, err = run_cli(capsys, "--results", str(tmp_path), "--hub", DATASET)
    assert code == 2 and not out
    assert err.count("\n") == 1 and f"the Hub's leaderboard of {DATASET} is not a list of rows" in err


def test_a_refused_request_and_the_offline_switch_are_one_line(tmp_path, online, capsys):
    with FakeResultsHub(refuse=404) as hub:
        online.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        code, _, err = run_cli(capsys, "--results", str(tmp_path), "--hub", DATASET)
    assert code == 2 and err.count("\n") == 1 and f"cannot read the Hub's leaderboard of {DATASET}: not found" in err
    online.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    code, _, err = run_cli(capsys, "--results", str(tmp_path), "--hub", DATASET)
    assert code == 2 and err.count("\n") == 1 and "HF_HUB_OFFLINE" in err


def test_rows_it_cannot_place_are_skipped_with_their_reason(tmp_path, online, capsys):
    good = hub_results.to_yaml(hub_results.entries(scored("m/good", 40.0), DATASET, "https://x", NOT_CHECKED))
    foreign = good.replace("overall-fine-r1-leaderboard", "overall-fine-r9-leaderboard")
    with FakeResultsHub() as hub:
        online.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        hub.serve_eval_results("m/foreign", foreign)
        hub.serve_eval_results("m/plain", "- dataset: {id: someone/lookbench, task_id: default}\n  value: 3.0\n")
        code, out, err = run_cli(capsys, "--results", str(tmp_path), "--reference", "none", "--hub", DATASET,
                                 "--format", "json")
    err = " ".join(err.split())
    assert code == 0
    assert "skipped Hub row m/plain: its notes do not say what it was measured on" in err
    assert "skipped Hub row m/foreign: task overall-fine-r9-leaderboard is not a LookBench task" in err
    assert "m/foreign (Hub)" in out  # its other tasks are LookBench's and are placed
