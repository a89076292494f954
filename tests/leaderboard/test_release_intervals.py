"""The by-release plot's error bars are the intervals a result stored per release (issue 52 item 4): the design-
corrected ``per_release[<release>]["ci95"]`` of results.json, overall and per subset; none where none was stored,
and a stored interval that is no interval is refused naming the field."""
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
    """An overall over other subsets than the result's own and a published row (no scores per release) get none; a
    result written before the intervals were stored draws its points without bars."""
    from lookbench.leaderboard.load import entry_from_result

    folder, stored = evaluated
    (section,) = leaderboard(results=folder, reference="none", by_release=True).sections
    entry = entry_from_result(stored, "run")
    release = section.releases[0]
    own = [s for s in entry.subsets if release in entry.subsets[s].get("per_release", {})]
    assert entry.release_interval(release, "fine_recall", 1, over=own) == stored["overall"]["per_release"][release][
        "ci95"]["fine_recall"]["@1"]
    assert len(own) > 1 and entry.release_interval(release, "fine_recall", 1, over=own[:1]) is None
    published = leaderboard(by_release=True).sections[0]
    assert published.releases == [] and all("release_ci95" not in r for r in published.rows)

    older = json.loads(json.dumps(stored))
    for block in older.values():
        for by in (block.get("per_release") or {}).values() if isinstance(block, dict) else ():
            del by["ci95"]
    store = tmp_path / "older"
    store.mkdir()
    (store / "results.json").write_text(json.dumps(older))
    (section,) = leaderboard(results=store, reference="none", by_release=True).sections
    row = section.rows[0]
    assert all(row[r] is not None for r in section.releases) and set(row["release_ci95"].values()) == {None}


@pytest.mark.parametrize("bad, message", [
    ([90.0, 10.0], "its lower bound is above its upper"),
    ([10.0, 150.0], "not a percentage"),
    ("10-20", "not an interval [lo, hi]"),
])
def test_a_stored_interval_that_is_no_interval_is_refused_naming_it(evaluated, tmp_path, bad, message):
    folder, stored = evaluated
    edited = json.loads(json.dumps(stored))
    release = sorted(edited["overall"]["per_release"])[0]
    edited["overall"]["per_release"][release]["ci95"]["fine_recall"]["@1"] = bad
    store = tmp_path / "store"
    store.mkdir()
    (store / "results.json").write_text(json.dumps(edited))
    board = leaderboard(results=store, reference="none", by_release=True)
    assert board.sections == []
    (line,) = board.skipped
    assert f"overall {release} ci95 fine_recall @1" in line and message in line
