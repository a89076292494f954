"""What a sealed folder is on disk, read by sealing, joining and unsealing alike (docs/publishing.md): the card's
declaration (``SEALED_KEY``, ``Sealed``), the record shards in the order datasets reads them, and the map of the
sealed rows, ``sealed_rows-<release>.parquet`` beside the card: one row per sealed row — its config, split, position
in the original release (``row``), position in the public part (``public_row``), opaque id (``row_id``) and the
sha256 of its public image bytes (``public_sha256``). The map lives with the labels while a release is sealed and is
published at unseal, so rankings made on the sealed public part can still be scored from the unsealed release.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from huggingface_hub import DatasetCard

from lookbench.files import contained_file
from lookbench.schema import SUBSETS

from lookbench.dataset_builder.sources import SourceError, read_contained

SEALED_KEY = "lookbench_sealed"  # public card: {releases, until, labels (the labels repo)}
UNSEALED_KEY = "lookbench_unsealed"  # unsealed card: {releases, sealed_revision, labels_revision, split_key}
LABELS_KEY = "lookbench_labels"  # labels card: {releases, public_revision, split_key}
SPLIT_KEY = "split_key"  # the secret of the shown/held halves (lookbench.results.halves), kept with the labels
LABELS_REPO = "lookbench-labels"  # <namespace>/lookbench-labels, a private dataset repo
LABEL_FIELDS = ("category", "main_attribute", "attributes")
MAP_PREFIX = "sealed_rows-"  # the maps, sealed_rows-<release>.parquet beside the card (no config's folder)
MAP_COLUMNS = ("config", "split", "row", "public_row", "row_id", "public_sha256")


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


def files(folder: Path, paths) -> list[Path]:
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


def shards(folder: Path) -> list[Path]:
    """Every shard of the record configs, in the order datasets reads them (per config and split, sorted by name)."""
    return files(folder, sorted(p for p in Path(folder).glob("*/*.parquet") if p.parent.name in SUBSETS))


def split_of(shard: Path) -> str:
    return shard.name.split("-", 1)[0]


def digests(images) -> list[str]:
    """The sha256 of each image's bytes (an Arrow column of ``{bytes, path}``)."""
    images = images.combine_chunks() if isinstance(images, pa.ChunkedArray) else images
    return [hashlib.sha256(b).hexdigest() for b in images.field("bytes").to_pylist()]


def positions(found: list[Path]) -> dict[Path, int]:
    """Each shard's first row position within its config and split."""
    starts, seen = {}, {}
    for shard in found:
        key = (shard.parent.name, split_of(shard))
        starts[shard] = seen.get(key, 0)
        seen[key] = starts[shard] + pq.ParquetFile(shard).metadata.num_rows
    return starts


def sealed_mask(table: pa.Table, releases) -> pa.Array:
    return pc.is_in(table.column("release"), value_set=pa.array(sorted(releases), pa.string())).combine_chunks()


def map_path(folder: Path, release: str) -> Path:
    return Path(folder) / f"{MAP_PREFIX}{release}.parquet"


def is_map(name: str) -> bool:
    """Whether a file name is a map of sealed rows (``map_path``)."""
    return name.startswith(MAP_PREFIX) and name.endswith(".parquet")


def write_map(folder: Path, release: str, rows: list[dict]) -> None:
    path = map_path(folder, release)
    pq.write_table(pa.table({name: [r[name] for r in rows] for name in MAP_COLUMNS},
                            schema=pa.schema([(n, pa.int64() if n.endswith("row") else pa.string()) for n in MAP_COLUMNS])),
                   path)


def read_maps(folder: Path, releases) -> dict | None:
    """The maps of ``releases`` in ``folder`` by (config, split) → public row → map row; ``None`` when the folder
    holds none of them (a release never sealed, or labels written before the map was)."""
    found = [map_path(folder, r) for r in releases if map_path(folder, r).exists() or map_path(folder, r).is_symlink()]
    if not found:
        return None
    maps: dict = {}
    total = 0
    for path in files(folder, found):
        table = pq.read_table(path)
        if any(name not in table.column_names for name in MAP_COLUMNS):
            raise SourceError(f"{path}: not a map of sealed rows (columns {', '.join(MAP_COLUMNS)})")
        total += table.num_rows
        for row in table.select(list(MAP_COLUMNS)).to_pylist():
            maps.setdefault((row["config"], row["split"]), {})[row["public_row"]] = row
    twice = [key for key, rows in maps.items()
             if len({r["row"] for r in rows.values()}) != len(rows) or len({r["row_id"] for r in rows.values()}) != len(rows)]
    if twice or total != sum(map(len, maps.values())):
        raise SourceError(f"{folder}: a map of sealed rows names a row twice")
    return maps


def link(path: Path, target: Path) -> None:
    """``path``'s file at ``target``: a hard link of the file itself (a Hub snapshot's files are links into its
    blobs, and a relative link moved elsewhere would dangle), a copy where the file system refuses one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(path.resolve(), target)
    except OSError:
        shutil.copy2(path, target)
