"""Persistent embedding cache keyed by (model fingerprint, preprocessing, precision, image content hash).

One folder per model key. A file is a sequence of records, each ``MAGIC`` + a JSON header (rows, width, sha256
of the payload) + the payload (16-byte image hashes, then float32 vectors), so every record is checked on its own:
a truncated or damaged record costs only its own images, which are encoded again — never trusted — while the
records around it still load (the reader resynchronises on the next ``MAGIC``).

While encoding, each process appends one record per batch to a log file of its own and flushes it (no fsync
per batch: a killed process loses nothing the kernel already has, and a torn last record is detected); at the end
the main process compacts everything into one file of ``RECORD_ROWS``-row records, written atomically — only
when there is more than one file to merge (a cold single-process run leaves its log as the one file). Reading and
compacting go record by record, so neither holds a second copy of the cache (860 MB for 70k 3072-d rows).
"""
from __future__ import annotations

import hashlib
import json
import mmap
import os
import uuid
import warnings
from pathlib import Path
from typing import Iterator

import numpy as np

MAGIC = b"LOOKBENCH-EMB-1\n"
HASH_BYTES = 16
RECORD_ROWS = 4096  # rows per record of a compacted file: what one damaged spot can cost
_MAX_HEADER = 256


class EmbeddingCache:
    """Embeddings of one (model, preprocessing, precision) triple, by image content hash."""

    def __init__(self, root, fingerprint: str, preprocessing: str, precision: str):
        key = hashlib.sha256(f"{fingerprint}\0{preprocessing}\0{precision}".encode()).hexdigest()[:24]
        self.folder = Path(root) / key
        self.folder.mkdir(parents=True, exist_ok=True)
        meta = self.folder / "key.json"
        if not meta.exists():
            meta.write_text(json.dumps({"fingerprint": fingerprint, "preprocessing": preprocessing, "precision": precision}))
        self.corrupt_files: list[str] = []
        self._seen: list[Path] = []  # files whose entries have been read: replaced by compact()
        self._log = None
        self._log_path = None

    def records(self) -> Iterator[tuple[list[bytes], np.ndarray]]:
        """Every valid cached record as (hashes, vectors); damaged records are reported and their images left to
        be recomputed."""
        for path in sorted(self.folder.glob("*.emb")):
            damage: list[str] = []
            kept = 0
            for hashes, vectors in _read(path, damage):
                kept += len(hashes)
                yield hashes, vectors
            if damage:
                self.corrupt_files.append(path.name)
                warnings.warn(f"Embedding cache file {path} is corrupted: {'; '.join(damage)}; "
                              f"{kept} embedding(s) around it still load, the others will be encoded again")
            self._seen.append(path)

    def write(self, hashes: list[bytes], vectors: np.ndarray) -> None:
        """Append one batch to this process's log file and hand it to the kernel (survives a killed process)."""
        if self._log is None:
            self._log_path = self.folder / f"{uuid.uuid4().hex}.emb"
            self._log = open(self._log_path, "ab")
            self._seen.append(self._log_path)
        self._log.write(encode_records(hashes, vectors))
        self._log.flush()

    def close(self) -> None:
        """Make this process's log durable (one fsync for the whole run)."""
        if self._log is not None:
            os.fsync(self._log.fileno())
            self._log.close()
            self._log = None

    def compact(self, hashes: list[bytes], matrix: np.ndarray, valid: np.ndarray) -> None:
        """Replace every file this cache has read or written by one file: the ``valid`` rows of ``matrix`` (row i
        has content hash ``hashes[i]``), then the entries of other images the old files hold (another dataset's),
        written record by record."""
        self.close()
        rows = np.flatnonzero(valid)
        if not len(rows) or (len(self._seen) <= 1 and not self.corrupt_files):
            return
        merged = self.folder / f"{uuid.uuid4().hex}.emb"
        tmp = merged.with_suffix(".tmp")
        written = set(hashes)
        with open(tmp, "wb") as f:
            for start in range(0, len(rows), RECORD_ROWS):
                block = rows[start:start + RECORD_ROWS]
                f.write(encode_records([hashes[i] for i in block], matrix[block]))
            for path in self._seen:
                if path == self._log_path:  # this run's own entries, all written above
                    continue
                for old, vectors in _read(path, []):
                    keep = [i for i, h in enumerate(old) if h not in written]
                    if keep:
                        f.write(encode_records([old[i] for i in keep], vectors[keep]))
                        written.update(old[i] for i in keep)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, merged)
        for path in self._seen:
            path.unlink(missing_ok=True)
        self._seen = [merged]


