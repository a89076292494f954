"""Text queries: the templates' examples, determinism, and that no two attribute sets of Mini share a text."""
import doctest
import itertools

import pytest

from lookbench.dataset_builder import text_queries
from lookbench.dataset_builder.mini.plan import TAXONOMY
from lookbench.dataset_builder.text_queries import FORMS, query_text, record_text


def test_doctest_examples():
    assert doctest.testmod(text_queries).failed == 0


@pytest.mark.parametrize("form", FORMS)
def test_every_mini_attribute_set_has_its_own_text(form):
    """Exact ground truth needs texts that tell attribute sets apart: 3,730 sets of Mini's taxonomy, 3,730 texts."""
    texts = {query_text(category, dict(zip(attrs, values)), form)
             for category, attrs in TAXONOMY.items() for values in itertools.product(*attrs.values())}
    sets = sum(len(list(itertools.product(*attrs.values()))) for attrs in TAXONOMY.values())
    assert len(texts) == sets == 3730


def test_order_and_shape_of_the_attributes_do_not_change_the_text():
    as_list = [{"name": "neckline", "value": "crew"}, {"name": "color", "value": "blue"},
               {"name": "pattern", "value": "dots"}, {"name": "sleeve_length", "value": "sleeveless"}]
    as_dict = {"sleeve_length": "sleeveless", "pattern": "dots", "color": "blue", "neckline": "crew"}
    record = {"category": "tops", "attributes": as_list}
    assert record_text(record) == query_text("tops", as_dict) == "polka-dot blue sleeveless crew-neck top"
    assert record_text(record, "long") == ("An item in the category tops whose pattern is dots, color is blue, "
                                           "sleeve length is sleeveless and neckline is crew.")


def test_unknown_attributes_come_after_the_known_ones_sorted_by_name():
    attrs = {"material": "wool", "color": "red", "cut_type": "boxy"}
    assert query_text("cardigan", attrs) == "red boxy wool cardigan"
    assert query_text("cardigan", attrs, "long") == ("An item in the category cardigan whose color is red, "
                                                     "cut type is boxy and material is wool.")
    assert query_text("scarf", {}, "long") == "An item in the category scarf."


@pytest.mark.parametrize("category, attributes, form, message", [
    ("tops", {"color": "red"}, "medium", "text form 'medium' is not one of short, long"),
    ("", {"color": "red"}, "short", "category '' is not a non-empty string"),
    ("tops", {"color": ""}, "short", "attribute ('color', '') is not a (name, value) pair of non-empty strings"),
    ("tops", [("color",)], "short", "attribute ('color',) is not a (name, value) pair"),
])
def test_bad_input_is_named(category, attributes, form, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        query_text(category, attributes, form)
