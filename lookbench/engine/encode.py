"""Stage 3: encode every distinct image once, into one ``Embeddings`` matrix indexed by content id.

docs/architecture.md §8. Cache hits are skipped; decoding + preprocessing run in worker threads; batches are
fixed before they are dealt to ``accelerate`` processes, so every image meets the same batch companions whatever
the number of processes and results are bit-identical to a single-process run. Cache records and model output
go straight into the one matrix, so the stage holds the matrix and a window of batches, never a second copy.
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

from lookbench.engine.embedding_cache import EmbeddingCache
from lookbench.encoders.base import Encoder, EncoderError
from lookbench.encoders.tower import image_key
from lookbench.paths import embeddings_dir
from lookbench.settings import DEFAULT_PRECISION
from lookbench.errors import EvaluationError
from lookbench.engine.images import ImageSource, decode
from lookbench.engine.runtime import Processes, Schedule, reuse_freed_memory


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
        """These embeddings at unit length (cosine = inner product), normalised in place and returned: a second
        matrix would cost its whole size again (860 MB for 70k 3072-d rows)."""
        norms = np.sqrt(np.einsum("ij,ij->i", self.matrix, self.matrix))  # no temporary of the matrix's size
        self.matrix /= np.maximum(norms, 1e-12)[:, None]
        return self


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


class _Filling:
    """The embedding matrix being filled, by content id; allocated once its width is known (declared by the
    model, else from the first vectors), so cache records and model output are copied in once."""

    def __init__(self, encoder: Encoder, n: int):
        self.encoder, self.n = encoder, n
        self.valid = np.zeros(n, dtype=bool)
        dim = encoder.embed_dim
        self.matrix = np.zeros((n, dim), dtype=np.float32) if isinstance(dim, int) and dim > 0 else None

    def put(self, uids, vectors: np.ndarray) -> None:
        if self.matrix is None:
            self.matrix = np.zeros((self.n, vectors.shape[1]), dtype=np.float32)
        elif vectors.shape[1] != self.matrix.shape[1]:
            raise EncoderError(f"Model {self.encoder.name!r} produced embeddings of different sizes "
                               f"{sorted({vectors.shape[1], self.matrix.shape[1]})}")
        self.matrix[uids] = vectors
        self.valid[uids] = True


def encode_images(encoder: Encoder, sources: list[ImageSource], *, batch_size=None, workers=None, cache_dir=None,
                  use_cache=True, skip_invalid=False, progress=None, processes: Processes | None = None,
                  overlap=None) -> Embeddings:
    """Embeddings (raw model output) of every distinct image across the hashed ``sources``.

    ``batch_size``, ``workers`` and ``overlap`` default to the model's device (``Schedule.for_device``): on an
    accelerator the next batches are decoded while the forward pass runs (pinned batches, non-blocking copies:
    ``Encoder.host_batch``); on a CPU a torch forward pass and decoding would compete for the same cores, so there
    a window of batches is decoded on every core, then their forward passes run alone. ``progress`` (a tqdm bar)
    counts the images to encode.
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
    filling = _Filling(encoder, len(hashes))

    cache = None
    key = image_key(encoder) if use_cache else None
    if key is not None:
        cache = EmbeddingCache(cache_dir or embeddings_dir(), key,
                               encoder.preprocessing, getattr(encoder, "precision", DEFAULT_PRECISION))
        for block, vectors in cache.records():
            uids = np.fromiter((ids.get(h, -1) for h in block), dtype=np.int64, count=len(block))
            ours = uids >= 0
            if ours.any():
                filling.put(uids[ours], vectors[ours])
        stats.corrupt_cache_files = cache.corrupt_files
    processes.barrier()  # every process decides what is missing from the same cache state
    missing = np.flatnonzero(~filling.valid).tolist()
    stats.cache_hits = len(hashes) - len(missing)
    schedule = Schedule.for_device(getattr(encoder, "device", "cpu"), processes.world, workers=workers,
                                   forward_uses_all_cores=encoder.forward_uses_all_cores, batch_size=batch_size,
                                   overlap=overlap)
    batches = [missing[i:i + schedule.batch_size] for i in range(0, len(missing), schedule.batch_size)]
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

    done: list[int] = []  # content ids this process encoded
    pending: deque = deque()  # (content ids, vectors) of encoded batches not yet stored
    error = None
    dim = filling.matrix.shape[1] if filling.matrix is not None else None
    if progress is not None:
        progress.reset(total=len(missing))
    workers = schedule.workers

    def store():  # encoded batches into the matrix and the cache log
        while pending:
            uids, vectors = pending.popleft()
            filling.put(uids, vectors)
            done.extend(uids)
            if cache is not None:
                cache.write([hashes[u] for u in uids], vectors)

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
                    store()  # while the next window decodes, so the forward passes still run alone on the cores
                    if not queue:
                        break
                    if not schedule.overlap:  # decode the window on every core, then run its forward passes alone
                        wait([f for _, f in queue])
                b, future = queue.popleft()
                if schedule.overlap:
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
                    pending.append((uids, vectors))
                if schedule.overlap:
                    store()
                if progress is not None:
                    progress.update(len(batch))
    except (EvaluationError, EncoderError) as err:
        if processes.world == 1:
            raise
        error = str(err)
    finally:
        try:
            store()  # what was encoded before a failure is kept for the next run
        finally:
            if cache is not None:
                cache.close()

    shared = processes.world > 1  # only then do other processes need this one's vectors
    gathered = processes.gather([{"rank": processes.rank, "uids": done, "error": error, "invalid": stats.invalid,
                                  "vectors": filling.matrix[done] if shared and done else None}])
    errors = [g["error"] for g in gathered if g["error"]]
    if errors:
        raise EvaluationError(errors[0])
    stats.forward_per_process = [len(g["uids"]) for g in gathered]
    stats.forward_images = sum(stats.forward_per_process)
    stats.invalid = [x for g in gathered for x in g["invalid"]]
    for g in gathered:
        if g["rank"] != processes.rank and g["uids"]:
            filling.put(g["uids"], g["vectors"])
    if not filling.valid.any():
        raise EvaluationError(f"No image could be encoded by model {encoder.name!r}")
    if cache is not None and processes.is_main:
        cache.compact(hashes, filling.matrix, filling.valid)
    processes.barrier()
    return Embeddings(ids, filling.matrix, filling.valid, stats)


