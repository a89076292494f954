"""Issue 55 item 3 on the leaderboard Space: at each refresh it reads the Hub's own leaderboard of the dataset (the
loopback fake) and shows its rows beside the results repo's, each as `not checked: Hub community result`; a failed
read shows none and the status line says why."""
from __future__ import annotations

import json

import huggingface_hub

from lookbench.results.trust import HUB_COMMUNITY
from lookbench.space.board.app import Board
from lookbench.space.board.repo import Verdicts
from tests.helpers.fake_results_hub import FakeResultsHub
from tests.helpers.leaderboard import eval_results, scored

DATASET = "someone/lookbench"


def _board(tmp_path) -> Board:
    (tmp_path / "repo/submissions").mkdir(parents=True)
    (tmp_path / "repo/submissions/a.json").write_text(json.dumps(scored("local-model", 50.0)))
    return Board(folder=tmp_path / "repo", verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=frozenset(),
                 hub=DATASET)


def test_the_board_shows_the_hubs_rows_beside_as_not_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with FakeResultsHub() as hub:
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        hub.serve_eval_results("other/model-b", eval_results(scored("other/model-b", 61.5), DATASET))
        board = _board(tmp_path)
        board.refresh()
    rows = {r["model"]: r for s in board.api_board("fine", 1, "overall")["sections"] for r in s["rows"]}
    assert rows["other/model-b (Hub)"]["verified"] == HUB_COMMUNITY and rows["other/model-b (Hub)"]["rank"] is not None
    assert rows["local-model"]["verified"] == "not checked"
    assert "not read" not in board.status()


def test_a_failed_read_shows_no_hub_row_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with FakeResultsHub(refuse=500) as hub:
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub.url)
        board = _board(tmp_path)
        board.refresh()
    rows = [r["model"] for s in board.api_board("fine", 1, "overall")["sections"] for r in s["rows"]]
    assert "local-model" in rows and not [m for m in rows if "(Hub" in m]
    assert f"The Hub's own leaderboard was not read: cannot read the Hub's leaderboard of {DATASET}" in board.status()
