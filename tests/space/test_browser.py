"""The demo in a real browser (Debian's chromium driven by Playwright): a visitor's path through the page."""
import os
import re
from pathlib import Path

import pytest
from PIL import Image

from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.space_app import not_blank as _not_blank


def _inside(page, selector: str) -> dict:
    """The element's box, asserted to lie wholly inside the viewport (no scrolling needed to see it)."""
    box = page.locator(selector).first.bounding_box()
    size = page.viewport_size
    assert box and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= size["width"] + 1 \
        and box["y"] + box["height"] <= size["height"] + 1, (selector, box, size)
    return box


def _at_the_top(page) -> None:
    """The page as a visitor who has not scrolled sees it. Under load the page can still move a button down between
    the check that it is in view and the click on it, and Playwright then scrolls to it (275 px in one CI run)."""
    page.evaluate("window.scrollTo(0, 0)")


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_browser_query_beside_its_marked_results_words_phone_and_leaderboard(served, space_app, tmp_path):
    """A visitor's path through the page in Debian's chromium (issue 47): at 1280x800 a random query's image (at
    least 200 px) and its first result tile both in view without scrolling; tiles bordered in their mark's colour
    (the legend's), with chips; two models side by side; the words box naming the words it ignored; stale state
    cleared; at 390x844 the panels stacked with the table's mark column in view; the leaderboard's rows whole."""
    from playwright.sync_api import expect

    out = tmp_path
    border = "els => els.map(e => [e.dataset.mark, getComputedStyle(e).borderTopColor])"
    with chromium_page(tmp_path / "profile", 1280, 800) as page:
        page.goto(served)
        expect(page.locator("#gallery-info")).to_contain_text("Gallery: LookBench-Mini (synthetic)")
        expect(page.locator("#intro a[href='https://arxiv.org/abs/2601.14706']")).to_have_count(1)
        expect(page.locator("#column-b")).to_be_hidden()  # no results yet: no empty second panel
        # Random in view as the page settles (under load it is drawn late, and a click on a button below the fold
        # scrolls the page, which would move the query out of view): clicked where a visitor sees it, no scrolling.
        expect(page.locator("#random")).to_be_in_viewport(ratio=1)
        page.locator("#random").click()
        tiles_a, tiles_b = page.locator("#results-a .tile"), page.locator("#results-b .tile")
        expect(tiles_a).to_have_count(10)
        expect(tiles_b).to_have_count(10)
        expect(page.locator("#status")).to_contain_text(re.compile(r"\S+/\d+: top 10 of LookBench-Mini"))
        query = page.locator("#query-image img").first
        expect(query).to_be_visible()
        _at_the_top(page)
        box = _inside(page, "#query-image img")
        assert min(box["width"], box["height"]) >= 200, box
        first = _inside(page, "#results-a .tile")
        assert first["x"] > box["x"] + box["width"]  # beside the query, not below it
        b = page.locator("#results-b .tile").first.bounding_box()
        assert abs(b["y"] - first["y"]) < 5 and b["x"] > first["x"] + first["width"]  # two models side by side
        expect(page.locator("#results-a h3")).to_contain_text(re.compile(r"^gr-lite-mini — fine hit@10 [✓✗] · "
                                                                         r"coarse hit@10 [✓✗] · nDCG@10 \d"))
        expect(page.locator("#results-b h3")).to_contain_text(re.compile(r"^efficientnet-lite0 — fine hit@10"))
        legend = dict(page.locator("#legend .legend span").evaluate_all(
            "els => els.map(e => [e.textContent.split(':')[0], getComputedStyle(e).getPropertyValue('--mark').trim()])"))
        marks = tiles_a.evaluate_all(border) + tiles_b.evaluate_all(border)
        rgb = {m: tuple(int(legend[m][i:i + 2], 16) for i in (1, 3, 5)) for m in ("fine", "coarse", "miss")}
        for mark, colour in marks:
            assert mark in rgb and colour == f"rgb({', '.join(map(str, rgb[mark]))})", (mark, colour)
        assert len({c for _, c in marks}) == len({m for m, _ in marks})  # one colour per mark
        chips = page.locator("#results-a .tile:not([data-mark=fine]) .chip, #results-b .tile:not([data-mark=fine]) .chip")
        assert chips.count() >= sum(m != "fine" for m, _ in marks) > 0  # every result short of fine says why
        assert page.locator(".tile[data-mark=fine] .chip").count() == 0
        shot = out / "mini.png"
        page.screenshot(path=str(shot))  # the viewport a visitor sees: query and results together
        # A benchmark query, then the other gallery: the query, its image and its results are cleared
        page.locator("#query-id textarea").fill("RealStreetLook/1")
        page.locator("#search").click()
        expect(page.locator("#status")).to_contain_text("RealStreetLook/1: top 10 of LookBench-Mini (synthetic)")
        page.get_by_role("radio", name="Fashion-MNIST real photos in LookBench's format").click()
        expect(page.locator("#status")).to_contain_text("Gallery Fashion-MNIST real photos in LookBench's format: pick a benchmark query")
        expect(tiles_a).to_have_count(0)
        expect(page.locator("#query-id textarea")).to_have_value("")
        expect(page.locator("#gallery-info")).to_contain_text("licence mit")
        expect(page.locator("#random")).to_be_in_viewport(ratio=1)
        page.locator("#random").click()
        expect(page.locator("#status")).to_contain_text(re.compile(r"RealStudioFlat/\d+: top 10 of Fashion-MNIST real photos in LookBench's format"))
        expect(tiles_b).to_have_count(10)
        _at_the_top(page)
        _inside(page, "#query-image img")
        _inside(page, "#results-a .tile")
        photos = out / "photos.png"
        page.screenshot(path=str(photos))
        # A phone: the panels stacked, the table's mark column in view
        page.set_viewport_size({"width": 390, "height": 844})
        page.locator("#details-a table").scroll_into_view_if_needed()
        header = page.locator("#details-a th", has_text="mark").first
        mark = header.bounding_box()
        assert mark["x"] >= 0 and mark["x"] + mark["width"] <= 390, mark
        a, b = (page.locator(f"#results-{c} .tile").first.bounding_box() for c in "ab")
        assert b["y"] > a["y"] + a["height"]  # stacked
        page.set_viewport_size({"width": 1280, "height": 800})
        page.get_by_role("tab", name="Leaderboard").click()
        expect(page.get_by_text("GR-Pro", exact=True).first).to_be_visible()
        table = page.locator(".board-table").first
        expect(table.locator("tbody tr")).to_have_count(len(space_app.board("fine", 1, "overall").sections[0].rows))
        assert page.locator(".board-wrap").first.evaluate("e => e.scrollHeight <= e.clientHeight + 1")  # no inner scroll
        numbers = table.locator("td.num").all_inner_texts()
        assert numbers and all(re.fullmatch(r"\d+(\.\d\d)?", n) for n in numbers), numbers
        expect(page.get_by_text("Error", exact=True)).to_have_count(0)
        page.screenshot(path=str(out / "space-leaderboard.png"), full_page=True)
        page.get_by_role("tab", name="Search").click()
        # Words: the ones it does not know are named; all-unknown words are that message, not results
        page.locator("#words textarea").fill("a black leather handbag")
        page.locator("#search-words").click()
        expect(page.locator("#words-note")).to_contain_text("ignored (not in its vocabulary): leather, handbag")
        expect(page.locator("#status")).to_contain_text("the words “a black leather handbag”: top 10 of Fashion-MNIST real photos in LookBench's format")
        expect(page.locator("#query-image img")).to_have_count(0)  # the earlier query's image is not these results'
        expect(page.locator("#column-b")).to_be_hidden()  # one model reads words: no empty second panel
        expect(tiles_a).to_have_count(10)
        page.locator("#words textarea").fill("leather handbag")
        page.locator("#search-words").click()
        expect(page.locator("#status")).to_contain_text("No word of “leather handbag” is one the text tower knows")
        expect(tiles_a).to_have_count(0)
    _stack([shot, photos], out / "space-search.png")
    for name in ("space-search.png", "space-leaderboard.png"):
        _not_blank(out / name)
        if os.environ.get("LOOKBENCH_SCREENSHOTS"):  # how the README's screenshots are refreshed
            Image.open(out / name).convert("RGB").quantize(128).save(Path(os.environ["LOOKBENCH_SCREENSHOTS"]) / name, optimize=True)


def _stack(paths, target: Path) -> None:
    images = [Image.open(p).convert("RGB") for p in paths]
    canvas = Image.new("RGB", (max(i.width for i in images), sum(i.height for i in images) + 12 * (len(images) - 1)), "white")
    y = 0
    for image in images:
        canvas.paste(image, (0, y))
        y += image.height + 12
    canvas.save(target)
