"""The leaderboard drawn: a bar per model with its 95 % interval and rank group, written as a PNG."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from lookbench.leaderboard.ranking import leaderboard

from tests.helpers.leaderboard import run_cli


def test_the_plot_draws_an_error_bar_per_model_labelled_with_its_group():
    from matplotlib.container import ErrorbarContainer

    ax = leaderboard(metric="fine", k=1).figure().axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 1 and len(bars[0].lines[2][0].get_segments()) == 16  # one interval per model
    assert ax.get_yticklabels()[-1].get_text() == "GR-Pro (group 1)"


def test_plot_writes_the_figure(tmp_path):
    path = leaderboard(reference="release_v2601").plot(tmp_path / "board.png")
    assert path.stat().st_size > 5000


def test_plot_reports_the_file_it_wrote(tmp_path, capsys, monkeypatch):
    """Case 8: --plot myplot writes myplot.png and says so."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "--plot", "myplot")
    assert code == 0 and (tmp_path / "myplot.png").stat().st_size > 1000
    assert "plot: myplot.png" in err.splitlines()


@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
def test_plot_refuses_a_device_a_fifo_or_a_folder_in_one_line_and_writes_nothing_beside_it(tmp_path, capsys, kind):
    """Issue 37: --plot /dev/null created /dev/null.png; a FIFO got a PNG written beside it."""
    target = Path(os.devnull) if kind == "device" else tmp_path / "board"
    os.mkfifo(target) if kind == "fifo" else target.mkdir() if kind == "directory" else None
    before = sorted(os.listdir(target.parent))
    code, out, err = run_cli(capsys, "--plot", str(target))
    noun = {"device": "a device", "fifo": "a FIFO", "directory": "a directory"}[kind]
    assert code == 2 and out == "" and err == (f"lookbench leaderboard: error: {target} is {noun}, not a regular file; "
                                               "give a new file or a regular one to replace\n")
    assert sorted(os.listdir(target.parent)) == before


def test_plot_refuses_a_missing_folder_and_a_format_matplotlib_cannot_write(tmp_path, capsys):
    code, _, err = run_cli(capsys, "--plot", str(tmp_path / "nowhere" / "board.png"))
    assert code == 2 and err == f"lookbench leaderboard: error: cannot write {tmp_path}/nowhere/board.png: no such folder {tmp_path}/nowhere\n"
    code, out, err = run_cli(capsys, "--plot", str(tmp_path / "board.txt"))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith(f"lookbench leaderboard: error: {tmp_path}/board.txt: matplotlib writes no .txt files; name it ")
    assert os.listdir(tmp_path) == []


def test_plot_writes_the_format_its_suffix_names_and_replaces_a_symlink_rather_than_writing_through_it(tmp_path):
    outside = tmp_path / "outside.svg"
    outside.write_text("precious")
    (tmp_path / "board.svg").symlink_to(outside)
    path = leaderboard(reference="release_v2601").plot(tmp_path / "board.svg")
    assert path == tmp_path / "board.svg" and not path.is_symlink() and path.read_text().startswith("<?xml")
    assert outside.read_text() == "precious" and sorted(os.listdir(tmp_path)) == ["board.svg", "outside.svg"]


def test_every_by_release_panel_has_its_own_dated_axis():
    """Issue 38: autofmt_xdate hid the date labels of every panel but the bottom one, so an upper panel's 2023
    cutoff was read off the bottom panel's axis (2013)."""
    from lookbench.leaderboard.figures import figure
    from lookbench.leaderboard.render import Section

    def section(title, releases, cutoff):
        columns = ["rank", "model", "group", "overall fine R@1", "ci95", "training cutoff", *releases]
        row = {"rank": 1, "model": "m", "group": 1, "overall fine R@1": 50.0, "ci95": None, "training cutoff": cutoff,
               **{r: 40.0 + i for i, r in enumerate(releases)}}
        return Section(title, "local", columns, [row], releases)

    fig = figure([section("upper", ["v20230101", "v20240101"], "2023-06-30"),
                  section("lower", ["v20120101", "v20140101"], "2013-06-30")])
    fig.canvas.draw()
    for ax, year in zip(fig.axes, ("2023", "2013")):
        labels = [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        assert labels and all(len(t.split("-")[0]) == 4 for t in labels), labels
        assert any(t.startswith(year) for t in labels), (year, labels)


def test_a_cutoff_far_before_the_releases_is_named_at_the_edge_not_drawn_across_years():
    """Issue 46 item 7: a 2012 cutoff stretched a by-release axis over 14 years; the axis spans the releases, the
    cutoff is named at the edge it lies beyond, and each point has its interval as an error bar."""
    import datetime

    from matplotlib.dates import num2date

    from lookbench.leaderboard.figures import figure
    from lookbench.leaderboard.render import Section

    releases = ["v20250101", "v20260101"]
    row = {"rank": 1, "model": "m", "group": 1, "overall fine R@1": 50.0, "ci95": [45.0, 55.0],
           "training cutoff": "2012-01-01", "v20250101": 40.0, "v20260101": 60.0,
           "release_ci95": {"v20250101": [30.0, 50.0], "v20260101": [55.0, 64.0]}}
    section = Section("LookBench v20260101 — strict mode", "local",
                      ["rank", "model", "group", "overall fine R@1", "ci95", "training cutoff", *releases], [row], releases)
    fig = figure([section])
    fig.canvas.draw()
    (ax,) = fig.axes
    left, right = (num2date(x) for x in ax.get_xlim())
    assert right - left < datetime.timedelta(days=2 * 365) and left.year == 2024
    assert [t.get_text() for t in ax.texts] == ["← cutoff 2012-01-01"]
    assert not [line for line in ax.get_lines() if line.get_linestyle() == "--"]  # no cutoff line off the axis
    (bars,) = [c for c in ax.collections if c.get_segments() and len(c.get_segments()) == 2]
    assert sorted((s[0][1], s[1][1]) for s in bars.get_segments()) == [(30.0, 50.0), (55.0, 64.0)]
