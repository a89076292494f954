"""The items of an annotated raw release a review shows, each keyed ``<Config>/<split>/<item_id>``."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lookbench.schema import SUBSETS

from lookbench.dataset_builder.decisions import ReviewError
from lookbench.dataset_builder.gold import GoldSettings, Truth, read_gold
from lookbench.dataset_builder.sources import RawSource
from lookbench.dataset_builder.taxonomy import Taxonomy


@dataclass(frozen=True)
class Item:
    """One row of the raw release to review; ``key`` (``<Config>/<split>/<item_id>``) names it in every decision."""

    key: str
    config: str
    split: str
    file: str  # the JSONL file, relative to the release
    line: int
    record: dict = field(compare=False, repr=False)

    @property
    def proposals(self) -> dict:
        proposals = self.record.get("proposals")
        return proposals if isinstance(proposals, dict) else {}

    @property
    def proposed_values(self) -> dict:
        """Attribute name -> the value proposed (None: not proposed); empty for a row whose proposals are no object."""
        attributes = self.proposals.get("attributes")
        return {n: e.get("value") if isinstance(e, dict) else None for n, e in attributes.items()} if isinstance(attributes, dict) else {}

    @property
    def folder(self) -> str:
        return self.file.rsplit("/", 1)[0]


@dataclass(frozen=True)
class GoldItem(Item):
    """A gold item, shown as any item of its subset and split (``file`` is theirs); its pictures are read from the gold
    file's folder (``base``), and its known labels are ``truth``."""

    base: str = ""
    truth: Truth | None = field(default=None, compare=False, repr=False)

    @property
    def folder(self) -> str:
        return self.base


def gold_items(settings: GoldSettings, taxonomy: Taxonomy, items: list[Item]) -> list[GoldItem]:
    """The plan's gold items, refused in one line when one's key is a release item's too."""
    keys = {item.key for item in items}
    config, split = settings.prefix.split("/")
    file = next((item.file for item in items if (item.config, item.split) == (config, split)), f"{settings.prefix}.jsonl")
    found = []
    for key, line, row, truth in read_gold(settings, taxonomy):
        if key in keys:
            raise ReviewError(f"gold file {settings.file} line {line}: item {key!r} is an item of the release too; "
                              "give the gold item another item_id")
        found.append(GoldItem(key, config, split, file, line, row, str(Path(settings.file).parent), truth))
    return found


def read_items(raw: Path) -> tuple[list[Item], list[str]]:
    """Every row of the raw release that can be reviewed, in release order, and why each other row cannot (a row that
    is not a JSON object, has no string ``item_id``, or repeats a key), one line each naming file and line."""
    source = RawSource(raw)
    items, problems, seen = [], [], {}
    for config in source.folders:
        if config not in SUBSETS:
            continue
        for split in SUBSETS[config].splits:
            where = source.location(config, split)
            for line, record in source.lines(config, split):
                item_id = record.get("item_id") if isinstance(record, dict) else None
                if not isinstance(record, dict):
                    problems.append(f"{where} line {line}: {record}")
                elif not isinstance(item_id, str) or not item_id:
                    problems.append(f"{where} line {line}: no item_id to key its review by")
                elif (key := f"{config}/{split}/{item_id}") in seen:
                    problems.append(f"{where} line {line}: item_id {item_id!r} repeats line {seen[key]}; a review "
                                    "names an item by its subset, split and item_id")
                else:
                    seen[key] = line
                    items.append(Item(key, config, split, where, line, record))
    return items, problems
