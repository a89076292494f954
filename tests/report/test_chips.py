"""The report's "why not fine" chips (issue 52 item 3) are the metric's `fine_miss_reasons`: they name the main
attribute when an empty one kept a leaderboard-mode pair from a fine hit, and a pair has no reason and no chip
exactly when the metric scores it a fine hit, in both modes."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookbench.metric.fine_recall.judging import score_queries
from lookbench.metric.fine_recall.records import fine_miss_reasons
from lookbench.report.records import Chip, chips


def judged(query, item, mode):
    """The metric's fine and coarse flag of `item` ranked first for `query`."""
    per_query = score_queries([[0]], [query], [item], k=[1], mode=mode)
    return bool(per_query["fine"][0, 0]), bool(per_query["coarse"][0, 0])


@pytest.mark.parametrize("query_main, item_main, shown", [
    ("", "", "main attribute none (query none)"),
    (None, "red", "main attribute red (query none)"),
    ("red", "", "main attribute none (query red)"),
])
def test_an_empty_main_attribute_is_named_as_the_leaderboard_miss_it_is(query_main, item_main, shown):
    query = {"category": "top", "main_attribute": query_main, "attributes": [{"name": "colour", "value": "red"}]}
    item = {"category": " Top", "main_attribute": item_main, "attributes": [{"name": "Colour", "value": "red "}]}
    assert judged(query, item, "leaderboard") == (False, True)
    assert chips(query, item, "leaderboard", True) == [Chip("main", None, shown)]
    assert judged(query, item, "strict") == (True, True) and chips(query, item, "strict", True) == []


text = st.sampled_from(["red", "Red ", " red", "blue", "", "  "])
record = st.fixed_dictionaries({
    "category": st.sampled_from(["top", "Top ", "dress"]),
    "main_attribute": st.one_of(st.none(), text),
    "attributes": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["colour", " COLOUR", "fit"]),
                                                  "value": text}), max_size=3),
})


@settings(max_examples=300, deadline=None)
@given(record, record, st.sampled_from(["strict", "leaderboard"]))
def test_a_pair_has_no_chip_exactly_when_the_metric_scores_it_fine(query, item, mode):
    """Case, spacing and empty main attributes as scoring treats them: the reasons never disagree with the score."""
    fine, coarse = judged(query, item, mode)
    reasons, shown = fine_miss_reasons(query, item, mode), chips(query, item, mode, coarse)
    assert (reasons == []) == (shown == []) == fine
    assert ([kind for kind, *_ in reasons] == ["category"]) == any(c.kind == "category" for c in shown) == (not coarse)
