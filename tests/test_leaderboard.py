"""The published leaderboard shipped as data, and local results ranked only inside their comparable group."""
from __future__ import annotations

import json

import pytest

from lookbench.leaderboard import leaderboard, load_reference


def result(model: str, fine: dict, *, data="LookBench-Mini (embedded)", revision="local-abc", mode="strict", cutoff=None):
    """A results JSON in the shape `lookbench evaluate` writes (leaderboard shape plus provenance)."""
    out = {s: {"fine_recall": {"@1": v}, "coarse_recall": {"@1": v + 10}, "ndcg": {"@1": v}, "num_queries": n}
           for s, (v, n) in fine.items()}
    out["overall"] = {}
    out["provenance"] = {"dataset": {"data": data, "revision": revision, "releases": ["v20251201"]},
                         "model": {"name": model}, "mode": mode, "distractors": True, "cutoff": cutoff}
    return out


def test_published_overall_figures_are_recomputed_from_the_subsets():
    entries, source = load_reference("release_v2601")
    assert len(entries) == 16 and "benchmark.json" in source
    by_model = {e.model: e for e in entries}
    assert round(by_model["GR-Pro"].score("fine_recall", 1), 2) == 67.38
    assert round(by_model["GR-Lite"].score("fine_recall", 1), 2) == 65.71
    assert round(by_model["GR-Pro"].score("coarse_recall", 1), 2) == 87.93
    top = leaderboard(metric="fine", k=1).sections[0]
    assert [r["model"] for r in top.rows[:3]] == ["GR-Pro", "Tianmu-MERE", "GR-Lite"]
    assert top.source == source


def test_local_results_never_mix_with_the_published_table(tmp_path):
    store = tmp_path / "results"
    (store / "a").mkdir(parents=True)
    (store / "a" / "strict.json").write_text(json.dumps(result("gr-lite-mini", {"RealStudioFlat": (60.0, 100), "AIGen-Studio": (40.0, 50)})))
    (store / "a" / "leaderboard.json").write_text(json.dumps(result("gr-lite-mini", {"RealStudioFlat": (70.0, 100)}, mode="leaderboard")))
    (store / "b.json").write_text("{not json")
    (store / "c.json").write_text(json.dumps({"hello": 1}))
    board = leaderboard(results=store, metric="fine", k=1)
    titles = [s.title for s in board.sections]
    assert titles[0].startswith("LookBench (srpone/look-bench v20251201)")
    assert len(board.sections) == 3  # published + Mini strict + Mini leaderboard: same mode alone is not enough
    assert all(len(s.rows) == 1 for s in board.sections[1:])
    assert all("LookBench-Mini" in t for t in titles[1:])
    mini_strict = next(s for s in board.sections if "strict" in s.title)
    assert mini_strict.rows[0]["overall fine R@1"] == pytest.approx((60 * 100 + 40 * 50) / 150)
    assert "gr-lite-mini" not in [r["model"] for r in board.sections[0].rows]
    assert any("b.json: not valid JSON" in s for s in board.skipped)
    assert any("c.json: not a LookBench result" in s for s in board.skipped)
    text = board.render("table")
    assert "Skipped" in text and "b.json" in text


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_every_format_carries_the_published_rows(fmt):
    text = leaderboard(metric="coarse", k=5, subset="real_streetlook").render(fmt)
    assert "GR-Pro" in text and "RealStreetLook coarse R@5" in text


def test_bad_arguments_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="metric must be one of"):
        leaderboard(metric="recall")
    with pytest.raises(ValueError, match="Unknown published leaderboard 'v1'"):
        leaderboard(reference="v1")
    with pytest.raises(ValueError, match="Unknown LookBench subset"):
        leaderboard(subset="RealStret")
    path = leaderboard(reference="release_v2601").plot(tmp_path / "board.png")
    assert path.stat().st_size > 5000
