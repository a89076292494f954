"""The finished batches of a killed annotate run (``RAW/.annotate/batch-*.json``), taken back as fresh input.

Why checked and not trusted: the batches sit in the output folder for hours, and anything that writes there can
change them; what they hold goes into the release. So each entry must be the row this run would write for its line
of the crawl (read again now): the same subset, split and item fields, image paths that are the copies this run
made, this proposer, and proposals that are valid against the taxonomy. An entry that is not is a named, counted
skip of its item; an entry that names no item of the crawl is named too; an entry that recorded a skip is tried
again (its reason is re-found, not read back). A batch file that is not one refuses the run in one line.
"""
from __future__ import annotations

import json
from pathlib import Path

from lookbench.errors import clip, shorten, shown
from lookbench.files import contained_file, read_regular

from lookbench.annotate.crawl import ITEMS, Crawl, Item
from lookbench.annotate.layered import SEPARATOR, merged_field
from lookbench.dataset_builder.taxonomy import Taxonomy

MAX_BATCH_BYTES = 256 << 20
KEPT = ("proposals", "proposer")  # what a row adds to its item's fields


def expected_row(item: Item) -> dict:
    """The item's fields as its release row keeps them: images as the copies ``images/<crawl path>``."""
    return {key: f"images/{value}" if key in ("image", "raw_image") else value for key, value in item.fields.items()}


def resumed(work: Path, crawl: Crawl, taxonomy: Taxonomy, proposer: dict) -> tuple[dict[int, dict], int, list[str]]:
    """(item line -> its checked entry, the invalid answers counted, one line per entry refused)."""
    items = {item.line: item for item in crawl.items}
    done, invalid, refused = {}, 0, []
    for path in sorted(work.glob("batch-*.json")):
        try:
            batch = json.loads(read_regular(path, MAX_BATCH_BYTES).decode("utf-8"))
            if not (isinstance(batch, dict) and isinstance(batch.get("entries"), list) and isinstance(batch.get("invalid"), int)
                    and not isinstance(batch["invalid"], bool) and batch["invalid"] >= 0):
                raise ValueError("not an object with entries and a count of invalid answers")
        except (ValueError, UnicodeDecodeError, RecursionError) as err:
            raise ValueError(f"{path}: not a batch of this annotate run ({clip(err, 120)}); remove {path.parent} to "
                             "annotate from the start") from None
        invalid += batch["invalid"]
        for entry in batch["entries"]:
            line = entry.get("line") if isinstance(entry, dict) else None
            item = items.get(line) if isinstance(line, int) and not isinstance(line, bool) else None
            if item is None:
                refused.append(f"{path.name}: an entry for line {shorten(line)}, which is no item line of {ITEMS}; not taken")
                continue
            if "skipped" in entry or line in done:
                continue  # tried again now: its reason is found afresh
            why = _problem(entry, item, taxonomy, proposer, work.parent)
            if why is None:
                done[line] = entry
            else:
                done[line] = {"line": line, "skipped": f"{ITEMS} line {line} (item_id={shown(item.fields['item_id'])}): "
                                                       f"{path.name} was changed: {why}; not taken"}
    return done, invalid, refused


def _problem(entry: dict, item: Item, taxonomy: Taxonomy, proposer: dict, out: Path) -> str | None:
    if entry.get("config") != item.config or entry.get("split") != item.split:
        return f"it puts the item in {shown(entry.get('config'))}/{shown(entry.get('split'))}, the crawl in {item.config}/{item.split}"
    row = entry.get("row")
    if not isinstance(row, dict):
        return "its row is not an object"
    fields = {k: v for k, v in row.items() if k not in KEPT}
    if fields != (want := expected_row(item)):
        key = next(k for k in sorted(set(fields) | set(want)) if fields.get(k) != want.get(k))
        return f"its {shown(key)} is {shown(fields.get(key))}, the crawl's is {shown(want.get(key))}"
    if row.get("proposer") != proposer:
        return f"its proposer is {shown(row.get('proposer'))}, this run's {shown(proposer)}"
    for key in ("image", "raw_image"):
        if key in row:
            try:
                contained_file(out / item.config, row[key])
            except ValueError as err:
                return f"its copy of the {key}: {err}"
    layers = proposer["name"].split(SEPARATOR) if SEPARATOR in proposer["name"] else None
    return proposal_problem(row.get("proposals"), taxonomy, layers)


def proposal_problem(proposals, taxonomy: Taxonomy, layers: list[str] | None = None) -> str | None:
    """What makes ``proposals`` no proposal against ``taxonomy`` (the row contract, lookbench/annotate/__init__.py);
    ``layers``: the proposers' names of a layered run, whose every field is their merge (lookbench/annotate/layered.py)."""
    if not isinstance(proposals, dict) or set(proposals) != {"category", "attributes"}:
        return "its proposals are not {category, attributes}"
    category, attributes = proposals["category"], proposals["attributes"]
    if why := _field_problem(category, layers, lambda v: v in taxonomy.categories):
        return f"its category proposal {why}"
    value = category["value"]
    if value is not None and value not in taxonomy.categories:
        return f"its category {shown(value)} is not one of {taxonomy.label}"
    names = taxonomy.categories[value].attributes if value is not None else {}
    if not isinstance(attributes, dict) or not set(attributes) <= set(names):
        return f"its attributes {shown(attributes)} are not attributes of {shown(value)}"
    for name, answer in attributes.items():
        if why := _field_problem(answer, layers, lambda v, name=name: taxonomy.allows(value, name, v)):
            return f"its {shown(name)} proposal {why}"
        if answer["value"] is not None and not taxonomy.allows(value, name, answer["value"]):
            return f"its {shown(name)} {shown(answer['value'])} is not a value of {shown(value)} in {taxonomy.label}"
    return None


def _field_problem(field, layers: list[str] | None, allowed) -> str | None:
    """A field of one proposer is an answer; of layered proposers, the merge of each layer's answer (each allowed)."""
    if layers is None:
        return _answer_problem(field)
    if not isinstance(field, dict) or not isinstance(field.get("by"), dict) or list(field["by"]) != layers:
        return f"is not a merge of {', '.join(layers)}"
    for name, answer in field["by"].items():
        if why := _answer_problem(answer):
            return f"by {shown(name)} {why}"
        if answer["value"] is not None and not allowed(answer["value"]):
            return f"by {shown(name)} is {shown(answer['value'])}, not allowed here"
    if field != merged_field(field["by"]):
        return "is not the first answer of its proposers"
    return None


def _answer_problem(answer) -> str | None:
    if not isinstance(answer, dict) or set(answer) != {"value", "confidence"}:
        return "is not {value, confidence}"
    confidence = answer["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        return f"has the confidence {shown(confidence)}, not a number from 0 to 1"
    if answer["value"] is not None and not isinstance(answer["value"], str):
        return f"has the value {shown(answer['value'])}, not text"
    return None
