"""The labels of a sealed release, read from its labels folder (what ``seal`` withheld) or from the release unsealed
(or never sealed), and joined to a public part two ways (docs/publishing.md): ``fill_into`` puts the labels into the
public rows as they were published (their order, opaque ids and coarse timestamps: what submitted rankings name),
which is what the board and ``evaluate --labels`` score; ``join_into`` gives the original release back, what
``unseal`` publishes. Every public row is named by the map of the sealed rows (``sealed.py``) and checked against it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lookbench.files import folder_revision
from lookbench.schema import SUBSETS

from lookbench.dataset_builder.sealed import (LABEL_FIELDS, LABELS_KEY, SPLIT_KEY, UNSEALED_KEY, Sealed, card_yaml,
                                              digests, files, link, positions, read_maps, sealed_mask, sealed_state,
                                              shards, split_of)
from lookbench.dataset_builder.sources import SourceError

# A label row: the original row's position and image digest (how it names its row), its item id and release, and
# what scoring reads of it that the public part withholds.
SCORED_FIELDS = (*LABEL_FIELDS, "outfit_id")
LABEL_COLUMNS = ("row", "image_sha256", "item_id", "release", *SCORED_FIELDS)


def record_rows(table: pa.Table, rows: pa.Array, mask: pa.Array) -> pa.Table:
    """The whole original records of the masked rows of one shard, their positions (``rows``) and image digests
    first: what a labels folder's shard holds."""
    taken = table.filter(mask).replace_schema_metadata(None)
    head = [rows.cast(pa.int64()), pa.array(digests(taken.column("image")), pa.string())]
    return pa.Table.from_arrays([*head, *taken.columns], names=["row", "image_sha256", *taken.column_names])


