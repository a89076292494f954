"""Annotation records of LookBench Fine Recall: their checks, and their columns as dense integer ids.

Queries and gallery rows are annotation records (category, main attribute, attribute pairs, outfit id). Scoring
compares them case- and whitespace-insensitively, so both are factorised into one vocabulary of normalised
strings; a `datasets.Dataset` gallery is read column-wise through arrow and never imported here.
"""

import sys

import numpy as np

# Fields of an annotation record that scoring reads; everything else (image, item_id, ...) is dropped.
RECORD_FIELDS = ("category", "main_attribute", "attributes", "outfit_id")
# How a query and an item are compared: every query attribute carried (strict), or the same main attribute.
MODES = ("strict", "leaderboard")


# The vocabulary id of an empty or missing text: never a category, and a main attribute that matches nothing.
EMPTY = 0


def normalise(text):
    """Case- and whitespace-insensitive comparison key; a missing value becomes the empty key."""
    return " ".join(text.split()).casefold() if text is not None else ""


def check_mode(mode):
    """An unknown mode is refused before any work."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")


def same_main(query_main, item_main):
    """Leaderboard mode's main-attribute rule on vocabulary ids (arrays or single ids): the same id, never EMPTY."""
    return (query_main == item_main) & (query_main != EMPTY)


def _fields(record, index, what):
    """Validated (category, main_attribute, [(name, value), ...], outfit_id) of one annotation record.

    Raw-release records carry `attributes` as a `{name: value}` object; that form is accepted too.
    """
    if not isinstance(record, dict):
        raise ValueError(f"{what}[{index}] is not an annotation record (a dict) but a {type(record).__name__}")
    category = record.get("category")
    if category is not None and not isinstance(category, str):
        raise ValueError(f"{what}[{index}]: 'category' must be a string, got {category!r}")
    if category is None or not category.strip():
        raise ValueError(f"{what}[{index}] has no 'category'")
    main_attribute = record.get("main_attribute")
    if main_attribute is not None and not isinstance(main_attribute, str):
        raise ValueError(f"{what}[{index}]: 'main_attribute' must be a string, got {main_attribute!r}")
    attributes = record.get("attributes") or ()
    try:
        if isinstance(attributes, dict):
            pairs = list(attributes.items())
        else:
            pairs = [(attribute["name"], attribute["value"]) for attribute in attributes]
    except (KeyError, TypeError):
        pairs = None
    if pairs is None or not all(isinstance(name, str) and isinstance(value, str) for name, value in pairs):
        raise ValueError(f"{what}[{index}]: every attribute needs a string 'name' and 'value', got {attributes!r}")
    outfit_id = record.get("outfit_id")
    return category, main_attribute or "", pairs, "" if outfit_id is None else str(outfit_id)


def _is_dataset(value):
    """A `datasets.Dataset`? One can only exist once datasets is imported, so this module never imports it."""
    datasets = sys.modules.get("datasets")
    return datasets is not None and isinstance(value, datasets.Dataset)


def as_rows(records, what="records"):
    """Records as a list; of a `Dataset` only the record columns are read (never its images)."""
    if _is_dataset(records):
        return records.select_columns([c for c in RECORD_FIELDS if c in records.column_names]).to_list()
    if records is None or not hasattr(records, "__iter__"):
        raise ValueError(f"{what} must be a list of annotation records, got {type(records).__name__}")
    return records


def project_records(records, what="references"):
    """Reduce annotation records to the declared fields, with the types evaluate's feature check wants.

    evaluate rejects undeclared keys (a dataset row's `item_id`, `image` ...) with a bare KeyError and
    `None` strings with a TypeError, so records are projected before they reach it.
    """
    projected = []
    for index, record in enumerate(as_rows(records, what)):
        category, main_attribute, pairs, outfit_id = _fields(record, index, what)
        attributes = [{"name": name, "value": value} for name, value in pairs]
        projected.append(
            {"category": category, "main_attribute": main_attribute, "attributes": attributes, "outfit_id": outfit_id}
        )
    return projected


def _factorize(values):
    """(codes, uniques) of a list of hashable values, in order of first appearance."""
    table = {}
    codes = np.fromiter((table.setdefault(v, len(table)) for v in values), dtype=np.int64, count=len(values))
    return codes, list(table)


