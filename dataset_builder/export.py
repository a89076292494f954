"""Build a LookBench release and export it as a script-less Hub dataset folder (Parquet shards + card)."""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

import datasets
import pyarrow.parquet as pq
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from datasets.utils.py_utils import convert_file_size_to_int
from huggingface_hub import DatasetCard, DatasetCardData

from lookbench._version import __version__
from lookbench.citation import BIBTEX
from lookbench.files import folder_lock, new_sibling, read_regular, replace_folder
from lookbench.paths import mini_dir
from lookbench.progress import StageBars
from lookbench.schema import DEFAULT_CONFIG, SUBSETS, SYNTHETIC, release_date, resolve_subset

from lookbench.dataset_builder.fashion_mnist import package_folder
from lookbench.dataset_builder.builder import TRAIN_DESCRIPTION, LookBench
from lookbench.dataset_builder.review.audit import audit_card, write_audit
from lookbench.dataset_builder.catalog import SOURCES, either, open_source
from lookbench.dataset_builder.sources import TRAIN, SourceError
from lookbench.dataset_builder.text_queries import TEXT_COLUMNS, TEXT_CONFIG, text_features, text_split
from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE, load as load_taxonomy
from lookbench.dataset_builder.validation import ValidationError, ValidationReport, invalid_rows

CARD_TEMPLATE = Path(__file__).with_name("dataset_card_template.md")
REPORT_NAME = "validation_report.json"
AUDIT_NAME = "annotation_audit.json"  # a reviewed release's audit (review.audit); an append's is audit_name(its report)
HISTORY_KEY = "lookbench_history"  # the card's YAML record of how the folder was built, one Step per build or append
# The Hub id the card's usage names (``lookbench stage --namespace`` retargets it).
HUB_ID = "lookbench/lookbench"


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


@dataclass
class BuildSummary:
    out: Path
    rows: dict[str, dict[str, int]] = field(default_factory=dict)
    releases: list[str] = field(default_factory=list)
    report: ValidationReport = field(default_factory=ValidationReport)
    train_out: Path | None = None
    train_rows: int = 0
    default_release: str | None = None
    appended: list[str] = field(default_factory=list)  # the releases an append added (rows: theirs only)
    report_name: str = REPORT_NAME
    notes: list[str] = field(default_factory=list)  # what the build found and repaired (a killed build's half pair)
    taxonomy: str | None = None  # the label of the taxonomy every row was checked against (none: not checked)

    def lines(self) -> list[str]:
        out = [f"Appended {', '.join(self.appended)} to {self.out}" if self.appended else f"Wrote {self.out}"]
        for config, splits in self.rows.items():
            out.append(f"  {config:<18} " + "  ".join(f"{split}={n}" for split, n in splits.items()))
        out.append(f"  releases: {', '.join(self.releases) or '-'}")
        out.append(f"  taxonomy: {self.taxonomy or 'none (rows not checked against one; --taxonomy FILE)'}")
        if self.default_release:
            out.append(f"  rows without a release: {self.default_release} (the newest timestamp; --release NAME sets it)")
        if self.train_out:
            out.append(f"Wrote training set {self.train_out} (train={self.train_rows})")
        rows, problems = invalid_rows(self.report.problems), len(self.report.problems)
        out.append(f"  skipped rows: {rows} ({problems} problem(s)); warnings: {len(self.report.warnings)}")
        out.extend(f"  warning: {w}" for w in self.report.warnings)
        if self.report.problems or self.report.warnings:
            out.append(f"  report: {self.out / self.report_name}")
        return out + self.notes


def write_parquet_shards(dataset: datasets.Dataset, folder: Path, split: str) -> list[Path]:
    """``<split>-NNNNN-of-NNNNN.parquet`` shards no larger than datasets' own ``MAX_SHARD_SIZE``, sized by the Arrow
    table's bytes (the images are embedded: the builder keeps no path)."""
    folder.mkdir(parents=True, exist_ok=True)
    max_bytes = convert_file_size_to_int(datasets.config.MAX_SHARD_SIZE)
    num_shards = max(1, math.ceil(dataset.data.nbytes / max_bytes))
    paths = []
    for index in range(num_shards):
        path = folder / f"{split}-{index:05d}-of-{num_shards:05d}.parquet"
        dataset.shard(num_shards=num_shards, index=index, contiguous=True).to_parquet(str(path))
        paths.append(path)
    return paths


