"""Attribute errors on a real Mini run (issue 46 item 2): equal to a count made from the saved rankings alone, and
checked by `lookbench verify` like the scores; a result written before them verifies on its scores, saying so."""
from __future__ import annotations

import json
from collections import Counter

import pyarrow.parquet as pq
import pytest

from lookbench.submissions.verify import render, verify_submission
from tests.helpers.submissions import submission_folder


def _key(text):
    return " ".join(text.split()).casefold()


def test_attribute_errors_equal_a_count_over_the_saved_rankings(honest):
    result = json.loads(honest.read_text())
    pooled_n, pooled_wrong, pooled_confusions = Counter(), Counter(), Counter()
    for subset in result["provenance"]["subsets"]:
        rows = pq.read_table(honest.parent / "results.predictions" / f"{subset}.parquet").to_pylist()
        n, wrong, confusions = Counter(), Counter(), Counter()
        for row in rows:
            if row["rank"] != 1 or _key(row["category"]) != _key(row["query_category"]):
                continue
            have, wanted = {}, {}
            for a in row["attributes"] or []:
                have.setdefault(_key(a["name"]), set()).add(_key(a["value"]))
            for a in row["query_attributes"] or []:
                wanted.setdefault(_key(a["name"]), set()).add(_key(a["value"]))
            for name, values in wanted.items():
                n[name] += 1
                if not values <= have.get(name, set()):
                    wrong[name] += 1
                    confusions[name, "/".join(sorted(values)), "/".join(sorted(have[name])) if name in have else None] += 1
        for counts, pooled in ((n, pooled_n), (wrong, pooled_wrong), (confusions, pooled_confusions)):
            pooled.update(counts)
        for block, (n_, wrong_, confusions_) in ((result[subset]["attribute_errors"], (n, wrong, confusions)),):
            assert {a: b["n"] for a, b in block.items()} == dict(n_)
            assert {a: b["rate"] for a, b in block.items()} == pytest.approx({a: 100 * wrong_[a] / n_[a] for a in n_})
    overall = result["overall"]["attribute_errors"]
    assert {a: b["n"] for a, b in overall.items()} == dict(pooled_n) and sum(pooled_n.values()) > 500
    assert sum(pooled_wrong.values()) > 0  # the Mini's model does err on some attributes
    for name, block in overall.items():
        mine = sorted(([q, t, c] for (a, q, t), c in pooled_confusions.items() if a == name),
                      key=lambda r: (-r[2], r[0], r[1] or ""))
        assert block["confusions"] == mine[:len(block["confusions"])] and len(block["confusions"]) == min(10, len(mine))


def test_verify_checks_and_shows_every_attribute_error_rate(dry_run):
    verification = verify_submission(dry_run)
    assert verification.verified and verification.attributes_checked
    claimed = json.loads((submission_folder(dry_run) / "results.json").read_text())["overall"]["attribute_errors"]
    rows = {name: (c, r) for name, c, r in verification.scores}
    for attribute, block in claimed.items():
        assert rows[f"overall attribute_errors.{attribute}.rate"] == (block["rate"], pytest.approx(block["rate"]))
        assert rows[f"overall attribute_errors.{attribute}.n"] == (block["n"], block["n"])


def _edit(copy, change):
    path = copy / "results.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_an_edited_confusion_is_not_verified(copy):
    def change(data):
        data["overall"]["attribute_errors"]["color"]["confusions"][0][2] += 5
    _edit(copy, change)
    verification = verify_submission(copy)
    assert not verification.verified
    assert any(r.startswith("overall attribute_errors.color.confusions claimed") for r in verification.reasons)


def test_edited_marks_are_not_verified_though_they_give_the_claimed_rates(copy):
    """Two queries' marks of one attribute traded: every rate and confusion stays, the per-query marks do not."""
    data = json.loads((copy / "results.json").read_text())
    subset, name, i, j = next((s, a, i, j) for s in data["provenance"]["subsets"]
                              for marks in [data[s]["per_query"]["attributes_at_1"]]
                              for i, m in enumerate(marks) if m for a in m
                              for j, n in enumerate(marks) if j > i and n and a in n and n[a] != m[a])

    def change(data):
        at = data[subset]["per_query"]["attributes_at_1"]
        at[i][name], at[j][name] = at[j][name], at[i][name]
    _edit(copy, change)
    verification = verify_submission(copy)
    assert not verification.verified
    assert f"{subset} per_query.attributes_at_1: query {i + 1} " in " ".join(verification.reasons), verification.reasons


def test_a_result_written_before_attribute_errors_verifies_on_its_scores_and_says_so(copy):
    def change(data):
        for name, block in data.items():
            if name != "provenance":
                block.pop("attribute_errors")
                block.get("per_query", {}).pop("attributes_at_1", None)
    _edit(copy, change)
    verification = verify_submission(copy)
    assert verification.verified and not verification.attributes_checked
    assert not any("attribute_errors" in name for name, _, _ in verification.scores)
    assert "attribute errors: none claimed (a result written before they were kept), none checked" in " ".join(render(verification).split())
