"""The review app (`lookbench review`) served by the real command and driven through gradio_client: two reviewers at
once, the shared sample, undo and skip, resuming, a server killed while decisions flow, refusals."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import pytest

from lookbench.dataset_builder.reviewed_labels import verdicts
from lookbench.dataset_builder.decisions import DecisionStore, current
from lookbench.space.review.session import open_review

from tests.helpers.annotated_release import NA, TAXONOMY, write_annotated
from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.review_app import answer, review_all, reviewing_at_once, serve, shown_key  # noqa: F401  (serve: a fixture)


@pytest.mark.slow
def test_two_reviewers_at_once_lose_nothing_and_share_the_sample(tmp_path, serve):
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=24, street=True)
    served = serve(raw, "--overlap", "2", "--shared", "6", preloaded=False)  # once as `python -m lookbench` itself
    assert "24 items" in "".join(served.output) and "shared sample 6 items x 2 reviewers" in "".join(served.output)
    acknowledged = reviewing_at_once(served, truth, ["alice", "bob"])
    store = DecisionStore(raw)
    shared = json.loads((raw / "reviews" / "plan.json").read_text())["shared"]
    for name, keys in acknowledged.items():
        events = store.events(name)
        assert [e.item for e in events] == keys  # every acknowledged decision is on disk, in order, nothing else
        assert all(e.reviewer == name and e.time and e.image_sha256 for e in events)
        assert set(shared) <= set(keys)  # both saw the whole shared sample
    found = verdicts(store)
    assert set(found) == set(truth)  # every item labelled by someone, and everything agrees with the truth
    assert all(v.agreed and set(v.labels) == {"alice", "bob"} for k, v in found.items() if k in shared)
    for key, verdict in found.items():
        event = next(iter(verdict.labels.values()))
        assert (event.category, event.attributes) == (truth[key]["category"], truth[key]["attributes"])
    non_shared = [k for keys in acknowledged.values() for k in keys if k not in shared]
    assert sorted(non_shared) == sorted(set(truth) - set(shared))  # outside the sample each item once


@pytest.mark.slow
def test_skip_undo_refusals_and_resume(tmp_path, serve):
    from gradio_client.exceptions import AppError, ValidationError

    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=6)
    served = serve(raw, "--reviewer", "carol", "--overlap", "1", "--shared", "0")
    client = served.client()
    view = client.predict(api_name="/begin")
    first = shown_key(view)
    assert view[4]["label"].startswith("category — proposed") and view[5]["value"] is not None  # prefilled
    view = client.predict(api_name="/skip")
    second = shown_key(view)
    assert second != first
    wrong = answer(truth[second])
    wrong[1] = NA  # the main attribute (colour) cannot be "not applicable"
    with pytest.raises(ValidationError, match="main attribute"):  # beside its field (issue 54)
        client.predict(*wrong, api_name="/accept")
    blank = answer(truth[second])
    blank[2] = None
    with pytest.raises(ValidationError, match="choose a value"):
        client.predict(*blank, api_name="/accept")
    corrected = answer(truth[second])
    view = client.predict(*corrected, api_name="/accept")
    third = shown_key(view)
    view = client.predict(api_name="/undo")  # takes back the label of `second`, which is shown again, as decided
    assert shown_key(view) == second and view[4]["value"] == truth[second]["category"]
    assert [u["value"] for u in view[5:5 + len(truth[second]["attributes"])]] == corrected[1:1 + len(truth[second]["attributes"])]
    assert second not in current(DecisionStore(raw).events("carol"))  # taken back: no label of it in force
    view = client.predict(*corrected, api_name="/accept")
    assert shown_key(view) == third
    served.stop()
    # A new server resumes where carol stopped: the items she has not decided, her skipped one last.
    again = serve(raw, "--reviewer", "carol")
    view = again.client().predict(api_name="/begin")
    assert shown_key(view) == third
    done = {e.item for e in current(DecisionStore(raw).events("carol")).values() if e.action == "label"}
    assert done == {second}
    with pytest.raises(AppError, match="not valid"):  # the first server's link ended with it (issue 54)
        again.client(served.link.split("token=")[1]).predict(api_name="/begin")


@pytest.mark.slow
def test_a_server_killed_while_decisions_flow_loses_no_acknowledged_one(tmp_path, serve):
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=40)
    served = serve(raw, "--overlap", "1", "--shared", "0")
    acknowledged, failures = [], []
    client = served.invited("dave")

    def decide():
        try:
            review_all(client, truth, acknowledged)
        except Exception as err:  # the kill cuts the connection: expected
            failures.append(err)

    worker = threading.Thread(target=decide)
    worker.start()
    while len(acknowledged) < 10 and worker.is_alive():
        threading.Event().wait(0.05)
    served.stop(signal.SIGKILL)  # while requests are in flight
    worker.join(timeout=120)
    assert failures and 10 <= len(acknowledged) < 40
    folder = raw / "reviews" / "dave"
    files = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    bodies = [json.loads(p.read_text()) for p in files]  # every file whole
    assert [b["seq"] for b in bodies] == list(range(1, len(bodies) + 1))
    on_disk = [b["item"] for b in bodies]
    assert on_disk[:len(acknowledged)] == acknowledged and len(on_disk) - len(acknowledged) <= 1  # one written, not yet answered
    again = serve(raw, "--reviewer", "dave")
    view = again.invited("dave").predict(api_name="/begin")
    assert shown_key(view) not in on_disk and shown_key(view) in truth
    assert len(DecisionStore(raw).events("dave")) == len(bodies)


@pytest.mark.slow
def test_a_disputed_item_goes_back_once_to_each_reviewer_with_the_others_choice(tmp_path, serve):
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=4)
    served = serve(raw, "--overlap", "2", "--shared", "1")
    shared = json.loads((raw / "reviews" / "plan.json").read_text())["shared"][0]
    ann, ben = served.invited("ann"), served.invited("ben")
    view = ann.predict(api_name="/begin")
    assert shown_key(view) == shared
    view = ann.predict(*answer(truth[shared]), api_name="/accept")
    waiting = shown_key(view)  # ann's next item, shown before ben disagrees
    view = ben.predict(api_name="/begin")
    assert shown_key(view) == shared
    changed = answer(truth[shared])
    changed[1] = "green" if changed[1] != "green" else "red"
    ben.predict(*changed, api_name="/accept")
    view = ann.predict(*answer(truth[waiting]), api_name="/accept")  # her next step brings the dispute
    assert shown_key(view) == shared and f"**Disputed** — ben chose colour {changed[1]!r}" in view[0]
    view = ann.predict(*answer(truth[shared]), api_name="/accept")  # she keeps hers: not shown to her again
    assert shown_key(view) != shared
    assert not verdicts(DecisionStore(raw))[shared].agreed


def test_a_release_without_proposals_is_refused_in_one_line(tmp_path):
    from tests.helpers.raw_release import write_release

    raw = write_release(tmp_path / "raw")
    TAXONOMY.write(raw / "taxonomy.json")
    result = subprocess.run([sys.executable, "-m", "lookbench", "review", str(raw)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "has no rows with proposals" in result.stderr




@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_keyboard_in_a_browser_accepts_skips_and_undoes(tmp_path, serve):
    """A reviewer's keys in Debian's chromium: `a` accepts the proposals as shown, `s` skips, `u` undoes; the street
    photo is shown beside a street look's crop."""
    from playwright.sync_api import expect

    raw = tmp_path / "raw"
    write_annotated(raw, n=6, street=True)
    served = serve(raw, "--reviewer", "kim", "--overlap", "1", "--shared", "0")
    store = DecisionStore(raw)
    with chromium_page(str(tmp_path / "profile"), 1400, 1200) as page:
        page.goto(served.link)
        header = page.locator("h3").first
        expect(header).to_contain_text("RealStudioFlat/")
        first = header.inner_text()
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("a")
        expect(header).not_to_have_text(first)
        events = store.events("kim")
        assert [(e.action, e.item) for e in events] == [("label", first)]
        item = next(i for i in open_review(raw)[0].items if i.key == first)
        proposed = {n: e["value"] for n, e in item.proposals["attributes"].items()}
        assert events[0].attributes == proposed  # accept-all: the proposals, as shown
        second = header.inner_text()
        page.keyboard.press("s")
        expect(header).not_to_have_text(second)
        page.keyboard.press("u")
        expect(header).to_have_text(second)
        assert [e.action for e in store.events("kim")] == ["label", "skip", "undo"]
        street = [i.key for i in open_review(raw)[0].items if i.record.get("raw_image")]
        photo = expect(page.locator("#review-street img"))
        photo.to_be_visible() if second in street else photo.to_be_hidden()  # a street look's photo, only there


