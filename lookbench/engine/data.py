"""Stage 1 of an evaluation: find the data (a built folder, a published snapshot, a Hub id) and load its splits.

docs/architecture.md §8. A local folder gets a datasets cache of its own, named by its content, because offline
datasets keys its cache by folder *name* and would serve a stale copy of another folder called the same.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from lookbench.files import folder_revision
from lookbench.hub import UPSTREAM, hub_reachable, looks_like_hub_id, snapshot_commit, split_revision, transport_errors
from lookbench.paths import converted_data_dir, datasets_cache_dir
from lookbench.settings import DEFAULT_DISTRACTORS, EMBEDDED_MINI
from lookbench.schema import NOISE, TEST_SUBSETS, resolve_subset
from lookbench.metric.fine_recall.records import RECORD_FIELDS
from lookbench.errors import EvaluationError, one_line


@dataclass(frozen=True)
class DataSource:
    """What ``load_dataset`` gets, its revision (content hash of a local folder, commit of a Hub repo), a label,
    whether it was converted from a published ``srpone/look-bench`` snapshot, and the Hub commit it came from."""

    path: str
    revision: str | None
    label: str
    upstream: bool = False
    commit: str | None = None
    sealed: dict | None = None  # a sealed release: what is sealed, and the labels joined to it (None: not joined)
    cache: str | None = None  # the datasets cache's name, when not the revision (a joined folder)
    split_key: str | None = dataclasses.field(default=None, repr=False)  # joined labels' halves secret (never provenance)
    left_out: tuple = ()  # releases whose rows are not loaded: a sealed folder's public part (``public_part_of``)

    @property
    def card(self) -> dict:
        """The YAML of a local folder's dataset card (README.md), ``{}`` without one."""
        card = Path(self.path) / "README.md"
        if not card.is_file():
            return {}
        from huggingface_hub import metadata_load

        return metadata_load(card) or {}

    @property
    def sources(self) -> list[str] | None:
        """Where its images come from (``catalog.data_sources`` of its card's build history; ``None``: not recorded),
        what decides whether a model trained on them is evaluated zero-shot."""
        from lookbench.dataset_builder.card import HISTORY_KEY
        from lookbench.dataset_builder.catalog import data_sources

        steps = self.card.get(HISTORY_KEY)
        return data_sources([step.get("source") if isinstance(step, dict) else None for step in steps]
                            if isinstance(steps, list) else [])

    @property
    def name(self) -> str:
        """The dataset's name: its card's ``pretty_name`` (e.g. "LookBench-Mini"), else the Hub id or path."""
        return str(self.card.get("pretty_name") or self.path)


@dataclass
class Benchmark:
    """The splits to evaluate: per subset its ``{"query": Dataset, "gallery": Dataset}``, plus the shared noise;
    ``all_queries`` holds each subset's query split before a cutoff filtered it."""

    subsets: dict
    noise: object | None
    provenance: dict
    all_queries: dict
    split_key: str | None = dataclasses.field(default=None, repr=False)  # the halves' secret (``lookbench.results.halves``)

    @property
    def unlabelled(self) -> bool:
        """A sealed release whose labels were not joined: it may be searched, never scored."""
        sealed = self.provenance.get("sealed")
        return bool(sealed) and sealed.get("labels") is None

    def count_after(self, model_cutoff) -> None:
        """Record per subset how many queries lie after the model's declared training cutoff (``None``: undeclared)."""
        from lookbench.filtering import Cutoff, after_mask

        model_cutoff = None if model_cutoff is None else Cutoff.of(model_cutoff)  # parsed once for every subset
        for name, queries in self.all_queries.items():
            after = None if model_cutoff is None else int(after_mask(queries, model_cutoff).sum())
            self.provenance["counts"][name]["queries_after_model_cutoff"] = after


