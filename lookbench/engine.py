"""The evaluation engine behind ``lookbench evaluate`` and ``lookbench.evaluate``.

Pipeline: load the subsets (+ the shared noise gallery once) → hash every image's bytes → encode each distinct
image once (cache hits skipped; decode + preprocess in worker threads, overlapping the forward pass on an
accelerator and alternating with it on a CPU; freed memory kept for the next batch; batches split across
``accelerate`` processes and gathered) → exact cosine search with faiss ``IndexFlatIP`` on
L2-normalised float32 → drop self-matches (gallery rows byte-identical to the query) → score with the
``fine_recall`` metric module → results with provenance, table and plots.
"""
from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import hashlib
import io
import os
import platform
import time
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from PIL import Image

from .embedding_cache import HASH_BYTES, EmbeddingCache, default_cache_dir
from .encoders import Encoder, EncoderError, as_batch, hash_files, load_encoder
from .schema import NOISE, SUBSETS, TEST_SUBSETS, resolve_subset

KS = (1, 5, 10, 20)
ANNOTATION_COLUMNS = ["category", "main_attribute", "attributes", "outfit_id"]
INDEXES = ("flat", "hnsw")


class EvaluationError(ValueError):
    """Bad input or unusable model output; the message names the subset, row, item id or model at fault."""


# ------------------------------------------------------------------------------------------------ data loading


@dataclass
class Benchmark:
    """The splits to evaluate: per subset its query and gallery ``Dataset``, plus the shared noise gallery."""

    subsets: dict  # subset -> {"query": Dataset, "gallery": Dataset}
    noise: object | None
    provenance: dict


def _folder_revision(folder: Path) -> str:
    """Identify a local dataset folder by the content of its card and data files (hashes memoised by mtime)."""
    return "local-" + hash_files([folder / "README.md", *folder.rglob("*.parquet")])[:16]


def _upstream_folder(path: Path) -> Path:
    """Convert a published ``srpone/look-bench`` snapshot (v<date>/<snake_config>/*.parquet) once, via the builder."""
    from lookbench.dataset_builder import build_release

    stamp = hashlib.sha256(str(path.resolve()).encode())
    for p in sorted(path.rglob("*.parquet")):
        stamp.update(f"{p.relative_to(path)}:{p.stat().st_size}:{p.stat().st_mtime_ns}".encode())
    out = default_cache_dir().parent / "converted" / stamp.hexdigest()[:16]
    if not (out / "README.md").is_file():
        build_release("upstream", out, input_path=path)
    return out


def _resolve_data(data) -> tuple[str, str | None, str]:
    """(what load_dataset gets, its revision, a human label) for a folder, an upstream snapshot or a Hub id."""
    if data is None:
        from lookbench.dataset_builder import ensure_default_mini

        folder = ensure_default_mini()
        return str(folder), _folder_revision(folder), "LookBench-Mini (embedded)"
    path = Path(os.fspath(data)).expanduser()
    if path.is_dir():
        if (path / "README.md").is_file() and any(path.glob("*/*.parquet")):
            return str(path), _folder_revision(path), str(path)
        if any(path.glob("v*/*/*.parquet")):
            converted = _upstream_folder(path)
            return str(converted), _folder_revision(converted), f"{path} (published layout)"
        raise EvaluationError(
            f"{path} is neither a folder written by `lookbench build` (README.md + <Config>/*.parquet) "
            "nor a published srpone/look-bench snapshot (v<YYYYMMDD>/<config>/*.parquet)"
        )
    if os.fspath(data).count("/") != 1:
        raise EvaluationError(f"--data {data!r}: no such folder, and not a Hub dataset id (owner/name)")
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    repo = os.fspath(data)
    try:
        if repo == "srpone/look-bench":  # the published layout has different columns: convert it first
            folder = _upstream_folder(Path(snapshot_download(repo, repo_type="dataset")))
            return str(folder), _folder_revision(folder), repo
        revision = None if os.environ.get("HF_HUB_OFFLINE") == "1" else HfApi().dataset_info(repo).sha
    except LocalEntryNotFoundError as err:
        raise EvaluationError(f"Dataset {repo!r} is not in the local cache and the Hub is offline") from err
    except (HfHubHTTPError, OSError) as err:
        raise EvaluationError(f"Cannot reach dataset {repo!r} on the Hub: {err}") from err
    return repo, revision, repo


