"""The leaderboard Space (lookbench.space.board, issue 36 item 4): the results repo copied, every submission verified
once (its verdict kept by the hash of its files), the verified row ranked beside the published ones and the tampered
ones shown apart, the filters, and the app served on loopback — through gradio_client and a real browser."""
from __future__ import annotations

import json
import os
import shutil
import socket

import pytest

from lookbench.space.board import repo as board_repo
from lookbench.space.board.app import Board
from lookbench.space.board.facts import ANY_SIZE
from lookbench.space.board.repo import Verdicts, fetch, submission_folders
from tests.helpers.board import (CHROMIUM, EDITED_RANKING, EDITED_SCORE, HONEST, browser_reads_the_board, honest_result,
                                 results_repo)

MINI = "LookBench-Mini (synthetic)"
PUBLISHED = "LookBench (srpone/look-bench v20251201)"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """The results repo: the honest submission and the two tampered ones."""
    result = honest_result(tmp_path_factory.mktemp("honest") / "out")
    return results_repo(result, tmp_path_factory.mktemp("results") / "repo")


@pytest.fixture(scope="module")
def board(repo, tmp_path_factory):
    board = Board(folder=repo, verdicts=Verdicts(tmp_path_factory.mktemp("verdicts") / "verdicts.json"))
    board.refresh()
    return board


@pytest.fixture
def counted(monkeypatch):
    """The submissions ``verify_submission`` is called on (it runs as it does; only the calls are counted)."""
    import lookbench.submissions.verify as verify

    calls, real = [], verify.verify_submission
    monkeypatch.setattr(verify, "verify_submission", lambda folder, data=None: calls.append(folder) or real(folder, data))
    return calls


def _rows(answer: dict, title: str) -> dict[str, dict]:
    (section,) = [s for s in answer["sections"] if s["title"] == title]
    return {row["model"]: row for row in section["rows"]}


def test_the_verified_submission_is_ranked_and_the_tampered_ones_are_listed_apart(board):
    answer = board.api_board("fine", 1, "overall")
    titles = [s["title"] for s in answer["sections"]]
    assert titles[0].startswith(PUBLISHED) and len(titles) == 3
    published = _rows(answer, titles[0])
    assert published["GR-Pro"]["rank"] == 1 and published["GR-Pro"]["verified"] == "published"
    (ranked,) = [t for t in titles if t.startswith(MINI) and "not verified" not in t]
    (apart,) = [t for t in titles if t.startswith(MINI) and t.endswith("not verified (a check failed: unranked)")]
    honest = _rows(answer, ranked)
    assert list(honest) == [HONEST]
    row = honest[HONEST]
    assert row["verified"] == "yes" and row["rank"] == 1 and row["group"] == 1
    lo, hi = row["ci95"]
    assert lo < row["overall fine R@1"] < hi
    tampered = _rows(answer, apart)
    assert set(tampered) == {EDITED_SCORE, EDITED_RANKING}
    assert tampered[EDITED_SCORE]["verified"].startswith("no: overall fine_recall@1 claimed ")
    assert tampered[EDITED_RANKING]["verified"].startswith("no: RealStudioFlat fine_recall@1 claimed ")
    assert all(r["rank"] is None and r["ci95"] is None for r in tampered.values())
    assert {s["model"]: s["verified"] for s in answer["submissions"]} == {
        HONEST: "yes", EDITED_SCORE: tampered[EDITED_SCORE]["verified"], EDITED_RANKING: tampered[EDITED_RANKING]["verified"]}
    assert board.status() == f"Results from the folder {board.state.copy.folder}: 3 submission(s) — verified: 1 yes, 2 no."


def test_per_subset_and_per_release(board):
    answer = board.api_board("fine", 5, "RealStreetLook", True)  # per release: the headline scores
    (ranked,) = [s for s in answer["sections"] if s["title"].startswith(MINI) and "not verified" not in s["title"]]
    row = ranked["rows"][0]
    assert row["model"] == HONEST and "RealStreetLook fine R@5" in ranked["columns"]
    releases = [c for c in ranked["columns"] if c.startswith("mini-v")]
    assert releases == ["mini-v20240601", "mini-v20250101", "mini-v20251201"]
    assert all(0 <= row[r] <= 100 for r in releases) and row["training cutoff"] == "2023-12-31"


