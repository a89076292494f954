"""One way to draw a result (issue 52 item 4): a mark has one colour in the demo's Search tab, its "Your results" tab
and the HTML report (the palette of ``lookbench.report.style``), and both boards — the demo's Leaderboard tab and the
leaderboard Space — draw a section as the one table, its intervals written ``[lo, hi]``."""
from __future__ import annotations

import re

import pytest

from lookbench.report.style import MARKS
from lookbench.space.yours import ALL

from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.clients import free_port

MARKED = ("fine", "coarse", "miss")
MODEL = "raw-pixels"  # the cheapest encoder: the marks, not the model, are under test
BORDER = "els => els.map(e => [e.dataset.mark, getComputedStyle(e).borderTopColor])"


def _rgb(colour: str) -> str:
    """``#rrggbb`` as the browser's computed ``rgb(r, g, b)``."""
    return f"rgb({', '.join(str(int(colour[i:i + 2], 16)) for i in (1, 3, 5))})"


def _launched(blocks, **options) -> tuple:
    """``blocks`` served on a free loopback port: (the Blocks, its address)."""
    port = free_port()
    blocks.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    return blocks, f"http://127.0.0.1:{port}/"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """raw-pixels evaluated on the embedded Mini's RealStudioFlat with its rankings saved, in a folder as `lookbench
    demo --results` takes it: its worst queries' top 10 hold every mark (on every subset, raw-pixels' 100 worst find
    no fine hit in their top 10)."""
    import lookbench

    root = tmp_path_factory.mktemp("marks") / "runs"
    lookbench.evaluate(MODEL, subsets=["RealStudioFlat"], output_dir=root / "saved", save_predictions=True, quiet=True,
                       use_cache=False, results_dir=None)
    return root


@pytest.fixture(scope="module")
def demo(stored, tmp_path_factory):
    """The demo over the embedded Mini (raw-pixels' assets) with the stored result's tab: the app and its address."""
    from lookbench.space.app import SpaceApp
    from lookbench.space.assets import EMBEDDED, open_assets

    assets = open_assets(None, tmp_path_factory.mktemp("space") / EMBEDDED, (MODEL,), quiet=True)
    app = SpaceApp([assets], results=stored, models=(MODEL,))
    blocks, url = _launched(app.blocks(), **app.launch_options)
    yield app, url
    blocks.close()


def _all_three(app, k: int = 10) -> str:
    """A benchmark query whose top ``k`` holds a fine, a coarse and a miss result."""
    retriever = app.retriever()
    for key in retriever.query_keys:
        marks = {h.mark for h in retriever.search(retriever.benchmark_query(key), MODEL, "all", True, k).hits}
        if set(MARKED) <= marks:
            return key
    raise AssertionError("no query of the Mini has a fine, a coarse and a miss result in its top 10")


def _filters_showing_all_three(app) -> tuple[str, str]:
    """The subset and category filters of "Your results" under which the rows drawn (the first ``SHOWN`` worst
    queries kept) hold a fine, a coarse and a miss result (the worst of all may hold misses only)."""
    from lookbench.report import records
    from lookbench.space.yours import SHOWN, filtered, filters

    report = records.worst_queries(app.yours.root / app.yours.values()[0])
    options = filters(report)
    for subset in (ALL, *options["subset"]):
        for category in (ALL, *options["category"]):
            shown = filtered(report, subset, category)[:SHOWN]
            if set(MARKED) <= {r.mark for w in shown for r in w.results}:
                return subset, category
    raise AssertionError("no filter of the stored result shows a fine, a coarse and a miss result")


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_a_mark_has_one_colour_in_the_search_tab_your_results_and_the_report(demo, stored, tmp_path):
    """The Done-when of issue 52: the computed border colour of a fine, a coarse and a miss tile is the palette's in
    the Search tab, in "Your results", and in an HTML report written by `lookbench explain --report` opened from disk;
    and the legend above each says the same colour."""
    from playwright.sync_api import expect

    from lookbench.cli import main

    app, url = demo
    key = _all_three(app)
    report = tmp_path / "report.html"
    assert main(["explain", str(stored / "saved"), "--report", str(report)]) == 0
    seen: dict[str, dict[str, set]] = {}
    with chromium_page(tmp_path / "profile", 1280, 900) as page:
        page.goto(url)
        page.locator("#query-id textarea").fill(key)
        page.locator("#search").click()
        expect(page.locator("#status")).to_contain_text(f"{key}: top 10 of LookBench-Mini")
        tiles = page.locator("#results-a .tile")
        expect(tiles).to_have_count(10)
        seen["Search"] = _colours(tiles.evaluate_all(BORDER))
        seen["Search legend"] = _legend(page.locator("#legend .legend span"))
        page.get_by_role("tab", name="Your results").click()
        rows = page.locator("#your-queries .query")
        expect(rows.first).to_be_visible()
        for name, value in zip(("subset", "category"), _filters_showing_all_three(app)):
            if value != ALL:
                page.locator(f"#your-{name} input").click()
                page.get_by_role("option", name=value, exact=True).click()
                expect(rows.first).to_have_attribute(f"data-{name}", value)
        seen["Your results"] = _colours(page.locator("#your-queries .tile").evaluate_all(BORDER))
        seen["Your results legend"] = _legend(page.locator("#your-queries .legend span"))
    with chromium_page(tmp_path / "report-profile", 1280, 900, offline=True) as page:  # from disk: nothing fetched
        page.goto(report.as_uri())
        expect(page.locator(".query").first).to_be_visible()
        seen["report"] = _colours(page.locator(".query .tile").evaluate_all(BORDER))
        seen["report legend"] = _legend(page.locator(".legend span"))
    palette = {mark: {_rgb(MARKS[mark][1])} for mark in MARKED}
    for where, colours in seen.items():
        assert {m: colours.get(m) for m in MARKED} == palette, where
    assert len({c for cs in palette.values() for c in cs}) == len(MARKED)  # three marks, three colours


