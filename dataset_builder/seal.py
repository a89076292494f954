"""Sealed releases: a built folder split into its public part (every label of the sealed releases withheld) and its
labels (a dataset folder of their own, published as a private repo), joined again to score or to unseal.

docs/publishing.md. The public part keeps the record schema (docs/architecture.md §3): the sealed rows' ``category``,
``main_attribute`` and ``attributes`` are null, and the ``text`` config (whose words are made from the labels) and the
validation reports (which quote rows) move to the labels. The card's YAML says what is sealed (``SEALED_KEY``), so
every command reads it instead of guessing. A label row names its public row by config, split, position and the
sha256 of the image bytes (item ids may repeat), and a join checks all four: labels that do not match their public
part are refused, naming the row.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from lookbench.files import contained_file, folder_lock, folder_revision, replace_folder
from lookbench.schema import SUBSETS, release_date

from lookbench.dataset_builder.append import BuiltFolder
from lookbench.dataset_builder.card import is_report, write_card
from lookbench.dataset_builder.export import staging_folder
from lookbench.dataset_builder.sources import SourceError, read_contained
from lookbench.dataset_builder.text_queries import TEXT_CONFIG

SEALED_KEY = "lookbench_sealed"  # public card: {releases, until, labels (the labels repo)}
UNSEALED_KEY = "lookbench_unsealed"  # unsealed card: {releases, sealed_revision, labels_revision, split_key}
LABELS_KEY = "lookbench_labels"  # labels card: {releases, public_revision, split_key}
SPLIT_KEY = "split_key"  # the secret of the shown/held halves (lookbench.results.halves), kept with the labels
LABELS_REPO = "lookbench-labels"  # <namespace>/lookbench-labels, a private dataset repo
LABEL_FIELDS = ("category", "main_attribute", "attributes")
IDENTITY = ("row", "image_sha256", "item_id", "release")  # how a label row names its public row


@dataclass(frozen=True)
class Sealed:
    """What a card says is sealed: the releases whose labels are withheld, until when (None: until unsealed), and
    the Hub repo that holds them."""

    releases: tuple[str, ...]
    until: str | None
    labels: str

    def to_yaml(self) -> dict:
        return {"releases": list(self.releases), "until": self.until, "labels": self.labels}

    @property
    def shown(self) -> str:
        return f"sealed until {self.until}" if self.until else "sealed until the maintainers unseal it"


def check_until(until: str | None) -> str | None:
    """``--until`` as an ISO date, or a one-line refusal."""
    if until is None:
        return None
    try:
        return dt.date.fromisoformat(until).isoformat()
    except (TypeError, ValueError):
        raise SourceError(f"--until {str(until)[:40]!r} is not a date (YYYY-MM-DD)") from None


def _within(folder: Path, relative: str) -> tuple[Path, str]:
    """Where a file of ``folder`` must lie, as (base, path relative to it): inside the folder, or for a Hub cache
    snapshot (its files are links into its repo's blobs/) inside the repo's cache folder."""
    folder = Path(folder)
    if folder.parent.name == "snapshots":
        return folder.parent.parent, f"snapshots/{folder.name}/{relative}"
    return folder, relative


def card_yaml(folder: Path) -> dict:
    """The YAML of the folder's card; read only as a regular file inside the folder (a link out is refused, never
    followed), like every file the builder reads."""
    folder = Path(folder)
    card = folder / "README.md"
    if not card.exists() and not card.is_symlink():
        return {}
    return DatasetCard(read_contained(*_within(folder, "README.md")).decode("utf-8")).data.to_dict()


def _files(folder: Path, paths) -> list[Path]:
    """``paths`` (files of ``folder``), each a regular file inside it: a link out is refused naming it, so sealing,
    joining or unsealing never turns a file from elsewhere into one of the folders it writes."""
    folder = Path(folder)
    for path in paths:
        if path.is_dir():  # walked, not read (a link to a folder is not walked)
            continue
        try:
            contained_file(*_within(folder, path.relative_to(folder).as_posix()))
        except ValueError as err:
            raise SourceError(f"{folder}: {err}") from None
    return list(paths)


def sealed_state(folder: Path) -> Sealed | None:
    """The sealed state a folder's card declares, ``None`` for a public one; a malformed declaration is refused (a
    sealed folder must never pass for a public one)."""
    value = card_yaml(folder).get(SEALED_KEY)
    if value is None:
        return None
    if (not isinstance(value, dict) or not isinstance(value.get("releases"), list) or not value["releases"]
            or not isinstance(value.get("labels"), str)):
        raise SourceError(f"{folder / 'README.md'}: {SEALED_KEY} is not {{releases, until, labels}}; the folder cannot "
                          "be read as sealed or public")
    return Sealed(tuple(map(str, value["releases"])), None if value.get("until") is None else str(value["until"]),
                  value["labels"])


def _shards(folder: Path) -> list[Path]:
    """Every shard of the record configs, in the order datasets reads them (per config and split, sorted by name)."""
    return _files(folder, sorted(p for p in folder.glob("*/*.parquet") if p.parent.name in SUBSETS))


def _split(shard: Path) -> str:
    return shard.name.split("-", 1)[0]


def _digests(images: pa.ChunkedArray) -> list[str]:
    return [hashlib.sha256(b).hexdigest() for b in images.combine_chunks().field("bytes").to_pylist()]


def _positions(shards: list[Path]) -> dict[Path, int]:
    """Each shard's first row position within its config and split."""
    starts, seen = {}, {}
    for shard in shards:
        key = (shard.parent.name, _split(shard))
        starts[shard] = seen.get(key, 0)
        seen[key] = starts[shard] + pq.ParquetFile(shard).metadata.num_rows
    return starts