def load_benchmark(data=None, subsets=None, cutoff=None, distractors: bool = True) -> Benchmark:
    """Load the requested subsets' query/gallery splits and (unless disabled) the noise gallery."""
    import datasets

    from .filtering import filter_after

    source, revision, label = _resolve_data(data)
    try:
        available = datasets.get_dataset_config_names(source)
    except Exception as err:  # datasets raises many types for an unusable folder or id
        raise EvaluationError(f"Cannot read the dataset configs of {label}: {err}") from err
    by_name = {}
    for config in available:
        try:
            by_name[resolve_subset(config)] = config
        except ValueError:
            continue
    wanted = [resolve_subset(s) for s in subsets] if subsets else [s for s in TEST_SUBSETS if s in by_name]
    missing = [s for s in wanted if s not in by_name]
    if missing or not wanted:
        raise EvaluationError(f"{label} has no subset {', '.join(missing) or 'at all'}; it has: {', '.join(available)}")

    # datasets' cache is keyed by folder *name* offline: two folders called "lookbench" would share a stale
    # copy. A local folder therefore gets a cache of its own, named by its content revision.
    cache_dir = None if revision is None or not revision.startswith("local-") else str(
        default_cache_dir().parent / "datasets" / revision)

    def load(config, splits):
        """The named splits of one config, from a single load_dataset call."""
        try:
            loaded = datasets.load_dataset(source, by_name[config], cache_dir=cache_dir)
        except Exception as err:
            raise EvaluationError(f"Cannot load {config} from {label}: {err}") from err
        out = []
        for split in splits:
            if split not in loaded:
                raise EvaluationError(f"{config} of {label} has no {split} split; it has: {', '.join(loaded)}")
            ds = loaded[split]
            absent = [c for c in ["image", "item_id", "timestamp", *ANNOTATION_COLUMNS] if c not in ds.column_names]
            if absent:
                raise EvaluationError(f"{config}/{split} of {label} lacks column(s) {', '.join(absent)} of the LookBench schema")
            out.append(ds)
        return out

    loaded, counts = {}, {}
    for subset in wanted:
        query, gallery = load(subset, ("query", "gallery"))
        total = len(query)
        if cutoff is not None:
            query = filter_after(query, cutoff)
        loaded[subset] = {"query": query, "gallery": gallery}
        counts[subset] = {"queries_total": total, "queries": len(query), "gallery": len(gallery)}
    noise = load(NOISE, ("gallery",))[0] if distractors and NOISE in by_name else None
    if distractors and noise is None:
        raise EvaluationError(f"{label} has no noise config; pass --no-distractors to evaluate without distractors")
    releases = set()
    for splits in loaded.values():
        for ds in splits.values():
            releases.update(r for r in ds.unique("release") if r)
    provenance = {
        "data": label,
        "revision": revision,
        "releases": sorted(releases),
        "counts": counts,
        "noise_gallery": len(noise) if noise is not None else 0,
    }
    return Benchmark(loaded, noise, provenance)


# ---------------------------------------------------------------------------------------------- image handling


@dataclass
class _Source:
    """One split's images: the Arrow image column (not decoded), item ids and content hashes."""

    label: str
    column: pa.ChunkedArray
    item_ids: list
    hashes: list = field(default_factory=list)


def _image_source(label: str, ds) -> _Source:
    table = ds.select_columns(["image", "item_id"]).with_format("arrow")[:]
    return _Source(label, table.column("image"), table.column("item_id").to_pylist())


def _image_bytes(source: _Source, rows) -> list:
    """Encoded bytes of some rows; images stored by path are read from disk."""
    taken = source.column.take(pa.array(rows, type=pa.int64()))
    blobs = pc.struct_field(taken, "bytes").to_pylist()
    paths = pc.struct_field(taken, "path").to_pylist()
    out = []
    for row, blob, path in zip(rows, blobs, paths):
        if blob is None and path:
            try:
                blob = Path(path).read_bytes()
            except OSError as err:
                raise EvaluationError(f"{source.label} row {row} (item {source.item_ids[row]}): cannot read {path}: {err}") from err
        out.append(blob)
    return out


def _hash_source(source: _Source, progress) -> None:
    """Content hash (sha256, first 16 bytes) of every row's encoded image bytes, chunk by chunk."""
    rows = 0
    for chunk in source.column.chunks:
        blobs = pc.struct_field(chunk, "bytes").to_pylist()
        if any(b is None for b in blobs):
            blobs = _image_bytes(source, list(range(rows, rows + len(chunk))))
        for i, blob in enumerate(blobs):
            if blob is None:
                raise EvaluationError(f"{source.label} row {rows + i} (item {source.item_ids[rows + i]}) has no image")
            source.hashes.append(hashlib.sha256(blob).digest()[:HASH_BYTES])
        rows += len(chunk)
        progress.update(len(chunk))


