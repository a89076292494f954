"""The demo's Leaderboard tab: the leaderboard's own function, its table fitting the page, its plot's titles and a bad
store file."""
import json
import os

import pytest


def test_leaderboard_tab_uses_the_leaderboard_function(space_app):
    board = space_app.board("fine", 1, "overall")
    published = board.sections[0]
    assert "GR-Pro" in set(published.frame()["model"]) and published.source != "local results store"
    assert space_app.board("ndcg", 5, "RealStreetLook").sections[0].columns[3] == "RealStreetLook nDCG@5"
    frame = published.frame()  # each row's interval and rank group, as the tab shows them
    gr_pro = frame[frame["model"] == "GR-Pro"].iloc[0]
    assert (gr_pro["group"], round(gr_pro["ci95_lo"], 1), round(gr_pro["ci95_hi"], 1)) == (1, 65.5, 69.2)


def test_leaderboard_table_fits_the_page_with_its_interval_in_one_column(space_app):
    """Issue 38 item 6: the tables scrolled sideways; the interval is one column, its method and counts the line under."""
    from lookbench.space.views import board_frame

    published = space_app.board("fine", 1, "overall").sections[0]
    full = published.frame()
    frame, facts = board_frame(published)
    assert {"ci95_lo", "ci95_hi", "ci_method", "queries"}.isdisjoint(frame.columns) and len(frame) == len(full)
    row = full[full["model"] == "GR-Pro"].iloc[0]
    assert frame[frame["model"] == "GR-Pro"].iloc[0]["95% interval"] == f"[{row['ci95_lo']:.2f}, {row['ci95_hi']:.2f}]"
    assert facts.startswith("intervals: ") and "queries: " in facts


def test_plot_titles_are_wrapped_to_fit_the_figure():
    """Issue 38 item 6: a long section title (a local run's data, revision, releases, mode) ran past the plot's edge."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from lookbench.space.views import fitted

    title = ("LookBench-Mini (synthetic) (revision local-18960bc904e6a4c7, releases mini-v20240601, mini-v20250101, "
             "mini-v20251201) — strict mode, with distractors")

    def drawn():
        figure = Figure(figsize=(9, 3))
        ax = figure.subplots()
        ax.barh(["a model"], [50.0])
        ax.set_title(title, fontsize=9)
        figure.tight_layout()
        return figure

    def title_spans(figure):
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        return [(box.x0, box.x1) for box in (ax.title.get_window_extent(canvas.get_renderer()) for ax in figure.axes)]

    width = drawn().bbox.width
    assert any(x0 < 0 or x1 > width for x0, x1 in title_spans(drawn()))  # cut off as drawn before
    assert all(0 <= x0 and x1 <= width for x0, x1 in title_spans(fitted(drawn())))
    assert fitted(drawn()).axes[0].get_title().replace("\n", " ") == title


def test_leaderboard_tab_survives_a_bad_store_file(space_app, monkeypatch, tmp_path):
    """Case 4, in the Space's tab: a FIFO and a string score in the store are skipped and named, never a hang."""
    import threading

    from lookbench.leaderboard.load import load_reference

    store = tmp_path / "results"
    store.mkdir()
    os.mkfifo(store / "fifo.json")
    provenance = {"dataset": {"name": "x", "revision": "r", "releases": []}, "model": {"name": "m"}, "mode": "strict",
                  "distractors": True, "cutoff": None}
    (store / "bad.json").write_text(json.dumps({"RealStudioFlat": {"fine_recall": {"@1": "high"}, "num_queries": 3},
                                                "provenance": provenance}))
    monkeypatch.setattr(space_app, "results", store)
    answer = []
    worker = threading.Thread(target=lambda: answer.append(space_app.board("fine", 1, "overall")), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():
        with open(store / "fifo.json", "w"):
            pass
        pytest.fail("the leaderboard tab blocked on a FIFO in the store")
    board = answer[0]
    assert len(board.sections[0].rows) == len(load_reference()[0])
    assert {line.split(":")[0].rsplit("/", 1)[-1] for line in board.skipped} == {"fifo.json", "bad.json"}
    assert any("bad.json: not a LookBench result (RealStudioFlat fine_recall @1 is 'high', not a percentage" in line
               for line in board.skipped), board.skipped
