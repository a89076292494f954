"""Sealed releases: a built folder split into its public part and its labels (a dataset folder of their own,
published as a private repo), joined again to score or to unseal.

docs/publishing.md. The public part keeps the record schema (docs/architecture.md §3) and, per row of a sealed
release, only what a model may use: the image (re-encoded, metadata stripped), an opaque row id in ``item_id`` (drawn
per release from a secret that is never written), subset, split, release, source, a query's crop box, and the
release's date as its timestamp; labels, ``outfit_id``, ``raw_image`` and a gallery row's ``bbox`` are null, and the
sealed rows of each shard are shuffled (in the order of their row ids). So nothing public links a query to its
matches. The labels folder keeps each sealed row's original record, and the map of the sealed rows (``sealed.py``)
names its public row; the ``text`` config (words made from the labels) and the validation reports (which quote rows)
move there too. The card's YAML says what is sealed (``SEALED_KEY``), so every command reads it instead of guessing.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import secrets
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from lookbench.files import folder_lock, folder_revision, replace_folder
from lookbench.schema import SUBSETS, release_date

from lookbench.dataset_builder.append import BuiltFolder
from lookbench.dataset_builder.card import AUDIT_NAME, is_report, write_card
from lookbench.dataset_builder.export import staging_folder
from lookbench.dataset_builder.labels import Labels, record_rows
from lookbench.dataset_builder.review.audit_file import write_public_audit
from lookbench.dataset_builder.sealed import (LABEL_FIELDS, LABELS_KEY, LABELS_REPO, SEALED_KEY, SPLIT_KEY,
                                              UNSEALED_KEY, Sealed, check_until, files, is_map, link, positions,
                                              sealed_mask, sealed_state, shards, split_of, write_map)
from lookbench.dataset_builder.sources import SourceError
from lookbench.dataset_builder.text_queries import TEXT_CONFIG
from lookbench.dataset_builder.validation import open_image

WITHHELD = (*LABEL_FIELDS, "outfit_id", "raw_image")  # null in every public row of a sealed release
ROW_ID_HEX = 20  # an opaque row id: 80 bits of a keyed hash


def _secret() -> bytes:
    """A release's key for its row ids and order: random, used once, never written (the map keeps the outcome)."""
    return secrets.token_bytes(32)


def scrubbed(data: bytes, name: str) -> bytes:
    """The image in ``data`` decoded (with the builder's bomb guard) and encoded again with nothing but its pixels:
    no EXIF, ICC profile, comment or text chunk. A JPEG stays a JPEG with its own quantisation tables (the least
    change to what a model sees); everything else becomes a lossless PNG of its first frame."""
    try:
        image = open_image(data, name)
    except ValueError as err:
        raise SourceError(str(err)) from None
    image.info = {key: value for key, value in image.info.items() if key == "transparency"}  # a palette's, not metadata
    out = io.BytesIO()
    if image.format == "JPEG":
        image.save(out, "JPEG", quality="keep", subsampling="keep")
    else:
        image.save(out, "PNG", compress_level=3)  # as the Mini's renderer writes them: twice as fast as the default
    return out.getvalue()


def _row_id(key: bytes, config: str, split: str, row: int) -> str:
    return hmac.new(key, f"{config}/{split}/{row}".encode(), hashlib.sha256).hexdigest()[:ROW_ID_HEX]


