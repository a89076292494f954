"""The boards' zero-shot filter (issue 56 item 1): the leaderboard Space's checkbox (``Board.board`` and ``/leaderboard``)
and the demo's Leaderboard tab keep only the rows whose zero-shot column says yes, ranks those of the full table."""
from __future__ import annotations

import types

from lookbench.leaderboard.render import ZERO_SHOT_COLUMN


def test_the_board_filters_zero_shot_rows_and_the_trusted_view_can_too(tmp_path):
    from lookbench.space.board.app import Board
    from lookbench.space.board.repo import Verdicts

    board = Board(folder=tmp_path, verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=set())
    full = board.board("fine", 1, "overall").sections[0]
    kept = board.board("fine", 1, "overall", zero_shot=True).sections[0]
    assert {r["model"] for r in kept.rows} == {r["model"] for r in full.rows if r[ZERO_SHOT_COLUMN] == "yes"}
    assert "CLIP-B/32" in {r["model"] for r in kept.rows} and "GR-Pro" not in {r["model"] for r in kept.rows}
    assert [r["rank"] for r in kept.rows] == [r["rank"] for r in full.rows if r[ZERO_SHOT_COLUMN] == "yes"]
    api = board.api_board("fine", 1, "overall", zero_shot=True)
    assert [r["model"] for r in api["sections"][0]["rows"]] == [r["model"] for r in kept.rows]
    assert board.board("fine", 1, "overall", trusted=True, zero_shot=True).sections == []  # published: not trusted


def test_the_demos_leaderboard_tab_filters_them_too():
    from lookbench.space.app import SpaceApp

    app = types.SimpleNamespace(results=None)  # the tab reads only the results store it was given
    full = SpaceApp.board(app, "fine", 1, "overall").sections[0]
    kept = SpaceApp.board(app, "fine", 1, "overall", True).sections[0]
    assert [r["model"] for r in kept.rows] == [r["model"] for r in full.rows if r[ZERO_SHOT_COLUMN] == "yes"]