def test_a_verdict_is_kept_by_the_hash_of_the_files_and_a_changed_file_is_verified_again(board, repo, tmp_path, counted):
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy)
    verdicts = tmp_path / "verdicts.json"
    first = Board(folder=copy, verdicts=Verdicts(verdicts))
    first.refresh()
    assert len(counted) == 3 and len(json.loads(verdicts.read_text())) == 3
    first.refresh()
    again = Board(folder=copy, verdicts=Verdicts(verdicts))  # a restart reads the kept verdicts
    again.refresh()
    again.api_board("fine", 1, "overall")
    assert len(counted) == 3 and again.submissions() == first.submissions()
    (honest,) = [f for f in submission_folders(copy) if "submissions/lookbench/gr-lite-mini/" in f.as_posix()]
    result = json.loads((honest / "results.json").read_text())
    result["AIGen-Studio"]["fine_recall"]["@1"] = 12.5
    (honest / "results.json").write_text(json.dumps(result))
    assert again.refresh().endswith("verified: 3 no.")
    assert counted[3:] == [honest] and len(json.loads(verdicts.read_text())) == 4


def test_a_damaged_verdicts_file_is_started_afresh(board, repo, tmp_path, counted):
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text('{"not": ')
    fresh = Board(folder=repo, verdicts=Verdicts(verdicts))
    fresh.refresh()
    assert len(counted) == 3 and fresh.submissions() == board.submissions()
    assert set(json.loads(verdicts.read_text()).values()) == {s[2] for s in board.submissions()}


def test_a_submission_whose_data_cannot_be_loaded_is_not_checked_and_tried_again(repo, tmp_path, counted):
    """Data the Space cannot have now (a Hub dataset, offline) says so, and is not kept as a verdict."""
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy)
    for folder in submission_folders(copy):
        result = json.loads((folder / "results.json").read_text())
        result["provenance"]["dataset"].update(data="someone/private-snapshot", commit="a" * 40)
        (folder / "results.json").write_text(json.dumps(result))
    verdicts = tmp_path / "verdicts.json"
    board = Board(folder=copy, verdicts=Verdicts(verdicts))
    assert board.refresh().endswith("verified: 3 not checked.")
    texts = {s[2] for s in board.submissions()}
    assert all(t.startswith("not checked: its data cannot be loaded here (someone/private-snapshot@aaaaaaaa") for t in texts)
    assert not verdicts.exists()
    board.refresh()
    assert len(counted) == 6  # tried again


def test_filters_hide_rows_and_keep_the_full_tables_ranks(board):
    full = _rows(board.api_board("fine", 1, "overall"), board.api_board("fine", 1, "overall")["sections"][0]["title"])
    open_only = board.api_board("fine", 1, "overall", False, True)
    published = open_only["sections"][0]["rows"]
    # GR-Pro and Tianmu-MERE declare no weights anywhere LookBench knows of; GR-Lite's are on the Hub
    assert [r["model"] for r in published][:1] == ["GR-Lite"] and published[0]["rank"] == full["GR-Lite"]["rank"] == 3
    assert {"GR-Pro", "Tianmu-MERE"}.isdisjoint(r["model"] for r in published)
    small = [r["model"] for r in board.api_board("fine", 1, "overall", False, False, "≤ 500M")["sections"][0]["rows"]]
    assert "CLIP-B/32" in small and "CLIP-L/14" in small and "SigLIP2-L/16" not in small and "DINOv3-ViT-7B" not in small
    mini = [s for s in board.api_board("fine", 1, "overall", False, False, "≤ 100M")["sections"] if s["title"].startswith(MINI)]
    assert HONEST in [r["model"] for s in mini for r in s["rows"]]  # gr-lite-mini's weights count fewer parameters
    before = board.api_board("fine", 1, "overall", False, False, ANY_SIZE, "2024-01-01")
    assert [[r["model"] for r in s["rows"]] for s in before["sections"]][1:] == [[HONEST], [EDITED_RANKING, EDITED_SCORE]]
    assert before["sections"][0]["rows"] == []  # no published model declares a training cutoff
    earlier = board.api_board("fine", 1, "overall", False, False, ANY_SIZE, "2023-06-30")  # gr-lite-mini's is 2023-12-31
    assert all(s["rows"] == [] for s in earlier["sections"])


