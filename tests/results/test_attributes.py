"""Attribute errors at top-1 (issue 46 item 2): the judge's rates and confusions against a brute-force count over
the rankings, their check in a stored result, and the paired comparison attribute by attribute."""
from __future__ import annotations

import copy
import json
from collections import Counter

import datasets
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookbench.results import stats
from lookbench.results.attributes import CONFUSIONS
from lookbench.results.comparison import compare_attributes, render
from lookbench.results.judge import combine, gallery_columns, judge_subset
from lookbench.results.outcomes import check_result
from tests.helpers.results import synthetic

FEATURES = datasets.Features({"item_id": datasets.Value("string"), "category": datasets.Value("string"),
                              "main_attribute": datasets.Value("string"),
                              "attributes": datasets.List({"name": datasets.Value("string"),
                                                           "value": datasets.Value("string")}),
                              "outfit_id": datasets.Value("string")})


def record(item, category, **attributes):
    return {"item_id": item, "category": category, "main_attribute": next(iter(attributes.values()), ""),
            "attributes": [{"name": n, "value": v} for n, v in attributes.items()], "outfit_id": None}


def brute_force(ranking, queries, gallery):
    """Counted by hand: for each query with attribute a whose top-1 has its category, does the top-1 carry its value?"""
    n, errors, confusions = Counter(), Counter(), Counter()
    for q, query in enumerate(queries):
        if ranking[q, 0] < 0:
            continue
        top = gallery[ranking[q, 0]]
        if top["category"].strip().lower() != query["category"].strip().lower():
            continue
        have = {}
        for a in top["attributes"]:
            have.setdefault(a["name"].strip().lower(), set()).add(a["value"].strip().lower())
        wanted = {}  # a query counts once per name; with several values it must have all of them
        for a in query["attributes"]:
            wanted.setdefault(a["name"].strip().lower(), set()).add(a["value"].strip().lower())
        for name, values in wanted.items():
            n[name] += 1
            if not values <= have.get(name, set()):
                errors[name] += 1
                got = "/".join(sorted(have[name])) if name in have else None
                confusions[name, "/".join(sorted(values)), got] += 1
    return n, errors, confusions


QUERIES = [record("q0", "top"),                                    # no attribute: counts for nothing
           record("q1", "top", colour="red"),                      # top-1 a skirt: not counted
           record("q2", "top", colour="red", sleeve="long"),       # top-1 " Red " (matches), lacks sleeve
           record("q3", "top", colour="red"),                      # red -> blue
           record("q4", "Top", colour="red"),                      # red -> blue again
           record("q5", "top", colour="green"),                    # green -> red
           record("q6", "top", colour="red"),                      # no result at all (-1 pads)
           record("q7", "bag", colour="red")]                      # top-1 from the noise gallery, red: right
GALLERY = [record("g0", "top"), record("g1", "skirt", colour="red"), record("g2", "top", colour=" Red "),
           record("g3", "top", colour="blue"), record("g4", "top", colour="red")]
NOISE = [record("n0", "bag", colour="RED")]
RANKING = np.array([[0, 2], [1, 0], [2, 0], [3, 2], [3, -1], [4, -1], [-1, -1], [5, 1]])


def judged(ranking=RANKING, queries=QUERIES, gallery=GALLERY, noise=NOISE, mode="strict"):
    columns = gallery_columns(datasets.Dataset.from_list(gallery, features=FEATURES),
                              gallery_columns(datasets.Dataset.from_list(noise, features=FEATURES)) if noise else None)
    return judge_subset(ranking, datasets.Dataset.from_list(queries, features=FEATURES), columns, mode)


@pytest.mark.parametrize("mode", ["strict", "leaderboard"])
def test_hand_made_cases_give_the_count_made_by_hand(mode):
    errors = judged(mode=mode).scores["attribute_errors"]
    assert errors == {
        "colour": {"rate": 60.0, "n": 5, "ci95": [round(v, 4) for v in stats.wilson(60.0, 5)],
                   "confusions": [["red", "blue", 2], ["green", "red", 1]]},
        "sleeve": {"rate": 100.0, "n": 1, "ci95": [round(v, 4) for v in stats.wilson(100.0, 1)],
                   "confusions": [["long", None, 1]]}}
    marks = judged(mode=mode).outcomes.attributes_at_1
    assert marks[0] == {} and marks[1] is None and marks[6] is None
    assert marks[2] == {"colour": None, "sleeve": ["long", None]} and marks[7] == {"colour": None}


