"""The leaderboard Space (lookbench.space.board, issue 36 item 4; "Hostile users, round 4"): the results repo copied,
every submission judged in the background in a child process with budgets (its verdict kept by the key of its files),
the verified row ranked beside the published ones and the tampered ones shown apart, the filters, and the app served
on loopback — through gradio_client and a real browser."""
from __future__ import annotations

import json
import shutil
import threading
import time

import pytest

from lookbench.leaderboard.load import MAX_VERDICT_BYTES, Verdict
from lookbench.schema import TEST_SUBSETS
from lookbench.space.board import app as board_app
from lookbench.space.board import repo as board_repo
from lookbench.space.board.app import Board, serve
from lookbench.space.board.facts import ANY_SIZE
from lookbench.space.board.judging import Judge, allowed_data
from lookbench.space.board.repo import Verdicts, fetch, submission_folders
from tests.helpers import clients
from tests.helpers.browser import needs_chromium
from tests.helpers.board import (ALLOWED, EDITED_RANKING, EDITED_SCORE, HONEST, browser_reads_the_board,
                                 honest_folder as _honest, judged,
                                 same_size_edit as _same_size_edit)

MINI = "LookBench-Mini (synthetic)"
PUBLISHED = "LookBench (srpone/look-bench v20251201)"


class Counting:
    """A judge that counts the submissions it is asked about and passes them to ``judge`` (default: the real one)."""

    def __init__(self, judge=None):
        self.judge, self.calls = judge or Judge(allowed=ALLOWED), []

    def __call__(self, folder, key):
        self.calls.append(folder)
        return self.judge(folder, key)


def _rows(answer: dict, title: str) -> dict[str, dict]:
    (section,) = [s for s in answer["sections"] if s["title"] == title]
    return {row["model"]: row for row in section["rows"]}


def _labelled(rows: dict, start: str) -> dict:
    (row,) = [r for label, r in rows.items() if label.startswith(start)]
    return row


@pytest.mark.slow
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
    assert row["verified"] == "consistent" and row["rank"] == 1 and row["group"] == 1
    lo, hi = row["ci95"]
    assert lo < row["overall fine R@1"] < hi
    tampered = _rows(answer, apart)
    score, ranking = _labelled(tampered, EDITED_SCORE), _labelled(tampered, EDITED_RANKING)  # by folder, not model
    assert score["verified"].startswith("no: overall fine_recall@1 claimed ")
    assert ranking["verified"].startswith("no: RealStudioFlat fine_recall@1 claimed ")
    assert all(r["rank"] is None and r["ci95"] is None for r in tampered.values())
    assert sorted(s["verified"] for s in answer["submissions"]) == sorted(["consistent", score["verified"], ranking["verified"]])
    assert board.status() == f"Results from the folder {board.state.copy.folder}: 3 submission(s) — verified: 1 consistent, 2 no."
    # nothing a visitor reads names the server's folders: reasons name files relative to the submission
    shown = json.dumps({k: answer[k] for k in ("sections", "skipped", "submissions")})
    assert str(board.state.copy.folder) not in shown and "/tmp" not in shown


@pytest.mark.slow
def test_per_subset_and_per_release(board):
    answer = board.api_board("fine", 5, "RealStreetLook", True)  # per release: the headline scores
    (ranked,) = [s for s in answer["sections"] if s["title"].startswith(MINI) and "not verified" not in s["title"]]
    row = ranked["rows"][0]
    assert row["model"] == HONEST and "RealStreetLook fine R@5" in ranked["columns"]
    releases = [c for c in ranked["columns"] if c.startswith("mini-v")]
    assert releases == ["mini-v20240601", "mini-v20250101", "mini-v20251201"]
    assert all(0 <= row[r] <= 100 for r in releases) and row["training cutoff"] == "2023-12-31"