def _prepare(config: str, input_path: Path, cache_dir: Path, progress: StageBars, **config_kwargs) -> LookBench:
    builder = LookBench(config_name=config, data_dir=str(input_path), cache_dir=str(cache_dir), progress=progress, **config_kwargs)
    builder.download_and_prepare(verification_mode="no_checks")
    return builder


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


def build_release(
    source: str,
    out,
    *,
    input_path=None,
    release: str | None = None,
    scale: float = 1.0,
    noise_scale: float = 1.0,
    seed: int = 0,
    skip_invalid: bool = False,
    taxonomy=None,
    subsets=None,
    train_out=None,
    notes: str | None = None,
    progress: bool = False,
) -> BuildSummary:
    """Build LookBench from ``source`` into the dataset folder ``out`` (and the training set into ``train_out``).

    Atomic: everything is written to temporary sibling folders that replace ``out`` (and ``train_out``) only
    once the whole build succeeded, so a failed rebuild leaves the previous folders as they were; each folder's
    ``folder_lock`` is held throughout, so a concurrent build or append is refused in one line. Every
    subset is validated before a failure is raised, with all problems listed. ``notes``: what the card's
    release history says changed with these releases.
    """
    if release is not None:
        release_date(release)
    if source == "fashion-mnist" and input_path is None:
        input_path = package_folder()  # resolved here, so the card's build command names it
    targets = {"out": Path(out)} | ({"train_out": Path(train_out)} if train_out is not None else {})
    with contextlib.ExitStack() as staged:
        for flag, target in targets.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            staged.enter_context(folder_lock(target))  # held to the swap: a concurrent build or append is refused
            _check_replaceable(flag, target, {"data"} if flag == "train_out" else set(SUBSETS) | {TEXT_CONFIG, UNPAIRED, TAXONOMY_FILE})
        left = unpaired_training_set(targets["out"])  # the mark of a build killed between its two swaps
        staging = {}
        for flag, target in targets.items():
            staging[flag] = staged.enter_context(staging_folder(target, "building")) / target.name
        # Scratch (a generated raw release, datasets' cache) inside the staging folder, not in the system's temporary
        # folder: a killed build leaves it beside --out, where the next build holding the lock clears it.
        tmp = staging["out"].with_name(f"{targets['out'].name}.scratch")  # never the staged folder's own name
        tmp.mkdir()
        summary, infos = build_shards(source, staging["out"], tmp, progress, input_path=input_path, release=release, scale=scale,
                                noise_scale=noise_scale, seed=seed, skip_invalid=skip_invalid, taxonomy=taxonomy,
                                subsets=subsets, train_out=staging.get("train_out"))
        summary.report.write(staging["out"] / REPORT_NAME)
        command = _command(source, input_path if source != "mini" else None, release or summary.default_release, scale,
                           noise_scale, seed)
        step = Step(summary.releases, source, command, REPORT_NAME, notes or "first build of this folder")
        write_card(staging["out"], pretty_name=SOURCES[source].pretty_name, history=[step],
                   infos=infos)
        swap_pair(staging, targets)
    summary.out, summary.train_out = targets["out"], targets.get("train_out")
    if left is not None:
        summary.notes.append(f"Repaired {summary.out} and {left}: a killed build had replaced only the first"
                             if summary.train_out is not None and summary.train_out.resolve() == left else
                             f"note: {left} was not replaced by the killed build that last wrote {summary.out}; it is "
                             "still an earlier build's training set")
    return summary


# A build with --train-out replaces two folders, one rename each, and no file system swaps two folders in one step.
# This file, in the new dataset folder, names the training set from the first swap until the second is done, so a
# build killed between them leaves the pair marked: loaders refuse the folder (``check_pair``), the next build
# replaces both and says so.
UNPAIRED = ".unpaired-training-set.json"


def swap_pair(staging: dict[str, Path], targets: dict[str, Path]) -> None:
    """Swap the staged folders in, ``out`` first; with a training set, ``out`` is marked ``UNPAIRED`` until it too
    is in place."""
    train = targets.get("train_out")
    if train is not None:
        (staging["out"] / UNPAIRED).write_text(json.dumps({"train_out": str(train.resolve())}) + "\n")
    replace_folder(staging["out"], targets["out"])
    if train is not None:
        replace_folder(staging["train_out"], train)
        os.unlink(targets["out"] / UNPAIRED)


def unpaired_training_set(folder: Path) -> Path | None:
    """The training set a build killed between its two swaps left unreplaced beside the dataset folder ``folder``
    (its ``UNPAIRED`` mark), else None."""
    mark = Path(folder) / UNPAIRED
    if not os.path.lexists(mark):
        return None
    try:
        return Path(json.loads(read_regular(mark, 1 << 16))["train_out"])
    except (ValueError, KeyError, TypeError):
        return Path("(unreadable: " + str(mark) + ")")


