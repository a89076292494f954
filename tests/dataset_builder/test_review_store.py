"""The decision store and the plan: events written whole, undo and skip, damaged files named, reviewer names
refused, a writer SIGKILLed mid-write leaving no torn file, the shared sample and each reviewer's queue."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from lookbench.dataset_builder.review.items import read_items
from lookbench.dataset_builder.reviewed_labels import verdicts
from lookbench.dataset_builder.review.plan import Plan, queue
from lookbench.dataset_builder.decisions import (
    LABEL,
    SKIP,
    UNDO,
    DecisionStore,
    ReviewError,
    check_reviewer,
    current,
)

from tests.helpers.annotated_release import write_annotated


@pytest.fixture
def raw(tmp_path):
    root = tmp_path / "raw"
    write_annotated(root, n=9)
    return root


def test_events_are_kept_in_order_and_undo_takes_back_the_latest(raw):
    store = DecisionStore(raw)
    store.add("ann", LABEL, "RealStudioFlat/query/item-000", category="tops", attributes={"colour": "red"})
    store.add("ann", SKIP, "RealStudioFlat/gallery/item-001")
    undo = store.add("ann", UNDO)
    assert undo.undoes == 2 and undo.item == "RealStudioFlat/gallery/item-001"
    events = store.events("ann")
    assert [(e.seq, e.action) for e in events] == [(1, LABEL), (2, SKIP), (3, UNDO)]
    assert list(current(events)) == ["RealStudioFlat/query/item-000"]
    store.add("ann", UNDO)
    assert current(store.events("ann")) == {}
    with pytest.raises(ReviewError, match="ann has nothing to undo"):
        store.add("ann", UNDO)
    body = json.loads((raw / "reviews" / "ann" / "00000001.json").read_text())
    assert body["reviewer"] == "ann" and body["time"].endswith("+00:00") and body["format"] == 1


@pytest.mark.parametrize("name", ["", ".hidden", "../x", "a/b", "x" * 65, "é", None])
def test_reviewer_names_that_could_not_name_a_folder_are_refused(name):
    with pytest.raises(ReviewError, match="reviewer name"):
        check_reviewer(name)


def test_a_damaged_or_foreign_decision_file_is_named(raw):
    store = DecisionStore(raw)
    store.add("ann", SKIP, "RealStudioFlat/query/item-000")
    path = raw / "reviews" / "ann" / "00000002.json"
    path.write_text('{"format": 1, "seq": 2, "reviewer": "bob", "action": "skip", "item": "x"}')
    with pytest.raises(ReviewError, match=r"00000002.json: its reviewer or seq disagrees"):
        store.events("ann")
    path.write_text("{not json")
    with pytest.raises(ReviewError, match=r"00000002.json: not a decision file"):
        store.events("ann")
    path.unlink()
    (raw / "reviews" / "ann" / "notes.txt").write_text("hi")
    with pytest.raises(ReviewError, match=r"notes.txt: not a decision file"):
        store.events("ann")


WRITER = """
import sys
from lookbench.dataset_builder.decisions import DecisionStore, LABEL
store = DecisionStore(sys.argv[1])
print("ready", flush=True)
for i in range(100000):
    store.add("loop", LABEL, f"RealStudioFlat/gallery/item-{i:06d}", category="tops",
              attributes={"colour": "red", "sleeve": "short", "cuff": "x" * 4000})