def _decode(encoder: Encoder, blobs: list) -> tuple[list | np.ndarray, list]:
    """Decode + preprocess one batch (runs in a worker thread).

    Returns the readable images' model inputs — stacked into one array when they are equal-shaped arrays, so the
    copy is made here and not on the thread that runs the forward pass — and per image an error or None.
    """
    inputs, errors = [], []
    for blob in blobs:
        try:
            with Image.open(io.BytesIO(blob)) as image:
                image.load()
                inputs.append(encoder.preprocess(image))
            errors.append(None)
        except Exception as err:  # PIL raises many types for a bad file; all mean "unreadable image"
            errors.append(f"{type(err).__name__}: {err}")
    if inputs and all(isinstance(x, np.ndarray) and x.shape == inputs[0].shape for x in inputs):
        return as_batch(inputs), errors
    return inputs, errors


# ---------------------------------------------------------------------------------------------------- encoding


# glibc mallopt parameters and their defaults (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
_DEFAULT_TRIM_THRESHOLD, _DEFAULT_MMAP_MAX = 128 * 1024, 65536


@contextlib.contextmanager
def reuse_freed_memory():
    """Keep freed memory in the heap while encoding (glibc only).

    A CPU forward pass allocates activation buffers of tens of MB per layer. glibc serves those with fresh
    ``mmap`` pages and returns them on ``free``, so every batch page-faults its activations in again: measured
    here, 2.6 M page faults and 2.5x the forward time of EfficientNet-Lite0 at batch 32 (PyTorch's CPU tuning
    guide recommends jemalloc/tcmalloc for the same reason). Inside this block large blocks come from the heap
    and stay there for the next batch; on exit glibc's default (fixed) thresholds are restored. Left alone when
    the user tunes malloc through ``MALLOC_MMAP_MAX_`` / ``MALLOC_TRIM_THRESHOLD_``.
    """
    user_tuned = any(v in os.environ for v in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_"))
    if platform.libc_ver()[0] != "glibc" or user_tuned:
        yield
        return
    mallopt = ctypes.CDLL(None).mallopt
    mallopt(_M_MMAP_MAX, 0)  # no mmap: large blocks come from the heap
    mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)  # the largest int mallopt takes: never shrink the heap meanwhile
    try:
        yield
    finally:
        mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)
        mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)


class _Dist:
    """Process rank/world from ``accelerate`` when launched with it; a no-op single process otherwise."""

    def __init__(self):
        self.state = None
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            from accelerate import PartialState
            from accelerate.utils import parse_flag_from_env

            # Without cpu=True a CPU-only launch silently degrades to independent single processes.
            self.state = PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))
        self.rank = self.state.process_index if self.state else 0
        self.world = self.state.num_processes if self.state else 1
        self.is_main = self.rank == 0
        self.device = str(self.state.device) if self.state else None

    def barrier(self):
        if self.state:
            self.state.wait_for_everyone()

    def gather(self, items: list) -> list:
        """Concatenate every process's list, in rank order."""
        if not self.state:
            return items
        from accelerate.utils import gather_object

        return gather_object(items)


@dataclass
class EncodeStats:
    unique_images: int = 0
    cache_hits: int = 0
    forward_images: int = 0
    forward_per_process: list = field(default_factory=list)
    invalid: list = field(default_factory=list)
    corrupt_cache_files: list = field(default_factory=list)


def _check_output(encoder: Encoder, out, n: int, labels: list, dim: int | None) -> np.ndarray:
    try:
        out = np.asarray(out, dtype=np.float32)
    except (TypeError, ValueError) as err:
        raise EncoderError(f"Model {encoder.name!r} returned something that is not an array of numbers: {err}") from err
    if out.ndim != 2 or out.shape[0] != n:
        raise EncoderError(f"Model {encoder.name!r} returned shape {out.shape} for a batch of {n} images; expected ({n}, dim)")
    if dim is not None and out.shape[1] != dim:
        raise EncoderError(f"Model {encoder.name!r} returned {out.shape[1]}-d embeddings; expected {dim}-d")
    bad = ~np.isfinite(out).all(axis=1)
    if bad.any():
        named = ", ".join(labels[i] for i in np.flatnonzero(bad)[:5])
        raise EncoderError(f"Model {encoder.name!r} returned NaN/inf embeddings for {int(bad.sum())} image(s): {named}")
    return out


