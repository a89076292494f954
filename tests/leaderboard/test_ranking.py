"""Local results ranked only inside their comparable group, beside the published leaderboard: rank groups, intervals,
the score after a model's cutoff and the scores per release."""
from __future__ import annotations

import json

import pytest

from lookbench.leaderboard.load import load_reference
from lookbench.leaderboard.ranking import leaderboard

from tests.helpers.leaderboard import FOUR, result, run_cli
from tests.helpers.results import synthetic


def test_the_published_table_is_ranked_with_its_source():
    _, source = load_reference("release_v2601")
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
    assert "b.json" not in board.render("table")  # skipped files are named on stderr by the CLI, not in the table


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="metric must be one of"):
        leaderboard(metric="recall")
    with pytest.raises(ValueError, match="Unknown published leaderboard 'v1'"):
        leaderboard(reference="v1")
    with pytest.raises(ValueError, match="Unknown LookBench subset"):
        leaderboard(subset="RealStret")


def test_a_result_on_the_published_snapshot_is_ranked_below_the_published_table_until_verified(tmp_path):
    """Issue 36 item 3: a local result on the published snapshot shares its section's group, but the published
    ranking holds only published and verified rows; a result that was not checked is ranked in the block below."""
    store = tmp_path / "results"
    store.mkdir()
    snapshot = dict(name="LookBench", revision="local-def", key="srpone/look-bench@v20251201", mode="leaderboard")
    (store / "mine.json").write_text(json.dumps(result("my-model", FOUR, **snapshot)))
    (store / "mine-strict.json").write_text(json.dumps(result("my-model", FOUR, **dict(snapshot, mode="strict"))))
    (store / "mini.json").write_text(json.dumps(result("my-model", FOUR, mode="leaderboard")))
    board = leaderboard(results=store)
    published, unchecked = board.sections[:2]
    assert len(published.rows) == 16 and {r["verified"] for r in published.rows} == {"published"}
    assert unchecked.title == published.title + " — not checked (ranked among themselves, below the verified and " \
                                                "published rows)"
    assert unchecked.source == "local results store"
    (mine,) = unchecked.rows
    assert mine["overall fine R@1"] == pytest.approx((70 * 1011 + 60 * 193 + 50 * 981 + 40 * 160) / 2345)
    assert (mine["model"], mine["rank"], mine["group"], mine["verified"]) == ("my-model", 1, 1, "not checked")
    others = board.sections[2:]
    assert len(others) == 2 and all(len(s.rows) == 1 for s in others)
    assert any(s.title.startswith("LookBench-Mini v20251201, revision local-abc — leaderboard mode") for s in others)
    assert any(s.title.startswith("LookBench v20251201 — strict mode") for s in others)


def test_a_partial_result_has_no_overall_beside_complete_ones(tmp_path):
    store = tmp_path / "results"
    store.mkdir()
    (store / "all.json").write_text(json.dumps(result("all", FOUR)))
    (store / "one.json").write_text(json.dumps(result("one", {"RealStudioFlat": (90.0, 1011)})))
    rows = {r["model"]: r for r in leaderboard(results=store, reference="none").sections[0].rows}
    assert rows["one"]["overall fine R@1"] is None and rows["one"]["RealStudioFlat"] == 90.0
    assert [rows["all"]["rank"], rows["one"]["rank"]] == [1, 2]


