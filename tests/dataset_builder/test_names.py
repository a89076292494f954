"""Names that say what the data is (issue 56 item 2): nothing that is not LookBench's data is called LookBench — the
Fashion-MNIST release is "in LookBench's format" — and every title of the synthetic Mini says "LookBench-Mini
(synthetic)" before any subset name: the release's card name, a leaderboard section, a plot, the evaluate table."""
from __future__ import annotations

import re

import pytest

from lookbench.dataset_builder.catalog import SOURCES
from lookbench.dataset_builder.fashion_mnist import TAXONOMY
from lookbench.leaderboard.load import entry_from_result
from lookbench.results.provenance import Data
from lookbench.results.result import EvaluationResult
from lookbench.schema import LOOKBENCH_DATA, MINI_DATA, TEST_SUBSETS
from tests.helpers.results import synthetic

FORMAT = "in LookBench's format"
MINI = "LookBench-Mini (synthetic)"


def not_lookbench(text: str) -> bool:
    """No "LookBench" in ``text`` but the words saying the format is LookBench's."""
    return "lookbench" not in text.replace(FORMAT, "").lower()


def titles(name: str) -> list[str]:
    """The release name as a section title, a plot title and the evaluate table's title show it."""
    provenance = {"model": {"name": "m"}, "dataset": {"name": name, "key": "local-x", "revision": "local-x",
                                                      "releases": ["v20170825"]},
                  "mode": "strict", "distractors": False, "cutoff": None, "index": "flat", "search": "exact",
                  "counts": {"invalid_images_skipped": [], "self_matches_removed": 0, "forward_images": 1,
                             "cache_hits": 0}, "wall_time_s": 1.0}
    data = synthetic(1, {"RealStudioFlat": 20}, provenance)
    result = EvaluationResult.from_dict(data)
    return [entry_from_result(data, "x").group.label, result.label(), result.table(width=200).splitlines()[0]]


def test_no_release_of_other_data_is_named_lookbench():
    others = {name: s for name, s in SOURCES.items() if s.data not in (LOOKBENCH_DATA, MINI_DATA)}
    assert others and all(not_lookbench(s.pretty_name) for s in others.values())
    assert SOURCES["fashion-mnist"].pretty_name == f"Fashion-MNIST real photos {FORMAT}"
    assert not_lookbench(TAXONOMY.name)
    assert SOURCES["mini"].pretty_name == MINI
    assert Data({}).title == "unnamed data" and Data({"data": "some/folder"}).title == "some/folder"


@pytest.mark.parametrize("source", ["fashion-mnist", "mini"])
def test_section_plot_and_table_titles_name_the_data_before_any_subset(source):
    name = SOURCES[source].pretty_name
    for title in titles(name):
        subset = min((title.find(s) for s in TEST_SUBSETS if s in title), default=len(title))
        assert name in title and title.index(name) < subset, title
        if source == "mini":
            assert re.search(r"LookBench(?!-Mini \(synthetic\))", title.replace("LookBench's format", "")) is None
        else:
            assert not_lookbench(title), title