def _read(path: Path, damage: list) -> Iterator[tuple[list[bytes], np.ndarray]]:
    """The intact records of one file, which is mapped and each record's pages dropped once read: reading costs
    one record of memory, not the file."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if not size:
                return
            with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as data:
                dropped = 0
                for hashes, vectors, end in read_records(data, damage):
                    yield hashes, vectors
                    upto = end - end % mmap.PAGESIZE
                    if upto > dropped:
                        data.madvise(mmap.MADV_DONTNEED, dropped, upto - dropped)
                        dropped = upto
    except OSError as err:
        damage.append(f"unreadable ({err})")


def encode_records(hashes: list[bytes], vectors: np.ndarray) -> bytes:
    """``hashes`` and their vectors as records of at most ``RECORD_ROWS`` rows."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(hashes) != len(vectors) or any(len(h) != HASH_BYTES for h in hashes):
        raise ValueError("an embedding record needs one 16-byte hash per embedding row")
    out = []
    for start in range(0, len(hashes), RECORD_ROWS):
        rows = slice(start, start + RECORD_ROWS)
        payload = b"".join(hashes[rows]) + vectors[rows].tobytes()
        header = {"n": len(hashes[rows]), "dim": vectors.shape[1], "sha256": hashlib.sha256(payload).hexdigest()}
        out += [MAGIC, json.dumps(header).encode(), b"\n", payload]
    return b"".join(out)


def read_records(data, damage: list) -> Iterator[tuple[list[bytes], np.ndarray, int]]:
    """Every intact record of ``data`` (bytes or a file map) as (hashes, vectors, end offset), in file order;
    what was damaged is appended to ``damage``. Records of another width than the file's first are damage too."""
    pos, width = 0, None
    while pos < len(data):
        if data[pos:pos + len(MAGIC)] != MAGIC:  # bytes that belong to no record: skip to the next one
            found = data.find(MAGIC, pos)
            damage.append(f"{(found if found >= 0 else len(data)) - pos} unreadable byte(s) at offset {pos}")
            if found < 0:
                return
            pos = found
        start = pos + len(MAGIC)
        end = data.find(b"\n", start, start + _MAX_HEADER)
        try:
            header = json.loads(data[start:end]) if end >= 0 else None
            n, dim, checksum = int(header["n"]), int(header["dim"]), str(header["sha256"])
        except (ValueError, KeyError, TypeError) as err:
            problem = f"unreadable header ({type(err).__name__})"
        else:
            size = n * (HASH_BYTES + dim * 4)
            payload = data[end + 1:end + 1 + size]
            problem = ("truncated" if len(payload) != size else
                       "damaged (checksum mismatch)" if hashlib.sha256(payload).hexdigest() != checksum else
                       f"{dim} wide where the file's records are {width}" if width not in (None, dim) else None)
        if problem:
            damage.append(f"record at offset {pos} is {problem}")
            found = data.find(MAGIC, start)
            if found < 0:
                return
            pos = found
            continue
        width = dim
        pos = end + 1 + size
        hashes = [payload[i * HASH_BYTES:(i + 1) * HASH_BYTES] for i in range(n)]
        yield hashes, np.frombuffer(payload, dtype=np.float32, offset=n * HASH_BYTES).reshape(n, dim), pos
