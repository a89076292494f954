"""The review app served by the real command with hostile items (issue 53): an item whose box or street photo cannot
be drawn is shown and skipped, never stuck, and a failed view writes no skip for the item before it; in Chromium a
crawl's words are text — no bare URL becomes a link, no markup runs."""
from __future__ import annotations

import json

import pytest

from lookbench.dataset_builder.decisions import DecisionStore

from tests.annotate.test_crawl_doors import bomb_png
from tests.dataset_builder.test_review_doors import CONFIG, edit_rows
from tests.helpers.annotated_release import write_annotated
from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.review_app import serve, shown_key  # noqa: F401  (serve: a fixture)


def hostile_release(raw):
    """Six items, every query a street look: the first with a flipped box, the second with a bomb for a photo."""
    write_annotated(raw, n=6, street=True)
    (raw / CONFIG / "images" / "bomb.png").write_bytes(bomb_png())
    looks = iter(["flipped", "bomb"])

    def change(row):
        kind = next(looks, None) if row.get("raw_image") else None
        if kind == "flipped":
            row["bbox"] = [90.0, 20.0, 20.0, 110.0]
        elif kind == "bomb":
            row["raw_image"] = "images/bomb.png"
        return {**row, "description": "visit https://evil.example or www.evil.example <img src=x onerror=alert(1)>"}

    edit_rows(raw, change)


@pytest.mark.slow
def test_no_item_stops_the_queue_and_each_skip_is_the_shown_items(tmp_path, serve):
    raw = tmp_path / "raw"
    hostile_release(raw)
    served = serve(raw, "--reviewer", "sam", "--overlap", "1", "--shared", "0")
    client = served.client()
    view = client.predict(api_name="/begin")
    shown, headers = [shown_key(view)], [view[0]]
    for _ in range(6):
        view = client.predict(api_name="/skip")  # every view answers: a skip moves to the next item
        shown.append(shown_key(view))
        headers.append(view[0])
    skipped = [e.item for e in DecisionStore(raw).events("sam")]
    assert skipped == shown[:6] and len(set(skipped)) == 6  # one skip per item, each the one on the page
    assert shown[6] in skipped  # then the skipped ones come back, the broken ones among them
    assert any("bbox not drawn" in h for h in headers) and any("decompression bomb" in h for h in headers)


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_in_a_browser_a_crawls_words_link_nothing_and_run_nothing(tmp_path, serve):
    from playwright.sync_api import expect

    raw = tmp_path / "raw"
    hostile_release(raw)
    served = serve(raw, "--reviewer", "kim", "--overlap", "1", "--shared", "0")
    with chromium_page(str(tmp_path / "profile"), 1400, 1200) as page:
        alerts = []
        page.on("dialog", lambda dialog: (alerts.append(dialog.message), dialog.dismiss()))
        page.goto(served.link)
        words = page.locator(".lookbench-text").first
        expect(words).to_contain_text("visit https://evil.example or www.evil.example <img src=x onerror=alert(1)>")
        assert page.locator("a[href]", has_text="evil.example").count() == 0
        assert page.locator("img[src='x']").count() == 0 and not alerts
        header = page.locator("h3").first
        for _ in range(6):  # through the broken items too
            before = header.inner_text()
            page.locator("body").click(position={"x": 5, "y": 5})
            page.keyboard.press("s")
            expect(header).not_to_have_text(before)
            if "Nothing left" in header.inner_text():
                break
        assert len({e.item for e in DecisionStore(raw).events("kim")}) == len(DecisionStore(raw).events("kim"))
    assert json.loads((raw / "reviews" / "plan.json").read_text())["overlap"] == 1