def _sealed_mask(table: pa.Table, releases) -> pa.Array:
    return pc.is_in(table.column("release"), value_set=pa.array(sorted(releases), pa.string())).combine_chunks()


def _withheld(table: pa.Table, mask: pa.Array) -> pa.Table:
    """``table`` with the label fields of the masked rows null, the schema (and its metadata) unchanged."""
    for name in LABEL_FIELDS:
        at = table.schema.get_field_index(name)
        column = table.column(name)
        table = table.set_column(at, table.schema.field(at), pc.if_else(mask, pa.nulls(len(table), column.type), column))
    return table


def label_rows(table: pa.Table, start: int, mask: pa.Array) -> pa.Table:
    """The labels of the masked rows of one shard, each naming its public row (``IDENTITY``)."""
    rows = pc.indices_nonzero(mask)
    taken = table.take(rows)
    return pa.table({"row": pc.add(rows.cast(pa.int64()), start), "image_sha256": _digests(taken.column("image")),
                     "item_id": taken.column("item_id"), "release": taken.column("release"),
                     **{name: taken.column(name) for name in LABEL_FIELDS}})


def _link(path: Path, target: Path) -> None:
    """``path``'s file at ``target``: a hard link of the file itself (a Hub snapshot's files are links into its
    blobs, and a relative link moved elsewhere would dangle), a copy where the file system refuses one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(path.resolve(), target)
    except OSError:
        shutil.copy2(path, target)


def _write_labels(out: Path, tables: dict, sealed: Sealed, public_revision: str) -> None:
    """The labels folder: ``<Config>/<split>-00000-of-00001.parquet`` per config and split with sealed rows, and its
    card (``LABELS_KEY``: which public revision they belong to)."""
    for (config, split), parts in tables.items():
        (out / config).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.concat_tables(parts), out / config / f"{split}-00000-of-00001.parquet")
    layout = {}
    for config, split in tables:
        layout.setdefault(config, []).append({"split": split, "path": f"{config}/{split}-*"})
    data = DatasetCardData(pretty_name="LookBench labels", **{LABELS_KEY: {
        "releases": list(sealed.releases), "public_revision": public_revision, SPLIT_KEY: secrets.token_hex(32)}})
    MetadataConfigs({config: {"data_files": files} for config, files in layout.items()}).to_dataset_card_data(data)
    card = DatasetCard(f"---\n{data.to_yaml()}\n---\n# LookBench labels (private)\n\nThe labels of the sealed releases "
                       f"{', '.join(sealed.releases)} ({sealed.shown}). Each row names its public row by config, split, "
                       "position (`row`) and the sha256 of its image bytes; `lookbench unseal` joins them back.\n")
    card.save(out / "README.md")


def _sealed_card(public: Path, built: BuiltFolder, sealed: Sealed) -> None:
    """The public part's card: written as a build writes it (no text config, no validation report: both carry
    labels), with ``SEALED_KEY`` in its YAML and the seal said first."""
    write_card(public, pretty_name=built.pretty_name, history=built.history, infos=built.infos)
    card = DatasetCard.load(public / "README.md")
    card.data[SEALED_KEY] = sealed.to_yaml()
    head, _, rest = card.text.partition("\n\n")
    card.text = (f"{head}\n\n> **Sealed: {', '.join(sealed.releases)}** — {sealed.shown}. The category, main "
                 "attribute, attributes and query texts of these releases are withheld; the leaderboard scores "
                 "submitted rankings against them (docs/publishing.md).\n\n{rest}")
    card.save(public / "README.md")


def seal_into(source: Path, public: Path, labels: Path, releases, until: str | None, labels_repo: str) -> Sealed:
    """Write the public part of the built folder ``source`` into the new folder ``public`` and its labels into the new
    folder ``labels``, the rows of ``releases`` sealed (``None``: every release)."""
    built = BuiltFolder.read(source)
    known = set(built.facts)
    releases = sorted(known if releases is None else set(releases), key=release_date)
    unknown = [r for r in releases if r not in known]
    if unknown:
        raise SourceError(f"{source} has no release {', '.join(unknown)}; it has {', '.join(sorted(known))}")
    until = check_until(until)
    if sealed_state(source) is not None:
        raise SourceError(f"{source} is sealed already ({SEALED_KEY} in its card); unseal it first")
    sealed = Sealed(tuple(releases), until, labels_repo)
    shards = _shards(source)
    starts, tables = _positions(shards), {}
    for shard in shards:
        target = public / shard.relative_to(source)
        table = pq.read_table(shard)
        mask = _sealed_mask(table, releases)
        if not pc.any(mask).as_py():
            _link(shard, target)  # no sealed row: byte-identical
            continue
        tables.setdefault((shard.parent.name, _split(shard)), []).append(label_rows(table, starts[shard], mask))
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_withheld(table, mask), target)
    for path in _files(source, sorted(source.rglob("*"))):  # the rest: the text config and the reports carry labels
        relative = path.relative_to(source)
        if path.is_dir() or relative.parts[0] in SUBSETS or relative.as_posix() == "README.md":
            continue
        _link(path, (labels if relative.parts[0] == TEXT_CONFIG or is_report(relative.name) else public) / relative)
    _sealed_card(public, built, sealed)
    _write_labels(labels, tables, sealed, folder_revision(public))
    return sealed


def seal(folder, releases=None, until=None, labels_out=None, labels_repo: str = f"lookbench/{LABELS_REPO}") -> Sealed:
    """``lookbench seal``: seal ``releases`` of the built ``folder`` in place; the labels go to ``labels_out``
    (default ``<folder>-labels``). Both are replaced whole under their locks, the labels first."""
    folder = Path(folder)
    labels_out = Path(labels_out) if labels_out is not None else folder.with_name(f"{folder.name}-labels")
    with contextlib.ExitStack() as stack:
        for target in (folder, labels_out):
            stack.enter_context(folder_lock(target))
        staged = {t: stack.enter_context(staging_folder(t, "sealing")) / t.name for t in (folder, labels_out)}
        sealed = seal_into(folder, staged[folder], staged[labels_out], releases, until, labels_repo)
        staged[labels_out].mkdir(exist_ok=True)
        replace_folder(staged[labels_out], labels_out)
        replace_folder(staged[folder], folder)
    return sealed


class Labels:
    """The labels of sealed rows by (config, split) → row position → label row, read from a labels folder or from an
    unsealed (or never sealed) built folder, and joined to a public part, every identity checked."""

    def __init__(self, tables: dict, source: str, revision: str, public: bool, split_key: str | None = None):
        self.tables, self.source, self.revision = tables, source, revision
        self.public = public  # read from a public (unsealed) release, not from the withheld labels folder
        self.split_key = split_key  # the halves' secret (None: labels sealed before there were halves)

    @classmethod
    def read(cls, folder: Path, releases) -> "Labels":
        folder = Path(folder)
        card = card_yaml(folder)
        tables = {}
        if LABELS_KEY in card:
            for shard in _shards(folder):
                table = pq.read_table(shard)
                tables.setdefault((shard.parent.name, _split(shard)), []).append(table)
        elif sealed_state(folder) is None and any(_shards(folder)):
            shards = _shards(folder)
            for shard, start in _positions(shards).items():
                table = pq.read_table(shard)
                mask = _sealed_mask(table, releases)
                if pc.any(mask).as_py():
                    tables.setdefault((shard.parent.name, _split(shard)), []).append(label_rows(table, start, mask))
        else:
            raise SourceError(f"{folder} holds no labels: neither a labels folder ({LABELS_KEY} in its card) nor a public "
                              "release with its labels")
        joined = {key: pa.concat_tables(parts) for key, parts in tables.items()}
        kept = card.get(LABELS_KEY) or card.get(UNSEALED_KEY)
        split_key = kept.get(SPLIT_KEY) if isinstance(kept, dict) else None
        return cls({key: dict(zip(t.column("row").to_pylist(), t.to_pylist())) for key, t in joined.items()},
                   str(folder), folder_revision(folder), LABELS_KEY not in card,
                   split_key if isinstance(split_key, str) else None)

    def fill(self, shard: Path, start: int, sealed: Sealed) -> pa.Table:
        """The shard's table with its sealed rows' labels filled in; a sealed row without a label, or a label whose
        identity is not the row's, is refused naming the row."""
        table = pq.read_table(shard)
        mask = _sealed_mask(table, sealed.releases)
        if not pc.any(mask).as_py():
            return table
        config, split = shard.parent.name, _split(shard)
        have = self.tables.get((config, split), {})
        rows = pc.indices_nonzero(mask).to_pylist()
        digests = _digests(table.take(rows).column("image"))
        item_ids, stamps = table.column("item_id").to_pylist(), table.column("release").to_pylist()
        values = {name: table.column(name).to_pylist() for name in LABEL_FIELDS}
        for at, digest in zip(rows, digests):
            label = have.get(start + at)
            where = f"{config}/{split} row {start + at} (item {item_ids[at]!r})"
            if label is None:
                raise SourceError(f"the labels {self.source} have no label for {where}: they do not belong to this "
                                  "public part")
            public = {"row": start + at, "image_sha256": digest, "item_id": item_ids[at], "release": stamps[at]}
            differ = [f for f in IDENTITY if label[f] != public[f]]
            if differ:
                raise SourceError(f"the labels {self.source} do not match {where}: their {differ[0]} is "
                                  f"{str(label[differ[0]])[:64]!r}, the public row's {str(public[differ[0]])[:64]!r}")
            for name in LABEL_FIELDS:
                values[name][at] = label[name]
        for name in LABEL_FIELDS:
            at = table.schema.get_field_index(name)
            table = table.set_column(at, table.schema.field(at), pa.array(values[name], table.schema.field(at).type))
        return table

    def join_into(self, public: Path, out: Path, sealed: Sealed) -> None:
        """The public part with its labels back, as a new built folder ``out`` (its card still the sealed one's)."""
        expected = sum(len(rows) for rows in self.tables.values())
        filled = 0
        for shard, start in _positions(_shards(public)).items():
            table = self.fill(shard, start, sealed)
            filled += pc.sum(_sealed_mask(table, sealed.releases)).as_py() or 0
            target = out / shard.relative_to(public)
            target.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, target)
        if filled != expected:
            raise SourceError(f"the labels {self.source} hold {expected} rows, the public part {public} {filled} sealed "
                              "rows: they do not belong together")
        for path in _files(public, sorted(public.rglob("*"))):
            relative = path.relative_to(public)
            if not path.is_dir() and relative.parts[0] not in SUBSETS:
                _link(path, out / relative)


