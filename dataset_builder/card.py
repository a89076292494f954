"""The card of a built dataset folder (docs/building-a-release.md): its YAML (``configs``, ``dataset_info``, the release
history as ``Step``s), its text with the release history table, and the files beside it the card describes — the
validation reports, the annotation audits, the taxonomy and the ``text`` config. Sizes and dates are read from the
shards, so a card is never out of step with the data it sits beside."""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import datasets
import pyarrow.parquet as pq
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from lookbench._version import __version__
from lookbench.citation import BIBTEX
from lookbench.hub import DATASET_ID
from lookbench.schema import DEFAULT_CONFIG, SUBSETS, SYNTHETIC, release_date
from lookbench.terminal import markdown_safe, terminal_safe

from lookbench.dataset_builder.builder import TRAIN_DESCRIPTION
from lookbench.dataset_builder.review.audit_file import audit_card
from lookbench.dataset_builder.catalog import SOURCES
from lookbench.dataset_builder.sources import TRAIN
from lookbench.dataset_builder.text_queries import TEXT_COLUMNS, TEXT_CONFIG, text_features
from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE, load as load_taxonomy

CARD_TEMPLATE = Path(__file__).with_name("dataset_card_template.md")
REPORT_NAME = "validation_report.json"
AUDIT_NAME = "annotation_audit.json"  # a reviewed release's audit (review.audit); an append's is audit_name(its report)
HISTORY_KEY = "lookbench_history"  # the card's YAML record of how the folder was built, one Step per build or append
# The Hub id the card's usage names (``lookbench stage --namespace`` retargets it).
HUB_ID = DATASET_ID


@dataclass
class Step:
    """One build or append of a dataset folder: what its card's release history says about the releases it added."""

    releases: list[str]
    source: str  # a name of catalog.SOURCES; "unknown" for a folder built before the history was recorded
    command: str
    report: str | None  # the validation report of this step, a file in the folder
    changes: str

    @classmethod
    def history(cls, card_data: dict) -> list["Step"]:
        """The steps recorded in a card's YAML (an empty list for a folder built before they were)."""
        return [cls(**{**entry, "releases": list(entry["releases"])}) for entry in card_data.get(HISTORY_KEY) or []]


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "1M<n<10M"


def _card_data(pretty_name: str, total_rows: int, layout: dict, infos: dict, default: str | None = None,
               license: str = "apache-2.0", synthetic: bool = False, **extra) -> DatasetCardData:
    """The card's YAML through datasets' own writers: ``configs:`` (data files per split) and ``dataset_info``."""
    card_data = DatasetCardData(
        license=license,
        pretty_name=pretty_name,
        task_categories=["image-feature-extraction"],
        tags=["fashion", "image-retrieval", "benchmark", "lookbench"] + ([SYNTHETIC] if synthetic else []),
        size_categories=[_size_category(total_rows)],
        **extra,
    )
    MetadataConfigs(
        {name: {"data_files": [{"split": s, "path": p} for s, p in files.items()], **({"default": True} if name == default else {})}
         for name, files in layout.items()}
    ).to_dataset_card_data(card_data)
    DatasetInfosDict(infos).to_dataset_card_data(card_data)
    return card_data


def _validation_summary(report: dict | None, name: str | None) -> str:
    """One step's validation, from its report (``ValidationReport.to_dict()``, as written in the folder)."""
    if report is None:
        return "No validation report was recorded."
    if not report["num_skipped"] and not report["warnings"]:
        return "Every row passed validation (files inside the release, images decode fully, required fields and types, bounding boxes, duplicates, timestamps, taxonomy)."
    return f"{report['num_skipped']} invalid row(s) were left out and {len(report['warnings'])} warning(s) raised; see `{name}`."


def is_report(name: str) -> bool:
    """``validation_report.json`` (a build's) or ``validation_report-<release>.json`` (an append's), and the
    ``annotation_audit`` files beside them."""
    return any(name == kind or (name.startswith(kind.removesuffix(".json") + "-") and name.endswith(".json"))
               for kind in (REPORT_NAME, AUDIT_NAME))


def release_facts(folder: Path) -> dict[str, dict]:
    """Per release of a built folder, oldest first: its rows per config and split and its first and last timestamp,
    read from the shards' ``release`` and ``timestamp`` columns (no image is read)."""
    facts: dict[str, dict] = {}
    for shard in sorted(folder.glob("*/*-*-of-*.parquet")):
        config, split = shard.parent.name, shard.name.split("-", 1)[0]
        if config not in SUBSETS:
            continue
        groups = pq.read_table(shard, columns=["release", "timestamp"]).group_by("release").aggregate(
            [("timestamp", "min"), ("timestamp", "max"), ([], "count_all")])
        for group in groups.to_pylist():
            fact = facts.setdefault(group["release"], {"rows": {}, "first": None, "last": None})
            rows = fact["rows"].setdefault(config, {})
            rows[split] = rows.get(split, 0) + group["count_all"]
            stamps = [t for t in (fact["first"], fact["last"], group["timestamp_min"], group["timestamp_max"]) if t is not None]
            fact["first"], fact["last"] = (min(stamps), max(stamps)) if stamps else (None, None)
    return dict(sorted(facts.items(), key=lambda item: release_date(item[0])))


