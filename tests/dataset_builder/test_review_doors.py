"""What a hostile release or decision store carries into the review and the build (issue 53): no item stops the
review, the page shows a crawl's words and other reviewers' values as text, every label binds its image, echoed
values are cut, reserved reviewer names are refused up front, and an audit file's claims are checked before the
card re-renders them."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lookbench import cli
from lookbench.dataset_builder.decisions import LABEL, DecisionStore, ReviewError, check_reviewer
from lookbench.dataset_builder.review.audit import audit_release
from lookbench.dataset_builder.review.audit_file import checked
from lookbench.space.review.page import header_of
from lookbench.space.review.session import open_review

from tests.annotate.test_crawl_doors import bomb_png
from tests.helpers.annotated_release import review_from_truth, write_annotated

CONFIG = "RealStudioFlat"


def edit_rows(raw, change) -> None:
    """Rewrite every row of the release through ``change(row) -> row``."""
    for path in raw.glob("*/*.jsonl"):
        rows = [change(json.loads(line)) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def street_items(review):
    return [item for item in review.items if item.record.get("raw_image")]


def test_no_box_or_picture_stops_a_review_view(tmp_path):
    raw = tmp_path / "raw"
    write_annotated(raw, n=9, street=True)
    flipped, bomb, *_ = [r for r in (raw / CONFIG / "query.jsonl").read_text().splitlines()]
    (raw / CONFIG / "images" / "bomb.png").write_bytes(bomb_png())

    def change(row):
        if row["item_id"] == json.loads(flipped)["item_id"]:
            row["bbox"] = [90.0, 20.0, 20.0, 110.0]
        if row["item_id"] == json.loads(bomb)["item_id"]:
            row["raw_image"] = "images/bomb.png"
        return row

    edit_rows(raw, change)
    review, _ = open_review(raw, overlap=1, shared=0)
    first, second = street_items(review)[:2]
    image, street, problems = review.pictures(first)
    assert image is not None and street is not None  # shown, the box not drawn
    assert problems == ["bbox not drawn: bad bbox [90.0, 20.0, 20.0, 110.0]: needs x1 > x0 and y1 > y0"]
    assert "**bbox not drawn: bad bbox \\[90.0, 20.0, 20.0, 110.0\\]: needs x1 \\> x0 and y1 \\> y0**" in header_of(
        review, first, "ann", problems)
    image, street, problems = review.pictures(second)
    assert image is not None and street is None
    assert len(problems) == 1 and problems[0].startswith(
        "raw_image unreadable: 'images/bomb.png': refused as a decompression bomb (Image size (400000000 pixels)")


def test_the_header_shows_words_and_disputed_values_as_text(tmp_path):
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=3)
    edit_rows(raw, lambda row: {**row, "description": "see https://evil.example and www.evil.example or a@evil.example "
                                                      "<img src=x onerror=alert(1)> " + "z" * 9000})
    review, _ = open_review(raw, overlap=2, shared=3)
    item = review.items[0]
    labels = truth[item.key]
    names = list(review.taxonomy.categories[labels["category"]].attributes)
    review.decide("ann", item.key, labels["category"], [labels["attributes"][n] for n in names])
    hostile = "<b>x</b> [go](https://evil.example) " + "w" * 500
    sha = review.image_sha256(item)
    DecisionStore(raw).add("ben", LABEL, item.key, category=labels["category"], image_sha256=sha,
                           attributes={**labels["attributes"], "colour": hostile})
    header = header_of(review, item, "ann")
    words = header.split("\n\n")[1]
    assert words.startswith('<a class="lookbench-text">') and words.endswith("</a>")  # marked links nothing inside
    assert "\\<img src=x onerror=alert(1)\\>" in words and "<img" not in words.replace("\\<img", "")
    assert len(words) < 4096 + 200  # the description cut to the crawl-text cap
    disputed = header.split("**Disputed** — ")[1]
    assert disputed.startswith("ben chose colour '\\<b\\>x\\</b\\> \\[go\\](https://evil.example) www")
    assert "w…. Keep your label" in disputed and len(disputed) < 200  # the value cut, as text


def test_a_label_binds_its_image_and_a_refused_value_is_echoed_cut(tmp_path):
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=3)
    review, _ = open_review(raw, overlap=1, shared=0)
    item = review.items[0]
    labels = truth[item.key]
    names = list(review.taxonomy.categories[labels["category"]].attributes)
    values = [labels["attributes"][n] for n in names]
    with pytest.raises(ReviewError) as refused:
        review.decide("ann", item.key, labels["category"], ["x" * 100_000, *values[1:]])
    assert len(str(refused.value)) < 200 and "xxx… is not a value of" in str(refused.value)
    with pytest.raises(ReviewError) as refused:
        review.decide("ann", item.key, "y" * 100_000, values)
    assert len(str(refused.value)) < 120
    (raw / CONFIG / item.record["image"]).unlink()
    with pytest.raises(ReviewError, match=rf"{item.key} cannot be labelled: .*; skip it"):
        review.decide("ann", item.key, labels["category"], values)
    assert DecisionStore(raw).events("ann") == []  # nothing written by a refused decision


def test_a_label_without_image_sha256_is_refused_by_the_build_by_name(tmp_path, capsys):
    raw = tmp_path / "raw"
    truth = write_annotated(raw, n=3)
    store = DecisionStore(raw)
    for key, labels in truth.items():
        store.add("ann", LABEL, key, category=labels["category"], attributes=labels["attributes"])
    assert cli.main(["build", "--source", "raw", "--input", str(raw), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "3 invalid row(s)" in err
    assert "the label of ann records no image_sha256 (reviews/ann/00000001.json); review it again" in err


@pytest.mark.parametrize("name", ["plan.json", "PLAN.json"])
def test_reserved_reviewer_names_are_refused(name):
    with pytest.raises(ReviewError, match="is reserved"):
        check_reviewer(name)


def test_a_name_taken_by_a_file_of_the_store_is_refused_at_the_start_in_one_line(tmp_path):
    raw = tmp_path / "raw"
    write_annotated(raw, n=3)
    (raw / "reviews").mkdir()
    (raw / "reviews" / "notes").write_text("a file, not a reviewer's folder")
    with pytest.raises(ReviewError) as refused:
        DecisionStore(raw).add("notes", "skip", f"{CONFIG}/query/item-000")
    assert str(refused.value) == ("reviewer name 'notes' is taken by reviews/notes, which is not a reviewer's folder; "
                                  "choose another name")
    result = subprocess.run([sys.executable, "-m", "lookbench", "review", str(raw), "--reviewer", "plan.json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and result.stderr.strip().count("\n") == 0
    assert "reviewer name 'plan.json' is reserved" in result.stderr and str(tmp_path) not in result.stderr


def _reviewed(raw, n, prefix="item", month=6):
    truth = write_annotated(raw, n=n, prefix=prefix, month=month)
    review, _ = open_review(raw, overlap=1, shared=0)
    review_from_truth(review, truth, "oracle")
    return truth


def test_an_audit_file_is_checked_before_the_card_renders_it_and_names_are_escaped(tmp_path, capsys):
    first, second, out = tmp_path / "raw-june", tmp_path / "raw-july", tmp_path / "built"
    _reviewed(first, 6)
    _reviewed(second, 6, prefix="july", month=7)
    edit_rows(first, lambda row: {**row, "proposer": {"name": "`x` <script>alert(1)</script> [a](http://e)", "revision": "r"}})
    assert cli.main(["build", "--source", "raw", "--input", str(first), "--out", str(out), "--quiet"]) == 0
    card = (out / "README.md").read_text()
    assert "Labels were proposed by \\`x\\` \\<script\\>alert(1)\\</script\\> \\[a\\](http://e)@r (6 items)" in card
    assert "<script>" not in card
    audit = json.loads((out / "annotation_audit.json").read_text())
    assert checked(audit, 6)["counts"]["reviewed"] == 6
    claim = {**audit, "counts": {**audit["counts"], "reviewed": 999999, "items": 999999 + audit["counts"]["disputed"]
                                 + audit["counts"]["not_reviewed"]}}
    with pytest.raises(ValueError, match="999999 reviewed items claimed, but the folder holds 6 row"):
        checked(claim, 6)
    (out / "annotation_audit.json").write_text(json.dumps(claim))
    assert cli.main(["build", "--source", "raw", "--input", str(second), "--append", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "annotation_audit.json: not an audit of the release it sits beside (" in err and "999999" in err
    assert err.strip().count("\n") == 0


@pytest.mark.parametrize("change, says", [
    (lambda a: a["counts"].update(items=a["counts"]["items"] + 1), "items are not"),
    (lambda a: a["attributes"]["category"]["accuracy"].update(hits=99), "99 hits of"),
    (lambda a: a["proposers"].update({"other@1": 3}), "proposers' items do not add up"),
    (lambda a: a["counts"].update(reviewed=True), "not a count"),
    (lambda a: a["agreement"].update(colour={"kappa": 7, "pairs": {}}), "agreement on 'colour'"),
    (lambda a: a.update(disagreements=[{}]), "disputed items claimed"),
])
def test_an_audit_whose_counts_do_not_hold_together_is_refused(tmp_path, change, says):
    raw = tmp_path / "raw"
    _reviewed(raw, 6)
    audit = audit_release(raw)
    change(audit)
    with pytest.raises(ValueError, match=says):
        checked(json.loads(json.dumps(audit)), 6)