def check_pair(folder: Path) -> None:
    """Refuse, in one line naming both folders, a dataset folder whose training set a killed build never replaced."""
    train = unpaired_training_set(folder)
    if train is not None:
        raise SourceError(f"{folder} and its training set {train} do not match: a `lookbench build` was killed after "
                          "replacing the first and before the second; run that build again to replace both")


@contextlib.contextmanager
def staging_folder(target: Path, what: str):
    """A fresh folder beside ``target`` (same file system, so the finished folder inside it can be renamed over
    ``target``), removed on the way out whatever happened."""
    target.parent.mkdir(parents=True, exist_ok=True)
    folder = new_sibling(target, what, folder=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def is_report(name: str) -> bool:
    """``validation_report.json`` (a build's) or ``validation_report-<release>.json`` (an append's), and the
    ``annotation_audit`` files beside them."""
    return any(name == kind or (name.startswith(kind.removesuffix(".json") + "-") and name.endswith(".json"))
               for kind in (REPORT_NAME, AUDIT_NAME))


def _check_replaceable(flag: str, target: Path, folders: set[str]) -> None:
    """A build replaces its target folder whole, so it must be new, empty or an earlier build's output."""
    if target.exists() and not target.is_dir():
        raise SourceError(f"--{flag.replace('_', '-')} {target} is a file, not a dataset folder")
    if target.is_dir():
        foreign = sorted(p.name for p in target.iterdir() if p.name not in folders | {"README.md"} and not is_report(p.name))
        if foreign:
            raise SourceError(
                f"--{flag.replace('_', '-')} {target} holds {', '.join(foreign[:5])}, which no build wrote; a build replaces "
                "the whole folder, so choose a new or empty one"
            )


def build_shards(source, out: Path, tmp: Path, progress: bool, *, input_path, release, scale, noise_scale, seed,
           skip_invalid, taxonomy, subsets, train_out) -> tuple[BuildSummary, dict]:
    """Validate and write the Parquet shards of every config into ``out`` (and the training set); returns the
    summary and each config's ``DatasetInfo``. The card and the report are the caller's."""
    kind = source
    if source == "mini":
        from lookbench.dataset_builder.mini import generate_raw_release

        input_path = tmp / "raw"
        generate_raw_release(input_path, scale=scale, seed=seed, split="test", noise_scale=noise_scale)
        if train_out is not None:
            generate_raw_release(input_path, scale=scale, seed=seed, split="train")
        kind = "raw"
    elif input_path is None:
        raise SourceError(f"--source {source} needs --input PATH")
    elif train_out is not None and source not in (with_train := [n for n, s in SOURCES.items() if s.train]):
        raise SourceError(f"--train-out needs a release with a train split (sources {either(with_train)})")
    input_path = Path(input_path)
    chosen = load_taxonomy(taxonomy) if taxonomy else None  # a malformed one stops the build before any row is read
    reader = open_source(kind, input_path, release)
    chosen = chosen or reader.taxonomy()
    if chosen is not None:  # the builder reads it by path (a config value); the release ships it
        taxonomy = chosen.write(tmp / TAXONOMY_FILE)
    present = [c for c in SUBSETS if reader.has(c, SUBSETS[c].splits[-1])]
    configs = [resolve_subset(s) for s in subsets] if subsets else present
    if not configs:
        raise SourceError(f"No LookBench subset found in {input_path}")
    absent = [c for c in configs if c not in present]
    if absent:
        raise SourceError(f"{input_path} has no {', '.join(absent)} subset (it has {', '.join(present) or 'none'})")
    summary = BuildSummary(out=out, taxonomy=chosen.label if chosen else None)
    if kind == "raw" and release is None:
        release = summary.default_release = reader.default_release
    config_kwargs = {"source": kind, "release": release, "skip_invalid": skip_invalid, "taxonomy": str(taxonomy) if taxonomy else None}

    with StageBars(("validate", "write"), enabled=progress) as bars:
        builders, failures = {}, []
        for config in configs + ([TRAIN] if train_out is not None else []):
            try:
                builders[config] = _prepare(config, input_path, tmp / "cache", bars, **config_kwargs)
            except ValidationError as err:
                failures.extend(err.problems)
        if failures:
            raise ValidationError(failures)

    infos, releases = {}, set()
    for config in configs:
        builder = builders[config]
        summary.report.problems.extend(builder.validation_report.problems)
        summary.report.warnings.extend(builder.validation_report.warnings)
        summary.rows[config] = {}
        for split in SUBSETS[config].splits:
            dataset = builder.as_dataset(split=split)
            write_parquet_shards(dataset, out / config, split)
            if split == "query":  # the queries in words (text_queries), a config of their own
                write_parquet_shards(text_split(dataset), out / TEXT_CONFIG, SUBSETS[config].alias)
            summary.rows[config][split] = len(dataset)
            releases.update(r for r in dataset.unique("release") if r)
        infos[config] = builder.info
    summary.releases = sorted(releases)
    if chosen is not None:
        chosen.write(out / TAXONOMY_FILE)
    if kind == "raw":
        write_audit(input_path, out / AUDIT_NAME)  # an annotated release's: the card shows it
    if train_out is not None:
        summary.train_out = train_out
        summary.train_rows = _write_train(builders[TRAIN], train_out, source)
    return summary, infos


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
            examples.append({"config": subset.name, "alias": subset.alias, "item_id": first["item_id"],
                             **{form: _cell(first[column]) for form, column in TEXT_COLUMNS.items()}})
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
                   if (text := audit_card(out / audit_name(step.report)))],
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
    return {"file": TAXONOMY_FILE, "name": taxonomy.name, "version": taxonomy.version, "revision": taxonomy.revision,
            "not_applicable": taxonomy.not_applicable,
            "categories": [{"name": c, "main": cat.main_attribute,
                            "attributes": ", ".join(f"{n} ({len(v)})" for n, v in cat.attributes.items())}
                           for c, cat in taxonomy.categories.items()]}