def test_the_overall_pools_every_subsets_queries():
    one, two = judged(), judged(RANKING[:4], QUERIES[:4])
    overall = combine({"a": one, "b": two}).overall["attribute_errors"]
    assert overall["colour"]["n"] == 5 + 2 and overall["colour"]["rate"] == pytest.approx(100 * 4 / 7)
    assert overall["colour"]["confusions"] == [["red", "blue", 3], ["green", "red", 1]]
    assert overall["sleeve"]["n"] == 2


def test_a_name_with_several_values_must_be_carried_whole():
    queries = [{**record("q", "top"), "attributes": [{"name": "colour", "value": "red"}, {"name": "colour", "value": "white"}]}]
    gallery = [{**record("g", "top"), "attributes": [{"name": "colour", "value": "white"}, {"name": "colour", "value": "blue"}]}]
    errors = judged(np.array([[0]]), queries, gallery, None).scores["attribute_errors"]
    assert errors["colour"]["confusions"] == [["red/white", "blue/white", 1]]


VALUES = ["red", "Red", "blue", "green"]
NAMES = ["colour", "sleeve", "fit"]


def _random_records(rng, n, prefix):
    return [{**record(f"{prefix}{i}", ["top", "skirt"][rng.integers(2)]),
             "attributes": [{"name": NAMES[rng.integers(3)], "value": VALUES[rng.integers(4)]}
                            for _ in range(rng.integers(0, 3))]} for i in range(n)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), queries=st.integers(1, 15), gallery=st.integers(1, 12), depth=st.integers(1, 4))
def test_random_rankings_give_the_brute_force_count(seed, queries, gallery, depth):
    rng = np.random.default_rng(seed)
    q, g = _random_records(rng, queries, "q"), _random_records(rng, gallery, "g")
    ranking = np.full((queries, depth), -1)
    for i in range(queries):
        length = rng.integers(0, min(depth, gallery) + 1)
        ranking[i, :length] = rng.permutation(gallery)[:length]
    errors = judged(ranking, q, g, None).scores["attribute_errors"]
    n, wrong, confusions = brute_force(ranking, q, g)
    assert sorted(errors) == sorted(n)
    for name, block in errors.items():
        assert block["n"] == n[name] and block["rate"] == pytest.approx(100 * wrong[name] / n[name])
        mine = sorted(([a, b, c] for (x, a, b), c in confusions.items() if x == name),
                      key=lambda r: (-r[2], r[0], r[1] or ""))
        assert block["confusions"] == mine[:CONFUSIONS]


def test_a_stored_result_is_checked_against_its_own_marks():
    result = synthetic(3, {"RealStudioFlat": 40, "RealStreetLook": 30}, attribute_error=0.3)
    check_result(copy.deepcopy(result), "r.json")
    edited = copy.deepcopy(result)
    edited["overall"]["attribute_errors"]["colour"]["rate"] += 1
    with pytest.raises(ValueError, match=r"r.json: damaged or edited: overall attribute_errors.colour.rate claimed"):
        check_result(edited, "r.json")
    edited = copy.deepcopy(result)
    edited["RealStreetLook"]["attribute_errors"]["colour"]["confusions"][0][2] += 1
    with pytest.raises(ValueError, match=r"RealStreetLook attribute_errors.colour.confusions claimed"):
        check_result(edited, "r.json")
    edited = copy.deepcopy(result)
    del edited["RealStudioFlat"]["per_query"]["attributes_at_1"]
    with pytest.raises(ValueError, match="attribute_errors are claimed for RealStudioFlat, RealStreetLook, overall and "
                                         "per_query.attributes_at_1 kept for RealStreetLook; they go together"):
        check_result(edited, "r.json")
    edited = copy.deepcopy(result)
    edited["RealStudioFlat"]["per_query"]["attributes_at_1"][0] = {"colour": ["red"]}
    with pytest.raises(ValueError, match=r"per_query.attributes_at_1\[0\] is"):
        check_result(edited, "r.json")


