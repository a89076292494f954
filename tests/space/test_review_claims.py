"""Claims and bulk accept in the served review app (issue 54): an item on a page that closed goes to the next reviewer
at once, one on a silent page within the claim's expiry (a minute by default); a bulk accept takes only the filtered
items above the confidence, as normal label events of its reviewer, never a shared-sample item."""
from __future__ import annotations

import json
import time

import pytest

from lookbench.dataset_builder.decisions import DecisionStore
from lookbench.space.review import session
from lookbench.space.review.bulk import lowest_confidence
from lookbench.space.review.session import open_review

from tests.helpers.annotated_release import write_annotated
from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.review_app import serve, shown_key  # noqa: F401  (serve: a fixture)


def offered(client, timeout: float) -> str | None:
    """The item the page gives the client's reviewer, asked again until one comes or ``timeout`` seconds pass."""
    end = time.monotonic() + timeout
    while (key := shown_key(client.predict(api_name="/begin"))) is None and time.monotonic() < end:
        time.sleep(0.5)
    return key


def test_a_claim_lasts_a_minute_at_most_and_the_heartbeat_comes_well_within_it(monkeypatch):
    monkeypatch.delenv(session.CLAIM_SETTING, raising=False)
    assert session.claim_seconds() == session.CLAIM_SECONDS <= 60
    monkeypatch.setenv(session.CLAIM_SETTING, "600")
    assert session.claim_seconds() == 60  # a setting only shortens it


@pytest.mark.slow
def test_a_silent_claim_expires_and_another_reviewer_gets_the_item(tmp_path, serve, monkeypatch):
    raw = tmp_path / "raw"
    write_annotated(raw, n=1)
    monkeypatch.setenv(session.CLAIM_SETTING, "3")
    served = serve(raw, "--overlap", "1", "--shared", "0")
    ann, ben = served.invited("ann"), served.invited("ben")
    only = shown_key(ann.predict(api_name="/begin"))  # ann's client sends no heartbeat: a page gone silent
    assert only is not None
    assert shown_key(ben.predict(api_name="/begin")) is None  # held for ann
    started = time.monotonic()
    assert offered(ben, 30) == only and time.monotonic() - started < 15


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_a_closed_page_releases_its_item_at_once_and_an_open_one_keeps_it(tmp_path, serve, monkeypatch):
    from playwright.sync_api import expect

    raw = tmp_path / "raw"
    write_annotated(raw, n=1)
    monkeypatch.setenv(session.CLAIM_SETTING, "6")  # the page's heartbeat every 2 s keeps it
    served = serve(raw, "--reviewer", "ann", "--overlap", "1", "--shared", "0")
    ben = served.invited("ben")
    with chromium_page(tmp_path / "profile", 1280, 800) as page:
        page.goto(served.link)
        expect(page.locator("#review-header h3")).to_contain_text("RealStudioFlat/")
        only = page.locator("#review-header h3").inner_text()
        time.sleep(9)  # longer than the claim: only the heartbeat keeps it
        assert shown_key(ben.predict(api_name="/begin")) is None
        page.close()
        started = time.monotonic()
        assert offered(ben, 30) == only
        assert time.monotonic() - started < 5  # released by the page's closing, not by the expiry


@pytest.mark.slow
def test_bulk_accept_takes_only_the_filtered_items_above_the_confidence(tmp_path, serve):
    raw = tmp_path / "raw"
    write_annotated(raw, n=15)
    served = serve(raw, "--overlap", "2", "--shared", "3")
    shared = set(json.loads((raw / "reviews" / "plan.json").read_text())["shared"])
    items = open_review(raw)[0].items
    expected = sorted(i.key for i in items if i.key not in shared and i.proposals["category"]["value"] == "tops"
                      and lowest_confidence(i) >= 0.8)
    above = [i.key for i in items if lowest_confidence(i) >= 0.8 and i.proposals["category"]["value"] == "tops"]
    assert expected and set(above) & shared  # a shared item passes the filter: it must still be left out
    fay = served.invited("fay")
    preview = fay.predict("RealStudioFlat", "tops", 0.8, api_name="/bulk_preview")
    assert preview.startswith(f"**{len(expected)} item(s)**")
    done = fay.predict("RealStudioFlat", "tops", 0.8, api_name="/bulk_accept")
    assert done.startswith(f"**{len(expected)} item(s) accepted** as fay")
    events = DecisionStore(raw).events("fay")
    assert sorted(e.item for e in events) == expected and not {e.item for e in events} & shared
    by_key = {i.key: i for i in items}
    for event in events:  # each a normal label: the proposals, as shown, bound to the image
        assert event.action == "label" and event.reviewer == "fay" and event.image_sha256
        assert event.category == "tops" and event.attributes == by_key[event.item].proposed_values
    again = fay.predict("RealStudioFlat", "tops", 0.8, api_name="/bulk_preview")
    assert again.startswith("**0 item(s)**")  # nothing twice


def test_gold_items_are_never_claimed_from_another_reviewer_nor_accepted_in_bulk(tmp_path):
    """Each reviewer answers every gold item on their own: one shown to ann is still given to ben, and a bulk accept
    at any confidence leaves gold out (and the shared sample), so gold accuracy rests on items chosen one by one."""
    from lookbench.dataset_builder.review.items import GoldItem
    from lookbench.space.review.bulk import ALL, candidates

    from tests.dataset_builder.test_gold import write_gold

    write_annotated(tmp_path / "raw", n=12)
    write_gold(tmp_path / "gold", n=4)
    review, _ = open_review(tmp_path / "raw", overlap=2, shared=2, gold=tmp_path / "gold" / "gold.jsonl", gold_rate=0.5)
    golds = {item.key for item in review.items if isinstance(item, GoldItem)}
    assert len(golds) == 4
    found = candidates(review, "ann", ALL, ALL, 0.0)
    assert found and not {i.key for i in found} & (golds | set(review.plan.shared))
    assert len(found) == 12 - 2
    while (item := review.next_for("ann", "page-a")) is not None and item.key not in golds:
        review.store.add("ann", "skip", item.key)
    assert item is not None and item.key in golds  # ann's page holds a gold item now
    assert item.key in {i.key for i in review.open_to("ben")}  # still ben's to answer