def _public_rows(shard: Path, start: int, table: pa.Table, mask: pa.Array, keys: dict, maps: dict) -> pa.Table:
    """The public part of one shard: its sealed rows shuffled among their positions (in the order of their row ids)
    and reduced to what a model may use, each under the newest sealed release and its date (a query's matches are
    of its own release, so a release told apart would point to them); each one's map row added to ``maps`` (by its
    own release)."""
    config, split = shard.parent.name, split_of(shard)
    block = max(keys, key=release_date)
    sealed_at = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    releases = table.column("release").to_pylist()
    ids = {int(at): _row_id(keys[releases[at]], config, split, start + int(at)) for at in sealed_at}
    order = np.arange(len(table))
    order[sealed_at] = sorted(ids, key=ids.get)
    shuffled = table.take(order)
    values = {name: shuffled.column(name).to_pylist()
              for name in ("image", "item_id", "release", "timestamp", "bbox", *WITHHELD)}
    for at in sealed_at:
        origin, release = int(order[at]), releases[order[at]]
        image = scrubbed(values["image"][at]["bytes"], f"{config}/{split} row {start + origin}")
        values["image"][at] = {"bytes": image, "path": None}  # a file name may carry the item id
        values["item_id"][at] = ids[origin]
        values["release"][at], values["timestamp"][at] = block, release_date(block)
        values["bbox"][at] = values["bbox"][at] if split == "query" else None
        for name in WITHHELD:
            values[name][at] = None
        maps.setdefault(release, []).append({"config": config, "split": split, "row": start + origin,
                                             "public_row": start + int(at), "row_id": ids[origin],
                                             "public_sha256": hashlib.sha256(image).hexdigest()})
    for name, column in values.items():
        at = shuffled.schema.get_field_index(name)
        shuffled = shuffled.set_column(at, shuffled.schema.field(at), pa.array(column, shuffled.schema.field(at).type))
    return shuffled


def _check_ids(source: Path, maps: dict, found: list[Path]) -> None:
    """Row ids are unique and none is an item or outfit id of the release (never so in practice: 80 random bits)."""
    ids = [row["row_id"] for rows in maps.values() for row in rows]
    taken = {v for shard in found for name in ("item_id", "outfit_id")
             for v in pq.read_table(shard, columns=[name]).column(name).to_pylist()}
    if len(set(ids)) != len(ids) or taken & set(ids):
        raise SourceError(f"{source}: a drawn row id collides with another id; seal it again")


def _write_labels(out: Path, records: dict, maps: dict, sealed: Sealed, public_revision: str) -> None:
    """The labels folder: ``<Config>/<split>-00000-of-00001.parquet`` per config and split with sealed rows (their
    original records), the map of each sealed release, and its card (``LABELS_KEY``: which public revision they
    belong to)."""
    for (config, split), parts in records.items():
        (out / config).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.concat_tables(parts), out / config / f"{split}-00000-of-00001.parquet")
    for release, rows in maps.items():
        write_map(out, release, rows)
    layout = {}
    for config, split in records:
        layout.setdefault(config, []).append({"split": split, "path": f"{config}/{split}-*"})
    data = DatasetCardData(pretty_name="LookBench labels", **{LABELS_KEY: {
        "releases": list(sealed.releases), "public_revision": public_revision, SPLIT_KEY: secrets.token_hex(32)}})
    MetadataConfigs({config: {"data_files": files} for config, files in layout.items()}).to_dataset_card_data(data)
    card = DatasetCard(f"---\n{data.to_yaml()}\n---\n# LookBench labels (private)\n\nThe labels of the sealed releases "
                       f"{', '.join(sealed.releases)} ({sealed.shown}): each sealed row's original record, with its "
                       "position in its config and split (`row`) and the sha256 of its image bytes; "
                       "`sealed_rows-<release>.parquet` names the public row of each (position, opaque row id, sha256 "
                       "of the public image). `lookbench unseal` joins them back.\n")
    card.save(out / "README.md")


def _sealed_sections(text: str, sealed: Sealed) -> str:
    """The body of a build's card as the sealed card shows it: the fields as a sealed row carries them, and the
    taxonomy named by its file instead of tabled (its category names are label values): the card names none."""
    head, *sections = text.split("\n## ")
    titled = {section.split("\n", 1)[0]: section for section in sections}
    if "Fields" in titled:
        titled["Fields"] = (
            f"Fields\n\nEach row of {', '.join(sealed.releases)} carries, while sealed:\n\n| field | in a sealed row |\n"
            "|---|---|\n| `image` | the image, decoded and encoded again without metadata |\n"
            "| `item_id` | an opaque row id, drawn at random for the release: it says nothing of which rows belong "
            "together |\n| `category`, `main_attribute`, `attributes` | withheld (null) |\n"
            "| `bbox` | a query's crop box; null in a gallery or noise row |\n| `outfit_id`, `raw_image` | withheld (null) |\n"
            f"| `timestamp` | the date of {sealed.releases[-1]} |\n| `release` | {sealed.releases[-1]}, the newest "
            "sealed release |\n| `source` | as published |\n\nThe rows of the other releases are as the record schema "
            "says (the LookBench docs, building-a-release.md).\n")
    if "Taxonomy" in titled:
        titled["Taxonomy"] = "Taxonomy\n\nThe categories and attributes the labels follow: `taxonomy.json`, beside this card.\n"
    return "\n## ".join([head, *titled.values()])