def convert_upstream(path: Path) -> Path:
    """A published ``srpone/look-bench`` snapshot (v<date>/<snake_config>/*.parquet) converted once, by the builder."""
    from lookbench.dataset_builder import build_release

    stamp = hashlib.sha256(str(path.resolve()).encode())
    for p in sorted(path.rglob("*.parquet")):
        stamp.update(f"{p.relative_to(path)}:{p.stat().st_size}:{p.stat().st_mtime_ns}".encode())
    out = converted_data_dir(stamp.hexdigest()[:16])
    if not (out / "README.md").is_file():
        build_release("upstream", out, input_path=path)
    return out


def _local(folder: Path, label: str, upstream: bool = False, commit: str | None = None) -> DataSource:
    """A built folder as a ``DataSource``; refused in one line if a killed build left it unpaired with its training set."""
    from lookbench.dataset_builder.export import check_pair

    try:
        check_pair(folder)
    except ValueError as err:
        raise EvaluationError(str(err)) from None
    return DataSource(str(folder), folder_revision(folder), label, upstream, commit)


def resolve_data(data) -> DataSource:
    """A folder from ``lookbench build``, a published snapshot, a Hub dataset id, or ``None`` for LookBench-Mini
    (a ``DataSource`` is returned as it is)."""
    if isinstance(data, DataSource):
        return data
    if data is None:
        from lookbench.dataset_builder import ensure_default_mini

        return _local(ensure_default_mini(), EMBEDDED_MINI)
    path = Path(os.fspath(data)).expanduser()
    if path.is_dir():
        if (path / "README.md").is_file() and any(path.glob("*/*.parquet")):
            return _local(path, str(path))
        if any(path.glob("v*/*/*.parquet")):
            return _local(convert_upstream(path), f"{path} (published layout)", upstream=True)
        raise EvaluationError(
            f"{path} is neither a folder written by `lookbench build` (README.md + <Config>/*.parquet) "
            "nor a published srpone/look-bench snapshot (v<YYYYMMDD>/<config>/*.parquet)"
        )
    name = os.fspath(data)
    if not looks_like_hub_id(name):
        raise EvaluationError(f"--data {name!r}: no such folder, and not a Hub dataset id (owner/name[@revision])")
    repo, pinned = split_revision(name)  # a revision that is a path is refused here, before anything is fetched
    snapshot = _hub_snapshot(name, repo, pinned)
    commit = snapshot_commit(snapshot)
    label = f"{repo}@{commit[:12]}" if pinned else repo
    if repo == UPSTREAM:  # the published layout, converted first
        return _local(convert_upstream(snapshot), label, upstream=True, commit=commit)
    return DataSource(str(snapshot), commit, label, commit=commit)


def with_labels(source: DataSource, labels=None) -> DataSource:
    """``source`` as the engine loads it. A sealed release (its card's ``lookbench_sealed``) without ``labels`` is
    marked sealed with none joined, so nothing scores it; with ``labels`` (a labels folder or Hub id, or the release
    unsealed) the labels are filled into its rows once per pair of revisions (``Labels.fill_into``: every row where it
    was published, with the opaque id rankings name it by, its identity checked against the map of the sealed rows),
    and the data keeps the sealed release's name, key and revision. ``labels`` for a public release is refused."""
    from lookbench.dataset_builder.labels import Labels
    from lookbench.dataset_builder.sealed import sealed_state
    from lookbench.dataset_builder.sources import SourceError

    try:
        state = sealed_state(Path(source.path))
    except SourceError as err:
        raise EvaluationError(str(err)) from None
    if state is None:
        if labels is not None:
            raise EvaluationError(f"{source.label} is not sealed: its labels are in it, so --labels does not apply")
        return source
    sealed = {"releases": list(state.releases), "until": state.until, "repo": state.labels, "labels": None}
    if labels is None:
        return dataclasses.replace(source, sealed=sealed)
    folder = resolve_data(labels).path if not Path(os.fspath(labels)).is_dir() else Path(os.fspath(labels))
    try:
        found = Labels.read(Path(folder), state.releases)
        from lookbench._version import __version__

        stamp = hashlib.sha256(f"{source.revision}+{found.revision}+{__version__}".encode()).hexdigest()[:32]
        out = converted_data_dir(f"joined-{stamp}")
        if not (out / "README.md").is_file():
            from lookbench.dataset_builder.export import staging_folder
            from lookbench.files import folder_lock, replace_folder

            out.parent.mkdir(parents=True, exist_ok=True)
            with folder_lock(out, wait=True), staging_folder(out, "joining") as staging:
                if not (out / "README.md").is_file():
                    found.fill_into(Path(source.path), staging / out.name, state)
                    replace_folder(staging / out.name, out)
    except SourceError as err:
        raise EvaluationError(str(err)) from None
    sealed["labels"] = {"source": str(labels), "revision": found.revision, "public": found.public}
    return dataclasses.replace(source, path=str(out), sealed=sealed, cache=f"joined-{stamp}", split_key=found.split_key)