def unseal(folder, labels) -> Sealed:
    """``lookbench unseal``: the sealed ``folder`` with its labels (a labels folder) joined back, the text config and
    validation reports restored, and its card public again (``UNSEALED_KEY`` records what was sealed); replaced whole
    under its lock."""
    folder, labels = Path(folder), Path(labels)
    with folder_lock(folder):
        sealed = sealed_state(folder)
        if sealed is None:
            raise SourceError(f"{folder} is not sealed (no {SEALED_KEY} in its card)")
        built = BuiltFolder.read(folder)
        found = Labels.read(labels, sealed.releases)
        with staging_folder(folder, "unsealing") as staging:
            target = staging / folder.name
            found.join_into(folder, target, sealed)
            for path in _files(labels, sorted(labels.rglob("*"))):
                relative = path.relative_to(labels)
                if not path.is_dir() and (relative.parts[0] == TEXT_CONFIG or is_report(relative.name)):
                    _link(path, target / relative)
            (target / "README.md").unlink()
            write_card(target, pretty_name=built.pretty_name, history=built.history, infos=built.infos)
            card = DatasetCard.load(target / "README.md")
            card.data[UNSEALED_KEY] = {"releases": list(sealed.releases), "sealed_revision": folder_revision(folder),
                                       "labels_revision": found.revision, SPLIT_KEY: found.split_key}
            card.save(target / "README.md")
            replace_folder(target, folder)
    return sealed