class Labels:
    """The labels of sealed rows by (config, split) → original row position → label row (``LABEL_COLUMNS``), the
    map of the sealed rows (``None``: the folder has none) and the folder they were read from."""

    def __init__(self, folder: Path, tables: dict, rows: dict | None, revision: str, public: bool,
                 split_key: str | None = None):
        self.folder, self.tables, self.rows, self.revision = Path(folder), tables, rows, revision
        self.source = str(folder)
        self.public = public  # read from a public (unsealed) release, not from the withheld labels folder
        self.split_key = split_key  # the halves' secret (None: labels sealed before there were halves)

    @classmethod
    def read(cls, folder: Path, releases) -> "Labels":
        folder = Path(folder)
        card = card_yaml(folder)
        withheld = LABELS_KEY in card
        if not withheld and (sealed_state(folder) is not None or not any(shards(folder))):
            raise SourceError(f"{folder} holds no labels: neither a labels folder ({LABELS_KEY} in its card) nor a public "
                              "release with its labels")
        tables = {}
        for key, table in _records(folder, releases, withheld):
            if withheld:
                _check_digests(folder, key, table)
            tables.setdefault(key, []).append(table.select(list(LABEL_COLUMNS)))
        joined = {key: pa.concat_tables(parts) for key, parts in tables.items()}
        kept = card.get(LABELS_KEY) or card.get(UNSEALED_KEY)
        split_key = kept.get(SPLIT_KEY) if isinstance(kept, dict) else None
        return cls(folder, {key: dict(zip(t.column("row").to_pylist(), t.to_pylist())) for key, t in joined.items()},
                   read_maps(folder, releases), folder_revision(folder), not withheld,
                   split_key if isinstance(split_key, str) else None)

    def records(self, key: tuple[str, str], releases) -> pa.Table:
        """The original records of one config and split's sealed rows, with their ``row`` positions."""
        parts = [t for _, t in _records(self.folder, releases, not self.public, key)]
        return pa.concat_tables(parts) if parts else None

    def _mapped(self, shard: Path, start: int, table: pa.Table, mask: pa.Array) -> list[tuple[int, dict]]:
        """(position in the shard, label row) of each sealed public row, its map entry and identity checked: a row
        without one, or whose id or image is not its entry's, is refused naming the row."""
        config, split = shard.parent.name, split_of(shard)
        if self.rows is None:
            raise SourceError(f"the labels {self.source} hold no map of the sealed rows (sealed_rows-<release>.parquet): "
                              "only the labels folder `lookbench seal` wrote, or the release unsealed from it, can be "
                              "joined to a sealed public part")
        mapped, have = self.rows.get((config, split), {}), self.tables.get((config, split), {})
        at_rows = pc.indices_nonzero(mask).to_pylist()
        shown = digests(table.column("image").take(at_rows))
        ids = table.column("item_id").to_pylist()
        out = []
        for at, digest in zip(at_rows, shown):
            where = f"{config}/{split} row {start + at} (item {str(ids[at])[:64]!r})"
            entry = mapped.get(start + at)
            label = have.get(entry["row"]) if entry else None
            if label is None:
                raise SourceError(f"the labels {self.source} have no label for {where}: they do not belong to this "
                                  "public part")
            public = {"row_id": ids[at], "public_sha256": digest}
            theirs = {"row_id": entry["row_id"], "public_sha256": entry["public_sha256"]}
            differ = [f for f in public if theirs[f] != public[f]]
            if differ:
                raise SourceError(f"the labels {self.source} do not match {where}: their {differ[0]} is "
                                  f"{str(theirs[differ[0]])[:64]!r}, the public row's {str(public[differ[0]])[:64]!r}")
            out.append((at, label))
        return out

    def _each(self, public: Path, out: Path, sealed: Sealed, write) -> None:
        """``write(shard, start, table, mask, mapped)`` → the table written for each public shard with sealed rows
        (the others are linked as they are), then every file beside the shards; the number of sealed rows must be the
        map's."""
        expected = sum(len(rows) for rows in (self.rows or {}).values())
        seen = 0
        for shard, start in positions(shards(public)).items():
            table = pq.read_table(shard)
            mask = sealed_mask(table, sealed.releases)
            target = out / shard.relative_to(public)
            if not pc.any(mask).as_py():
                link(shard, target)  # no sealed row: byte-identical
                continue
            mapped = self._mapped(shard, start, table, mask)
            seen += len(mapped)
            target.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(write(shard, start, table, mask, mapped), target)
        if seen != expected:
            raise SourceError(f"the labels {self.source} map {expected} rows, the public part {public} has {seen} sealed "
                              "rows: they do not belong together")
        for path in files(public, sorted(public.rglob("*"))):
            relative = path.relative_to(public)
            if not path.is_dir() and relative.parts[0] not in SUBSETS:
                link(path, out / relative)

    def fill_into(self, public: Path, out: Path, sealed: Sealed) -> None:
        """The public part with the labels of its sealed rows filled in, every row where it was published and
        everything else as it was (``out``, a new folder; its card still the sealed one's): what rankings of the
        public part are scored against."""

        def filled(shard, start, table, mask, mapped):
            values = {name: table.column(name).to_pylist() for name in SCORED_FIELDS}
            for at, label in mapped:
                for name in SCORED_FIELDS:
                    values[name][at] = label[name]
            for name in SCORED_FIELDS:
                at = table.schema.get_field_index(name)
                table = table.set_column(at, table.schema.field(at), pa.array(values[name], table.schema.field(at).type))
            return table

        self._each(public, out, sealed, filled)

    def join_into(self, public: Path, out: Path, sealed: Sealed) -> None:
        """The original release back (``out``, a new folder; its card still the sealed one's): each sealed row is its
        withheld record again, at its original position, the public rows of other releases untouched."""

        def original(shard, start, table, mask, mapped):
            key = (shard.parent.name, split_of(shard))
            records = self.records(key, sealed.releases)
            wanted = sorted(label["row"] for _, label in mapped)
            sealed_at = pc.indices_nonzero(mask).to_numpy()
            if wanted != (sealed_at + start).tolist():
                raise SourceError(f"the labels {self.source} place rows of {key[0]}/{key[1]} outside the public shard "
                                  f"{shard.name}: they do not belong to this public part")
            rows = records.column("row").to_numpy()
            chosen = records.take(np.flatnonzero(np.isin(rows, wanted)))
            back = pa.Table.from_arrays([chosen.column(f.name).cast(f.type) for f in table.schema], schema=table.schema)
            kept = table.filter(pc.invert(mask))
            order = np.argsort(np.concatenate([np.flatnonzero(~mask.to_numpy(zero_copy_only=False)),
                                               chosen.column("row").to_numpy() - start]), kind="stable")
            return pa.concat_tables([kept, back]).take(order)

        self._each(public, out, sealed, original)


def _records(folder: Path, releases, withheld: bool, only: tuple[str, str] | None = None):
    """(config, split), table of original records with their ``row`` positions and ``image_sha256``: each shard of
    a labels folder as it is, or the rows of ``releases`` of a public release's shards (``only``: of one config and
    split)."""
    found = shards(folder)
    starts = positions(found)
    for shard in found:
        key = (shard.parent.name, split_of(shard))
        if only is not None and key != only:
            continue
        table = pq.read_table(shard)
        if withheld:
            absent = [name for name in (*LABEL_COLUMNS, "image") if name not in table.column_names]
            if absent:
                raise SourceError(f"{shard}: no labels shard of this version (it lacks {', '.join(absent)}); seal the "
                                  "release again from its built folder")
            yield key, table
            continue
        mask = sealed_mask(table, releases)
        if pc.any(mask).as_py():
            rows = pc.add(pc.indices_nonzero(mask).cast(pa.int64()), starts[shard])
            yield key, record_rows(table, rows, mask)


def _check_digests(folder: Path, key, table: pa.Table) -> None:
    """A labels shard's ``image_sha256`` must be the digest of the record it keeps, else the row is named: labels
    changed after sealing are refused before anything is joined."""
    kept, rows = table.column("image_sha256").to_pylist(), table.column("row").to_pylist()
    for at, actual in enumerate(digests(table.column("image"))):
        if kept[at] != actual:
            item = table.column("item_id")[at].as_py()
            raise SourceError(f"the labels {folder} do not match {key[0]}/{key[1]} row {rows[at]} (item {str(item)[:64]!r}): "
                              f"their image_sha256 is {str(kept[at])[:64]!r}, the row's {actual!r}")