@pytest.mark.slow
def test_a_verdict_is_kept_by_the_key_of_the_files_and_a_changed_file_is_judged_again(board, repo, tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy)
    verdicts, counted = tmp_path / "verdicts.json", Counting()
    first = Board(folder=copy, verdicts=Verdicts(verdicts), judge=counted)
    first.refresh()
    judged(first)
    assert len(counted.calls) == 3 and len(json.loads(verdicts.read_text())) == 3
    first.refresh()
    again = Board(folder=copy, verdicts=Verdicts(verdicts), judge=counted)  # a restart reads the kept verdicts
    assert "pending" not in again.refresh()
    assert len(counted.calls) == 3 and again.submissions() == first.submissions()
    honest = _honest(copy)
    result = json.loads((honest / "results.json").read_text())
    result["AIGen-Studio"]["fine_recall"]["@1"] = 12.5
    (honest / "results.json").write_text(json.dumps(result))
    assert again.refresh().endswith("verified: 2 no, 1 pending (judged in the background, one at a time; Refresh "
                                    "shows the verdicts).")
    assert judged(again).endswith("verified: 3 no.")
    assert counted.calls[3:] == [honest] and len(json.loads(verdicts.read_text())) == 3  # the old key is evicted


@pytest.mark.slow
def test_a_result_replaced_after_a_refresh_never_shows_its_new_number_as_yes(board, repo, tmp_path):
    """Keys, not paths: the size and mtime kept, a restart with the same verdicts.json still judges the new bytes."""
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy)
    verdicts = tmp_path / "verdicts.json"
    first = Board(folder=copy, verdicts=Verdicts(verdicts), allowed=ALLOWED)
    first.refresh()
    judged(first)
    claimed = _same_size_edit(_honest(copy))
    release = threading.Event()
    waiting = Counting(lambda folder, key: release.wait() and Verdict("no: x", key))  # never answers in this test
    restart = Board(folder=copy, verdicts=Verdicts(verdicts), judge=waiting)
    for shown in (first, restart):  # a refresh, a restart
        shown.refresh()
        answer = shown.api_board("fine", 1, "overall")
        yes = [r for s in answer["sections"] for r in s["rows"] if r["verified"] == "consistent"]
        assert all(r["overall fine R@1"] != claimed for r in yes) and HONEST not in [r["model"] for r in yes]
    assert "1 pending" in answer["status"] and len(waiting.calls) == 1
    assert json.loads(verdicts.read_text())  # the honest bytes' verdict stays until a refresh no longer sees them


