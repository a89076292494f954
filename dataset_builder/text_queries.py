"""Text queries in words, made from a query item's category and attribute set (issue 39: the text-to-image track).

Why templates and not captions: a text query is scored attribute-exactly (a retrieved item is a hit only if it has
the category and every attribute the words ask for), so each word must come from the ground truth, deterministically.
Two forms: ``short``, how a shopper types ("striped red v-neck top"), and ``long``, a sentence naming the category
and every attribute by name. Attributes are worded in a fixed order of attribute types (``ORDER``, the order of
English adjectives: pattern, colour, length, fit, …), so the same record always gives the same text. Names and
values the templates do not know (a real release's own attributes) are spoken as they are, after the known ones,
sorted by name. ``TEMPLATE_VERSION`` changes whenever a record's text would; it is part of a release's data revision.
"""
from __future__ import annotations

from collections.abc import Mapping

from lookbench.settings import DEFAULT_TEXT_FORM as DEFAULT_FORM
from lookbench.settings import TEXT_FORMS as FORMS

TEMPLATE_VERSION = 1
# A built release carries the texts as a config of its own (``text``), one split per subset named by its published
# alias; row i of a split is the text of row i of that subset's query split (same item_id, release, timestamp).
TEXT_CONFIG = "text"
TEXT_COLUMNS = {form: f"text_{form}" for form in FORMS}

# Attribute types in the order their words come (the Mini taxonomy's, the published release's colour, Fashion-MNIST's
# shade).
ORDER = ("pattern", "color", "colour", "shade", "length", "leg_length", "fit", "silhouette", "sleeve_length", "neckline",
         "collar", "closure", "shape", "style", "sole", "hardware")
# How a category is spoken in the short form (one item, singular); the long form names the category as it is.
NOUNS = {"tops": "top", "dresses": "dress", "skirts": "skirt", "bags": "bag", "hats": "hat"}
# The short form's word for an attribute value, where the value alone would not read naturally.
WORDS = {
    "pattern": {"stripes": "striped", "dots": "polka-dot", "check": "checked"},
    "sleeve_length": {"short": "short-sleeved", "long": "long-sleeved"},
    "neckline": {"crew": "crew-neck", "collar": "collared", "square": "square-neck"},
    "length": {"knee": "knee-length", "hip": "hip-length"},
    "leg_length": {"full": "full-length"},
    "fit": {"straight": "straight-leg", "wide": "wide-leg"},
    "closure": {"zip": "zip-up", "buttons": "buttoned", "belt": "belted"},
    "collar": {"lapel": "lapel-collar", "hood": "hooded", "stand": "stand-collar"},
}
# Values that name the item itself: the noun they replace in the short form ("red sneakers", not "red sneaker shoes").
NOUN_VALUES = {
    "leg_length": {"shorts": "shorts"},
    "style": {"sneaker": "sneakers", "boot": "boots", "pump": "pumps", "cap": "cap", "beanie": "beanie",
              "bucket": "bucket hat", "fedora": "fedora"},
}
# Attributes spoken after the noun ("with gold hardware"): their values are colours and would read as the item's.
TAILS = {"sole": "a {} sole", "hardware": "{} hardware"}


def attribute_pairs(attributes) -> list[tuple[str, str]]:
    """(name, value) pairs of a record's attributes — a mapping, the schema's list of {"name", "value"}, or pairs —
    in the templates' fixed order: ``ORDER`` first, then unknown names sorted; equal names by value."""
    if isinstance(attributes, Mapping):
        pairs = list(attributes.items())
    else:
        pairs = [(a["name"], a["value"]) if isinstance(a, Mapping) else tuple(a) for a in attributes or ()]
    for pair in pairs:
        if len(pair) != 2 or not all(isinstance(part, str) and part.strip() for part in pair):
            raise ValueError(f"attribute {pair!r} is not a (name, value) pair of non-empty strings")
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(pairs, key=lambda p: (rank.get(p[0], len(ORDER)), p[0], p[1]))


def _spoken(text: str) -> str:
    return " ".join(text.replace("_", " ").split())


def query_text(category: str, attributes, form: str = DEFAULT_FORM) -> str:
    """The text query of an item with ``category`` and ``attributes`` (see ``attribute_pairs``), in ``form``.

    >>> attrs = {"color": "red", "pattern": "stripes", "sleeve_length": "long", "neckline": "v-neck"}
    >>> query_text("tops", attrs, "short")
    'striped red long-sleeved v-neck top'
    >>> query_text("tops", attrs, "long")
    'An item in the category tops whose pattern is stripes, color is red, sleeve length is long and neckline is v-neck.'
    >>> query_text("shoes", [{"name": "color", "value": "black"}, {"name": "style", "value": "sneaker"},
    ...                      {"name": "sole", "value": "gum"}])
    'black sneakers with a gum sole'
    >>> query_text("bags", {"color": "brown", "pattern": "solid", "shape": "tote", "hardware": "gold"})
    'solid brown tote bag with gold hardware'

    Fashion-MNIST: the class name and the shade.

    >>> query_text("ankle boot", {"shade": "dark"})
    'dark ankle boot'
    >>> query_text("t-shirt/top", {"shade": "light"}, "long")
    'An item in the category t-shirt/top whose shade is light.'
    """
    if form not in FORMS:
        raise ValueError(f"text form {form!r} is not one of {', '.join(FORMS)}")
    if not isinstance(category, str) or not category.strip():
        raise ValueError(f"category {category!r} is not a non-empty string")
    pairs = attribute_pairs(attributes)
    if form == "long":
        said = [f"{_spoken(name)} is {_spoken(value)}" for name, value in pairs]
        listed = ", ".join(said[:-1]) + " and " + said[-1] if len(said) > 1 else "".join(said)
        return f"An item in the category {_spoken(category)}" + (f" whose {listed}." if said else ".")
    noun, before, after = NOUNS.get(category, _spoken(category)), [], []
    for name, value in pairs:
        if value in NOUN_VALUES.get(name, {}):
            noun = NOUN_VALUES[name][value]
        elif name in TAILS:
            after.append(TAILS[name].format(_spoken(value)))
        else:
            before.append(WORDS.get(name, {}).get(value, _spoken(value)))
    return " ".join(before + [noun]) + (" with " + " and ".join(after) if after else "")


def record_text(record: Mapping, form: str = DEFAULT_FORM) -> str:
    """The text query of a LookBench record (its ``category`` and ``attributes``), in ``form``."""
    return query_text(record["category"], record["attributes"], form)


def text_features():
    """The ``datasets`` features of the ``text`` config (built on use: this module imports no datasets)."""
    import datasets

    return datasets.Features({
        "item_id": datasets.Value("string"), "release": datasets.Value("string"),
        "timestamp": datasets.Value("timestamp[s, tz=UTC]"),
        **{column: datasets.Value("string") for column in TEXT_COLUMNS.values()},
        "template_version": datasets.Value("int32"),
    })


def text_split(queries):
    """The ``text`` rows of a subset's query split (a ``datasets.Dataset``), one per query row, in its order."""
    import datasets

    rows = queries.select_columns(["item_id", "release", "timestamp", "category", "attributes"]).to_list()
    columns = {"item_id": [r["item_id"] for r in rows], "release": [r["release"] for r in rows],
               "timestamp": [r["timestamp"] for r in rows]}
    for form, column in TEXT_COLUMNS.items():
        columns[column] = [record_text(r, form) for r in rows]
    columns["template_version"] = [TEMPLATE_VERSION] * len(rows)
    return datasets.Dataset.from_dict(columns, features=text_features())
