"""The review form in Debian's chromium at 1280×800 (issue 54): the image, the category, every attribute and Accept
inside the viewport for the widest category; the focus on the form when the page opens, so the first key counts; a
digit and a few letters replace a field's value; a category change keeps each correction still valid; a refused
accept names its field beside it and keeps the rest."""
from __future__ import annotations

import pytest

from lookbench.dataset_builder.decisions import DecisionStore
from lookbench.dataset_builder.taxonomy import Taxonomy

from tests.helpers.annotated_release import write_annotated
from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.review_app import serve  # noqa: F401  (serve: a fixture)

# The test taxonomy widened: tops with six attributes, one more than LookBench-Mini's widest category (outerwear, 5).
WIDE = Taxonomy.of("wide-taxonomy", "1", {
    "tops": {"colour": ["red", "blue", "green", "black"], "sleeve": ["short", "long"], "cuff": ["plain", "ribbed"],
             "fit": ["slim", "loose"], "neckline": ["round", "v-neck"], "pattern": ["plain", "striped"]},
    "skirts": {"colour": ["red", "blue", "green", "black"], "length": ["mini", "maxi"]},
}, main="colour")


def inside(page, locator) -> dict:
    box = locator.bounding_box()
    size = page.viewport_size
    assert box and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= size["width"] + 1 \
        and box["y"] + box["height"] <= size["height"] + 1, (box, size)
    return box


def values(page) -> list[str]:
    fields = page.locator("#review-fields input")
    return [fields.nth(i).input_value() for i in range(fields.count()) if fields.nth(i).is_visible()]


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_the_form_fits_takes_the_focus_and_its_keys_replace_values(tmp_path, serve):
    from playwright.sync_api import expect

    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=3, street=True)
    WIDE.write(raw / "taxonomy.json")
    served = serve(raw, "--reviewer", "kim", "--overlap", "1", "--shared", "0")
    store = DecisionStore(raw)
    with chromium_page(tmp_path / "profile", 1280, 800) as page:
        page.goto(served.url)  # no token: the page shows no item, only the refusal
        expect(page.get_by_text("no reviewer token").first).to_be_visible()
        assert page.locator("#review-header h3").count() == 0
        page.goto(served.link)
        header = page.locator("#review-header h3")
        expect(header).to_contain_text("RealStudioFlat/")
        key = header.inner_text()
        assert "token" not in page.locator("body").inner_text()
        expect(page.locator("#review-accept")).to_be_focused()  # the form has the focus: no click needed
        if truth[key]["category"] != "tops":  # the widest category, its seven fields
            page.keyboard.press("0")
            page.keyboard.type("to")
            page.keyboard.press("Enter")
        expect(page.locator("#review-fields input:visible")).to_have_count(7)
        inside(page, page.locator("#review-image img"))
        inside(page, page.locator("#review-accept"))
        fields = page.locator("#review-fields input:visible")
        for i in range(7):
            inside(page, fields.nth(i))
        # a digit opens a field with its value selected: what is typed replaces it, Enter picks the first match
        page.keyboard.press("1")
        page.keyboard.type("gr")
        page.keyboard.press("Enter")
        expect(fields.nth(1)).to_have_value("green")
        page.keyboard.press("4")
        page.keyboard.type("lo")
        page.keyboard.press("Enter")
        expect(fields.nth(4)).to_have_value("loose")
        # to skirts and back: the colour (allowed in both) stays corrected; fit (not a skirt's) goes back to the proposal
        page.keyboard.press("0")
        page.keyboard.type("sk")
        page.keyboard.press("Enter")
        expect(page.locator("#review-fields input:visible")).to_have_count(3)
        expect(fields.nth(1)).to_have_value("green")
        page.keyboard.press("0")
        page.keyboard.type("to")
        page.keyboard.press("Enter")
        expect(page.locator("#review-fields input:visible")).to_have_count(7)
        expect(fields.nth(1)).to_have_value("green")
        expect(fields.nth(4)).to_have_value("")  # not proposed, and the correction was not kept through skirts
        # fit, neckline and pattern are empty: the accept is refused beside each of them, the rest kept
        before = values(page)
        page.keyboard.press("a")
        for name in ("fit", "neckline", "pattern"):
            expect(page.get_by_text(f"{name}: choose a value or 'not applicable'")).to_be_visible()
        expect(page.get_by_text("colour: choose a value")).to_have_count(0)
        assert values(page) == before and header.inner_text() == key and store.events("kim") == []
        assert page.get_by_text("Error", exact=True).count() == 0
        for digit, start, value in (("4", "sl", "slim"), ("5", "ro", "round"), ("6", "st", "striped")):
            page.keyboard.press(digit)
            page.keyboard.type(start)
            page.keyboard.press("Enter")
            expect(fields.nth(int(digit))).to_have_value(value)
        page.keyboard.press("a")
        expect(header).not_to_have_text(key)
        [event] = store.events("kim")
        assert (event.item, event.category) == (key, "tops")
        assert event.attributes["colour"] == "green" and event.attributes["fit"] == "slim"
        assert (event.attributes["neckline"], event.attributes["pattern"]) == ("round", "striped")


def test_a_layered_proposal_names_its_proposer_beside_the_confidence(tmp_path):
    """A field proposed by a layered run (``annotate.layered``: ``source`` and ``by``) says which proposer gave it; a
    single proposer's field and an unanswered one read as before."""
    from lookbench.space.review.form import field_updates
    from lookbench.space.review.page import confidence
    from lookbench.space.review.session import open_review

    write_annotated(tmp_path / "raw", n=3)
    review, _ = open_review(tmp_path / "raw", overlap=1, shared=0)
    item = review.items[0]
    category = item.proposals["category"]["value"]
    colour = item.proposals["attributes"]["colour"]
    item.record["proposals"]["attributes"]["colour"] = {**colour, "confidence": 1.0, "source": "metadata",
                                                        "by": {"metadata": {"value": colour["value"], "confidence": 1.0}}}
    labels = [u["label"] for u in field_updates(review, item, category, item.proposed_values)]
    assert labels[1] == f"1. colour (main) — proposed {colour['value']} (1.00, by metadata)"
    assert labels[0] == f"category — proposed {category} ({item.proposals['category']['confidence']:.2f})"
    assert confidence({"value": None, "confidence": 0.0, "source": None, "by": {}}) == "not proposed"
