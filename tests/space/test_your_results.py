"""The demo's "Your results" tab: a stored result with saved rankings, as `lookbench explain --report` shows it."""
import json
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from tests.helpers import clients
from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.report_rows import query_rows
from tests.helpers.space_app import not_blank as _not_blank, serving as _serving


@pytest.fixture(scope="session")
def stored(tmp_path_factory):
    """A results folder as `lookbench demo --results` takes it: `evaluate --save-predictions --output` of raw-pixels
    on the embedded Mini, the same without saved rankings, and that result submitted (`lookbench submit --dry-run`)."""
    import lookbench
    from lookbench.submissions.submit import prepare, write

    root = tmp_path_factory.mktemp("your-results")
    for name, save in (("saved", True), ("plain", False)):
        lookbench.evaluate("raw-pixels", output_dir=root / "runs" / name, save_predictions=save, quiet=True,
                           use_cache=False, results_dir=None)
    folder = write(prepare(root / "runs" / "saved", model_id=f"someone/raw-pixels@{'5' * 40}", allow_synthetic=True),
                   root / "repo")
    return {"root": root / "runs", "submission": folder, "repo": root / "repo"}


@pytest.fixture(scope="session")
def yours_app(space_app, space_assets, stored):
    from lookbench.space.app import SpaceApp

    encoders = {**space_app.encoders, **{"gr-lite-mini-text": r for r in space_app.readers.values()}}
    return SpaceApp([space_assets], results=stored["root"], encoders=encoders)


@pytest.fixture(scope="session")
def yours_served(yours_app):
    yield from _serving(yours_app)


@pytest.mark.slow
def test_your_results_show_the_reports_worst_queries_with_their_marks_and_filters(yours_app, stored):
    from lookbench.report import records
    from lookbench.space.yours import SHOWN

    assert yours_app.yours.choices == ["saved/results.json", "saved/results-leaderboard.json"]  # plain/: no rankings
    report = records.worst_queries(stored["root"] / "saved", top=10, limit=100)
    line, figure, html, *filters = yours_app.yours.answer("saved/results.json")
    assert line.startswith("**raw-pixels on LookBench-Mini (synthetic), strict mode** (saved/results.json): "
                           f"{report.evaluated} queries evaluated")
    assert figure is not None and [t.get_text() for t in figure.axes[0].get_yticklabels()] == \
        sorted(report.attribute_errors["overall"], key=lambda a: report.attribute_errors["overall"][a]["rate"])
    rows = query_rows(html)
    assert len(rows) == min(SHOWN, len(report.queries)) > 0
    for row, w in zip(rows, report.queries):  # the report's records, in its order, each card its mark
        assert row["title"] == f"{w.subset} query {w.number}"
        assert row["marks"] == [r.mark for r in w.results] and "fine" not in row["marks"][:1]
    assert html.count("class='chip ") == sum(len(r.chips) for w in report.queries[:SHOWN] for r in w.results) > 0
    subsets = filters[0]["choices"]
    assert [c[0] if isinstance(c, tuple) else c for c in subsets][0] == "all"
    subset = report.queries[-1].subset
    _, narrowed, html, *_ = yours_app.yours.answer("saved/results.json", subset)
    kept = [w for w in report.queries if w.subset == subset]
    assert [r["title"] for r in query_rows(html)] == [f"{w.subset} query {w.number}" for w in kept[:SHOWN]]
    assert narrowed.axes[0].get_title().endswith(subset)  # the chart of that subset's attribute errors
    chosen = next(w for w in report.queries if w.attribute_names())
    attribute, category = chosen.attribute_names()[0], chosen.category
    _, _, html, *_ = yours_app.yours.answer("saved/results.json", "all", category, attribute)
    rows = query_rows(html)
    assert rows and all(r["category"] == category and attribute in r["attributes"] for r in rows)
    assert len(rows) == min(SHOWN, sum(w.category == category and attribute in w.attribute_names() for w in report.queries))


@pytest.mark.slow
def test_a_submission_folder_opens_with_the_same_reader(stored):
    from lookbench.report import records
    from lookbench.space.yours import YourResults

    yours = YourResults(stored["repo"])
    (choice,) = yours.choices
    assert (stored["repo"] / choice).parent == stored["submission"]
    _, _, html, *_ = yours.browse(choice)
    original = records.worst_queries(stored["root"] / "saved")
    assert [r["title"] for r in query_rows(html)][:5] == [f"{w.subset} query {w.number}" for w in original.queries[:5]]


@pytest.mark.slow
def test_a_walk_cut_short_says_so(stored, tmp_path, monkeypatch):
    from lookbench.space import yours

    for name in ("a", "b"):
        shutil.copytree(stored["root"] / "saved", tmp_path / name)
    monkeypatch.setattr(yours, "MAX_FOLDERS", 2)  # the given folder and a/: b/ is not reached
    cut = yours.YourResults(tmp_path)
    assert cut.cut and cut.choices == ["a/results.json", "a/results-leaderboard.json"]
    assert cut.browse("a/results.json")[0].endswith("Only the results in the first 2 folders under the given one are offered.")
    monkeypatch.setattr(yours, "MAX_FOLDERS", 3)
    whole = yours.YourResults(tmp_path)
    assert not whole.cut and len(whole.choices) == 4
    monkeypatch.setattr(yours, "MAX_OPENED", 2)  # what stays opened is bounded: the first opened goes first
    for choice in whole.choices[:3]:
        whole.browse(choice)
    assert [key[0] for key in whole._opened] == whole.choices[1:3]