def _write_train(builder: LookBench, train_out: Path, source: str) -> int:
    dataset = builder.as_dataset(split=TRAIN)
    write_parquet_shards(dataset, train_out / "data", TRAIN)
    entry = SOURCES[source]
    pretty_name = f"{entry.pretty_name} train"
    card_data = _card_data(pretty_name, len(dataset), {"default": {TRAIN: "data/train-*"}}, {"default": builder.info},
                           license=entry.licence_id, synthetic=entry.synthetic)
    notes = f"\n{entry.card_notes()}\n" if entry.notes else ""
    body = (
        f"# {pretty_name}\n\n{TRAIN_DESCRIPTION} {len(dataset)} rows in the LookBench record schema, "
        f"from {entry.origin}\n\nNo item id and no image content is shared with the test subsets; use it to train "
        f"attribute-supervised encoders (e.g. `python -m lookbench.training.train_gr_lite`).\n{notes}"
        f"\n## Licence\n\n{entry.licence}\n"
    )
    DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{body}").save(train_out / "README.md")
    builder.validation_report.write(train_out / REPORT_NAME)
    return len(dataset)


def _stand_in(subset) -> dict:
    """A LookBench-Mini subset's row of the card: synthetic, standing in for the subset it is named after."""
    text = subset.description
    if text[1:2].islower():  # "Real flat-lay …" → "real flat-lay …"; "AI-generated …" stays
        text = text[0].lower() + text[1:]
    return {"source": SYNTHETIC, "description": f"Synthetic stand-in for {text}"}


def _command(source, input_path, release, scale, noise_scale, seed) -> str:
    parts = ["lookbench build", f"--source {source}"]
    if input_path:
        parts.append(f"--input {input_path}")
    if release:
        parts.append(f"--release {release}")
    if source == "mini":
        parts += [f"--scale {scale:g}"] + ([f"--noise-scale {noise_scale:g}"] if noise_scale != 1 else []) + [f"--seed {seed}"]
    return " ".join(parts + ["--out <DIR>"])


def default_mini_dir() -> Path:
    """Where the embedded LookBench-Mini of this generator generation (``mini.plan.GENERATION``) lives."""
    from lookbench.dataset_builder.mini.plan import GENERATION

    return mini_dir(GENERATION)


def ensure_default_mini() -> Path:
    """Build LookBench-Mini once and return its dataset folder. Concurrent first uses wait for one build (the
    folder's lock) instead of building twice; what a killed build left is cleared by the next."""
    target = default_mini_dir()
    if (target / "README.md").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(target, wait=True):
        if (target / "README.md").is_file():  # built by the run this one waited for
            return target
        holder = new_sibling(target, "building", folder=True)
        try:
            build_release("mini", holder / target.name)
            replace_folder(holder / target.name, target)
        finally:
            shutil.rmtree(holder, ignore_errors=True)
    return target