def encode_images(encoder: Encoder, sources: list[_Source], *, batch_size=32, workers=None, cache_dir=None,
                  use_cache=True, skip_invalid=False, quiet=False, dist: _Dist | None = None, overlap=None):
    """Embeddings (n_unique × d, raw model output) of every distinct image across ``sources``, by content hash.

    ``overlap`` (default: when the model runs on an accelerator) decodes the next batches while the forward pass
    runs. On a CPU both compete for the same cores, and a decode thread that pre-empts one of torch's threads
    stalls every other one at the next barrier, so there decoding alternates with the forward passes instead: a
    window of batches decoded on every core, then their forward passes alone.
    """
    from tqdm.auto import tqdm

    dist = dist or _Dist()
    quiet = quiet or not dist.is_main
    uid_of: dict[bytes, int] = {}
    first: list[tuple[int, int]] = []
    for s_idx, source in enumerate(sources):
        for row, h in enumerate(source.hashes):
            if h not in uid_of:
                uid_of[h] = len(first)
                first.append((s_idx, row))
    hashes = list(uid_of)
    stats = EncodeStats(unique_images=len(hashes))

    cache = None
    known: dict[bytes, np.ndarray] = {}
    if use_cache and encoder.fingerprint is not None:
        cache = EmbeddingCache(cache_dir or default_cache_dir(), encoder.fingerprint, encoder.preprocessing, getattr(encoder, "precision", "fp32"))
        known = cache.load()
        stats.corrupt_cache_files = cache.corrupt_files
    dist.barrier()  # every process decides what is missing from the same cache state
    missing = [u for u, h in enumerate(hashes) if h not in known]
    stats.cache_hits = len(hashes) - len(missing)
    # Batches are fixed before they are dealt to processes, so every image meets the same batch companions
    # whatever the number of processes: results are bit-identical to a single-process run.
    batches = [missing[i:i + batch_size] for i in range(0, len(missing), batch_size)]
    mine = list(range(dist.rank, len(batches), dist.world))

    def label(u):
        s_idx, row = first[u]
        return f"{sources[s_idx].label} row {row} (item {sources[s_idx].item_ids[row]})"

    def decode_batch(b):
        """Fetch (one Arrow take per source) and decode one batch; runs in a worker thread."""
        rows_of: dict[int, list[tuple[int, int]]] = {}
        for pos, u in enumerate(batches[b]):
            s_idx, row = first[u]
            rows_of.setdefault(s_idx, []).append((pos, row))
        blobs = [None] * len(batches[b])
        for s_idx, items in rows_of.items():
            for (pos, _), blob in zip(items, _image_bytes(sources[s_idx], [row for _, row in items])):
                blobs[pos] = blob
        return _decode(encoder, blobs)

    produced: list[tuple[int, list[int], np.ndarray | None, list]] = []
    error = None
    dim = encoder.embed_dim if isinstance(encoder.embed_dim, int) and encoder.embed_dim > 0 else None
    bar = tqdm(total=len(missing), desc=f"encode {encoder.name}", unit="img", disable=quiet)
    workers = workers or max(1, (os.cpu_count() or 1) // dist.world)
    if overlap is None:
        overlap = not str(getattr(encoder, "device", "cpu")).startswith("cpu")
    try:
        with reuse_freed_memory(), ThreadPoolExecutor(workers, thread_name_prefix="lookbench-decode") as pool:
            queue: deque = deque()
            todo = iter(mine)

            def refill():  # a bounded window of batches being decoded
                while len(queue) < 2 * workers and (nxt := next(todo, None)) is not None:
                    queue.append((nxt, pool.submit(decode_batch, nxt)))

            while True:
                if not queue:
                    refill()
                    if not queue:
                        break
                    if not overlap:  # decode the window on every core, then run its forward passes alone
                        wait([f for _, f in queue])
                b, future = queue.popleft()
                if overlap:
                    refill()
                inputs, errors = future.result()
                batch = batches[b]
                bad = [(u, e) for u, e in zip(batch, errors) if e is not None]
                if bad and not skip_invalid:
                    u, e = bad[0]
                    raise EvaluationError(f"Unreadable image at {label(u)}: {e} (pass --skip-invalid to skip such images)")
                stats.invalid.extend((label(u), e) for u, e in bad)
                keep = [i for i, e in enumerate(errors) if e is None]
                uids = [batch[i] for i in keep]
                vectors = None
                if keep:
                    out = encoder.encode_batch(inputs)
                    vectors = _check_output(encoder, out, len(keep), [label(u) for u in uids], dim)
                    dim = vectors.shape[1]
                    stats.forward_images += len(keep)
                    if cache is not None:
                        cache.write([hashes[u] for u in uids], vectors)
                produced.append((b, uids, vectors, [label(u) for u, _ in bad]))
                bar.update(len(batch))
    except (EvaluationError, EncoderError) as err:
        if dist.world == 1:
            raise
        error = str(err)
    finally:
        bar.close()

    gathered = dist.gather([{"produced": produced, "error": error, "forward": stats.forward_images, "invalid": stats.invalid}])
    errors = [g["error"] for g in gathered if g["error"]]
    if errors:
        raise EvaluationError(errors[0])
    stats.forward_per_process = [g["forward"] for g in gathered]
    stats.forward_images = sum(stats.forward_per_process)
    stats.invalid = [x for g in gathered for x in g["invalid"]]
    for g in gathered:
        for _, uids, vectors, _ in g["produced"]:
            if vectors is not None:
                known.update(zip((hashes[u] for u in uids), vectors))
    if cache is not None and dist.is_main:
        cache.compact(known)
    dist.barrier()
    if not known:
        raise EvaluationError(f"No image could be encoded by model {encoder.name!r}")
    dims = {v.shape[0] for v in known.values()}
    if len(dims) != 1:
        raise EncoderError(f"Model {encoder.name!r} produced embeddings of different sizes {sorted(dims)}")
    d = dims.pop()
    matrix = np.zeros((len(hashes), d), dtype=np.float32)
    valid = np.zeros(len(hashes), dtype=bool)
    for u, h in enumerate(hashes):
        v = known.get(h)
        if v is not None:
            matrix[u] = v
            valid[u] = True
    return uid_of, matrix, valid, stats


# ------------------------------------------------------------------------------------------------------ search


def l2_normalise(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def _build_index(vectors: np.ndarray, kind: str):
    import faiss

    d = vectors.shape[1]
    if kind == "flat":
        index = faiss.IndexFlatIP(d)  # inner product on unit vectors = cosine; never faiss's L2 default
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 80
    else:
        raise EvaluationError(f"--index must be one of {INDEXES}, got {kind!r}")
    index.add(vectors)
    return index


def _search(index, queries: np.ndarray, k: int, kind: str):
    k = min(k, index.ntotal)
    if kind == "hnsw":
        index.hnsw.efSearch = max(64, 2 * k)
    return index.search(queries, k)


def remove_self_matches(ids: np.ndarray, query_uid: np.ndarray, gallery_uid: np.ndarray, k: int):
    """Drop gallery rows whose image content equals the query's; keep the first ``k``; -1 pads. Returns (ids, count)."""
    valid = ids >= 0
    same = valid & (gallery_uid[np.where(valid, ids, 0)] == query_uid[:, None])
    order = np.argsort(same, axis=1, kind="stable")  # non-matches first, rank order preserved
    kept = np.take_along_axis(np.where(same, -1, ids), order, axis=1)[:, :k]
    if kept.shape[1] < k:
        kept = np.pad(kept, ((0, 0), (0, k - kept.shape[1])), constant_values=-1)
    return kept, int(same.sum())


def search_depth(q_uid, g_uid, noise_uid, k: int) -> int:
    """How deep to search so that ``k`` results remain after dropping every copy of each query's own image."""
    copies = Counter(g_uid.tolist())
    if noise_uid is not None:
        copies.update(noise_uid.tolist())
    return k + max((copies.get(u, 0) for u in q_uid.tolist()), default=0)


def rank_subset(q_vecs, q_uid, g_vecs, g_uid, noise_hits, noise_uid, k, depth, kind):
    """Top-k gallery rows (subset gallery first, then noise offset after it) per query, self-matches removed.

    ``noise_hits`` is the (scores, ids) of these queries against the noise index, searched once for all subsets.
    """
    if len(g_vecs):
        scores, ids = _search(_build_index(g_vecs, kind), q_vecs, depth, kind)
    else:
        scores, ids = np.empty((len(q_vecs), 0), np.float32), np.empty((len(q_vecs), 0), np.int64)
    all_uid = g_uid
    if noise_hits is not None:
        n_scores, n_ids = noise_hits
        scores = np.concatenate([scores, n_scores], axis=1)
        ids = np.concatenate([ids, np.where(n_ids >= 0, n_ids + len(g_uid), -1)], axis=1)
        all_uid = np.concatenate([g_uid, noise_uid])
        order = np.argsort(-np.where(ids >= 0, scores, -np.inf), axis=1, kind="stable")[:, :depth]
        ids = np.take_along_axis(ids, order, axis=1)
    return remove_self_matches(ids, q_uid, all_uid, k)


@dataclass
class SubsetTask:
    """One subset to score: content ids (rows of the embedding matrix) and annotations of its queries and gallery."""

    query_uid: np.ndarray
    gallery_uid: np.ndarray
    references: object  # Dataset (or list) of query annotation records
    gallery: object  # Dataset of gallery annotation records


def score_subsets(matrix: np.ndarray, tasks: dict, noise_uid=None, noise_annotations=None, *, mode="strict",
                  index="flat", quiet=True) -> tuple[dict, dict]:
    """Search every subset's queries against its gallery + the shared noise gallery and score them with the metric.

    ``matrix`` holds L2-normalised embeddings indexed by content id. The noise gallery is indexed and searched
    once, for the queries of every subset together. Returns (metric results, per-subset extras).
    """
    import datasets
    from lookbench.metric.fine_recall.fine_recall import FineRecall
    from tqdm.auto import tqdm

    kmax = max(KS)
    depths = {}
    for name, t in tasks.items():
        if len(t.gallery_uid) + (0 if noise_uid is None else len(noise_uid)) == 0:
            raise EvaluationError(f"{name}: the gallery is empty; nothing to retrieve")
        depths[name] = search_depth(t.query_uid, t.gallery_uid, noise_uid, kmax)
    metric = FineRecall()
    results, extras = {}, {}
    with tqdm(total=len(tasks) + 1, desc="search + score", disable=quiet) as bar:
        noise_hits = {}
        if noise_uid is not None and len(noise_uid):
            all_q = np.concatenate([t.query_uid for t in tasks.values()])
            scores, ids = _search(_build_index(matrix[noise_uid], index), matrix[all_q], max(depths.values()), index)
            start = 0
            for name, t in tasks.items():
                rows = slice(start, start + len(t.query_uid))
                noise_hits[name] = (scores[rows, :depths[name]], ids[rows, :depths[name]])
                start += len(t.query_uid)
        bar.update(1)
        for name, t in tasks.items():
            gallery = t.gallery
            if noise_annotations is not None:
                gallery = datasets.concatenate_datasets([gallery, noise_annotations])
            ids, removed = rank_subset(matrix[t.query_uid], t.query_uid, matrix[t.gallery_uid], t.gallery_uid,
                                       noise_hits.get(name), noise_uid, kmax, depths[name], index)
            results[name] = metric.compute(predictions=ids, references=t.references, gallery=gallery, k=list(KS), mode=mode)
            extras[name] = {"self_matches_removed": removed, "gallery_size": len(gallery)}
            bar.update(1)
    return results, extras


# ----------------------------------------------------------------------------------------------------- results


def _leaderboard(result: dict) -> dict:
    """Metric output {"fine_recall@1": x, ...} as {"fine_recall": {"@1": x}, ...}; other keys kept as they are."""
    out: dict = {}
    for key, value in result.items():
        if "@" in key:
            metric, k = key.split("@", 1)
            out.setdefault(metric, {})[f"@{k}"] = value
        else:
            out[key] = value
    return out


@dataclass
class EvaluationResult:
    """Scores per subset and overall (percent), and the provenance that makes them reproducible."""

    subsets: dict
    overall: dict
    provenance: dict

    def to_dict(self) -> dict:
        """Leaderboard shape: subset → metric → "@K" → percent, plus "overall" and "provenance"."""
        out = {name: _leaderboard(r) for name, r in self.subsets.items()}
        out["overall"] = _leaderboard(self.overall)
        out["provenance"] = self.provenance
        return out

    def table(self) -> str:
        """A fixed-width table: subsets × Fine/Coarse R@K, nDCG@5, MRR, outfit R@1, with the overall row."""
        cols = [f"Fine@{k}" for k in KS] + [f"Coarse@{k}" for k in KS] + ["nDCG@5", "MRR", "Outfit@1", "queries"]
        keys = [f"fine_recall@{k}" for k in KS] + [f"coarse_recall@{k}" for k in KS] + [
            "ndcg@5", "mrr", "outfit_fine_recall@1", "num_queries"]
        rows = list(self.subsets.items()) + [("overall", self.overall)]
        width = max(len(n) for n, _ in rows)

        def cell(r, key):
            v = r.get(key)
            if v is None:
                return "-"
            return str(int(v)) if key == "num_queries" else f"{v:.2f}"

        p = self.provenance
        title = (f"LookBench — model {p['model']['name']}, {p['mode']} mode, "
                 f"{'with' if p['distractors'] else 'without'} distractors, search {p['search']}")
        lines = [title, " ".join([f"{'subset':<{width}}"] + [f"{c:>9}" for c in cols])]
        lines += [" ".join([f"{n:<{width}}"] + [f"{cell(r, k):>9}" for k in keys]) for n, r in rows]
        removed = p["counts"]["self_matches_removed"]
        lines.append(f"{removed} self-match(es) removed; {p['counts']['forward_images']} image(s) encoded, "
                     f"{p['counts']['cache_hits']} from cache; {p['wall_time_s']:.1f} s")
        return "\n".join(lines)

    def save(self, output_dir) -> dict[str, Path]:
        """Write results.json and the two PNG plots; returns their paths."""
        import json

        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / "results.json"}
        paths["json"].write_text(json.dumps(self.to_dict(), indent=2, default=str))
        paths.update(self.plot(out))
        return paths

    def plot(self, out: Path) -> dict[str, Path]:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = list(self.subsets)
        fine = [self.subsets[n].get("fine_recall@1", 0.0) for n in names]
        coarse = [self.subsets[n].get("coarse_recall@1", 0.0) for n in names]
        x = np.arange(len(names))
        fig, ax = plt.subplots(figsize=(max(5, 1.8 * len(names)), 4))
        ax.bar(x - 0.2, fine, 0.4, label="Fine R@1")
        ax.bar(x + 0.2, coarse, 0.4, label="Coarse R@1")
        ax.set_xticks(x, names, rotation=15)
        ax.set_ylabel("%")
        ax.set_ylim(0, 100)
        ax.set_title(f"{self.provenance['model']['name']}: Fine vs Coarse Recall@1")
        ax.legend()
        fig.tight_layout()
        paths = {"fine_vs_coarse": out / "fine_vs_coarse_r1.png"}
        fig.savefig(paths["fine_vs_coarse"], dpi=100)
        plt.close(fig)

        per_cat: dict[str, dict[str, float]] = {}
        for n in names:
            for cat, r in (self.subsets[n].get("per_category") or {}).items():
                per_cat.setdefault(cat, {})[n] = r.get("fine_recall@1", 0.0)
        cats = sorted(per_cat)
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(cats) * max(1, len(names)) ** 0.5), 4))
        width = 0.8 / max(1, len(names))
        for i, n in enumerate(names):
            ax.bar(np.arange(len(cats)) + (i - (len(names) - 1) / 2) * width, [per_cat[c].get(n, 0.0) for c in cats], width, label=n)
        ax.set_xticks(np.arange(len(cats)), cats, rotation=45, ha="right")
        ax.set_ylabel("Fine R@1 (%)")
        ax.set_ylim(0, 100)
        ax.set_title("Fine Recall@1 per category")
        ax.legend(fontsize="small")
        fig.tight_layout()
        paths["per_category"] = out / "per_category_fine_r1.png"
        fig.savefig(paths["per_category"], dpi=100)
        plt.close(fig)
        return paths


