"""Persistent embedding cache keyed by (model fingerprint, preprocessing, precision, image content hash).

One folder per model key. A file is a sequence of records, each ``MAGIC`` + a JSON header (rows, width, sha256
of the payload) + the payload (16-byte image hashes, then float32 vectors), so every record is checked on its own:
a truncated or damaged record costs only its own images, which are encoded again — never trusted — while the
records around it still load (the reader resynchronises on the next ``MAGIC``).

While encoding, each process appends one record per batch to a log file of its own and flushes it (no fsync
per batch: a killed process loses nothing the kernel already has, and a torn last record is detected); at the end
the main process compacts everything into one file of ``RECORD_ROWS``-row records, written atomically.
"""
from __future__ import annotations

import hashlib
import json
import os
import uuid
import warnings
from pathlib import Path

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
        self._seen: list[Path] = []  # files whose entries are in memory: replaced by compact()
        self._log = None

    def load(self) -> dict[bytes, np.ndarray]:
        """Every valid cached embedding; damaged records are reported and their images left to be recomputed."""
        found: dict[bytes, np.ndarray] = {}
        for path in sorted(self.folder.glob("*.emb")):
            try:
                hashes, vectors, damaged = read_records(path.read_bytes())
            except OSError as err:
                hashes, vectors, damaged = [], np.empty((0, 0), np.float32), f"unreadable ({err})"
            if damaged:
                self.corrupt_files.append(path.name)
                warnings.warn(f"Embedding cache file {path} is corrupted: {damaged}; "
                              f"{len(hashes)} embedding(s) around it still load, the others will be encoded again")
            self._seen.append(path)
            found.update(zip(hashes, vectors))
        return found

    def write(self, hashes: list[bytes], vectors: np.ndarray) -> None:
        """Append one batch to this process's log file and hand it to the kernel (survives a killed process)."""
        if self._log is None:
            path = self.folder / f"{uuid.uuid4().hex}.emb"
            self._log = open(path, "ab")
            self._seen.append(path)
        self._log.write(encode_records(hashes, vectors))
        self._log.flush()

    def close(self) -> None:
        """Make this process's log durable (one fsync for the whole run)."""
        if self._log is not None:
            os.fsync(self._log.fileno())
            self._log.close()
            self._log = None

    def compact(self, everything: dict[bytes, np.ndarray]) -> None:
        """Replace every file this cache has read or written by one file holding ``everything``."""
        self.close()
        if not everything or (len(self._seen) <= 1 and not self.corrupt_files):
            return
        hashes = list(everything)
        merged = self.folder / f"{uuid.uuid4().hex}.emb"
        tmp = merged.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            f.write(encode_records(hashes, np.stack([everything[h] for h in hashes])))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, merged)
        for path in self._seen:
            path.unlink(missing_ok=True)
        self._seen = [merged]


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


def read_records(data: bytes) -> tuple[list[bytes], np.ndarray, str]:
    """The hashes and vectors of every intact record, and what was damaged ("" when nothing was)."""
    hashes, blocks, damage = [], [], []
    pos = 0
    while pos < len(data):
        if not data.startswith(MAGIC, pos):  # bytes that belong to no record: skip to the next one
            found = data.find(MAGIC, pos)
            damage.append(f"{(found if found >= 0 else len(data)) - pos} unreadable byte(s) at offset {pos}")
            if found < 0:
                break
            pos = found
        start = pos + len(MAGIC)
        end = data.find(b"\n", start, start + _MAX_HEADER)
        try:
            header = json.loads(data[start:end]) if end >= 0 else None
            n, dim, checksum = int(header["n"]), int(header["dim"]), str(header["sha256"])
            size = n * (HASH_BYTES + dim * 4)
            payload = data[end + 1:end + 1 + size]
            if len(payload) != size:
                raise ValueError("truncated")
            if hashlib.sha256(payload).hexdigest() != checksum:
                raise ValueError("damaged (checksum mismatch)")
        except (ValueError, KeyError, TypeError) as err:
            what = str(err) if str(err) in ("truncated", "damaged (checksum mismatch)") else f"unreadable header ({type(err).__name__})"
            damage.append(f"record at offset {pos} is {what}")
            found = data.find(MAGIC, start)
            if found < 0:
                break
            pos = found
            continue
        hashes += [payload[i * HASH_BYTES:(i + 1) * HASH_BYTES] for i in range(n)]
        blocks.append(np.frombuffer(payload, dtype=np.float32, offset=n * HASH_BYTES).reshape(n, dim))
        pos = end + 1 + size
    dims = {b.shape[1] for b in blocks}
    if len(dims) > 1:
        return [], np.empty((0, 0), np.float32), f"records of different widths {sorted(dims)}"
    vectors = np.concatenate(blocks) if blocks else np.empty((0, 0), np.float32)
    return hashes, vectors, "; ".join(damage)
