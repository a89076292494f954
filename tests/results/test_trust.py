"""Issue 52 item 2: one trust ladder (lookbench.results.trust), and every reader says the same — the docs and the
board's card list its names in its order, the leaderboard's footer and the board's legend carry every meaning."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from lookbench.results.trust import (FAILED, LADDER, LEVELS, NOT_CHECKED, PLACED, TRUSTED, VERIFIED_NOTE, level,
                                     verdict_status)
from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.clients import free_port
from tests.helpers.leaderboard import run_cli

ROOT = Path(__file__).resolve().parents[2]


def section(path: Path, heading: str) -> str:
    """The text of the Markdown section whose heading starts with ``heading``, up to the next heading."""
    text = path.read_text()
    start = re.search(rf"^#+ {re.escape(heading)}.*$", text, re.M)
    assert start, f"{path.name} has no section {heading!r}"
    end = re.search(r"^#+ ", text[start.end():], re.M)
    return text[start.end(): start.end() + end.start() if end else None]


def as_level(term: str) -> str:
    """A doc's term as the level it names: ``not checked: over budget …`` is not checked, ``no: <the first
    reason>`` a failed check; a term that names no level stays as it is, so the comparison shows it."""
    found = level(term)
    return found.name if term == found.name or term.startswith((FAILED, f"{NOT_CHECKED}:")) else term


def in_order(terms: list[str]) -> list[str]:
    """The levels the terms name, each once (variants of one level side by side count once)."""
    out = []
    for name in map(as_level, terms):
        if not out or out[-1] != name:
            out.append(name)
    return out


NAMES = [lv.name for lv in LADDER]


def test_the_ladder_its_order_and_what_follows_from_each_level():
    assert [lv.name for lv in LEVELS] == ["reproduced", "scored (sealed)", "consistent", "pending", "not checked",
                                          "no: <reason>", "published"]
    assert TRUSTED == ("reproduced", "scored (sealed)") and PLACED == ("scored (sealed)", "consistent")
    assert [lv.standing for lv in LEVELS] == [0, 0, 0, 1, 1, 2, 0]
    assert level("no: RealStudioFlat fine_recall@1 claimed 99") is LADDER[-1]
    assert level("not checked: over budget (time)") is level("anything else") is LADDER[-2]
    assert [verdict_status(t) for t in ("consistent", "scored (sealed)", "no: it broke", "pending", "not checked: x",
                                        "reproduced", "published")] == [
        "consistent", "scored (sealed)", "no", "pending", "not checked", "not checked", "not checked"]


def test_submitting_md_lists_the_ladder_in_its_order():
    """The table of "What each trust level proves", one row per level, strongest first; then the published rows."""
    text = section(ROOT / "docs" / "submitting.md", "What each trust level proves")
    assert re.findall(r"^\| `([^`]+)` \|", text, re.M) == NAMES
    assert text.split("|\n\n", 1)[1].startswith(f"`{LEVELS[-1].name}` rows")


def test_the_other_docs_and_the_boards_card_list_the_same_levels_in_the_same_order():
    docs = ROOT / "docs"
    listed = section(docs / "results-and-leaderboard.md", "What was verified")
    assert in_order(re.findall(r"^- `([^`]+)` —", listed, re.M)) == [lv.name for lv in LEVELS]
    shown = section(docs / "submitting.md", "What the leaderboard Space shows")
    assert in_order(re.findall(r"^- `([^`]+)`:", shown, re.M)) == NAMES
    card = (ROOT / "space" / "board" / "README.md").read_text()
    verified = card[card.index("**Verified.**"):card.index("**The table.**")]
    assert in_order(re.findall(r"\*\*`?([^*`]+?)`?\*\* —", verified)) == NAMES
    readme = " ".join((ROOT / "README.md").read_text().split())
    said = readme[readme.index("how far it can be trusted, strongest first:"):readme.index("([submitting.md]")]
    assert [t for t in re.findall(r"`([^`]+)`", said) if as_level(t) in NAMES] == NAMES


def test_the_leaderboards_footer_says_every_level_and_its_meaning(tmp_path, capsys):
    """``lookbench leaderboard``'s footer under the published table: every level, strongest first, with its meaning."""
    code, out, _ = run_cli(capsys, "--results", str(tmp_path), "--format", "markdown")
    footer = out[out.index("verified, strongest first:"):].splitlines()[1:]
    assert code == 0 and footer == [f"- {lv.name}: {lv.meaning}" for lv in LEVELS]


def test_the_boards_intro_names_the_ladder_in_its_order():
    from lookbench.space.board.page import INTRO

    listed = INTRO.split("(the legend under the table):\n", 1)[1].split(".\n", 1)[0]
    assert listed.replace("\\", "") == ", ".join(f"**{name}**" for name in NAMES)


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_a_browser_reads_every_level_and_its_meaning_on_the_board(tmp_path):
    """The board with no results repo (the published rows only): its intro names the ladder, and the legend under
    the table says every level's meaning, as trust.py says it."""
    from playwright.sync_api import expect

    from lookbench.space.board.app import Board
    from lookbench.space.board.repo import Verdicts

    board = Board(folder=tmp_path / "missing", verdicts=Verdicts(tmp_path / "verdicts.json"))
    board.refresh()
    port = free_port()
    app = board.blocks()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        with chromium_page(tmp_path / "profile", 1600, 1800) as page:
            page.goto(f"http://127.0.0.1:{port}/")
            expect(page.get_by_text("verified, strongest first:").first).to_be_visible()
            text = " ".join(page.inner_text("body").split())
    finally:
        app.close()
    assert f"strongest first (the legend under the table): {', '.join(NAMES)}. " in text
    legend = text[text.index("verified, strongest first:"):]
    for lv in LEVELS:
        assert f"{lv.name}: {lv.meaning}" in legend, lv.name
