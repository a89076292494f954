"""Build a LookBench release and export it as a script-less Hub dataset folder (Parquet shards + card)."""
from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import pyarrow.compute as pc
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from datasets.utils.py_utils import convert_file_size_to_int
from huggingface_hub import DatasetCard, DatasetCardData

import lookbench
from lookbench.files import replace_folder
from lookbench.paths import lookbench_home
from lookbench.progress import StageBars
from lookbench.schema import DEFAULT_CONFIG, SUBSETS, resolve_subset

from . import fashion_mnist
from .builder import CITATION, TRAIN_DESCRIPTION, LookBench
from .sources import TRAIN, SourceError, open_source, release_date
from .validation import ValidationError, ValidationReport, invalid_rows, load_taxonomy

CARD_TEMPLATE = Path(__file__).with_name("dataset_card_template.md")
REPORT_NAME = "validation_report.json"
LICENCES = {
    "mini": "LookBench-Mini is generated procedurally by the `lookbench` package (Apache-2.0); no third-party image is included.",
    "upstream": "Converted from the published LookBench release (`srpone/look-bench`, Apache-2.0, Gensmo.ai); "
    "see the paper for the provenance of the crawled and AI-generated images.",
    "raw": "Licence as declared by the maintainers of this release (Apache-2.0 for the LookBench releases).",
    "fashion-mnist": "MIT. The images and class labels are Fashion-MNIST, Copyright (c) 2017 Zalando SE "
    "(https://github.com/zalandoresearch/fashion-mnist; Xiao, Rasul and Vollgraf, arXiv:1708.07747), "
    "read from the Debian package `dataset-fashion-mnist`; the conversion and the `shade` attribute are lookbench's.",
}
LICENSE_IDS = {"fashion-mnist": "mit"}  # the card's `license:`; every other source is Apache-2.0
SOURCES = {
    "mini": "LookBench-Mini — procedurally rendered garments with known attribute ground truth (seeded, deterministic).",
    "upstream": "The published `srpone/look-bench` Parquet release, mapped onto the LookBench record schema.",
    "raw": "A raw LookBench release folder (JSON lines + images) from a crawl or an annotation job.",
    "fashion-mnist": "Zalando's Fashion-MNIST: real product photos (28 px greyscale, 10 classes), read from the four IDX files.",
}
NOTES = {"fashion-mnist": fashion_mnist.CARD_NOTES}  # a source's own section of the card
PRETTY_NAMES = {"mini": "LookBench-Mini", "fashion-mnist": "LookBench Fashion-MNIST"}


@dataclass
class BuildSummary:
    out: Path
    rows: dict[str, dict[str, int]] = field(default_factory=dict)
    releases: list[str] = field(default_factory=list)
    report: ValidationReport = field(default_factory=ValidationReport)
    train_out: Path | None = None
    train_rows: int = 0
    default_release: str | None = None

    def lines(self) -> list[str]:
        out = [f"Wrote {self.out}"]
        for config, splits in self.rows.items():
            out.append(f"  {config:<18} " + "  ".join(f"{split}={n}" for split, n in splits.items()))
        out.append(f"  releases: {', '.join(self.releases) or '-'}")
        if self.default_release:
            out.append(f"  rows without a release: {self.default_release} (the newest timestamp; --release NAME sets it)")
        if self.train_out:
            out.append(f"Wrote training set {self.train_out} (train={self.train_rows})")
        rows, problems = invalid_rows(self.report.problems), len(self.report.problems)
        out.append(f"  skipped rows: {rows} ({problems} problem(s)); warnings: {len(self.report.warnings)}")
        out.extend(f"  warning: {w}" for w in self.report.warnings)
        if self.report.problems or self.report.warnings:
            out.append(f"  report: {self.out / REPORT_NAME}")
        return out


def write_parquet_shards(dataset: datasets.Dataset, folder: Path, split: str) -> list[Path]:
    """``<split>-NNNNN-of-NNNNN.parquet`` shards no larger than datasets' own ``MAX_SHARD_SIZE``."""
    folder.mkdir(parents=True, exist_ok=True)
    max_bytes = convert_file_size_to_int(datasets.config.MAX_SHARD_SIZE)
    num_shards = max(1, math.ceil(dataset._estimate_nbytes() / max_bytes))
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
               license: str = "apache-2.0") -> DatasetCardData:
    """The card's YAML through datasets' own writers: ``configs:`` (data files per split) and ``dataset_info``."""
    card_data = DatasetCardData(
        license=license,
        pretty_name=pretty_name,
        task_categories=["image-feature-extraction"],
        tags=["fashion", "image-retrieval", "benchmark", "lookbench"],
        size_categories=[_size_category(total_rows)],
    )
    MetadataConfigs(
        {name: {"data_files": [{"split": s, "path": p} for s, p in files.items()], **({"default": True} if name == default else {})}
         for name, files in layout.items()}
    ).to_dataset_card_data(card_data)
    DatasetInfosDict(infos).to_dataset_card_data(card_data)
    return card_data