# -------------------------------------------------------------------------------------------------------- main


def evaluate(model=None, data=None, subsets=None, cutoff=None, distractors: bool = True, *, mode: str = "strict",
             batch_size: int = 32, precision: str = "fp32", device: str | None = None, index: str = "flat",
             cache_dir=None, use_cache: bool = True, skip_invalid: bool = False, workers: int | None = None,
             quiet: bool = False, output_dir=None) -> EvaluationResult | None:
    """Evaluate an image encoder on LookBench; returns an ``EvaluationResult`` (``None`` on non-main processes).

    ``model``: a registered name (see ``lookbench models``), a local transformers folder or Hub id, or any object
    with ``encode(list_of_PIL_images) -> (n, d) array`` and ``name``. ``data``: a folder from ``lookbench build``,
    a Hub dataset id, a published ``srpone/look-bench`` snapshot, or ``None`` for the embedded LookBench-Mini.
    ``cutoff`` keeps only queries time-stamped after it (contamination-aware evaluation).
    """
    args = dict(locals())
    import datasets

    bars = datasets.is_progress_bar_enabled()
    if quiet:
        datasets.disable_progress_bars()
    try:
        return _evaluate(**args)
    finally:
        if bars:
            datasets.enable_progress_bars()


def _evaluate(model=None, data=None, subsets=None, cutoff=None, distractors: bool = True, *, mode: str = "strict",
             batch_size: int = 32, precision: str = "fp32", device: str | None = None, index: str = "flat",
             cache_dir=None, use_cache: bool = True, skip_invalid: bool = False, workers: int | None = None,
             quiet: bool = False, output_dir=None) -> EvaluationResult | None:
    from lookbench.metric.fine_recall.fine_recall import combine_subsets
    from tqdm.auto import tqdm

    import lookbench

    if mode not in ("strict", "leaderboard"):
        raise EvaluationError(f"mode must be 'strict' or 'leaderboard', got {mode!r}")
    if index not in INDEXES:
        raise EvaluationError(f"index must be one of {INDEXES}, got {index!r}")
    if batch_size < 1:
        raise EvaluationError(f"batch_size must be at least 1, got {batch_size}")
    started = time.perf_counter()
    dist = _Dist()
    quiet = quiet or not dist.is_main
    encoder = load_encoder(model, device=device or dist.device, precision=precision)
    if dist.is_main:
        bench = load_benchmark(data, subsets, cutoff, distractors)
    dist.barrier()  # the main process fills the datasets cache first; the others then read it
    if not dist.is_main:
        bench = load_benchmark(data, subsets, cutoff, distractors)

    sources: list[_Source] = []
    for name, splits in bench.subsets.items():
        for split in ("query", "gallery"):
            sources.append(_image_source(f"{name}/{split}", splits[split]))
    if bench.noise is not None:
        sources.append(_image_source(f"{NOISE}/gallery", bench.noise))
    with tqdm(total=sum(len(s.item_ids) for s in sources), desc="hash images", unit="img", disable=quiet) as bar:
        for source in sources:
            _hash_source(source, bar)
    uid_of, matrix, valid, stats = encode_images(
        encoder, sources, batch_size=batch_size, workers=workers, cache_dir=cache_dir, use_cache=use_cache,
        skip_invalid=skip_invalid, quiet=quiet, dist=dist)
    if not dist.is_main:
        return None
    matrix = l2_normalise(matrix)

    def uids(source):
        return np.fromiter((uid_of[h] for h in source.hashes), dtype=np.int64, count=len(source.hashes))

    noise_uid = noise_ds = None
    if bench.noise is not None:
        noise_all = uids(sources[-1])
        keep = np.flatnonzero(valid[noise_all])
        noise_uid, noise_ds = noise_all[keep], bench.noise.select_columns(ANNOTATION_COLUMNS).select(keep)
    tasks = {}
    for i, (name, splits) in enumerate(bench.subsets.items()):
        q_all, g_all = uids(sources[2 * i]), uids(sources[2 * i + 1])
        q_keep, g_keep = np.flatnonzero(valid[q_all]), np.flatnonzero(valid[g_all])
        if len(q_keep) == 0:
            raise EvaluationError(f"{name}: no query left to evaluate" + (f" after cutoff {cutoff}" if cutoff else ""))
        tasks[name] = SubsetTask(q_all[q_keep], g_all[g_keep], splits["query"].select_columns(ANNOTATION_COLUMNS).select(q_keep),
                                 splits["gallery"].select_columns(ANNOTATION_COLUMNS).select(g_keep))
    results, extras = score_subsets(matrix, tasks, noise_uid, noise_ds, mode=mode, index=index, quiet=quiet)
    removed_total = sum(e["self_matches_removed"] for e in extras.values())
    overall = combine_subsets(results)
    for name, extra in extras.items():
        results[name].update(extra)
    wall = time.perf_counter() - started
    counts = {
        "unique_images": stats.unique_images,
        "rows": sum(len(s.hashes) for s in sources),
        "forward_images": stats.forward_images,
        "forward_images_per_process": stats.forward_per_process,
        "cache_hits": stats.cache_hits,
        "corrupt_cache_files": stats.corrupt_cache_files,
        "invalid_images_skipped": [f"{where}: {err}" for where, err in stats.invalid],
        "self_matches_removed": removed_total,
        "queries": {n: r.get("num_queries") for n, r in results.items()},
    }
    provenance = {
        "lookbench_version": lookbench.__version__,
        "dataset": bench.provenance,
        "model": {"name": encoder.name, **encoder.provenance, "fingerprint": encoder.fingerprint,
                  "preprocessing": encoder.preprocessing, "embedding_dim": int(matrix.shape[1])},
        "precision": precision,
        "device": getattr(encoder, "device", "cpu"),
        "processes": dist.world,
        "mode": mode,
        "cutoff": None if cutoff is None else str(cutoff),
        "distractors": bench.noise is not None,
        "search": "exact (faiss IndexFlatIP, cosine)" if index == "flat" else "approximate (faiss HNSW32, cosine)",
        "counts": counts,
        "wall_time_s": round(wall, 3),
        "evaluated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    result = EvaluationResult(results, overall, provenance)
    if output_dir is not None:
        result.save(output_dir)
    return result