@pytest.mark.slow
def test_a_crawls_words_are_text_on_the_page_and_a_malformed_choice_is_one_line(tmp_path, serve):
    """A shop title is anyone's: a Markdown link or image in it reaches the reviewer's page escaped, never live; a
    category or value that is not text (the API takes any JSON) is refused in one line."""
    from gradio_client.exceptions import ValidationError

    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=2)
    hostile = "[Accept — required](https://evil.example) ![](https://evil.example/p.png) <b>bold</b>"
    for path in raw.glob("*/*.jsonl"):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(json.dumps({**r, "title": hostile}) + "\n" for r in lines), encoding="utf-8")
    served = serve(raw, "--reviewer", "dana", "--overlap", "1", "--shared", "0")
    client = served.client()
    view = client.predict(api_name="/begin")
    header = view[0]
    assert "\\[Accept — required\\](https://evil.example) !\\[\\](https://evil.example/p.png) \\<b\\>bold\\</b\\>" in header
    key = shown_key(view)
    for slot in (0, 1):
        malformed = answer(truth[key])
        malformed[slot] = ["x"]
        with pytest.raises(ValidationError, match="choose a category|is not a value"):
            client.predict(*malformed, api_name="/accept")
    assert shown_key(client.predict(api_name="/begin")) == key  # nothing was decided
