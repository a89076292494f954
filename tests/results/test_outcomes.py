"""The outcomes check (issue 37): a stored result's per-query outcomes are well formed and give the scores it claims.

Every case starts from a result the store wrote for a real evaluation, edits its JSON as a careless or hostile user
would, and reads it back as the store reads it; each edit is refused naming the file and the key.
"""
from __future__ import annotations

import copy
import json

import pytest

import lookbench
from lookbench.results.outcomes import Outcomes, check_result, keeps_outcomes, verdict
from lookbench.results.store import read_json
from tests.helpers.engine_data import write_folder
from tests.helpers.results import synthetic


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The JSON of a result as the results store wrote it (two subsets of 4 and 3 queries, one release)."""
    root = tmp_path_factory.mktemp("outcomes")
    result = lookbench.evaluate("raw-pixels", data=write_folder(root / "lookbench"), results_dir=root / "results",
                                cache_dir=root / "cache", quiet=True)
    return read_json(result.stored)


def edited(stored, tmp_path, edit):
    """``stored`` with ``edit`` applied, written to a file and read back as the store reads one: (path, JSON)."""
    data = copy.deepcopy(stored)
    edit(data)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))  # NaN is written as NaN, as json.dumps does
    return str(path), read_json(path)


def per_query(data, subset="RealStudioFlat"):
    return data[subset]["per_query"]


def test_an_honest_result_passes_and_gives_its_outcomes(stored, tmp_path):
    path, data = edited(stored, tmp_path, lambda d: None)
    outcomes = check_result(data, path)
    assert list(outcomes) == ["RealStudioFlat", "AIGen-Studio"] and [len(o) for o in outcomes.values()] == [4, 3]
    assert all(isinstance(o, Outcomes) and o.k == (1, 5, 10, 20) for o in outcomes.values())
    assert verdict(data, path) is None and keeps_outcomes(data)
    # the outcomes are stored to 1e-6 of a fraction, the scores from the unrounded values: still equal
    assert per_query(data)["ndcg"]["@5"][0] == 0.469279 and data["RealStudioFlat"]["ndcg"]["@5"] != 86.731975


def test_a_synthetic_result_with_outfits_passes():
    result = synthetic(3, {"RealStudioFlat": 50, "RealStreetLook": 60})
    assert list(check_result(result, "synthetic")) == ["RealStudioFlat", "RealStreetLook"]
    assert "outfit_fine_recall" in result["RealStreetLook"]


def set_rank(value):
    def edit(data):
        per_query(data)["first_fine_rank"][1] = value
    return edit


def set_gain(value):
    def edit(data):
        per_query(data)["ndcg"]["@5"][2] = value
    return edit


def drop_last(key):
    def edit(data):
        per_query(data)[key].pop()
    return edit


def drop_query(data):
    for key in ("item_id", "outfit_id", "release", "first_fine_rank", "first_coarse_rank", "attributes_at_1"):
        per_query(data)[key].pop()
    for name in ("ndcg", "ap"):
        for values in per_query(data)[name].values():
            values.pop()


def claim(subset, metric, at, value, release=None):
    def edit(data):
        block = data[subset] if release is None else data[subset]["per_release"][release]
        block[metric][at] = value
    return edit


FILE_AND_SUBSET = "{path}: damaged or edited: RealStudioFlat "
CASES = {
    "nan gain": (set_gain(float("nan")), "per_query.ndcg.@5[2] is nan, not a fraction in [0, 1]"),
    "nan rank": (set_rank(float("nan")), "per_query.first_fine_rank[1] is nan, not a rank (an integer >= 1, or null)"),
    "rank 0": (set_rank(0), "per_query.first_fine_rank[1] is 0, not a rank (an integer >= 1, or null)"),
    "rank -1": (set_rank(-1), "per_query.first_fine_rank[1] is -1, not a rank (an integer >= 1, or null)"),
    "fractional rank": (set_rank(1.5), "per_query.first_fine_rank[1] is 1.5, not a rank (an integer >= 1, or null)"),
    "rank true": (set_rank(True), "per_query.first_fine_rank[1] is True, not a rank (an integer >= 1, or null)"),
    "rank 10**400": (set_rank(10 ** 400), f"per_query.first_fine_rank[1] is {10 ** 400}, not a rank (an integer >= 1, or null)"),
    "gain 7": (set_gain(7), "per_query.ndcg.@5[2] is 7, not a fraction in [0, 1]"),
    "gain 10**400": (set_gain(10 ** 400), f"per_query.ndcg.@5[2] is {10 ** 400}, not a fraction in [0, 1]"),
    "gain -0.5": (set_gain(-0.5), "per_query.ndcg.@5[2] is -0.5, not a fraction in [0, 1]"),
    "short column": (drop_last("first_coarse_rank"), "per_query.first_coarse_rank has 3 values for 4 queries"),
    "short gains": (lambda d: per_query(d)["ap"]["@10"].pop(), "per_query.ap.@10 has 3 values for 4 queries"),
    "missing K": (lambda d: per_query(d)["ndcg"].pop("@20"), "per_query.ndcg has @1, @5, @10, not @1, @5, @10, @20"),
    "fine before coarse": (lambda d: per_query(d)["first_coarse_rank"].__setitem__(0, 3),
                           "per_query query 1: first fine hit at rank 1, first coarse hit at rank 3 (a fine hit is a coarse hit)"),
    "one query fewer": (drop_query, "claimed num_queries 4, outcomes give 3"),
    "claimed score": (claim("RealStudioFlat", "fine_recall", "@1", 90.0), "claimed fine_recall@1 90, outcomes give 100"),
    "claimed nDCG": (claim("RealStudioFlat", "ndcg", "@5", 99.0), "claimed ndcg@5 99, outcomes give 86.731975"),
    "claimed 10**400": (claim("RealStudioFlat", "coarse_recall", "@5", 10 ** 400),
                        f"claimed coarse_recall@5 {10 ** 400}, outcomes give 100"),
    "claimed string": (claim("RealStudioFlat", "mrr", "@10", "100"), "claimed mrr@10 '100', outcomes give 100"),
    "claimed per release": (claim("RealStudioFlat", "ndcg", "@5", 90.0, release="v20250101"),
                            "v20250101 claimed ndcg@5 90, outcomes give 86.731975"),
    "per_release a list": (lambda d: d["RealStudioFlat"].__setitem__("per_release", [1, 2]),
                           "per_release is list, not a mapping of releases"),
    "release not scored": (lambda d: d["RealStudioFlat"]["per_release"].__setitem__(
        "v20990101", d["RealStudioFlat"]["per_release"]["v20250101"]), "v20990101 claimed num_queries 4, outcomes give none"),
    "outcomes edited": (lambda d: per_query(d)["first_fine_rank"].__setitem__(2, None),
                        "claimed fine_recall@1 100, outcomes give 75"),
    "release a list": (lambda d: per_query(d)["release"].__setitem__(0, ["v20250101"]),
                       "per_query.release[0] is ['v20250101'], not a string or null"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_edit_is_refused_naming_the_file_and_the_key(stored, tmp_path, case):
    edit, message = CASES[case]
    path, data = edited(stored, tmp_path, edit)
    expected = FILE_AND_SUBSET.format(path=path) + message
    with pytest.raises(ValueError) as err:
        check_result(data, path)
    assert str(err.value) == expected
    assert verdict(data, path) == expected


def test_an_edited_overall_and_missing_outcomes_are_named(stored, tmp_path):
    path, data = edited(stored, tmp_path, claim("overall", "coarse_recall", "@1", 50.0))
    assert verdict(data, path) == f"{path}: damaged or edited: overall claimed coarse_recall@1 50, outcomes give 100"
    path, data = edited(stored, tmp_path, lambda d: d["AIGen-Studio"].pop("per_query"))
    assert keeps_outcomes(data)
    assert verdict(data, path) == (f"{path} has no per-query outcomes for AIGen-Studio; it was written by an older "
                                   "lookbench: evaluate it again (--overwrite)")
    path, data = edited(stored, tmp_path, lambda d: [d[s].pop("per_query") for s in ("RealStudioFlat", "AIGen-Studio")])
    assert not keeps_outcomes(data)