def test_a_result_written_before_attribute_errors_is_read_and_claims_none():
    older = synthetic(3, {"RealStudioFlat": 40})
    assert "attribute_errors" not in older["overall"] and "attributes_at_1" not in older["RealStudioFlat"]["per_query"]
    assert set(check_result(older, "old.json")) == {"RealStudioFlat"}
    with pytest.raises(ValueError, match="old.json keeps no attribute errors .written before they were kept."):
        compare_attributes({**older, "_path": "old.json"}, synthetic(4, {"RealStudioFlat": 40}, attribute_error=0.2))


def test_compare_attributes_is_paired_on_the_queries_both_count():
    sizes = {"RealStudioFlat": 60, "RealStreetLook": 45}
    a, b = synthetic(5, sizes, attribute_error=0.4), synthetic(6, sizes, attribute_error=0.1)
    rows = compare_attributes(json.loads(json.dumps(a)), json.loads(json.dumps(b)))
    assert [r["attribute"] for r in rows] == ["colour", "sleeve"]
    for row in rows:
        pairs = [(ma[row["attribute"]] is not None, mb[row["attribute"]] is not None)
                 for s in sizes for ma, mb in zip(a[s]["per_query"]["attributes_at_1"], b[s]["per_query"]["attributes_at_1"])
                 if row["attribute"] in (ma or {}) and row["attribute"] in (mb or {})]
        wa, wb = np.array(pairs).T
        assert row["n_queries"] == len(pairs)
        assert row["a"] == pytest.approx(100 * wa.mean()) and row["b"] == pytest.approx(100 * wb.mean())
        assert row["diff"] == pytest.approx(row["a"] - row["b"])
        assert (row["a_only"], row["b_only"]) == (int(np.sum(wa & ~wb)), int(np.sum(wb & ~wa)))
        assert row["p"] == pytest.approx(stats.mcnemar(row["a_only"], row["b_only"]))
        assert row["ci95"][0] <= row["diff"] <= row["ci95"][1]
    assert rows[0]["diff"] > 0 and rows[0]["p"] < 0.05  # A errs at 40 %, B at 10 %
    text = render(rows, "table", "A", "B", "attributes")
    assert "Attribute error rate@1" in text and text.splitlines()[-1].startswith("sleeve")


def test_the_table_block_fits_its_width_and_says_when_a_result_has_none():
    from lookbench.results.table import attribute_lines

    result = synthetic(7, {"RealStudioFlat": 50, "RealStreetLook": 40}, attribute_error=0.3)
    errors = {name: result[name]["attribute_errors"] for name in ("RealStudioFlat", "RealStreetLook", "overall")}
    for width in (50, 80, 120):
        lines = attribute_lines(errors, width)
        assert max(map(len, lines)) <= width
        head = next(i for i, line in enumerate(lines) if line.startswith("attribute ") and line.endswith(" queries"))
        assert set(lines[head + 1]) == {"─"}  # the header's rule, then one row per attribute
        assert [line.split()[0] for line in lines[head + 2:head + 4]] == ["colour", "sleeve"]
        rate, (lo, hi) = errors["overall"]["colour"]["rate"], errors["overall"]["colour"]["ci95"]
        assert lines[head + 2].split()[1:4] == [f"{rate:.1f}", f"[{lo:.1f},", f"{hi:.1f}]"]
        assert lines[head + 2].split()[-1] == str(errors["overall"]["colour"]["n"])
    wide = attribute_lines(errors, 120)
    header = next(line for line in wide if line.startswith("attribute "))
    assert "RealStreetLook" in header and "most confused" in header  # the subsets' columns when the width holds them
    assert "RealStreetLook" not in next(line for line in attribute_lines(errors, 50) if line.startswith("attribute "))
    older = attribute_lines({"RealStudioFlat": None, "overall": None}, 80)
    assert "not in this result (written before they were kept" in " ".join(older)


def test_compare_attributes_on_the_command_line(tmp_path, capsys):
    from lookbench.cli import main

    sizes = {"RealStudioFlat": 30}
    for name, seed in (("a.json", 8), ("b.json", 9)):
        (tmp_path / name).write_text(json.dumps(synthetic(seed, sizes, attribute_error=0.3)))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--attributes", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["attribute"] for r in rows] == ["colour", "sleeve"]
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--attributes", "--k", "5"]) == 2
    assert "--attributes compares the attribute error rate@1" in capsys.readouterr().err
