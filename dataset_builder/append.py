"""``lookbench build --append RAW --out DIR``: a new raw snapshot added to a built folder as new Parquet shards.

A live benchmark keeps every published snapshot as it was, so the folder's Hub history only ever gains files:
each shard already in ``DIR`` reaches the new folder as a hard link of the same file (a byte-identical copy on a
file system without hard links), and only the card is rewritten. The new release must be newer than everything in
``DIR`` and share no item and no image with it; the folder's schema must be the one this version builds. Atomic
like the build (docs/architecture.md §2): the new folder is assembled beside ``DIR`` and swapped in by
``replace_folder``, so a refusal or a failure leaves ``DIR`` exactly as it was; ``DIR``'s ``folder_lock`` is held
from reading it to the swap, so a second append meanwhile is refused rather than losing this one's release.
"""
from __future__ import annotations

import copy
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow.parquet as pq
from datasets.info import DatasetInfosDict
from huggingface_hub import DatasetCard

from lookbench.files import folder_lock, replace_folder
from lookbench.schema import FEATURES, SUBSETS, release_date

from lookbench.dataset_builder.card import AUDIT_NAME, REPORT_NAME, Step, audit_name, release_facts, text_info, write_card
from lookbench.dataset_builder.export import BuildSummary, build_shards, check_pair, staging_folder
from lookbench.dataset_builder.sources import SourceError
from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE


def append_release(raw, out, *, release: str | None = None, skip_invalid: bool = False, taxonomy=None, subsets=None,
                   notes: str | None = None, progress: bool = False) -> BuildSummary:
    """Append the raw release folder ``raw`` to the built folder ``out``; the summary's ``rows`` are the new rows."""
    if release is not None:
        release_date(release)
    out = Path(out)
    with folder_lock(out):  # held from the read to the swap: a concurrent append is refused, never lost
        folder = BuiltFolder.read(out)
        with staging_folder(out, "appending") as staging:  # scratch too: a killed append leaves it for the next run
            new, tmp = staging / f"{out.name}.new", staging / f"{out.name}.scratch"  # never out.name, the staged folder
            tmp.mkdir()
            if taxonomy is None and not (Path(raw) / TAXONOMY_FILE).exists() and (out / TAXONOMY_FILE).is_file():
                taxonomy = out / TAXONOMY_FILE  # a release that ships none is checked against the folder's
            summary, infos = build_shards("raw", new, tmp, progress, input_path=raw, release=release, scale=1.0,
                                          noise_scale=1.0, seed=0, skip_invalid=skip_invalid, taxonomy=taxonomy,
                                          subsets=subsets, train_out=None)
            folder.check_new(new, summary.releases)
            target = staging / out.name
            folder.link_into(target)
            tag = max(summary.releases, key=release_date)
            for shard in sorted(new.glob("*/*.parquet")):
                split, rest = shard.name.split("-", 1)
                (target / shard.parent.name).mkdir(exist_ok=True)
                os.replace(shard, target / shard.parent.name / f"{split}-{tag}-{rest}")
            if (new / TAXONOMY_FILE).is_file():  # the folder ships the taxonomy its newest release was checked against
                os.replace(new / TAXONOMY_FILE, target / TAXONOMY_FILE)
            summary.report_name = f"{REPORT_NAME.removesuffix('.json')}-{tag}.json"
            summary.report.write(target / summary.report_name)
            if (new / AUDIT_NAME).exists():
                os.replace(new / AUDIT_NAME, target / audit_name(summary.report_name))
            added = [c for c in infos if c not in folder.infos]
            release = release or summary.default_release
            command = f"lookbench build --append {raw}" + (f" --release {release}" if release else "") + " --out <DIR>"
            changes = notes or "new snapshot" + (f"; first rows of {', '.join(added)}" if added else "")
            history = folder.history + [Step(summary.releases, "raw", command, summary.report_name, changes)]
            merged = {c: merge_info(folder.infos.get(c), infos.get(c)) for c in SUBSETS if c in folder.infos or c in infos}
            write_card(target, pretty_name=folder.pretty_name, history=history, infos=merged)
            replace_folder(target, out)
    summary.out, summary.appended = out, summary.releases
    summary.releases = sorted(set(folder.facts) | set(summary.releases), key=release_date)
    return summary


