"""The taxonomy as data: categories -> attribute names -> allowed values, each category's main attribute, and the one
"not applicable" value — versioned, shipped with every release (``<DIR>/taxonomy.json``, described in the card) and
checked against every row a build writes.

Why a file and not code: a release's labels only mean something against the vocabulary they were chosen from, so
the annotator's prompts, the reviewer's choices and the builder's validation all read this one file
(docs/architecture.md §4, "Taxonomy"). Its shape::

    {"taxonomy_format": 1, "name": "lookbench-mini", "version": "1", "not_applicable": "not applicable",
     "categories": {"tops": {"main_attribute": "color", "attributes": {"color": ["black", ...], ...}}, ...}}

Names are lower-case (categories are compared lower-case everywhere); values are non-empty strings, distinct within
an attribute, and never the ``not_applicable`` value, which every attribute may take instead of a value (an item a
person cannot judge for it: a sleeveless top has no cuff). The main attribute is one of the category's attributes
and is never "not applicable" (leaderboard mode compares it).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from lookbench.errors import clip, shown
from lookbench.files import read_regular, replacing

FORMAT = 1
FILE_NAME = "taxonomy.json"  # beside the release's configs (a raw folder's root, a built folder's root)
NOT_APPLICABLE = "not applicable"
MAX_BYTES = 4 << 20  # a taxonomy of thousands of values is a few hundred KB


class TaxonomyError(ValueError):
    """A taxonomy file that is not the versioned shape above; the message names the file and the entry."""


@dataclass(frozen=True)
class Category:
    main_attribute: str
    attributes: dict[str, tuple[str, ...]]  # in the file's order: prompts and review forms follow it


@dataclass(frozen=True)
class Taxonomy:
    name: str
    version: str
    categories: dict[str, Category]
    not_applicable: str = NOT_APPLICABLE

    @classmethod
    def of(cls, name: str, version: str, values: dict[str, dict[str, list[str]]], main: str | dict[str, str]):
        """A taxonomy from category -> attribute -> values; ``main`` the main attribute of every category, or per
        category. Checked like a file."""
        return parse({"taxonomy_format": FORMAT, "name": name, "version": version, "not_applicable": NOT_APPLICABLE,
                      "categories": {c: {"main_attribute": main if isinstance(main, str) else main[c], "attributes": a}
                                     for c, a in values.items()}}, f"taxonomy {name}")

    def values(self) -> dict[str, dict[str, list[str]]]:
        """category -> attribute -> allowed values (without "not applicable")."""
        return {c: {n: list(v) for n, v in cat.attributes.items()} for c, cat in self.categories.items()}

    def to_json(self) -> dict:
        return {"taxonomy_format": FORMAT, "name": self.name, "version": self.version, "not_applicable": self.not_applicable,
                "categories": {c: {"main_attribute": cat.main_attribute, "attributes": {n: list(v) for n, v in cat.attributes.items()}}
                               for c, cat in self.categories.items()}}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"

    @property
    def revision(self) -> str:
        """The content's sha256 (canonical JSON), 12 hex digits: two files of one name and version that differ differ here."""
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]

    @property
    def label(self) -> str:
        return f"{self.name} {self.version} ({self.revision})"

    def write(self, path) -> Path:
        """Written whole or not at all (``lookbench.files.replacing``)."""
        path = Path(path)
        with replacing(path) as tmp:
            tmp.write_text(self.dumps(), encoding="utf-8")
        return path

    def allows(self, category: str, name: str, value: str) -> bool:
        cat = self.categories.get(category)
        return cat is not None and name in cat.attributes and (value in cat.attributes[name] or value == self.not_applicable)

    def row_problems(self, category: str, main_attribute, attributes) -> list[str]:
        """What a labelled row gets wrong against this taxonomy, one message per problem, naming the value.

        ``attributes``: [{"name", "value"}, ...] (the record's). The main attribute's value must be one of its
        values, and agree with the row's own entry for that attribute when it has one."""
        key = category.strip().lower()
        if key not in self.categories:
            return [f"category {category!r} is not in the taxonomy {self.label}"]
        cat, messages = self.categories[key], []
        for attribute in attributes or []:
            name, value = attribute["name"], attribute["value"]
            if name not in cat.attributes:
                messages.append(f"attribute {name!r} is not in the taxonomy of {key!r}")
            elif value != self.not_applicable and value not in cat.attributes[name]:
                messages.append(f"value {value!r} of attribute {name!r} is not in the taxonomy of {key!r}")
        if isinstance(main_attribute, str) and main_attribute:
            allowed = cat.attributes[cat.main_attribute]
            own = {a["name"]: a["value"] for a in attributes or []}.get(cat.main_attribute)
            if main_attribute not in allowed:
                messages.append(f"main_attribute {main_attribute!r} is not a value of {key!r}'s main attribute "
                                f"{cat.main_attribute!r}")
            elif own is not None and own != main_attribute:
                messages.append(f"main_attribute {main_attribute!r} disagrees with the row's {cat.main_attribute!r} {own!r}")
        return messages