def public_part_of(data, sealed) -> DataSource:
    """The data (what ``resolve_data`` reads) without the rows of the ``sealed`` releases in any split or the noise:
    a sealed folder's public releases, scored as any public data is (and judged again so once it is unsealed)."""
    return dataclasses.replace(resolve_data(data), left_out=tuple(sorted(sealed)))


def as_recorded(data, dataset):
    """``data`` (what ``--data`` takes) as a result's ``provenance.dataset`` (a ``results.provenance.Data``) says its
    run loaded it: the public part of a sealed folder when it left releases out, judged and re-run on those rows
    alone (also once the folder is unsealed); else as it is."""
    left_out = dataset.releases_left_out
    if not left_out:
        return data
    return public_part_of(data, [str(r) for r in left_out] if isinstance(left_out, list) else [str(left_out)])


def _hub_snapshot(name: str, repo: str, pinned: str | None) -> Path:
    """The dataset's snapshot at ``pinned`` (else its ``main``): from the Hub when one answers, else at once from
    the local cache; either way a folder named by the commit it resolved to."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    at = f" --revision {pinned}" if pinned else ""
    online = hub_reachable()
    try:
        return Path(snapshot_download(repo, repo_type="dataset", revision=pinned, local_files_only=not online))
    except LocalEntryNotFoundError:
        why = "no Hub is reachable and the local cache has no copy" + (f" at revision {pinned}" if pinned else "")
    except (HfHubHTTPError, OSError, *transport_errors()) as err:
        why = one_line(err)
    raise EvaluationError(f"{name}: no such folder, and not a reachable Hub dataset id ({why}); a folder is written "
                          f"by `lookbench build`, a Hub dataset downloaded by: hf download {repo} --repo-type dataset{at}")


class _Loader:
    """Loads configs of one ``DataSource`` by subset name, checking the LookBench columns."""

    def __init__(self, source: DataSource):
        import datasets

        self.source = source
        try:
            self.available = datasets.get_dataset_config_names(source.path)
        except Exception as err:  # datasets raises many types for an unusable folder or id
            raise EvaluationError(f"Cannot read the dataset configs of {source.label}: {err}") from err
        self.config_of = {}
        for config in self.available:
            try:
                self.config_of[resolve_subset(config)] = config
            except ValueError:
                continue
        # A folder (local, or a Hub snapshot at a commit) gets a datasets cache of its own, named by its revision.
        local = source.revision is not None and Path(source.path).is_dir()
        self.cache_dir = str(datasets_cache_dir(source.cache or source.revision)) if local else None
        self.template_versions: set = set()  # of the text queries loaded (with_texts)

    def with_texts(self, subset: str, queries, form: str):
        """``queries`` with the words of each query (the ``text`` config's split of the subset, column
        ``text_<form>``) as a ``query_text`` column; row i of the split must be query i (its item_id), else one line
        names the first row that is not."""
        import datasets

        from lookbench.dataset_builder.text_queries import TEXT_COLUMNS, TEXT_CONFIG
        from lookbench.schema import SUBSETS

        label, alias = self.source.label, SUBSETS[subset].alias
        if TEXT_CONFIG not in self.available:
            raise EvaluationError(f"{label} has no {TEXT_CONFIG} config (its queries in words): it was built before "
                                  "lookbench wrote them; rebuild it with `lookbench build` to evaluate text queries")
        try:
            texts = self._load(TEXT_CONFIG, split=alias)
        except EvaluationError:
            raise
        except Exception as err:
            raise EvaluationError(f"Cannot load the {TEXT_CONFIG} split {alias} of {label}: {err}") from err
        column = TEXT_COLUMNS[form]
        absent = [c for c in ("item_id", column, "template_version") if c not in texts.column_names]
        if absent:
            raise EvaluationError(f"{TEXT_CONFIG}/{alias} of {label} lacks column(s) {', '.join(absent)}")
        ids, theirs = queries["item_id"], texts["item_id"]
        if ids != theirs:
            at = next((i for i, (a, b) in enumerate(zip(ids, theirs)) if a != b), min(len(ids), len(theirs)))
            found = f"item {theirs[at]!r}" if at < len(theirs) else "no row"
            raise EvaluationError(f"{TEXT_CONFIG}/{alias} of {label} does not follow {subset}/query row by row: row "
                                  f"{at + 1} is {found}, the query is " + (f"item {ids[at]!r}" if at < len(ids) else "none"))
        words = texts[column]
        empty = [i for i, w in enumerate(words) if not isinstance(w, str) or not w.strip()]
        if empty:
            raise EvaluationError(f"{TEXT_CONFIG}/{alias} of {label}: row {empty[0] + 1} (item {ids[empty[0]]!r}) has no {column}")
        self.template_versions.update(texts.unique("template_version"))
        return queries.add_column("query_text", words)

    def _load(self, config: str, split: str | None = None):
        """``datasets.load_dataset`` of one config (one split) of the source. datasets checks every split's rows
        against the card's ``dataset_info`` and reports a mismatch as a list of ``SplitInfo`` reprs; here it is one
        line naming the folder, the config and the split that is short or has no data file."""
        import datasets
        from datasets.exceptions import SplitsVerificationError

        try:
            return datasets.load_dataset(self.source.path, config, split=split, cache_dir=self.cache_dir)
        except SplitsVerificationError as err:
            raise EvaluationError(self._damaged(config, err)) from None

    def _damaged(self, config: str, err: Exception) -> str:
        """Which split of ``config`` disagrees with the card, counted from its Parquet footers (no data is loaded)."""
        import datasets
        import pyarrow.parquet as pq

        label, what = self.source.label, "build or download the folder again"
        try:
            builder = datasets.load_dataset_builder(self.source.path, config, cache_dir=self.cache_dir)
            files = builder.config.data_files or {}
            for name, info in (builder.info.splits or {}).items():
                if not files.get(name):
                    return (f"{label}: the split {name} of the {config} config has no data file, its card says "
                            f"{info.num_examples} rows (a data file was deleted); {what}")
                rows = sum(pq.ParquetFile(str(f)).metadata.num_rows for f in files[name])
                if rows != info.num_examples:
                    return (f"{label}: the split {name} of the {config} config has {rows} rows, its card says "
                            f"{info.num_examples} (a data file was cut short or replaced); {what}")
        except Exception:  # not Parquet, or unreadable: the error's kind alone (its words are SplitInfo reprs)
            pass
        return f"{label}: the splits of the {config} config disagree with its card ({type(err).__name__}); {what}"

    def splits(self, subset: str, names) -> dict:
        label = self.source.label
        try:
            loaded = self._load(self.config_of[subset])
        except EvaluationError:
            raise
        except Exception as err:
            raise EvaluationError(f"Cannot load {subset} from {label}: {err}") from err
        out = {}
        for split in names:
            if split not in loaded:
                raise EvaluationError(f"{subset} of {label} has no {split} split; it has: {', '.join(loaded)}")
            ds = loaded[split]
            absent = [c for c in ("image", "item_id", "timestamp", *RECORD_FIELDS) if c not in ds.column_names]
            if absent:
                raise EvaluationError(f"{subset}/{split} of {label} lacks column(s) {', '.join(absent)} of the LookBench schema")
            out[split] = ds
        return out


def load_benchmark(data=None, subsets=None, cutoff=None, distractors: bool = DEFAULT_DISTRACTORS,
                   progress=None, text_form: str | None = None, labels=None) -> Benchmark:
    """Load the requested subsets' query/gallery splits and (unless disabled) the noise gallery.

    ``cutoff``: a ``lookbench.filtering.Cutoff`` (or what ``Cutoff.of`` reads). ``progress`` (a tqdm bar) advances
    once per loaded config. ``text_form`` (``short`` or ``long``): each query split also carries its words,
    ``query_text`` (``_Loader.with_texts``), and the provenance names them. ``labels``: the labels of a sealed release
    (``with_labels``); the provenance's ``sealed`` says whether they were joined.
    """
    from lookbench.filtering import filter_after

    loader = _Loader(with_labels(resolve_data(data), labels))
    label = loader.source.label
    left_out = set(loader.source.left_out)

    def public(ds):
        return ds.filter(lambda r: r not in left_out, input_columns="release") if left_out else ds
    wanted = [resolve_subset(s) for s in subsets] if subsets else [s for s in TEST_SUBSETS if s in loader.config_of]
    missing = [s for s in wanted if s not in loader.config_of]
    if missing or not wanted:
        raise EvaluationError(f"{label} has no subset {', '.join(missing) or 'at all'}; it has: {', '.join(loader.available)}")
    if distractors and NOISE not in loader.config_of:
        raise EvaluationError(f"{label} has no noise config; pass --no-distractors to evaluate without distractors")
    if progress is not None:
        progress.reset(total=len(wanted) + bool(distractors))

    loaded, counts, all_queries = {}, {}, {}
    for subset in wanted:
        splits = {split: public(ds) for split, ds in loader.splits(subset, ("query", "gallery")).items()}
        if text_form is not None:
            splits["query"] = loader.with_texts(subset, splits["query"], text_form)
        all_queries[subset] = splits["query"]
        if cutoff is not None:
            try:
                splits["query"] = filter_after(splits["query"], cutoff)
            except ValueError as err:  # a release cutoff of another kind than the data's, a row with no timestamp
                raise EvaluationError(f"{label}: {subset}: {err}") from None
        loaded[subset] = splits
        counts[subset] = {"queries_total": len(all_queries[subset]), "queries": len(splits["query"]),
                          "gallery": len(splits["gallery"])}
        if progress is not None:
            progress.update(1)
    noise = public(loader.splits(NOISE, ("gallery",))["gallery"]) if distractors else None
    if progress is not None and distractors:
        progress.update(1)
    releases = {r for splits in loaded.values() for ds in splits.values() for r in ds.unique("release") if r}
    source = loader.source
    provenance = {
        "name": source.name,
        "data": label,
        # What identifies the data for a leaderboard: the published snapshot it was converted from, else its revision.
        "key": f"{UPSTREAM}@{'+'.join(sorted(releases))}" if source.upstream else source.revision,
        "revision": source.revision,
        "commit": source.commit,  # the Hub commit a snapshot was resolved at (None: a local folder)
        "releases": sorted(releases),
        "sources": source.sources,
        "counts": counts,
        "noise_gallery": len(noise) if noise is not None else 0,
        **({"sealed": source.sealed} if source.sealed and not set(source.sealed["releases"]) <= left_out else {}),
        **({"releases_left_out": sorted(left_out)} if left_out else {}),  # the public part of a sealed folder
    }
    if text_form is not None:
        from lookbench.dataset_builder.text_queries import TEXT_COLUMNS, TEXT_CONFIG

        provenance["text_queries"] = {"config": TEXT_CONFIG, "column": TEXT_COLUMNS[text_form], "form": text_form,
                                      "template_version": sorted(loader.template_versions)}
    return Benchmark(loaded, noise, provenance, all_queries, source.split_key)