TEXT_BATCH = 256  # texts per call of a text tower


def encode_texts(encoder: Encoder, texts: list[str], dim: int | None = None) -> np.ndarray:
    """Unit-length embeddings of ``texts`` by the model's text tower, checked as image output is and against the
    width ``dim`` of its image embeddings when known (the two must share one space)."""
    if encoder.text_tower is None:
        raise EncoderError(f"Model {encoder.name!r} has no text tower")
    out = []
    for start in range(0, len(texts), TEXT_BATCH):
        batch = texts[start:start + TEXT_BATCH]
        vectors = check_output(encoder, encoder.encode_text(batch), [f"text {t!r}" for t in batch], None)
        dim = vectors.shape[1] if dim is None else dim
        if vectors.shape[1] != dim:
            raise EncoderError(f"Model {encoder.name!r}: its text tower gives {vectors.shape[1]}-d embeddings, its "
                               f"image tower {dim}-d; text and images must share one space")
        out.append(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    return np.concatenate(out) if out else np.zeros((0, dim), dtype=np.float32)


def oracle_embeddings(encoder: Encoder, sources: list[ImageSource], categories: list[list[str]]) -> Embeddings:
    """The gallery as an oracle encoder (``oracle = True``) describes it: one row per distinct image, from the
    category its first row carries (``categories[i]``: one per row of ``sources[i]``); no pixel is read."""
    ids: dict[bytes, int] = {}
    first: list[str] = []
    for source, cats in zip(sources, categories):
        for h, category in zip(source.hashes, cats):
            if h not in ids:
                ids[h] = len(first)
                first.append(category)
    matrix = check_output(encoder, encoder.encode_gallery(first, list(ids)), [h.hex() for h in ids], None)
    return Embeddings(ids, matrix, np.ones(len(ids), dtype=bool), EncodeStats(unique_images=len(ids)))