def _names(value, where: str, what: str) -> None:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        found = "is missing" if value is None else f"{shown(value)} is not one"
        raise TaxonomyError(f"{where}: {what} {found}: a non-empty string without surrounding spaces")


def parse(data, where: str) -> Taxonomy:
    """The taxonomy in the JSON value ``data``; ``where`` names its file in every refusal."""
    shape = ('{"taxonomy_format": 1, "name", "version", "not_applicable", "categories": {category: {"main_attribute", '
             '"attributes": {name: [values]}}}}')
    if not isinstance(data, dict):
        raise TaxonomyError(f"{where}: expected an object {shape}, got a JSON {type(data).__name__}")
    if data.get("taxonomy_format") != FORMAT:
        found = "none" if "taxonomy_format" not in data else clip(json.dumps(data["taxonomy_format"]))
        raise TaxonomyError(f"{where}: taxonomy_format is {found}, this version reads {FORMAT}: {shape}")
    extra = sorted(set(data) - {"taxonomy_format", "name", "version", "not_applicable", "categories"})
    if extra:
        raise TaxonomyError(f"{where}: unknown key(s) {', '.join(map(shown, extra))}")
    for key in ("name", "version", "not_applicable"):
        _names(data.get(key), where, key)
    categories, na = data.get("categories"), data["not_applicable"]
    if not isinstance(categories, dict) or not categories:
        raise TaxonomyError(f"{where}: categories must be a non-empty object category -> {{main_attribute, attributes}}")
    parsed = {}
    for category, entry in categories.items():
        _names(category, where, "category")
        if category != category.lower() or category.lower() in parsed:
            raise TaxonomyError(f"{where}: category {shown(category)} must be lower-case and appear once")
        if not isinstance(entry, dict) or set(entry) != {"main_attribute", "attributes"}:
            raise TaxonomyError(f"{where}: category {category!r} must be an object with main_attribute and attributes, "
                                f"got {clip(json.dumps(entry))}")
        attributes = entry["attributes"]
        if not isinstance(attributes, dict) or not attributes:
            raise TaxonomyError(f"{where}: {category!r} attributes must be a non-empty object name -> [values]")
        for name, values in attributes.items():
            _names(name, where, f"{category!r} attribute")
            if not isinstance(values, list) or not values:
                raise TaxonomyError(f"{where}: {category!r} -> {name!r} must be a non-empty list of strings, got {clip(json.dumps(values))}")
            for value in values:
                _names(value, where, f"{category!r} -> {name!r} value")
            if len(set(values)) != len(values) or na in values:
                raise TaxonomyError(f"{where}: {category!r} -> {name!r} repeats a value or lists {na!r} "
                                    "(every attribute may be not applicable; it is never listed)")
        if entry["main_attribute"] not in attributes:
            raise TaxonomyError(f"{where}: {category!r} main_attribute {shown(entry['main_attribute'])} is not one of its "
                                f"attributes ({', '.join(attributes)})")
        parsed[category] = Category(entry["main_attribute"], {n: tuple(v) for n, v in attributes.items()})
    return Taxonomy(data["name"], data["version"], parsed, na)


def load(path) -> Taxonomy:
    """The taxonomy file ``path``, read like every file given from outside (regular, size-capped); refusals name it."""
    path = Path(path)
    where = f"taxonomy {path}"
    try:
        raw = read_regular(path, MAX_BYTES)
    except ValueError as err:
        raise TaxonomyError(f"{where}: {err}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise TaxonomyError(f"{where}: not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start})") from None
    except json.JSONDecodeError as err:
        raise TaxonomyError(f"{where}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    return parse(data, where)