@pytest.mark.slow
def test_your_results_bad_choices_and_results_without_rankings_are_one_line(yours_app, stored, tmp_path):
    from lookbench.space.yours import YourResults

    def line(app, *args):
        answer = app.yours.answer(*args)
        assert answer[1] is None and answer[2] == "" and "\n" not in answer[0]
        return answer[0]

    assert line(yours_app, "../../etc/passwd").startswith("⚠️ Unknown result '../../etc/passwd'; choose one of ")
    assert "Unknown subset 'Nowhere' in this result" in line(yours_app, "saved/results.json", "Nowhere")
    plain = YourResults(stored["root"] / "plain" / "results.json")  # a result JSON given: offered, then refused
    assert plain.choices == ["results.json"]
    with pytest.raises(ValueError, match="has no saved rankings for .*evaluate again with --save-predictions"):
        plain.browse("results.json")
    assert "No result with saved rankings in" in YourResults(tmp_path / "missing").empty
    # A result whose JSON lies outside the folder given (a link) is never read
    outside = tmp_path / "elsewhere"
    shutil.copytree(stored["root"] / "saved", outside)
    (tmp_path / "given").mkdir()
    (tmp_path / "given" / "linked.json").symlink_to(outside / "results.json")
    (tmp_path / "given" / "linked.predictions").mkdir()
    linked = YourResults(tmp_path / "given")
    assert linked.choices == ["linked.json"]
    with pytest.raises(ValueError, match="lies outside the given/ folder"):
        linked.browse("linked.json")
    with pytest.raises(ValueError, match=r"^No stored result given: start with `lookbench demo --results PATH`"):
        YourResults(None).browse(None)  # the Hub Space, started without a results folder


