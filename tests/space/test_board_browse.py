"""The leaderboard Space's "Your results" tab (lookbench.space.board.browse, issue 47 item 3): a verified submission
browsed as the judge saw it, never as its files say, and only while its files are those judged."""
from __future__ import annotations

import re
import shutil

import pytest

from lookbench.terminal import markdown_safe
from lookbench.space.board.app import Board
from lookbench.space.board.repo import Verdicts, submission_folders
from tests.helpers import clients
from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.clients import free_port
from tests.helpers.report_rows import query_rows
from tests.helpers.board import (ALLOWED, EDITED_RANKING, EDITED_SCORE, HONEST,
                                 honest_folder as _honest, judged, same_size_edit as _same_size_edit)


def _forge_annotations(folder) -> None:
    """Every saved row of every ranking claims a fine hit of a category named "forged": columns verify never reads
    (the ranking itself, which gallery row each rank holds, is the honest one)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in (folder / "results.predictions").glob("*.parquet"):
        table = pq.read_table(path)
        for name, value in (("fine_hit", True), ("coarse_hit", True), ("query_category", "forged"), ("category", "forged")):
            table = table.set_column(table.schema.get_field_index(name), name, pa.array([value] * len(table)))
        pq.write_table(table, path)


@pytest.mark.slow
def test_your_results_offer_the_consistent_submission_and_show_the_judges_records(board):
    from lookbench.report import records
    from lookbench.space.board.browse import SubmittedResults
    from lookbench.space.yours import SHOWN

    yours = SubmittedResults(board)
    honest = _honest(board.state.copy.folder)
    folder = honest.relative_to(board.state.copy.folder).as_posix()
    assert yours.listing() == [(f"{HONEST} — consistent ({folder})", folder)]  # the two tampered rows: not offered
    saved = records.worst_queries(honest)  # the honest run's own saved records: what the engine flagged
    line, figure, html, *_ = yours.answer(folder)
    title = markdown_safe(f"{HONEST} on {saved.title.partition(' on ')[2]}")  # the row's name, not the file's claim
    assert line.startswith(f"**{title}** ({markdown_safe(folder)}): {saved.evaluated} queries evaluated; "
                           f"Fine@1 {saved.headline[0][1].split()[0]}, Coarse@1 {saved.headline[1][1].split()[0]}, ")
    assert figure is not None
    rows = query_rows(html)
    assert len(rows) == min(SHOWN, len(saved.queries)) > 0
    assert [(r["title"], r["marks"]) for r in rows] == [
        (f"{w.subset} query {w.number}", [r.mark for r in w.results]) for w in saved.queries[:SHOWN]]
    assert html.count("class='chip ") == sum(len(r.chips) for w in saved.queries[:SHOWN] for r in w.results) > 0
    assert not re.search(r"<span>\d\.\d{3}</span>", html)  # the submitted similarity scores: not shown
    for tampered in (EDITED_SCORE, EDITED_RANKING):
        (other,) = [s.folder for s in board.loaded().submissions if s.model.startswith(tampered)]
        line = yours.answer(other)[0]
        assert line.startswith(f"⚠️ Unknown result '{other[:60]}") and line.endswith(f"; choose one of {folder}")


@pytest.mark.slow
def test_a_submissions_written_marks_and_annotations_are_never_shown_nor_files_changed_since_its_verdict(board, tmp_path):
    """Verify judges the ranking, not the flags and annotations written beside it: a submission claiming every row a
    fine hit of a category "forged" is consistent, and its page shows the judge's marks and categories, the honest
    ones. The same files in another submitter's folder (its result names gr-lite-mini's) are consistent to the judge
    but "no" as a row: counted so, and not offered. Its files changed after the verdict (before a refresh), a
    submission is not opened."""
    from lookbench.space.board.browse import SubmittedResults

    copy = tmp_path / "repo"
    shutil.copytree(board.state.copy.folder, copy)
    for folder in submission_folders(copy):
        if folder != _honest(copy):
            shutil.rmtree(folder)
    _forge_annotations(_honest(copy))
    placed = _honest(copy).relative_to(copy / "submissions" / "lookbench" / "gr-lite-mini")  # <commit>/<data>/<settings>
    shutil.copytree(_honest(copy), copy / "submissions" / "someone" / "impostor" / placed)
    forged = Board(folder=copy, verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=ALLOWED)
    forged.refresh()
    assert judged(forged).endswith("verified: 1 consistent, 1 no.")
    (row,) = [s for s in forged.loaded().submissions if s.folder.startswith("submissions/someone/impostor/")]
    assert row.verdict.text == "consistent" and row.shown.startswith("no: provenance.submission names lookbench/gr-lite-mini@")
    folder = _honest(copy).relative_to(copy).as_posix()
    assert SubmittedResults(forged).values() == [folder]
    _, _, html, *_ = SubmittedResults(forged).answer(folder)
    honest = _honest(board.state.copy.folder).relative_to(board.state.copy.folder).as_posix()
    _, _, truth, *_ = SubmittedResults(board).answer(honest)
    assert query_rows(html) == query_rows(truth) and "forged" not in html
    _same_size_edit(_honest(copy))
    line = SubmittedResults(forged).answer(folder)[0]
    assert line.startswith(f"⚠️ '{folder[:60]}") and line.endswith(
        ": its files changed since the board judged them; Refresh to judge them again")


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_the_your_results_tab_offers_what_was_judged_after_the_page_was_built(board, tmp_path):
    """The Space builds its page before it copies the results repo: the tab's choices are those of the moment it is
    opened. In Debian's chromium: the verified submission opens, each card bordered in its mark's colour."""
    from playwright.sync_api import expect

    from lookbench.report import records

    late = Board(folder=board.state.copy.folder, verdicts=board.verdicts, allowed=ALLOWED)  # the kept verdicts
    app = late.blocks()
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        assert "pending" not in late.refresh()
        honest = _honest(board.state.copy.folder)
        folder = honest.relative_to(board.state.copy.folder).as_posix()
        line, chart, html, *_ = clients.gradio(f"http://127.0.0.1:{port}/").predict(
            folder, "all", "all", "all", api_name="/your_results")
        assert f"({folder}): " in line and chart is not None and query_rows(html)
        first = records.worst_queries(honest).queries[0]
        with chromium_page(tmp_path / "profile", 1280, 800) as page:
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_role("tab", name="Your results").click()
            expect(page.locator("#your-note")).to_contain_text(f"({folder}): ")
            rows = page.locator("#your-queries .query")
            expect(rows.first.locator(".q b")).to_have_text(f"{first.subset} query {first.number}")
            marks = rows.first.locator(".results .tile").evaluate_all("cs => cs.map(c => c.dataset.mark)")
            assert marks == [r.mark for r in first.results]
            page.screenshot(path=str(tmp_path / "your-results.png"), full_page=True)
    finally:
        app.close()
