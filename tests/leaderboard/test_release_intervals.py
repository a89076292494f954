"""The by-release plot's error bars are the result's design-corrected per-release intervals (issue 52 item 4) — the
``per_release[<release>]["ci95"]`` the engine stores, overall and per subset —, drawn again from the row's checked
outcomes, so an interval edited in the file changes no bar; none without outcomes."""
from __future__ import annotations

import json

import pytest

from lookbench.leaderboard.ranking import leaderboard


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """`lookbench evaluate` of raw-pixels on the embedded Mini (three releases): a folder holding its strict-mode
    results.json alone, and that JSON."""
    from lookbench.cli import main

    work = tmp_path_factory.mktemp("by-release")
    assert main(["evaluate", "--model", "raw-pixels", "--output", str(work / "run"), "--no-cache", "--no-save",
                 "--quiet"]) == 0
    (work / "strict").mkdir()
    stored = (work / "run" / "results.json").read_text()
    (work / "strict" / "results.json").write_text(stored)
    return work / "strict", json.loads(stored)


def _bars(section) -> dict:
    """The plotted error bars of the section's one row: release -> (lo, hi), for the releases it has a point on."""
    from lookbench.leaderboard.figures import figure

    fig = figure([section])
    fig.canvas.draw()
    (ax,) = fig.axes
    (errorbar,) = ax.containers
    _, _, (bars,) = errorbar.lines
    points = [r for r in section.releases if section.rows[0][r] is not None]
    ends = [(s[0][1], s[1][1]) for s in sorted(bars.get_segments(), key=lambda s: s[0][0])]
    return {r: pytest.approx(e, abs=1e-9) for r, e in zip(points, ends, strict=True)}


@pytest.mark.parametrize("metric, k, key", [("fine", 1, "fine_recall"), ("ndcg", 5, "ndcg")])
def test_the_plotted_bars_are_the_stored_per_release_intervals(evaluated, metric, k, key):
    folder, stored = evaluated
    releases = sorted(stored["overall"]["per_release"])
    assert len(releases) >= 2
    (section,) = leaderboard(results=folder, reference="none", metric=metric, k=k, by_release=True).sections
    assert section.releases == releases
    assert _bars(section) == {r: tuple(stored["overall"]["per_release"][r]["ci95"][key][f"@{k}"]) for r in releases}
    subset = next(s for s in section.columns if s in stored and len(stored[s].get("per_release", {})) >= 2)
    (one,) = leaderboard(results=folder, reference="none", metric=metric, k=k, subset=subset, by_release=True).sections
    blocks = stored[subset]["per_release"]
    assert _bars(one) == {r: tuple(blocks[r]["ci95"][key][f"@{k}"]) for r in one.releases if r in blocks}
    assert one.rows[0]["release_ci95"] == {r: blocks[r]["ci95"][key][f"@{k}"] if r in blocks else None
                                           for r in one.releases}


def test_no_interval_is_invented(evaluated, tmp_path):
    """A published row (no scores per release) and a result that keeps no per-query outcomes draw no bar; an overall
    over a choice of subsets is drawn from those subsets' outcomes, as the engine would have stored it."""
    from lookbench.leaderboard.load import entry_from_result
    from lookbench.leaderboard.ranking import release_interval
    from lookbench.results.outcomes import Outcomes
    from lookbench.results.per_release import per_release

    folder, stored = evaluated
    (section,) = leaderboard(results=folder, reference="none", by_release=True).sections
    entry = entry_from_result(stored, "run")
    release = section.releases[0]
    own = [s for s in entry.subsets if release in entry.subsets[s].get("per_release", {})]
    assert len(own) > 1
    assert release_interval(entry, own, release, "fine_recall", 1, None) == stored["overall"]["per_release"][release][
        "ci95"]["fine_recall"]["@1"]
    alone = per_release({own[0]: Outcomes.from_json(stored[own[0]]["per_query"], own[0])})[1]["overall"][release]
    assert release_interval(entry, own[:1], release, "fine_recall", 1, None) == [
        round(v, 4) for v in alone["fine_recall@1"]]
    published = leaderboard(by_release=True).sections[0]
    assert published.releases == [] and all("release_ci95" not in r for r in published.rows)

    older = json.loads(json.dumps(stored))
    for block in older.values():
        if isinstance(block, dict):
            block.pop("per_query", None)
    store = tmp_path / "older"
    store.mkdir()
    (store / "results.json").write_text(json.dumps(older))
    (section,) = leaderboard(results=store, reference="none", by_release=True).sections
    row = section.rows[0]
    assert all(row[r] is not None for r in section.releases) and set(row["release_ci95"].values()) == {None}


@pytest.mark.parametrize("edited", [[49.0, 51.0], [90.0, 10.0], "10-20"])
def test_an_interval_edited_in_the_file_changes_no_bar(evaluated, tmp_path, edited):
    """What the file says of its per-release intervals is never drawn: the bars are the outcomes' (narrower claimed
    bars would show more certainty than was checked)."""
    folder, stored = evaluated
    changed = json.loads(json.dumps(stored))
    release = sorted(changed["overall"]["per_release"])[0]
    changed["overall"]["per_release"][release]["ci95"]["fine_recall"]["@1"] = edited
    store = tmp_path / "store"
    store.mkdir()
    (store / "results.json").write_text(json.dumps(changed))
    (section,) = leaderboard(results=store, reference="none", by_release=True).sections
    assert section.rows[0]["release_ci95"][release] == stored["overall"]["per_release"][release]["ci95"]["fine_recall"][
        "@1"]
