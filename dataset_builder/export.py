"""Build a LookBench release and export it as a script-less Hub dataset folder: validated Parquet shards swapped in
whole (with ``--train-out``, the training set as a pair), the card written by ``card.py``."""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from datasets.utils.py_utils import convert_file_size_to_int

from lookbench.files import folder_lock, new_sibling, read_regular, replace_folder
from lookbench.paths import mini_dir
from lookbench.progress import StageBars
from lookbench.schema import SUBSETS, release_date, resolve_subset

from lookbench.dataset_builder.fashion_mnist import package_folder
from lookbench.dataset_builder.builder import LookBench
from lookbench.dataset_builder.card import AUDIT_NAME, REPORT_NAME, Step, is_report, write_card, write_train_card
from lookbench.dataset_builder.review.audit import write_audit
from lookbench.dataset_builder.sealed import is_map
from lookbench.dataset_builder.catalog import SOURCES, either, open_source
from lookbench.dataset_builder.sources import TRAIN, SourceError
from lookbench.dataset_builder.text_queries import TEXT_CONFIG, text_split
from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE, load as load_taxonomy
from lookbench.dataset_builder.validation import ValidationError, ValidationReport, invalid_rows


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
            _check_replaceable(flag, target, {"data"} if flag == "train_out"
                               else set(SUBSETS) | {TEXT_CONFIG, UNPAIRED, TAXONOMY_FILE})
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


def _check_replaceable(flag: str, target: Path, folders: set[str]) -> None:
    """A build replaces its target folder whole, so it must be new, empty or an earlier build's output."""
    if target.exists() and not target.is_dir():
        raise SourceError(f"--{flag.replace('_', '-')} {target} is a file, not a dataset folder")
    if target.is_dir():
        foreign = sorted(p.name for p in target.iterdir() if p.name not in folders | {"README.md"}
                         and not is_report(p.name) and not is_map(p.name))
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


def _write_train(builder: LookBench, train_out: Path, source: str) -> int:
    dataset = builder.as_dataset(split=TRAIN)
    write_parquet_shards(dataset, train_out / "data", TRAIN)
    write_train_card(train_out, len(dataset), builder.info, source)
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