def _read_report(folder: Path, name: str | None) -> dict | None:
    try:
        return json.loads((folder / name).read_text(encoding="utf-8")) if name else None
    except (OSError, ValueError):
        return None


def audit_name(report: str | None) -> str:
    """The audit file beside a step's validation report (``validation_report-<release>.json`` → ``annotation_audit-<release>.json``)."""
    return (report or REPORT_NAME).replace("validation_report", "annotation_audit")


def _step_rows(out: Path, facts: dict, step: Step) -> int:
    """The rows a step added to the folder and those its validation left out: what its audit may claim reviewed."""
    report = _read_report(out, step.report) or {}
    skipped = report.get("num_skipped") if isinstance(report.get("num_skipped"), int) else 0
    return skipped + sum(n for r in step.releases for splits in facts.get(r, {}).get("rows", {}).values()
                         for n in splits.values())


def code(text) -> str:
    """``text`` as one Markdown code span safe in a table cell: fenced by more backticks than it holds in a row, on
    one line, ``|`` escaped (GFM splits cells before it reads code spans)."""
    text = " ".join(terminal_safe(text).split()).replace("|", "\\|")
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(text: str) -> str:
    """Text safe inside one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def text_info(out: Path) -> tuple[dict, datasets.DatasetInfo | None, dict]:
    """The ``text`` config of a built folder: its data files per split (a subset's alias), its ``DatasetInfo`` and
    what the card shows (the first query of each subset in both forms, the template versions of its rows);
    ``({}, None, {})`` without one."""
    layout, splits, examples, versions = {}, datasets.SplitDict(), [], set()
    for subset in SUBSETS.values():
        shards = sorted((out / TEXT_CONFIG).glob(f"{subset.alias}-*.parquet"))
        if not shards:
            continue
        tables = [pq.read_table(shard) for shard in shards]
        layout[subset.alias] = f"{TEXT_CONFIG}/{subset.alias}-*"
        splits.add(datasets.SplitInfo(name=subset.alias, num_bytes=sum(t.nbytes for t in tables),
                                      num_examples=sum(t.num_rows for t in tables)))
        versions.update(v for t in tables for v in t.column("template_version").unique().to_pylist())
        first = next((t.slice(0, 1).to_pylist()[0] for t in tables if t.num_rows), None)
        if first:
            examples.append({"config": subset.name, "alias": subset.alias, "item_id": code(first["item_id"]),
                             **{form: markdown_safe(first[column]) for form, column in TEXT_COLUMNS.items()}})
    if not layout:
        return {}, None, {}
    info = datasets.DatasetInfo(description="The queries in words (lookbench.dataset_builder.text_queries), one split "
                                "per subset named by its alias", features=text_features(), splits=splits)
    info.dataset_size = sum(s.num_bytes for s in splits.values())
    return layout, info, {"examples": examples, "versions": sorted(versions)}


def write_card(out: Path, *, pretty_name: str, history: list[Step], infos: dict) -> None:
    """The card of a built folder: YAML (``configs``, ``dataset_info``, the history) and its text, with the release
    history table. Sizes and dates are read from the shards in ``out``; what changed comes from ``history``; the
    ``text`` config from its shards (``text_info``)."""
    facts = release_facts(out)
    configs = [c for c in SUBSETS if c in infos]
    rows = {c: {s: sum(f["rows"].get(c, {}).get(s, 0) for f in facts.values()) for s in SUBSETS[c].splits} for c in configs}
    layout = {c: {s: f"{c}/{s}-*" for s in SUBSETS[c].splits} for c in configs}
    text_layout, text, text_card = text_info(out)
    if text is not None:
        layout[TEXT_CONFIG], infos = text_layout, {**infos, TEXT_CONFIG: text}
    stamps = [t for f in facts.values() for t in (f["first"], f["last"]) if t is not None]
    sources = list(dict.fromkeys(step.source for step in history))
    step_of = {release: step for step in history for release in step.releases}
    reports = [(step, _validation_summary(_read_report(out, step.report), step.report)) for step in history]

    def sizes(fact, config):
        got = fact["rows"].get(config)
        return " / ".join(str(got.get(s, 0)) for s in SUBSETS[config].splits) if got else "—"

    first = SOURCES.get(history[0].source)  # None for a folder built before the history was recorded
    synthetic = first is not None and first.synthetic  # labelled so, whatever is appended to it
    known = [SOURCES[s] for s in sources if s in SOURCES]
    card_vars = {
        "pretty_name": pretty_name,
        "summary": first.summary if first else "A LookBench dataset folder.",
        "subsets": [{**vars(SUBSETS[c]), **(_stand_in(SUBSETS[c]) if synthetic else {}), "query": rows[c].get("query", "—"),
                     "gallery": rows[c]["gallery"]} for c in configs],
        "releases": list(facts),
        "first_timestamp": min(stamps).isoformat() if stamps else "-",
        "last_timestamp": max(stamps).isoformat() if stamps else "-",
        "build_command": history[0].command,
        "lookbench_version": __version__,
        "data_source": " ".join(s.origin for s in known) or "not recorded",
        "dataset_path": HUB_ID,
        "validation_summary": reports[0][1] if len(reports) == 1 else "\n".join(
            f"- {', '.join(step.releases)}: {text}" for step, text in reports),
        "license_text": " ".join(s.licence for s in known) or "Not recorded.",
        "notes": first.card_notes() if first else "",
        "history_configs": configs,
        "text": text_card,
        "taxonomy": _taxonomy_card(out),
        "audits": [{"releases": ", ".join(step.releases), "text": text} for step in history
                   if (text := audit_card(out / audit_name(step.report), _step_rows(out, facts, step)))],
        "release_history": [
            {"name": name, "span": f"{fact['first']:%Y-%m-%d} → {fact['last']:%Y-%m-%d}" if fact["first"] else "—",
             "rows": [sizes(fact, c) for c in configs],
             "changes": _cell(step_of[name].changes if name in step_of else "—")}
            for name, fact in facts.items()
        ],
    }
    total = sum(n for splits in rows.values() for n in splits.values())
    card_data = _card_data(pretty_name, total, layout, infos, DEFAULT_CONFIG if DEFAULT_CONFIG in configs else configs[0],
                           license=first.licence_id if first else "apache-2.0", synthetic=synthetic, **{HISTORY_KEY: [asdict(step) for step in history]})
    DatasetCard.from_template(card_data, template_path=str(CARD_TEMPLATE), citation=BIBTEX.strip(), **card_vars).save(out / "README.md")


def _taxonomy_card(out: Path) -> dict | None:
    """What the card says of the folder's ``taxonomy.json`` (None: the folder has none)."""
    if not (out / TAXONOMY_FILE).is_file():
        return None
    taxonomy = load_taxonomy(out / TAXONOMY_FILE)
    # a taxonomy's names are anyone's text: code spans that hold them whole, or escaped words, never markup
    return {"file": TAXONOMY_FILE, "name": markdown_safe(taxonomy.name), "version": markdown_safe(taxonomy.version),
            "revision": taxonomy.revision, "not_applicable": code(taxonomy.not_applicable),
            "categories": [{"name": code(c), "main": code(cat.main_attribute),
                            "attributes": markdown_safe(", ".join(f"{n} ({len(v)})" for n, v in cat.attributes.items()))}
                           for c, cat in taxonomy.categories.items()]}


def write_train_card(train_out: Path, rows: int, info: datasets.DatasetInfo, source: str) -> None:
    """The card of a training set folder (``--train-out``): its YAML, where its rows come from and their licence."""
    entry = SOURCES[source]
    pretty_name = f"{entry.pretty_name} train"
    card_data = _card_data(pretty_name, rows, {"default": {TRAIN: "data/train-*"}}, {"default": info},
                           license=entry.licence_id, synthetic=entry.synthetic)
    notes = f"\n{entry.card_notes()}\n" if entry.notes else ""
    body = (
        f"# {pretty_name}\n\n{TRAIN_DESCRIPTION} {rows} rows in the LookBench record schema, "
        f"from {entry.origin}\n\nNo item id and no image content is shared with the test subsets; use it to train "
        f"attribute-supervised encoders (e.g. `python -m lookbench.training.train_gr_lite`).\n{notes}"
        f"\n## Licence\n\n{entry.licence}\n"
    )
    DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{body}").save(train_out / "README.md")


def _stand_in(subset) -> dict:
    """A LookBench-Mini subset's row of the card: synthetic, standing in for the subset it is named after."""
    text = subset.description
    if text[1:2].islower():  # "Real flat-lay …" → "real flat-lay …"; "AI-generated …" stays
        text = text[0].lower() + text[1:]
    return {"source": SYNTHETIC, "description": f"Synthetic stand-in for {text}"}