def merge_info(old: datasets.DatasetInfo | None, new: datasets.DatasetInfo | None) -> datasets.DatasetInfo:
    """A config's ``dataset_info`` after an append: the splits' rows and bytes of both."""
    if old is None or new is None:
        return old or new
    info = copy.deepcopy(old)
    for name, split in new.splits.items():
        if name in info.splits:
            before = info.splits[name]
            info.splits[name] = datasets.SplitInfo(name=name, num_bytes=before.num_bytes + split.num_bytes,
                                                   num_examples=before.num_examples + split.num_examples)
        else:
            info.splits[name] = split
    info.dataset_size = sum(s.num_bytes for s in info.splits.values())
    return info


def _differences(got, expected) -> str:
    """How the fields ``got`` differ from ``expected`` (``Features``, or Arrow schemas as ``{name: type}``), field by field."""
    missing = [name for name in expected if name not in got]
    extra = [name for name in got if name not in expected]
    changed = [name for name in expected if name in got and got[name] != expected[name]]
    return "; ".join(part for part in (
        f"no {', '.join(missing)}" if missing else "", f"extra {', '.join(extra)}" if extra else "",
        ", ".join(f"{name} is {got[name]!r}, not {expected[name]!r}" for name in changed)) if part)


def _arrow_fields(shard: Path) -> dict:
    return {f.name: f.type for f in pq.read_schema(shard)}


def _shards(folder: Path, config: str | None = None) -> list[Path]:
    return sorted(p for p in folder.glob(f"{config or '*'}/*.parquet") if p.parent.name in SUBSETS)


def _column(shard: Path, name: str):
    """One column of a shard, batch by batch (an image column as its embedded bytes), with the rows' split,
    item id and release."""
    split = shard.name.split("-", 1)[0]
    for batch in pq.ParquetFile(shard).iter_batches(batch_size=256, columns=list(dict.fromkeys([name, "item_id", "release"]))):
        values = batch.column(name)
        values = values.field("bytes") if name == "image" else values
        yield from zip(values.to_pylist(), [split] * batch.num_rows, batch.column("item_id").to_pylist(),
                       batch.column("release").to_pylist())


