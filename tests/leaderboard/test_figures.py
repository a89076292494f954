"""The leaderboard drawn: a bar per model with its 95 % interval and rank group, written as a PNG."""
from __future__ import annotations

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
