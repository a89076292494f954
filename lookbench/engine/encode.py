"""Stage 3: encode every distinct image once, into one ``Embeddings`` matrix indexed by content id.

docs/architecture.md §8. Cache hits are skipped; decoding + preprocessing run in worker threads; batches are
fixed before they are dealt to ``accelerate`` processes, so every image meets the same batch companions whatever
the number of processes and results are bit-identical to a single-process run.
"""
from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

from ..embedding_cache import EmbeddingCache
from ..encoders import Encoder, EncoderError
from ..paths import lookbench_home
from .errors import EvaluationError
from .images import ImageSource, decode
from .runtime import Processes, reuse_freed_memory


@dataclass
class EncodeStats:
    """What encoding did, for the provenance."""

    unique_images: int = 0
    cache_hits: int = 0
    forward_images: int = 0
    forward_per_process: list = field(default_factory=list)
    invalid: list = field(default_factory=list)  # (where, error) of each skipped image
    corrupt_cache_files: list = field(default_factory=list)


@dataclass
class Embeddings:
    """One row per distinct image (by content hash); ``valid`` is False where an unreadable image was skipped."""

    ids: dict  # content hash -> row of ``matrix``
    matrix: np.ndarray
    valid: np.ndarray
    stats: EncodeStats

    def rows(self, source: ImageSource) -> np.ndarray:
        """The matrix row of each of ``source``'s images, in row order."""
        return np.fromiter((self.ids[h] for h in source.hashes), dtype=np.int64, count=len(source.hashes))

    def encoded(self, source: ImageSource) -> np.ndarray:
        """The rows of ``source`` (0-based) whose image was encoded, i.e. not skipped."""
        return np.flatnonzero(self.valid[self.rows(source)])

    def normalised(self) -> "Embeddings":
        """The same embeddings at unit length (cosine = inner product)."""
        x = np.ascontiguousarray(self.matrix, dtype=np.float32)
        return Embeddings(self.ids, x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12), self.valid, self.stats)


def check_output(encoder: Encoder, out, labels: list, dim: int | None) -> np.ndarray:
    """The model's output for one batch as float32 (n, d), or an ``EncoderError`` naming the model."""
    if getattr(out, "requires_grad", False):
        raise EncoderError(f"Model {encoder.name!r} returned a tensor that requires grad; run it under torch.no_grad() "
                           "or return .detach()ed embeddings")
    try:
        out = np.asarray(out, dtype=np.float32)
    except (TypeError, ValueError, RuntimeError) as err:
        raise EncoderError(f"Model {encoder.name!r} returned something that is not an array of numbers: {err}") from err
    n = len(labels)
    if out.ndim != 2 or out.shape[0] != n:
        raise EncoderError(f"Model {encoder.name!r} returned shape {out.shape} for a batch of {n} images; expected ({n}, dim)")
    if dim is not None and out.shape[1] != dim:
        raise EncoderError(f"Model {encoder.name!r} returned {out.shape[1]}-d embeddings; expected {dim}-d")
    for problem, bad in (("NaN/inf", ~np.isfinite(out).all(axis=1)), ("all-zero", ~out.any(axis=1))):
        if bad.any():
            named = ", ".join(labels[i] for i in np.flatnonzero(bad)[:5])
            raise EncoderError(f"Model {encoder.name!r} returned {problem} embeddings for {int(bad.sum())} image(s): {named}")
    return out