def _colours(marked: list) -> dict[str, set]:
    """mark -> the computed colours its tiles were drawn in."""
    out: dict[str, set] = {}
    for mark, colour in marked:
        out.setdefault(mark, set()).add(colour)
    return out


def _legend(spans) -> dict[str, set]:
    """mark -> the colour the legend gives it (its swatch's ``--mark``), as the browser computes it."""
    script = ("els => els.map(e => [e.textContent.split(':')[0], "
              "getComputedStyle(e, '::before').borderTopColor])")
    return _colours(spans.evaluate_all(script))


def _table(page, url: str, tab: bool) -> tuple[list[str], list[list[str]]]:
    """The first leaderboard table of the page at ``url``: its header and its rows' cells."""
    from playwright.sync_api import expect

    page.goto(url)
    if tab:
        page.get_by_role("tab", name="Leaderboard").click()
    table = page.locator(".board-table").first
    expect(table.locator("tbody tr").first).to_be_visible()
    head = table.locator("thead th").all_inner_texts()
    rows = table.locator("tbody tr").evaluate_all("rs => rs.map(r => [...r.cells].map(c => c.innerText.trim()))")
    return head, rows


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_both_boards_draw_a_section_as_the_one_table(demo, tmp_path):
    """The demo's Leaderboard tab and the leaderboard Space show the published section with the same columns and
    cells: the verified column beside the model, the interval written as every interval is, ``[lo, hi]``."""
    from lookbench.space.board.app import Board
    from lookbench.space.board.repo import Verdicts
    from lookbench.space.views import CSS

    _, url = demo
    (tmp_path / "repo").mkdir()
    board = Board(folder=tmp_path / "repo", verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=set())
    blocks, board_url = _launched(board.blocks(), css=CSS)
    try:
        with chromium_page(tmp_path / "profile", 1600, 1200) as page:
            ours = _table(page, url, tab=True)
            theirs = _table(page, board_url, tab=False)
    finally:
        blocks.close()
    assert ours == theirs
    head, rows = ours
    assert head[:4] == ["rank", "model", "verified", "group"] and "95% interval" in head
    intervals = [row[head.index("95% interval")] for row in rows]
    assert intervals and all(re.fullmatch(r"\[\d+\.\d\d, \d+\.\d\d\]", i) for i in intervals), intervals
    assert "GR-Pro" in [row[1] for row in rows] and {row[2] for row in rows} == {"published"}


def test_the_board_table_is_one_builder_writing_intervals_as_everywhere_else(tmp_path):
    """Both boards rank with ``leaderboard`` and draw with ``views.board_html``: the same section gives the same
    table, each interval the one ``terminal.bounds`` writes."""
    from lookbench import terminal
    from lookbench.leaderboard.ranking import leaderboard
    from lookbench.space.board.app import Board
    from lookbench.space.board.repo import Verdicts
    from lookbench.space.views import board_frame, board_html

    board = Board(folder=tmp_path, verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=set())
    for metric, k, subset in (("fine", 1, "overall"), ("ndcg", 5, "RealStreetLook")):
        demo_section = leaderboard(metric=metric, k=k, subset=None if subset == "overall" else subset).sections[0]
        board_section = board.board(metric, k, subset).sections[0]
        assert board_html(demo_section) == board_html(board_section)
        frame, facts = board_frame(board_section)
        assert list(frame.columns[:3]) == ["rank", "model", "verified"] and facts.startswith("intervals: ")
        assert list(frame["95% interval"]) == [terminal.bounds(r["ci95"], 2) for r in board_section.rows]