def _arrow_factorize(array):
    """(codes, uniques) of an arrow string array; nulls get the unique `None`."""
    encoded = array.dictionary_encode()
    uniques = encoded.dictionary.to_pylist() + [None]
    return encoded.indices.fill_null(len(uniques) - 1).to_numpy(zero_copy_only=False).astype(np.int64), uniques


class Vocabulary:
    """Dense ids of normalised strings, shared by queries and gallery so that ids compare across both."""

    def __init__(self):
        self.texts = [""]  # id EMPTY
        self._ids = {"": EMPTY}

    def ids(self, factorized):
        codes, uniques = factorized
        lookup = np.empty(len(uniques), dtype=np.int64)
        for j, text in enumerate(uniques):
            key = normalise(text)
            if key not in self._ids:
                self._ids[key] = len(self.texts)
                self.texts.append(key)
            lookup[j] = self._ids[key]
        return lookup[codes]


def columns_of_records(records, what):
    """Factorised columns of annotation records: category, main attribute, the flat attribute list (with
    the row of every attribute) and the outfit ids."""
    fields = [_fields(record, index, what) for index, record in enumerate(records)]
    lengths = np.fromiter((len(f[2]) for f in fields), dtype=np.int64, count=len(fields))
    return {
        "size": len(fields),
        "category": _factorize([f[0] for f in fields]),
        "main_attribute": _factorize([f[1] for f in fields]),
        "rows": np.repeat(np.arange(len(fields), dtype=np.int64), lengths),
        "name": _factorize([name for f in fields for name, _ in f[2]]),
        "value": _factorize([value for f in fields for _, value in f[2]]),
        "outfit_id": [f[3] for f in fields],
    }


def _columns_of_dataset(dataset):
    """The same columns read column-wise from a `Dataset` through arrow: no row dicts, no image decoding."""
    if "category" not in dataset.column_names:
        raise ValueError(f"gallery has no 'category' column (columns: {dataset.column_names})")
    present = [c for c in ("category", "main_attribute", "attributes") if c in dataset.column_names]
    for name in present[:2]:
        feature = dataset.features[name]
        if getattr(feature, "dtype", None) not in ("string", "large_string"):
            raise ValueError(f"gallery's '{name}' column must hold strings, got {feature}")
    table = dataset.select_columns(present).with_format("arrow")[:]
    size = table.num_rows
    columns = {"size": size, "category": _arrow_factorize(table.column("category").combine_chunks())}
    if "main_attribute" in present:
        columns["main_attribute"] = _arrow_factorize(table.column("main_attribute").combine_chunks())
    else:
        columns["main_attribute"] = (np.zeros(size, dtype=np.int64), [None])
    if "attributes" in present:
        lists = table.column("attributes").combine_chunks()
        lengths = lists.value_lengths().fill_null(0).to_numpy(zero_copy_only=False)
        rows = np.repeat(np.arange(size, dtype=np.int64), lengths)
        struct = lists.flatten()
        fields = struct.flatten()  # child arrays, adjusted for the struct's offset
        names = fields[struct.type.get_field_index("name")]
        values = fields[struct.type.get_field_index("value")]
        missing = np.flatnonzero(
            names.is_null().to_numpy(zero_copy_only=False) | values.is_null().to_numpy(zero_copy_only=False)
        )
        if missing.size:
            raise ValueError(f"gallery[{rows[missing[0]]}]: an attribute lacks its 'name' or 'value'")
        columns.update(rows=rows, name=_arrow_factorize(names), value=_arrow_factorize(values))
    else:
        empty = (np.zeros(0, dtype=np.int64), [])
        columns.update(rows=np.zeros(0, dtype=np.int64), name=empty, value=empty)
    return columns