@pytest.mark.slow
def test_verdicts_are_bounded_and_a_damaged_entry_is_dropped_alone(board, repo, tmp_path):
    """A 70 MB item id gives a verdict of at most 4 KB, and a restart reads back every kept verdict."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = tmp_path / "repo"
    shutil.copytree(repo, copy)
    path = _honest(copy) / "results.predictions" / "RealStudioFlat.parquet"
    table = pq.read_table(path)
    ids = table["item_id"].to_pylist()
    ids[0] = "x" * 70_000_000
    pq.write_table(table.set_column(table.schema.get_field_index("item_id"), "item_id", pa.array(ids)), path,
                   compression="zstd")
    verdicts = tmp_path / "verdicts.json"
    hostile = Board(folder=copy, verdicts=Verdicts(verdicts), allowed=ALLOWED)
    hostile.refresh()
    judged(hostile)
    kept = json.loads(verdicts.read_text())
    assert len(kept) == 3 and all(len(json.dumps(v)) <= MAX_VERDICT_BYTES for v in kept.values())
    (long,) = [v for v in kept.values() if "item_id" in v["text"]]
    assert long["text"].startswith("no: ") and len(long["text"]) <= 300
    assert Verdicts(verdicts).known.keys() == kept.keys()  # after a restart, every one is still there
    damaged = dict(kept)
    first = next(iter(damaged))
    damaged[first] = {"text": "consistent", "key": first}  # "consistent" without the placement verify recomputed
    verdicts.write_text(json.dumps(damaged))
    assert Verdicts(verdicts).known.keys() == kept.keys() - {first}


@pytest.mark.slow
def test_the_board_serves_at_once_and_judges_in_the_background(repo, tmp_path):
    """One slow submission never keeps the board from serving: the first /leaderboard answer comes within 10 s of
    launch, every submission pending, while the judge has not answered."""
    release = threading.Event()
    slow = Counting(lambda folder, key: release.wait(300) and Verdict("no: judged", key))
    board = Board(folder=repo, verdicts=Verdicts(tmp_path / "verdicts.json"), judge=slow)
    port = clients.free_port()
    start = time.monotonic()
    demo = serve("127.0.0.1", port, board=board, prevent_thread_lock=True, quiet=True)
    try:
        answer = clients.gradio(f"http://127.0.0.1:{port}/").predict(
            "fine", 1, "overall", False, False, ANY_SIZE, "", api_name="/leaderboard")
        assert time.monotonic() - start < 10
        assert "3 pending (judged in the background" in answer["status"]
        assert {s["verified"] for s in answer["submissions"]} == {"pending"} and len(slow.calls) <= 1
        release.set()
        assert judged(board, 60).endswith("verified: 3 no.")
    finally:
        release.set()
        demo.close()


@pytest.mark.slow
def test_a_submission_over_its_budget_is_not_checked_and_the_verdict_is_kept(board, repo, tmp_path):
    honest = _honest(repo)
    from lookbench.results.folder import snapshot

    key = snapshot(honest)[0]
    slow = Judge(time_s=0.3, allowed=ALLOWED)(honest, key)
    assert slow.text == "not checked: over budget (time: more than 0.3 s)" and slow.key == key
    small = Judge(memory_bytes=200 * 2**20, allowed=ALLOWED)(honest, key)
    assert small.text == "not checked: over budget (memory: more than 200 MB)" and small.key == key
    verdicts = Verdicts(tmp_path / "verdicts.json")
    assert verdicts.keep(slow) and Verdicts(tmp_path / "verdicts.json").get(key) == slow


@pytest.mark.slow
def test_only_the_cards_data_is_loaded_and_nothing_else_is_asked_of_the_hub(board, repo, tmp_path, monkeypatch):
    """A submission naming another Hub dataset, or a folder of the server, is "not checked: unknown data", and no
    request for it reaches the (loopback) Hub; a dataset the card names is asked for."""
    from tests.helpers.fake_hub import FakeHub

    assert allowed_data(board_app.CARD) == ALLOWED
    copy = tmp_path / "repo"
    shutil.copytree(repo, copy)
    named = {"someone/edited-score": "someone/other-data", "someone/edited-ranking": str(tmp_path),
             "lookbench/gr-lite-mini": "lookbench/lookbench"}
    for folder in submission_folders(copy):
        data = named["/".join(folder.relative_to(copy).parts[1:3])]
        result = json.loads((folder / "results.json").read_text())
        result["provenance"]["dataset"].update(data=data, commit="a" * 40)
        (folder / "results.json").write_text(json.dumps(result))
    with FakeHub() as hub:
        for name, value in (("HF_ENDPOINT", hub.url), ("HF_HUB_OFFLINE", "0"), ("HF_DATASETS_OFFLINE", "0")):
            monkeypatch.setenv(name, value)  # the judging child inherits them
        foreign = Board(folder=copy, verdicts=Verdicts(tmp_path / "verdicts.json"))
        foreign.refresh()
        judged(foreign)
    texts = {"/".join(s[1].split("/")[1:3]): s[2] for s in foreign.submissions()}
    assert texts["someone/edited-score"].startswith("not checked: unknown data 'someone/other-data': the board judges "
                                                     "only lookbench/lookbench, srpone/look-bench")
    assert texts["someone/edited-ranking"].startswith("not checked: unknown data '/") and texts[
        "someone/edited-ranking"].endswith(": the board judges only its own dataset repos")
    assert texts["lookbench/gr-lite-mini"].startswith("not checked: its data cannot be loaded here")
    asked = [r["path"] for r in hub.requests if r["path"] != "/"]  # "/": hub.hub_reachable's probe, no data named
    assert asked and not [p for p in asked if "other-data" in p] and all("lookbench/lookbench" in p for p in asked)


@pytest.mark.slow
def test_a_render_reads_no_file_and_ranks_once_per_set_of_controls(board, monkeypatch):
    """Rendering reads the entries load_store gave at the last refresh or verdict; the ranked board is kept per set
    of controls."""
    import lookbench.results.folder as folder

    first = board.board("fine", 1, "overall")  # ranked here or by an earlier test of this worker
    read = []
    monkeypatch.setattr(folder, "snapshot", lambda *a: read.append(a) or pytest.fail("a render read a submission"))
    monkeypatch.setattr(board_app, "leaderboard", lambda *a, **k: pytest.fail("ranked again"))
    assert board.board("fine", 1, "overall") is first and board.api_board("fine", 1, "overall")["sections"]
    assert not read


@pytest.mark.slow
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
    kept = [[r["model"] for r in s["rows"]] for s in before["sections"]][1:]
    assert kept[0] == [HONEST] and [m.startswith(p) for m, p in zip(kept[1], (EDITED_RANKING, EDITED_SCORE))] == [True] * 2
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
    (("fine", float("inf"), "overall"), "K must be a whole number, got 'inf'"),
    (("fine", 1, "overall", False, False, ["x"]), "size must be one of any size, ≤ 100M"),
    (("fine", 1, "overall", False, False, ANY_SIZE, 5), "the training cutoff must be a date such as 2024-06-01, got '5'"),
])
@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.fixture(scope="module")
def served(board):
    port = clients.free_port()
    app = board.blocks()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    app.close()


@pytest.mark.slow
def test_the_served_board_answers_through_gradio_client(served, board):
    client = clients.gradio(served)
    answer = client.predict("fine", 1, "overall", False, False, ANY_SIZE, "", api_name="/leaderboard")
    assert {s["model"]: s["verified"] for s in answer["submissions"]} == {
        s[0]: s[2] for s in board.submissions()}
    status, *_ = client.predict(0, api_name="/refresh")
    assert status.endswith("verified: 1 consistent, 2 no.")


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_a_browser_sees_the_verified_row_and_the_tampered_ones_not(served, tmp_path):
    rows = browser_reads_the_board(served, tmp_path)
    assert rows[HONEST].startswith(f"1 {HONEST} consistent 1 ")  # rank, model, verified, group
    assert rows[EDITED_SCORE].startswith(EDITED_SCORE) and " no: overall fine_recall@1 claimed " in rows[EDITED_SCORE]
    assert rows[EDITED_RANKING].startswith(EDITED_RANKING)  # unranked, labelled by its folder
    assert " no: RealStudioFlat fine_recall@1 claimed " in rows[EDITED_RANKING]


@pytest.mark.slow
def test_the_served_board_ranks_every_scope_before_a_visitor_asks(repo, tmp_path, monkeypatch):
    """serve() sets warm_views: after a refresh a background thread ranks each subset's view and each metric and K
    overall, so a visitor's first request for any of them is read from the cache, never ranked in the request."""
    board = Board(folder=repo, verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=ALLOWED)
    board.warm_views = True
    board.refresh()
    judged(board)
    assert board.warmed(600)
    board.refresh()  # the verdicts known: the views ranked again, in the background
    assert board.warmed(600)
    monkeypatch.setattr(board_app, "leaderboard", lambda *a, **k: pytest.fail("ranked in a request"))
    for view in [("fine", 1, s) for s in ("overall", *TEST_SUBSETS)] + [("ndcg", 5, "overall"), ("coarse", 20, "overall")]:
        assert board.api_board(*view)["sections"]