@pytest.mark.slow
def test_a_result_never_makes_the_tab_read_outside_the_folders_given(stored, tmp_path):
    """A result names its data and its subsets: a local data folder elsewhere is not read (the records shown, the
    images not, the line says why), and a subset name that is no LookBench subset (a path) is refused in one line."""
    from lookbench.report import records
    from lookbench.space.yours import SHOWN, YourResults

    given = tmp_path / "given"
    shutil.copytree(stored["root"] / "saved", given / "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = json.loads((given / "run" / "results.json").read_text())
    result["provenance"]["dataset"]["data"] = str(elsewhere)
    (given / "run" / "results.json").write_text(json.dumps(result))
    line, _, html, *_ = YourResults(given).answer("run/results.json")
    shown = line.replace("\\", "")  # as markdown_safe escapes it
    assert "Images not shown: its data '/" in shown and str(elsewhere)[:40] in shown  # a long path is cut with …
    assert shown.endswith(" lies outside the folders given to the demo (--results, --data)")
    assert html.count("<div class='query' ") == min(SHOWN, len(records.worst_queries(given / "run").queries)) > 0
    assert "data:image" not in html and "image unreadable" in html  # the records stand; no image was read
    subset = result["provenance"]["subsets"][0]
    moved = "../../outside/" + subset
    result["provenance"]["subsets"][0] = moved
    result["provenance"]["saved_predictions"] = [moved if s == subset else s for s in result["provenance"]["saved_predictions"]]
    result[moved] = result.pop(subset)
    (given / "run" / "results.json").write_text(json.dumps(result))
    line = YourResults(given).answer("run/results.json")[0]
    assert line.startswith("⚠️ ") and "provenance.subsets names '../../outside/" in line and "not a LookBench subset" in line


@pytest.mark.slow
def test_api_your_results_through_gradio_client(yours_served, stored):
    from lookbench.report import records

    client = clients.gradio(yours_served)
    report = records.worst_queries(stored["root"] / "saved")
    subset = report.queries[0].subset
    line, chart, html, *filters = client.predict("saved/results.json", subset, "all", "all", api_name="/your_results")
    assert f"({'saved/results.json'}): {report.evaluated} queries evaluated" in line and chart is not None
    assert {r["subset"] for r in query_rows(html)} == {subset}
    line, chart, html, *_ = client.predict("saved/nowhere.json", "all", "all", "all", api_name="/your_results")
    assert line.startswith("⚠️ Unknown result 'saved/nowhere.json'") and html == "" and chart is None


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_browser_your_results_opens_a_stored_result_and_a_filter_narrows_it(yours_served, stored, tmp_path):
    """`lookbench demo --results` in Debian's chromium: "Your results" shows the stored result's attribute error chart
    and its worst queries, each card bordered in its mark's colour (the Search tab's) with chips saying why it is not
    fine; the subset filter narrows the rows to that subset's."""
    from playwright.sync_api import expect

    from lookbench.report import records
    from lookbench.report.style import MARKS
    from lookbench.space.yours import SHOWN

    report = records.worst_queries(stored["root"] / "saved")
    rgb = {m: f"rgb({', '.join(str(int(MARKS[m][1][i:i + 2], 16)) for i in (1, 3, 5))})" for m in ("fine", "coarse", "miss")}
    with chromium_page(tmp_path / "profile", 1280, 800) as page:
        page.goto(yours_served)
        page.get_by_role("tab", name="Your results").click()
        expect(page.locator("#your-note")).to_contain_text(
            f"raw-pixels on LookBench-Mini (synthetic), strict mode (saved/results.json): {report.evaluated} queries")
        rows = page.locator("#your-queries .query")
        expect(rows).to_have_count(min(SHOWN, len(report.queries)))
        expect(page.locator("#your-chart img, #your-chart svg").first).to_be_visible()  # the attribute error chart
        first = report.queries[0]
        expect(rows.first.locator(".q b")).to_have_text(f"{first.subset} query {first.number}")
        cards = rows.first.locator(".results .tile")
        marks = cards.evaluate_all("cs => cs.map(c => [c.dataset.mark, getComputedStyle(c).borderTopColor])")
        assert [m for m, _ in marks] == [r.mark for r in first.results]
        assert all(colour == rgb[mark] for mark, colour in marks), marks
        loaded = "imgs => imgs.map(i => i.complete && i.naturalWidth > 0)"
        assert all(rows.first.locator("img").evaluate_all(loaded))
        assert rows.first.locator(".tile:not([data-mark=fine]) .chip").count() >= sum(r.mark != "fine" for r in first.results) > 0
        page.screenshot(path=str(tmp_path / "space-your-results.png"))
        subset = report.queries[-1].subset
        page.locator("#your-subset input").click()
        page.get_by_role("option", name=subset, exact=True).click()
        kept = [w for w in report.queries if w.subset == subset]
        assert len(kept) < len(report.queries)
        expect(page.locator("#your-note")).to_contain_text(f"{len(kept)} kept by the filters")
        expect(rows.first.locator(".q b")).to_have_text(f"{kept[0].subset} query {kept[0].number}")
        expect(rows).to_have_count(min(SHOWN, len(kept)))
        assert set(rows.evaluate_all("qs => qs.map(q => q.dataset.subset)")) == {subset}
        expect(page.get_by_text("Error", exact=True)).to_have_count(0)
    _not_blank(tmp_path / "space-your-results.png")
    if os.environ.get("LOOKBENCH_SCREENSHOTS"):  # how the docs' screenshots are refreshed
        Image.open(tmp_path / "space-your-results.png").convert("RGB").quantize(128).save(
            Path(os.environ["LOOKBENCH_SCREENSHOTS"]) / "space-your-results.png", optimize=True)


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_browser_on_a_phone_a_page_opened_after_a_cold_start_has_both_models_and_every_control(space_app, space_assets,
                                                                                               stored, tmp_path):
    """Issue 56 item 5, at 390x844: a page opened after the second model joined (the page itself built before it was)
    puts it beside the first; a control used before any query says so in the status line, not in a toast; the
    stored-result picker and its filters lie wholly in view and open a result."""
    from playwright.sync_api import expect

    from lookbench.space.app import SpaceApp

    encoders = {**space_app.encoders, **{"gr-lite-mini-text": r for r in space_app.readers.values()}}
    app = SpaceApp([space_assets], results=stored["root"], encoders=encoders)
    both = list(app.models)
    app.models = both[:1]  # a cold start: the page is built while the second model is being prepared
    serving = _serving(app)
    url = next(serving)
    app.models = both  # ... and it joined before this page opened
    try:
        with chromium_page(tmp_path / "profile", 390, 844) as page:
            page.goto(url)
            expect(page.locator("#second input")).to_have_value(both[1])
            page.locator("#second input").click()
            page.get_by_role("option", name="none", exact=True).click()
            expect(page.locator("#status")).to_contain_text("No query yet: upload an image, click an example")
            expect(page.locator(".toast-body")).to_have_count(0)
            page.get_by_role("tab", name="Your results").click()
            for selector in ("#your-result", "#your-subset", "#your-category", "#your-attribute"):
                page.locator(selector).scroll_into_view_if_needed()
                box = page.locator(selector).bounding_box()
                assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390 + 1, (selector, box)
            picker = page.locator("#your-result").bounding_box()
            assert picker["width"] >= 280, picker  # a row of its own, not half the screen
            page.locator("#your-result input").click()
            page.get_by_role("option", name="saved/results.json", exact=True).click()
            assert page.locator("#your-result input").evaluate("e => e.scrollWidth <= e.clientWidth")  # its name whole
            expect(page.locator("#your-note")).to_contain_text("raw-pixels on LookBench-Mini (synthetic)")
            page.locator("#your-subset input").click()
            expect(page.get_by_role("option").first).to_be_visible()
            page.screenshot(path=str(tmp_path / "phone.png"), full_page=True)
    finally:
        next(serving, None)
