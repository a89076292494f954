"""Issue 56 item 5, the demo's loose ends: side by side by default once the second model is ready (also on a page
opened before it was), a control used before any query answered in the status line and not in a toast, a text query
clearing the benchmark query id it does not answer, the leaderboard's intervals written ``[lo, hi]``."""
import re

import pytest


@pytest.fixture
def toasts(monkeypatch):
    """Every toast the handlers raise (gr.Warning, gr.Info), recorded."""
    import lookbench.space.app as app_module

    shown = []
    monkeypatch.setattr(app_module.gr, "Warning", lambda message, *a, **k: shown.append(message))
    monkeypatch.setattr(app_module.gr, "Info", lambda message, *a, **k: shown.append(message))
    return shown


def test_the_second_model_is_beside_the_first_once_ready_unless_the_visitor_chose(space_app, monkeypatch):
    gallery = space_app.default
    first, second = space_app.models[:2]
    # a page built (or polled) while only the first model was ready showed "none"; the poll puts the second beside it
    assert space_app.poll(gallery, first, "none")[4]["value"] == second
    assert space_app.poll(gallery, first, "none", False)[4]["value"] == second
    assert space_app.poll(gallery, first, "none", True)[4]["value"] == "none"  # the visitor chose none: kept
    assert space_app.poll(gallery, second, first, True)[4]["value"] == first  # any choice of theirs is kept
    assert space_app.poll(gallery, first, "no-such-model", True)[4]["value"] == second
    monkeypatch.setattr(space_app, "models", [first])  # while only the first is ready: none beside it
    assert space_app.poll(gallery, first, "none")[4] == {"__type__": "update", "choices": ["none", first], "value": "none"}


def test_a_control_used_before_any_query_says_so_inline_without_a_toast(space_app, toasts):
    first, second = space_app.models[:2]
    status, *panels = space_app.search(None, "", "all", True, first, second, 5)
    assert status == "⚠️ No query yet: upload an image, click an example or press Random query"
    assert set(panels) == {"", None} and toasts == []
    status, *_ = space_app.search_words("", "", "all", True, 5)
    assert status.startswith("⚠️ No words yet") and toasts == []
    editor, status = space_app.outfit_for_crop("")
    assert status == "⚠️ Pick a street-look benchmark query first (RealStreetLook or AIGen-StreetLook)" and toasts == []
    assert space_app.crop({"composite": None})[2].startswith("⚠️ Nothing to crop") and toasts == []
    status, *_ = space_app.search(None, "RealStreetLook/999", "all", True, first, second, 5)  # a wrong query: a toast too
    assert "No benchmark query 'RealStreetLook/999'" in status and len(toasts) == 1


def test_a_text_query_clears_the_benchmark_query_id_it_does_not_answer(space_app):
    retriever = space_app.retriever()
    own = retriever.described("RealStreetLook/1")
    image, query_id = space_app.words_query(own, "RealStreetLook/1")
    assert image is not None and query_id == {"__type__": "update"}  # its own words: the query stays
    image, query_id = space_app.words_query("black top", "RealStreetLook/1")
    assert image is None and query_id == ""  # other words: neither the old image nor its id
    image, query_id = space_app.words_query("", "RealStreetLook/1")  # nothing searched: nothing changed
    assert image is None and query_id == {"__type__": "update"}


def test_the_leaderboard_tab_writes_every_interval_as_its_bounds(space_app):
    from lookbench.space.views import board_html

    board = space_app.board("fine", 1, "overall")
    for section in board.sections:
        table, facts = board_html(section)
        cells = re.findall(r"<td class=''>([^<]*)</td>", table)
        intervals = [c for c in cells if re.search(r"\d[\d.]*\s*[-–]\s*\d", c) or c.startswith("[")]
        assert intervals and all(re.fullmatch(r"\[\d+\.\d\d, \d+\.\d\d\]", c) for c in intervals), intervals
        assert "–" not in table