def test_the_score_after_the_models_cutoff_stands_beside_the_full_one(tmp_path):
    store = tmp_path / "results"
    store.mkdir()
    (store / "full.json").write_text(json.dumps(result("m", FOUR, training_cutoff="2025-06-30")))
    after = {s: (v - 20, n // 4) for s, (v, n) in FOUR.items()}
    (store / "after.json").write_text(json.dumps(result("m", after, cutoff="2025-06-30", training_cutoff="2025-06-30")))
    (store / "other.json").write_text(json.dumps(result("no-date", FOUR)))
    board = leaderboard(results=store, reference="none")
    full = next(s for s in board.sections if "queries after" not in s.title)
    assert full.columns[:6] == ["rank", "model", "group", "overall fine R@1", "ci95", "after model's cutoff"]
    rows = {r["model"]: r for r in full.rows}
    weights = [n // 4 for _, n in FOUR.values()]
    expected = sum((v - 20) * w for (v, _), w in zip(FOUR.values(), weights)) / sum(weights)
    assert rows["m"]["after model's cutoff"] == pytest.approx(expected) and rows["no-date"]["after model's cutoff"] is None
    assert any("queries after 2025-06-30" in s.title for s in board.sections)  # and its own comparable section
    assert list(full.frame().columns) == [*full.columns[:4], "ci95_lo", "ci95_hi", *full.columns[5:]]


def test_published_rows_carry_an_approximate_wilson_interval_and_the_top_three_share_a_group():
    rows = {r["model"]: r for r in leaderboard(metric="fine", k=1).sections[0].rows}
    assert rows["GR-Pro"]["ci95"] == pytest.approx([65.5, 69.3], abs=0.1)
    assert rows["GR-Pro"]["ci_method"] == "Wilson (approximate)"
    # 67.38, 66.27 and 65.71 on 2,345 queries: the data does not order them
    assert rows["GR-Pro"]["group"] == rows["Tianmu-MERE"]["group"] == rows["GR-Lite"]["group"] == 1
    assert rows["Marqo-fashionCLIP"]["group"] == 2  # its interval ends below GR-Pro's
    groups = [r["group"] for r in leaderboard(metric="fine", k=1).sections[0].rows]
    assert groups == sorted(groups) and groups[-1] > 3


def local_store(tmp_path, results):
    store = tmp_path / "results"
    store.mkdir(parents=True)
    for name, data in results.items():
        data["provenance"].setdefault("model", {})["name"] = name
        data["provenance"]["dataset"].update(name="LookBench-Mini", releases=["v20251201"])
        (store / f"{name}.json").write_text(json.dumps(data))
    return store

SIZES = {"RealStudioFlat": 300, "RealStreetLook": 240}


def test_local_rows_get_intervals_from_their_outcomes_and_paired_groups(tmp_path):
    strong, weak, twin = synthetic(1, SIZES, hit_rate=0.8), synthetic(2, SIZES, hit_rate=0.3), synthetic(1, SIZES, hit_rate=0.8)
    store = local_store(tmp_path, {"strong": strong, "weak": weak, "twin": twin})
    section = leaderboard(results=store, reference="none").sections[0]
    rows = {r["model"]: r for r in section.rows}
    from lookbench.results import stats
    from lookbench.results.outcomes import Outcomes

    outcomes = {s: Outcomes.from_json(strong[s]["per_query"], s) for s in SIZES}
    lo, hi = stats.intervals(outcomes)["overall"]["fine_recall@1"]
    assert rows["strong"]["ci95"] == [round(lo, 2), round(hi, 2)] and rows["strong"]["ci_method"] == "Wilson (effective n)"
    ndcg = {r["model"]: r for r in leaderboard(results=store, reference="none", metric="ndcg", k=5).sections[0].rows}
    assert ndcg["strong"]["ci_method"] == "bootstrap"
    # the same per-query outcomes cannot be told apart (McNemar p = 1); a far weaker model can
    assert rows["strong"]["group"] == rows["twin"]["group"] == 1 and rows["weak"]["group"] == 2
    # a result written before per-query outcomes were kept falls back to the approximate interval
    for s in SIZES:
        del twin[s]["per_query"]
    store = local_store(tmp_path / "old", {"strong": strong, "twin": twin})
    rows = {r["model"]: r for r in leaderboard(results=store, reference="none").sections[0].rows}
    assert rows["twin"]["ci_method"] == "Wilson (approximate)" and rows["twin"]["group"] == 1


def with_releases(res: dict, per_release: dict) -> dict:
    """Add what the engine writes per subset on each release's queries: ``per_release`` blocks (leaderboard shape)."""
    for subset, releases in per_release.items():
        res[subset]["per_release"] = {r: {"fine_recall": {"@1": v}, "num_queries": n} for r, (v, n) in releases.items()}
    return res


def test_by_release_shows_each_models_score_per_release_beside_its_cutoff(tmp_path, capsys, monkeypatch):
    from lookbench.cli import main

    store = tmp_path / "results"
    (store / "a").mkdir(parents=True)
    two = {"RealStudioFlat": (64.0, 100), "AIGen-Studio": (44.0, 50)}
    a = with_releases(result("model-a", two, training_cutoff="2025-06-30"), {
        "RealStudioFlat": {"v20251201": (80.0, 60), "v20260301": (40.0, 40)},
        "AIGen-Studio": {"v20251201": (60.0, 30), "v20260301": (20.0, 20)}})
    b = with_releases(result("model-b", two), {"RealStudioFlat": {"v20251201": (70.0, 60)}, "AIGen-Studio": {"v20251201": (50.0, 30)}})
    (store / "a" / "strict.json").write_text(json.dumps(a))
    (store / "b.json").write_text(json.dumps(b))
    section = leaderboard(results=store, reference="none", by_release=True).sections[0]
    assert section.releases == ["v20251201", "v20260301"]
    assert section.columns[:8] == ["rank", "model", "group", "overall fine R@1", "ci95", "training cutoff", "v20251201",
                                   "v20260301"]
    rows = {r["model"]: r for r in section.rows}
    assert rows["model-a"]["v20251201"] == pytest.approx((80 * 60 + 60 * 30) / 90)
    assert rows["model-a"]["v20260301"] == pytest.approx((40 * 40 + 20 * 20) / 60)
    assert rows["model-a"]["training cutoff"] == "2025-06-30" and rows["model-b"]["training cutoff"] is None
    assert rows["model-b"]["v20251201"] == pytest.approx((70 * 60 + 50 * 30) / 90) and rows["model-b"]["v20260301"] is None
    one = leaderboard(results=store, reference="none", by_release=True, subset="AIGen-Studio").sections[0]
    assert {r["model"]: r["v20260301"] for r in one.rows} == {"model-a": 20.0, "model-b": None}
    assert "v20251201" not in leaderboard(results=store, reference="none").sections[0].columns  # only when asked

    monkeypatch.setenv("COLUMNS", "300")  # every column; tests/test_widths.py checks the narrow terminal
    assert main(["leaderboard", "--results", str(store), "--reference", "none", "--by-release", "--plot",
                 str(tmp_path / "releases.png")]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("rank"))
    assert header.index("overall fine R@1") < header.index("training cutoff") < header.index("v20251201") < header.index("v20260301")
    assert (tmp_path / "releases.png").stat().st_size > 1000


def test_an_unknown_k_is_an_error_listing_the_ks_present(tmp_path, capsys):
    """Case 8: --k 3 used to print an all-dash table ranked by name."""
    code, out, err = run_cli(capsys, "--k", "3")
    assert code == 2 and out == ""
    assert "no result has fine at K=3; the Ks present are 1, 5, 10, 20" in err


def hits_result(name: str, hits, prefix: str) -> dict:
    """A one-subset result as the engine writes it whose queries (ids ``prefix-i``) hit at rank 1 where ``hits``."""
    import numpy as np

    from lookbench.results.result import EvaluationResult
    from lookbench.metric.fine_recall.judging import summarise
    from lookbench.results.outcomes import Outcomes

    n, first = len(hits), np.where(hits, 0.0, np.inf)
    graded = np.where(hits, 1.0, 0.0)[:, None]
    outcomes = Outcomes((1,), [f"{prefix}-{i}" for i in range(n)], [None] * n, ["v20250101"] * n, first, first.copy(),
                        graded, graded)
    scores = summarise({"k": [1], "first_fine": first, "first_coarse": first, "ndcg": graded, "ap": graded,
                        "category": ["top"] * n, "outfit_id": [""] * n})
    provenance = {"model": {"name": name}, "dataset": {"key": "local-x", "revision": "local-x"}, "mode": "strict",
                  "distractors": True, "cutoff": None}
    return EvaluationResult({"RealStudioFlat": scores}, dict(scores), provenance,
                            {"RealStudioFlat": outcomes}).to_dict()


def test_a_perfect_row_is_not_told_apart_from_a_near_one_by_a_point_interval(tmp_path):
    """70 of 70 had the interval [100, 100], so a row at 66 of 70 on other queries (told apart by intervals, having
    no query in common; its bootstrap interval [88.57, 98.57]) opened a group of its own; [94.80, 100] overlaps it."""
    perfect = hits_result("perfect", [True] * 70, "a")
    near = hits_result("near", [True] * 66 + [False] * 4, "b")
    store = local_store(tmp_path, {"perfect": json.loads(json.dumps(perfect)), "near": json.loads(json.dumps(near))})
    rows = {r["model"]: r for r in leaderboard(results=store, reference="none").sections[0].rows}
    assert rows["perfect"]["ci95"] == [94.8, 100.0] and rows["perfect"]["rank"] == 1
    assert rows["near"]["ci95"][1] > 94.8 and rows["perfect"]["group"] == rows["near"]["group"] == 1


def test_unverified_rows_are_never_ranked_above_verified_ones(submissions):
    """A group's rows are ranked only within their standing: the verified submission in the group's own section; the
    result that was not checked in a block of its own below it, ranked among its kind; the three that failed a check
    last, unranked, with the scores they claim and no interval or rank group."""
    board = leaderboard(results=submissions, reference="none")
    other_mode, verified, unchecked, failed = board.sections  # the stored run was judged in both modes
    assert " leaderboard mode" in other_mode.title and [r["model"] for r in other_mode.rows] == ["raw-pixels"]
    label = verified.title
    assert unchecked.title == f"{label} — not checked (ranked among themselves, below the verified and published rows)"
    assert failed.title == f"{label} — not verified (a check failed: unranked)"
    assert [(r["rank"], r["model"], r["group"], r["verified"]) for r in verified.rows] == [
        (1, "someone/raw-pixels@aaaaaaaaaaaa", 1, "consistent")]
    assert [(r["rank"], r["model"], r["group"], r["verified"]) for r in unchecked.rows] == [
        (1, "raw-pixels", 1, "not checked")]
    assert [(r["rank"], r["model"], r["group"], r["RealStudioFlat"], r["ci95"]) for r in failed.rows] == [
        (None, "swapped/raw-pixels@aaaaaaaaaaaa", None, 100.0, None),
        (None, "unreadable/raw-pixels@aaaaaaaaaaaa", None, 100.0, None),
        (None, "edited/raw-pixels@aaaaaaaaaaaa", None, 99.0, None)]  # the score it claims, not its outcomes
    assert all(r["verified"].startswith("no: ") for r in failed.rows)
    assert verified.columns[-3:] == ["queries", "ci_method", "verified"] and verified.rows[0]["ci95"][1] == 100.0


def test_a_group_without_verified_rows_is_ranked_as_one_block(tmp_path):
    """A plain local store: its rows are all "not checked", one section with the group's own title, ranked."""
    store = tmp_path / "results"
    store.mkdir()
    for model, score in (("a", 60.0), ("b", 40.0)):
        (store / f"{model}.json").write_text(json.dumps(result(model, {"RealStudioFlat": (score, 100)})))
    (section,) = leaderboard(results=store, reference="none").sections
    assert " — not " not in section.title
    assert [(r["rank"], r["model"], r["verified"]) for r in section.rows] == [(1, "a", "not checked"),
                                                                             (2, "b", "not checked")]


def test_a_local_run_beside_its_published_row_changes_no_rank_group(tmp_path):
    """A local run of a published model stands unranked below that model's published row; it was also counted in
    the rank groups, so a run scoring 99 opened group 1 and pushed every published row a group down."""
    store = tmp_path / "results"
    store.mkdir()
    run = result("clip-b32", FOUR, name="LookBench", revision="local-1", key="srpone/look-bench@v20251201",
                 mode="leaderboard")
    run = json.loads(json.dumps(run).replace("70.0", "99.0"))
    run["provenance"]["model"]["published_name"] = "CLIP-B/32"
    (store / "clip.json").write_text(json.dumps(run))
    alone = {r["model"]: r["group"] for r in leaderboard().sections[0].rows}
    rows = leaderboard(results=store).sections[0].rows
    (local,) = [r for r in rows if r["model"] == "CLIP-B/32 (local run)"]
    assert (local["rank"], local["group"], local["verified"]) == (None, None, "not checked")
    assert rows[rows.index(local) - 1]["model"] == "CLIP-B/32"
    assert {r["model"]: r["group"] for r in rows if r is not local} == alone


def test_text_query_results_are_a_section_of_their_own(tmp_path):
    """Issue 39 item 2: a text-query result is never ranked among image-query ones of the same data, nor a short-form
    one among long-form ones; each section's title names its query kind."""
    store = tmp_path / "results"
    store.mkdir()
    for name, kind in (("image", None), ("short", "text-short"), ("long", "text-long")):
        data = result(f"model-{name}", FOUR)
        if kind:
            data["provenance"]["queries"] = kind
        (store / f"{name}.json").write_text(json.dumps(data))
    board = leaderboard(results=store, reference="none")
    titles = {s.title: [r["model"] for r in s.rows] for s in board.sections}
    assert len(titles) == 3
    assert [m for t, m in titles.items() if "text queries" not in t] == [["model-image"]]
    assert [m for t, m in titles.items() if "text queries (short form), strict mode" in t] == [["model-short"]]
    assert [m for t, m in titles.items() if "text queries (long form), strict mode" in t] == [["model-long"]]