def encode_images(encoder: Encoder, sources: list[ImageSource], *, batch_size=32, workers=None, cache_dir=None,
                  use_cache=True, skip_invalid=False, progress=None, processes: Processes | None = None,
                  overlap=None) -> Embeddings:
    """Embeddings (raw model output) of every distinct image across the hashed ``sources``.

    ``overlap`` (default: when the model runs on an accelerator) decodes the next batches while the forward pass
    runs. On a CPU both compete for the same cores, and a decode thread that pre-empts one of torch's threads
    stalls every other one at the next barrier, so there decoding alternates with the forward passes instead: a
    window of batches decoded on every core, then their forward passes alone. ``progress`` (a tqdm bar) counts
    the images to encode.
    """
    processes = processes or Processes()
    ids: dict[bytes, int] = {}
    first: list[tuple[ImageSource, int]] = []  # where each content id first appears
    for source in sources:
        for row, h in enumerate(source.hashes):
            if h not in ids:
                ids[h] = len(first)
                first.append((source, row))
    hashes = list(ids)
    stats = EncodeStats(unique_images=len(hashes))

    cache, known = None, {}
    if use_cache and encoder.fingerprint is not None:
        cache = EmbeddingCache(cache_dir or lookbench_home() / "embeddings", encoder.fingerprint,
                               encoder.preprocessing, getattr(encoder, "precision", "fp32"))
        known = cache.load()
        stats.corrupt_cache_files = cache.corrupt_files
    processes.barrier()  # every process decides what is missing from the same cache state
    missing = [u for u, h in enumerate(hashes) if h not in known]
    stats.cache_hits = len(hashes) - len(missing)
    batches = [missing[i:i + batch_size] for i in range(0, len(missing), batch_size)]
    mine = list(range(processes.rank, len(batches), processes.world))

    def where(u):
        source, row = first[u]
        return source.where(row)

    def decode_batch(b):
        """Fetch (one Arrow take per source) and decode one batch; runs in a worker thread."""
        by_source: dict[str, tuple[ImageSource, list]] = {}
        for pos, u in enumerate(batches[b]):
            source, row = first[u]
            by_source.setdefault(source.label, (source, []))[1].append((pos, row))
        blobs = [None] * len(batches[b])
        for source, items in by_source.values():
            for (pos, _), blob in zip(items, source.image_bytes([row for _, row in items])):
                blobs[pos] = blob
        return decode(encoder, blobs)

    produced: list[tuple[list[int], np.ndarray]] = []
    error = None
    dim = encoder.embed_dim if isinstance(encoder.embed_dim, int) and encoder.embed_dim > 0 else None
    if progress is not None:
        progress.reset(total=len(missing))
    workers = workers or max(1, (os.cpu_count() or 1) // processes.world)
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
                decoded = future.result()
                batch = batches[b]
                bad = [(u, e) for u, e in zip(batch, decoded.errors) if e is not None]
                if bad and not skip_invalid:
                    u, e = bad[0]
                    raise EvaluationError(f"Unreadable image at {where(u)}: {e} (pass --skip-invalid to skip such images)")
                stats.invalid.extend((where(u), e) for u, e in bad)
                uids = [u for u, e in zip(batch, decoded.errors) if e is None]
                if uids:
                    vectors = check_output(encoder, encoder.encode_batch(decoded.inputs), [where(u) for u in uids], dim)
                    dim = vectors.shape[1]
                    stats.forward_images += len(uids)
                    if cache is not None:
                        cache.write([hashes[u] for u in uids], vectors)
                    produced.append((uids, vectors))
                if progress is not None:
                    progress.update(len(batch))
    except (EvaluationError, EncoderError) as err:
        if processes.world == 1:
            raise
        error = str(err)
    finally:
        if cache is not None:
            cache.close()

    gathered = processes.gather([{"produced": produced, "error": error, "forward": stats.forward_images, "invalid": stats.invalid}])
    errors = [g["error"] for g in gathered if g["error"]]
    if errors:
        raise EvaluationError(errors[0])
    stats.forward_per_process = [g["forward"] for g in gathered]
    stats.forward_images = sum(stats.forward_per_process)
    stats.invalid = [x for g in gathered for x in g["invalid"]]
    for g in gathered:
        for uids, vectors in g["produced"]:
            known.update(zip((hashes[u] for u in uids), vectors))
    if cache is not None and processes.is_main:
        cache.compact(known)
    processes.barrier()
    return _assemble(encoder, ids, known, stats)


def _assemble(encoder: Encoder, ids: dict, known: dict, stats: EncodeStats) -> Embeddings:
    """The matrix in content-id order; rows of skipped images stay zero and invalid."""
    if not known:
        raise EvaluationError(f"No image could be encoded by model {encoder.name!r}")
    dims = {v.shape[0] for v in known.values()}
    if len(dims) != 1:
        raise EncoderError(f"Model {encoder.name!r} produced embeddings of different sizes {sorted(dims)}")
    matrix = np.zeros((len(ids), dims.pop()), dtype=np.float32)
    valid = np.zeros(len(ids), dtype=bool)
    for h, u in ids.items():
        v = known.get(h)
        if v is not None:
            matrix[u] = v
            valid[u] = True
    return Embeddings(ids, matrix, valid, stats)