def _validation_summary(report: ValidationReport) -> str:
    if not report.problems and not report.warnings:
        return "Every row passed validation (files inside the release, images decode fully, required fields and types, bounding boxes, duplicates, timestamps, taxonomy)."
    return f"{invalid_rows(report.problems)} invalid row(s) were left out and {len(report.warnings)} warning(s) raised; see `{REPORT_NAME}`."


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
    progress: bool = False,
) -> BuildSummary:
    """Build LookBench from ``source`` into the dataset folder ``out`` (and the training set into ``train_out``).

    Atomic: everything is written to temporary sibling folders that replace ``out`` (and ``train_out``) only
    once the whole build succeeded, so a failed rebuild leaves the previous folders as they were. Every
    subset is validated before a failure is raised, with all problems listed.
    """
    if release is not None:
        release_date(release)
    targets = {"out": Path(out)} | ({"train_out": Path(train_out)} if train_out is not None else {})
    for flag, target in targets.items():
        _check_replaceable(flag, target, {"data"} if flag == "train_out" else set(SUBSETS))
    with tempfile.TemporaryDirectory(prefix="lookbench-build-") as tmp, contextlib.ExitStack() as staged:
        tmp = Path(tmp)
        staging = {}
        for flag, target in targets.items():
            target.parent.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=f".{target.name}.building-", dir=target.parent))
            staged.callback(shutil.rmtree, folder, ignore_errors=True)
            staging[flag] = folder / target.name
        summary = _build(source, staging["out"], tmp, progress, input_path=input_path, release=release, scale=scale,
                         noise_scale=noise_scale, seed=seed, skip_invalid=skip_invalid, taxonomy=taxonomy,
                         subsets=subsets, train_out=staging.get("train_out"))
        for flag, target in targets.items():
            replace_folder(staging[flag], target)
    summary.out, summary.train_out = targets["out"], targets.get("train_out")
    return summary


def _check_replaceable(flag: str, target: Path, folders: set[str]) -> None:
    """A build replaces its target folder whole, so it must be new, empty or an earlier build's output."""
    if target.exists() and not target.is_dir():
        raise SourceError(f"--{flag.replace('_', '-')} {target} is a file, not a dataset folder")
    if target.is_dir():
        foreign = sorted(p.name for p in target.iterdir() if p.name not in folders | {"README.md", REPORT_NAME})
        if foreign:
            raise SourceError(
                f"--{flag.replace('_', '-')} {target} holds {', '.join(foreign[:5])}, which no build wrote; a build replaces "
                "the whole folder, so choose a new or empty one"
            )