"""


def test_a_writer_killed_mid_write_leaves_no_torn_file_and_the_next_write_clears_its_leftovers(raw):
    folder = raw / "reviews" / "loop"
    for round_ in range(5):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(raw)], stdout=subprocess.PIPE, text=True)
        assert writer.stdout.readline().strip() == "ready"
        before = len(list(folder.glob("*.json"))) if folder.exists() else 0
        while len(list(folder.glob("*.json"))) < before + 20:
            time.sleep(0.01)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        events = DecisionStore(raw).events("loop")  # parses every file: a torn one would raise
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert all(e.attributes["cuff"] == "x" * 4000 for e in events)
    DecisionStore(raw).add("loop", SKIP, "RealStudioFlat/gallery/item-000000")
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # a killed writer's temporary file is gone
    assert not list((raw / "reviews").glob(".loop.lock"))


def test_the_plan_is_drawn_once_and_every_reviewer_works_to_it(raw):
    items, problems = read_items(raw)
    assert problems == [] and len(items) == 9
    for overlap, shared, refusal in ((0, 3, "--overlap 0: at least 1 reviewer"), (2, -1, "--shared -1: the shared sample")):
        with pytest.raises(ReviewError, match=refusal):
            Plan.open(raw, items, overlap=overlap, shared=shared)
    assert not (raw / "reviews" / "plan.json").exists()
    plan = Plan.open(raw, items, overlap=2, shared=3)
    assert Plan.open(raw, items) == plan and len(plan.shared) == 3
    with pytest.raises(ReviewError, match="planned with --overlap 2 and a shared sample of 3"):
        Plan.open(raw, items, overlap=3)
    store = DecisionStore(raw)
    order = [item.key for item in queue(plan, items, store, "ann")]
    assert set(order[:3]) == set(plan.shared) and len(order) == 9
    for key in order[:4]:  # ann: the shared sample and one more
        store.add("ann", LABEL, key, category="tops", attributes={"colour": "red"})
    store.add("ann", SKIP, order[4])
    assert [i.key for i in queue(plan, items, store, "ann")][-1] == order[4]  # skipped: last
    bob = [item.key for item in queue(plan, items, store, "bob")]
    assert set(bob[:3]) == set(plan.shared)  # the shared sample needs a second reviewer
    assert order[3] not in bob and order[4] in bob  # ann's label is done for everyone; her skip is not
    for key in plan.shared:
        store.add("bob", LABEL, key, category="tops", attributes={"colour": "blue" if key == plan.shared[0] else "red"})
    assert not set(plan.shared) & {i.key for i in queue(plan, items, store, "cyd")}  # two reviewers each: complete
    found = verdicts(store)
    assert not found[plan.shared[0]].agreed and all(found[k].agreed for k in plan.shared[1:])
    # A dispute goes back once to each reviewer in it, before fresh items, to keep or change their label.
    for name in ("ann", "bob"):
        assert [i.key for i in queue(plan, items, store, name)][0] == plan.shared[0]
    store.add("ann", LABEL, plan.shared[0], category="tops", attributes={"colour": "red"})  # ann keeps hers
    assert plan.shared[0] not in {i.key for i in queue(plan, items, store, "ann")}
    store.add("bob", LABEL, plan.shared[0], category="tops", attributes={"colour": "red"})  # bob changes his
    assert verdicts(store)[plan.shared[0]].agreed
    assert plan.shared[0] not in {i.key for i in queue(plan, items, store, "bob")}


def test_rows_that_cannot_be_keyed_are_named(raw):
    path = raw / "RealStudioFlat" / "gallery.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    path.write_text("\n".join(lines + [json.dumps(first), json.dumps({**first, "item_id": 7}), "[1]"]) + "\n")
    items, problems = read_items(raw)
    assert len(items) == 9
    assert problems == [
        f"RealStudioFlat/gallery.jsonl line {len(lines) + 1}: item_id {first['item_id']!r} repeats line 1; a review names "
        "an item by its subset, split and item_id",
        f"RealStudioFlat/gallery.jsonl line {len(lines) + 2}: no item_id to key its review by",
        f"RealStudioFlat/gallery.jsonl line {len(lines) + 3}: not a JSON object but a JSON list",
    ]


def test_audit_and_review_of_a_folder_that_is_no_annotated_release_are_one_line(tmp_path, capsys):
    from lookbench import cli

    from tests.helpers.raw_release import write_release

    plain = write_release(tmp_path / "plain")
    assert cli.main(["audit", str(plain)]) == 2
    assert capsys.readouterr().err.strip() == (f"lookbench audit: error: {plain} has no taxonomy.json; audit an annotated "
                                               "release (lookbench annotate --out RAW)")
    assert cli.main(["review", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip() == f"lookbench review: error: Raw release folder {tmp_path / 'missing'} does not exist"
    assert cli.main(["review", str(plain), "--reviewer", "../x"]) == 2
    assert "reviewer name '../x' is not 1-64 ASCII letters" in capsys.readouterr().err