class GalleryColumns:
    """A gallery's annotations, read and factorised once; `score_retrieval` accepts it as `gallery`.

    LookBench appends one noise gallery to every subset's gallery: `subset_columns + noise_columns` joins the
    factorised columns without reading or factorising either gallery again.
    """

    def __init__(self, gallery):
        if isinstance(gallery, GalleryColumns):
            self.columns = gallery.columns
        elif _is_dataset(gallery):
            self.columns = _columns_of_dataset(gallery)
        else:
            self.columns = columns_of_records(as_rows(gallery, "gallery"), "gallery")

    def __len__(self):
        return self.columns["size"]

    def __add__(self, other):
        """The gallery of this one's rows followed by `other`'s."""
        a, b = self.columns, GalleryColumns(other).columns

        def joined(key):
            (codes_a, uniques_a), (codes_b, uniques_b) = a[key], b[key]
            return np.concatenate([codes_a, codes_b + len(uniques_a)]), list(uniques_a) + list(uniques_b)

        out = object.__new__(GalleryColumns)
        out.columns = {
            "size": a["size"] + b["size"],
            "category": joined("category"),
            "main_attribute": joined("main_attribute"),
            "rows": np.concatenate([a["rows"], b["rows"] + a["size"]]),
            "name": joined("name"),
            "value": joined("value"),
        }
        return out


def encode(columns, vocabulary, what):
    """Integer ids: category and main attribute per row, and the deduplicated (row, attribute pair) set."""
    category = vocabulary.ids(columns["category"])
    blank = np.flatnonzero(category == 0)
    if blank.size:
        raise ValueError(f"{what}[{blank[0]}] has no 'category'")
    rows = columns["rows"]
    pairs = (vocabulary.ids(columns["name"]) << 32) | vocabulary.ids(columns["value"])
    # An attribute listed twice on one record is still one attribute of the set A.
    order = np.lexsort((pairs, rows))
    rows, pairs = rows[order], pairs[order]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = (rows[1:] != rows[:-1]) | (pairs[1:] != pairs[:-1])
    rows, pairs = rows[first], pairs[first]
    return {
        "category": category,
        "main_attribute": vocabulary.ids(columns["main_attribute"]),
        "rows": rows,
        "pairs": pairs,
        "num_attributes": np.bincount(rows, minlength=columns["size"]),
    }


def attribute_differences(reference, item):
    """Why an item is not a strict match for a query: the query attributes it lacks and those it has otherwise.

    Compared as scoring compares them (case- and whitespace-insensitive). Returns `lacks`, a list of
    `(name, value)` of the query the item has no value for, and `differs`, a list of `(name, query_value,
    item_values)` where the item carries the name with other value(s).
    """
    _, _, query_pairs, _ = _fields(reference, 0, "reference")
    _, _, item_pairs, _ = _fields(item, 0, "item")
    have = {}
    for name, value in item_pairs:
        have.setdefault(normalise(name), {})[normalise(value)] = value
    lacks, differs = [], []
    for name, value in query_pairs:
        values = have.get(normalise(name))
        if values is None:
            lacks.append((name, value))
        elif normalise(value) not in values:
            differs.append((name, value, sorted(values.values())))
    return {"lacks": lacks, "differs": differs}

def fine_miss_reasons(reference, item, mode):
    """Why an item is not a fine hit for a query in `mode`, as scoring judges it; `[]` exactly when it is one.

    A list of reasons: `("category", query_category, item_category)` alone when the categories differ; else in
    leaderboard mode `("main", query_main, item_main)` unless the main attributes match (`same_main`: an empty one
    never does), then, in either mode, `attribute_differences` as `("lacks", name, value)` and `("differs", name,
    query_value, item_values)` (in leaderboard mode only beside a main-attribute miss: they do not decide it).
    """
    check_mode(mode)
    query_category, query_main, _, _ = _fields(reference, 0, "reference")
    item_category, item_main, _, _ = _fields(item, 0, "item")
    vocabulary = Vocabulary()
    categories = vocabulary.ids(_factorize([query_category, item_category]))
    if categories[0] != categories[1]:
        return [("category", query_category, item_category)]
    reasons = []
    if mode == "leaderboard":
        mains = vocabulary.ids(_factorize([query_main, item_main]))
        if same_main(mains[0], mains[1]):
            return []
        reasons.append(("main", query_main, item_main))
    gaps = attribute_differences(reference, item)
    return reasons + [("lacks", *gap) for gap in gaps["lacks"]] + [("differs", *gap) for gap in gaps["differs"]]