def _build(source, out: Path, tmp: Path, progress: bool, *, input_path, release, scale, noise_scale, seed,
           skip_invalid, taxonomy, subsets, train_out) -> BuildSummary:
    kind = source
    if source == "mini":
        from .mini import generate_raw_release, write_taxonomy

        input_path = tmp / "raw"
        generate_raw_release(input_path, scale=scale, seed=seed, split="test", noise_scale=noise_scale)
        if train_out is not None:
            generate_raw_release(input_path, scale=scale, seed=seed, split="train")
        taxonomy = taxonomy or write_taxonomy(tmp / "taxonomy.json")
        kind = "raw"
    elif source == "fashion-mnist":
        from .fashion_mnist import package_folder

        input_path = input_path or package_folder()
    elif input_path is None:
        raise SourceError(f"--source {source} needs --input PATH")
    elif train_out is not None and source != "raw":
        raise SourceError("--train-out needs a release with a train split (sources raw, mini or fashion-mnist)")
    input_path = Path(input_path)
    if taxonomy:
        load_taxonomy(taxonomy)  # a malformed taxonomy stops the build before any row is read
    reader = open_source(kind, input_path, release)
    present = [c for c in SUBSETS if reader.has(c, SUBSETS[c].splits[-1])]
    configs = [resolve_subset(s) for s in subsets] if subsets else present
    if not configs:
        raise SourceError(f"No LookBench subset found in {input_path}")
    absent = [c for c in configs if c not in present]
    if absent:
        raise SourceError(f"{input_path} has no {', '.join(absent)} subset (it has {', '.join(present) or 'none'})")
    summary = BuildSummary(out=out)
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

    infos, layout, releases, stamps = {}, {}, set(), []
    for config in configs:
        builder = builders[config]
        summary.report.problems.extend(builder.validation_report.problems)
        summary.report.warnings.extend(builder.validation_report.warnings)
        layout[config], summary.rows[config] = {}, {}
        for split in SUBSETS[config].splits:
            dataset = builder.as_dataset(split=split)
            write_parquet_shards(dataset, out / config, split)
            layout[config][split] = f"{config}/{split}-*"
            summary.rows[config][split] = len(dataset)
            releases.update(r for r in dataset.unique("release") if r)
            stamps.extend(v for v in pc.min_max(dataset.data.column("timestamp")).values() if v.is_valid)
        infos[config] = builder.info
    summary.releases = sorted(releases)
    total = sum(n for splits in summary.rows.values() for n in splits.values())
    card_vars = {
        "pretty_name": PRETTY_NAMES.get(source, "LookBench"),
        "summary": SOURCES[source],
        "subsets": [
            {**vars(SUBSETS[c]), "query": summary.rows[c].get("query", "—"), "gallery": summary.rows[c]["gallery"]}
            for c in configs
        ],
        "releases": summary.releases,
        "first_timestamp": min(s.as_py() for s in stamps).isoformat() if stamps else "-",
        "last_timestamp": max(s.as_py() for s in stamps).isoformat() if stamps else "-",
        "build_command": _command(source, input_path if source != "mini" else None, release, scale, noise_scale, seed),
        "lookbench_version": lookbench.__version__,
        "data_source": SOURCES[source],
        "dataset_path": out.name,
        "validation_summary": _validation_summary(summary.report),
        "license_text": LICENCES[source],
        "notes": NOTES.get(source, ""),
    }
    card_data = _card_data(card_vars["pretty_name"], total, layout, infos, DEFAULT_CONFIG if DEFAULT_CONFIG in configs else configs[0],
                           LICENSE_IDS.get(source, "apache-2.0"))
    DatasetCard.from_template(card_data, template_path=str(CARD_TEMPLATE), citation=CITATION.strip(), **card_vars).save(out / "README.md")
    summary.report.write(out / REPORT_NAME)
    if train_out is not None:
        summary.train_out = train_out
        summary.train_rows = _write_train(builders[TRAIN], train_out, source)
    return summary


def _write_train(builder: LookBench, train_out: Path, source: str) -> int:
    dataset = builder.as_dataset(split=TRAIN)
    write_parquet_shards(dataset, train_out / "data", TRAIN)
    pretty_name = f"{PRETTY_NAMES.get(source, 'LookBench')} train"
    card_data = _card_data(pretty_name, len(dataset), {"default": {TRAIN: "data/train-*"}}, {"default": builder.info},
                           license=LICENSE_IDS.get(source, "apache-2.0"))
    notes = f"\n{NOTES[source]}\n" if source in NOTES else ""
    body = (
        f"# {pretty_name}\n\n{TRAIN_DESCRIPTION} {len(dataset)} rows in the LookBench record schema, "
        f"from {SOURCES[source]}\n\nNo item id and no image content is shared with the test subsets; use it to train "
        f"attribute-supervised encoders (e.g. `python -m lookbench.models.gr_lite.train_gr_lite`).\n{notes}"
        f"\n## Licence\n\n{LICENCES[source]}\n"
    )
    DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{body}").save(train_out / "README.md")
    builder.validation_report.write(train_out / REPORT_NAME)
    return len(dataset)


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
    """Where the embedded LookBench-Mini lives: under ``lookbench_home()``, one folder per package version."""
    return lookbench_home() / f"mini-{lookbench.__version__}" / "lookbench"


def ensure_default_mini() -> Path:
    """Build LookBench-Mini once (atomically) and return its dataset folder."""
    target = default_mini_dir()
    if (target / "README.md").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent)) / "lookbench"
    build_release("mini", staging)
    try:
        os.replace(staging, target)
    except OSError:
        if not (target / "README.md").is_file():
            raise
    shutil.rmtree(staging.parent, ignore_errors=True)
    return target