@dataclass
class BuiltFolder:
    """A folder written by ``lookbench build``, as an append needs it: its card's facts and its shards' releases."""

    path: Path
    pretty_name: str
    infos: dict
    history: list[Step]
    facts: dict

    @classmethod
    def read(cls, path: Path) -> "BuiltFolder":
        check_pair(path)
        if not (path / "README.md").is_file() or not _shards(path):
            raise SourceError(f"--out {path} is not a folder written by `lookbench build` (README.md + <Config>/*.parquet); "
                              "build the first release with --source, then append")
        card = DatasetCard.load(path / "README.md")
        infos = {c: i for c, i in DatasetInfosDict.from_dataset_card_data(card.data).items() if c in SUBSETS}
        for config, info in infos.items():
            if info.features != FEATURES:
                raise SourceError(f"{path / 'README.md'}: the dataset_info of {config} disagrees with the LookBench schema "
                                  f"({_differences(info.features, FEATURES)}); rebuild the folder with this version before appending")
        facts = release_facts(path)
        data = card.data.to_dict()
        history = Step.history(data) or [
            Step(list(facts), "unknown", "not recorded", REPORT_NAME if (path / REPORT_NAME).is_file() else None,
                 "built before lookbench recorded a release history")]
        return cls(path, str(data.get("pretty_name") or "LookBench"), infos, history, facts)

    def check_new(self, new: Path, releases: list[str]) -> None:
        """Refuse (one line) a new release whose shards' schema differs from the folder's, that is not newer than the
        folder, or that shares an item or an image with it."""
        where = f"{self.path}"
        built = _arrow_fields(_shards(new)[0])  # what this version writes (Parquet stores the timestamp in ms)
        for shard in _shards(self.path):
            if _arrow_fields(shard) != built:
                raise SourceError(f"{shard}: its columns disagree with the shards this version writes "
                                  f"({_differences(_arrow_fields(shard), built)}); rebuild the folder with this version "
                                  "before appending")
        versions = {folder: text_info(folder)[2].get("versions") for folder in (self.path, new)}
        if versions[self.path] is None:
            raise SourceError(f"{where} has no text config (it was built before lookbench wrote the queries in words); "
                              "rebuild the folder with this version before appending")
        if versions[self.path] != versions[new]:
            raise SourceError(f"{where}: its text queries are of template version {', '.join(map(str, versions[self.path]))}, "
                              f"this version writes {', '.join(map(str, versions[new]))}; rebuild the folder with this "
                              "version before appending")
        newest = max(self.facts, key=release_date)
        for name in releases:
            if name in self.facts:
                raise SourceError(f"release {name} already exists in {where}; an appended snapshot needs a new name "
                                  "(--release NAME, or the rows' release field)")
            if release_date(name) <= release_date(newest):
                raise SourceError(f"release {name} is not newer than {newest}, the newest release in {where}; "
                                  "only a later snapshot can be appended")
        last = max(f["last"] for f in self.facts.values() if f["last"] is not None)
        for shard in _shards(new):
            late = [(stamp, split, item) for stamp, split, item, _ in _column(shard, "timestamp") if stamp <= last]
            if late:
                stamp, split, item = late[0]
                raise SourceError(f"{len(late)} row(s) of {shard.parent.name}/{split} are not newer than {where} (its newest "
                                  f"row is of {last.isoformat()}), e.g. item {item!r} of {stamp.isoformat()}; an appended "
                                  "snapshot must be newer than everything in the folder")
        for config in dict.fromkeys(p.parent.name for p in _shards(new)):
            old = {item: (split, rel) for shard in _shards(self.path, config) for _, split, item, rel in _column(shard, "item_id")}
            for shard in _shards(new, config):
                shared = [(item, split) for item, split, _, _ in _column(shard, "item_id") if item in old]
                if shared:
                    item, split = shared[0]
                    raise SourceError(f"{len(shared)} item id(s) of {config}/{split} are already in {where}, e.g. {item!r} "
                                      f"({config}/{old[item][0]} of {old[item][1]}); an appended snapshot brings new items only")
        seen: dict[str, tuple] = {}
        for shard in _shards(self.path):
            for data, split, item, rel in _column(shard, "image"):
                seen.setdefault(hashlib.sha256(data).hexdigest(), (shard.parent.name, split, item, rel))
        for shard in _shards(new):
            shared = [(digest, split, item) for data, split, item, _ in _column(shard, "image")
                      if (digest := hashlib.sha256(data).hexdigest()) in seen]
            if shared:
                digest, split, item = shared[0]
                config, old_split, old_item, rel = seen[digest]
                raise SourceError(f"{len(shared)} image(s) of {shard.parent.name}/{split} are already in {where}, e.g. item "
                                  f"{item!r} is {config}/{old_split} item {old_item!r} of {rel} (sha256 {digest[:12]}…); "
                                  "an appended snapshot brings new images only")

    def link_into(self, target: Path) -> None:
        """Every file of the folder but its card, at the same place under ``target``: hard links of the same files
        (byte-identical by construction), copies where the file system refuses links. The card is rewritten, so it
        is never linked (writing a linked card would change the old folder's in place)."""
        for path in sorted(self.path.rglob("*")):
            relative = path.relative_to(self.path)
            if path.is_dir() or relative.as_posix() == "README.md":
                continue
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, target / relative)
            except OSError:
                shutil.copy2(path, target / relative)