@pytest.mark.parametrize("controls, message", [
    (("fine", 1, "overall", False, False, "tiny"), "size must be one of any size, ≤ 100M"),
    (("fine", 1, "overall", False, False, ANY_SIZE, "last spring"), "Cutoff 'last spring' is not an ISO 8601 date"),
    (("fine", 1.5, "overall"), "K must be a whole number, got '1.5'"),
    (("fine", 3, "overall"), "no result has fine at K=3; the Ks present are 1, 5, 10, 20"),
    (("recall", 1, "overall"), "metric must be one of fine, coarse, ndcg"),
    (("fine", 1, "Street"), "Unknown LookBench subset 'Street'. Did you mean 'RealStreetLook', 'AIGen-StreetLook'?"),
])
def test_bad_controls_are_messages(board, controls, message):
    assert message in board.api_board(*controls)["error"]


def _home(monkeypatch, tmp_path):
    """An empty HF_HOME and hub cache of the test's own (lookbench_home and snapshot_download read the constants)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf_home" / "hub"))


def test_without_a_copy_of_the_results_repo_the_published_rows_are_shown_and_the_page_says_why(tmp_path, monkeypatch):
    """Offline with nothing downloaded: snapshot_download's refusal, in one line, and the published table."""
    monkeypatch.delenv(board_repo.FOLDER_VARIABLE, raising=False)
    monkeypatch.setenv(board_repo.REPO_VARIABLE, "someone/results")
    _home(monkeypatch, tmp_path)
    board = Board(verdicts=Verdicts(tmp_path / "verdicts.json"))
    status = board.refresh()
    assert status.startswith("⚠️ the results repo someone/results cannot be read: ") and status.endswith(
        ": showing the published rows only.") and "\n" not in status
    answer = board.api_board("fine", 1, "overall")
    assert [s["title"].split(" — ")[0] for s in answer["sections"]] == [PUBLISHED] and answer["submissions"] == []


def test_an_earlier_download_is_what_snapshot_download_gives_offline(repo, tmp_path, monkeypatch):
    """The board downloads into board_dir() (real files, so every submission's files lie inside its folder); offline,
    huggingface_hub's snapshot_download returns that copy."""
    from lookbench.paths import board_dir

    monkeypatch.delenv(board_repo.FOLDER_VARIABLE, raising=False)
    _home(monkeypatch, tmp_path)
    shutil.copytree(repo, board_dir() / "results" / "lookbench--results")
    copy = fetch()
    assert copy.problem is None and copy.source == "the dataset repo lookbench/results"
    assert copy.folder == (board_dir() / "results" / "lookbench--results").resolve()
    assert len(submission_folders(copy.folder)) == 3


def test_a_results_folder_that_is_not_one_is_said(tmp_path):
    copy = fetch(folder=tmp_path / "missing")
    assert copy.folder is None and copy.problem == f"{tmp_path / 'missing'} is not a folder"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def served(board):
    port = _free_port()
    app = board.blocks()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    app.close()


@pytest.mark.slow
def test_the_served_board_answers_through_gradio_client(served, board):
    from gradio_client import Client

    client = Client(served, verbose=False)
    answer = client.predict("fine", 1, "overall", False, False, ANY_SIZE, "", api_name="/leaderboard")
    assert {s["model"]: s["verified"] for s in answer["submissions"]} == {
        s[0]: s[2] for s in board.submissions()}
    status, *_ = client.predict(0, api_name="/refresh")
    assert status.endswith("verified: 1 yes, 2 no.")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists() and os.environ.get("CI") != "true",  # in CI (.ci/run installs it) it must run
                    reason="Debian's chromium (/usr/bin/chromium) is not installed; .ci/run installs it")
def test_a_browser_sees_the_verified_row_and_the_tampered_ones_not(served, tmp_path):
    rows = browser_reads_the_board(served, tmp_path)
    assert rows[HONEST].startswith(f"1 {HONEST} yes 1 ")  # rank, model, verified, group
    assert rows[EDITED_SCORE].startswith(f"{EDITED_SCORE} no: overall fine_recall@1 claimed ")  # unranked
    assert rows[EDITED_RANKING].startswith(f"{EDITED_RANKING} no: RealStudioFlat fine_recall@1 claimed ")