def _sealed_card(public: Path, built: BuiltFolder, sealed: Sealed) -> None:
    """The public part's card: written as a build writes it (no text config, no validation report: both carry
    labels), with ``SEALED_KEY`` in its YAML, the seal said first and its body as a sealed row is
    (``_sealed_sections``)."""
    write_card(public, pretty_name=built.pretty_name, history=built.history, infos=built.infos)
    card = DatasetCard.load(public / "README.md")
    card.data[SEALED_KEY] = sealed.to_yaml()
    head, _, rest = card.text.partition("\n\n")
    card.text = (f"{head}\n\n> **Sealed: {', '.join(sealed.releases)}** — {sealed.shown}. The category, main "
                 "attribute, attributes and query texts of these releases are withheld; the leaderboard scores "
                 "submitted rankings against them (docs/publishing.md). Nothing public links a query to its matches: "
                 "in their rows `item_id` is an opaque row id drawn at random for the release, `outfit_id`, "
                 "`raw_image` and a gallery row's `bbox` are withheld, `release` and `timestamp` are the newest sealed "
                 f"release, {sealed.releases[-1]}, and its date, the images are re-encoded without metadata and the "
                 "rows are shuffled. The rows of each release, the `text` config and the validation reports are "
                 f"published when the release is unsealed.\n\n{_sealed_sections(rest, sealed)}")
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
    keys = {release: _secret() for release in releases}
    found = shards(source)
    records, maps = {}, {}
    for shard, start in positions(found).items():
        target = public / shard.relative_to(source)
        table = pq.read_table(shard)
        mask = sealed_mask(table, releases)
        if not pc.any(mask).as_py():
            link(shard, target)  # no sealed row: byte-identical
            continue
        rows = pc.add(pc.indices_nonzero(mask).cast(pa.int64()), start)
        records.setdefault((shard.parent.name, split_of(shard)), []).append(record_rows(table, rows, mask))
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_public_rows(shard, start, table, mask, keys, maps), target)
    _check_ids(source, maps, found)
    for path in files(source, sorted(source.rglob("*"))):  # the rest: the text config and the reports carry labels
        relative = path.relative_to(source)
        if path.is_dir() or relative.parts[0] in SUBSETS or relative.as_posix() == "README.md":
            continue
        link(path, (labels if relative.parts[0] == TEXT_CONFIG or is_report(relative.name) else public) / relative)
        if relative.name.startswith(AUDIT_NAME.removesuffix(".json")):  # its figures stay public, its labels do not
            write_public_audit(path, public / relative)
    _sealed_card(public, built, sealed)
    _write_labels(labels, records, maps, sealed, folder_revision(public))
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
            for path in files(labels, sorted(labels.rglob("*"))):  # the words, the reports and the maps
                relative = path.relative_to(labels)
                withheld = relative.parts[0] == TEXT_CONFIG or is_report(relative.name) or is_map(relative.name)
                if withheld and not path.is_dir():
                    (target / relative).unlink(missing_ok=True)  # a public audit's label-free copy: the whole one back
                    link(path, target / relative)
            (target / "README.md").unlink()
            write_card(target, pretty_name=built.pretty_name, history=built.history, infos=built.infos)
            card = DatasetCard.load(target / "README.md")
            card.data[UNSEALED_KEY] = {"releases": list(sealed.releases), "sealed_revision": folder_revision(folder),
                                       "labels_revision": found.revision, SPLIT_KEY: found.split_key}
            card.save(target / "README.md")
            replace_folder(target, folder)
    return sealed