@pytest.mark.slow
def test_a_request_never_waits_for_a_slow_refresh(repo, tmp_path, monkeypatch):
    """A refresh reading a huge copy holds the load; a request waits LOAD_WAIT seconds at most, then answers from the
    previous reading (here: none yet, the published rows)."""
    release, real = threading.Event(), board_app.load_store

    def slow(*args, **kwargs):
        release.wait(120)
        return real(*args, **kwargs)

    monkeypatch.setattr(board_app, "load_store", slow)
    board = Board(folder=repo, verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=ALLOWED)
    refreshing = threading.Thread(target=board.refresh, daemon=True)
    refreshing.start()
    time.sleep(0.5)
    started = time.monotonic()
    answer = board.api_board("fine", 1, "overall")
    waited = time.monotonic() - started
    release.set()
    refreshing.join(120)
    assert waited < board_app.LOAD_WAIT * 3 and answer["sections"][0]["title"].startswith(PUBLISHED)
    assert answer["submissions"] == [] and not refreshing.is_alive()
    assert len(board.api_board("fine", 1, "overall")["submissions"]) == 3  # the refresh's reading, once it is done


@pytest.mark.slow
def test_a_visitor_cannot_make_the_board_reread_its_copy_again_and_again(repo, tmp_path, monkeypatch):
    """/refresh is open to anyone and a refresh re-reads and re-hashes every submission: one per REFRESH_EVERY."""
    board = Board(folder=repo, verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=ALLOWED)
    assert board.refresh_from_page().startswith("Results from the folder ")
    monkeypatch.setattr(board_app, "fetch", lambda *a: pytest.fail("the copy was read again"))
    assert board.refresh_from_page().startswith("Results from the folder ")  # the status, nothing read
    monkeypatch.setattr(board, "_refreshed_at", time.monotonic() - board_app.REFRESH_EVERY)
    with pytest.raises(pytest.fail.Exception, match="the copy was read again"):
        board.refresh_from_page()
