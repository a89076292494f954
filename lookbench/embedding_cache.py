"""Persistent embedding cache keyed by (model fingerprint, preprocessing, precision, image content hash).

One folder per model key; inside, append-only shard files written atomically after every encoded batch, so a
run killed midway keeps everything it finished. Each shard carries the sha256 of its payload: a truncated or
corrupted shard is detected on load, deleted, and its images are encoded again — never trusted.
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
        self._loaded: list[Path] = []

    def load(self) -> dict[bytes, np.ndarray]:
        """Every valid cached embedding; corrupted shards are reported, removed and left to be recomputed."""
        found: dict[bytes, np.ndarray] = {}
        for path in sorted(self.folder.glob("*.emb")):
            try:
                hashes, vectors = read_shard(path)
            except (ValueError, OSError) as err:
                self.corrupt_files.append(path.name)
                warnings.warn(f"Embedding cache file {path} is corrupted ({err}); its images will be encoded again")
                path.unlink(missing_ok=True)
                continue
            self._loaded.append(path)
            for h, v in zip(hashes, vectors):
                found[h] = v
        return found

    def write(self, hashes: list[bytes], vectors: np.ndarray) -> Path:
        """Persist one batch atomically (write to a temporary name, then rename)."""
        path = self.folder / f"{uuid.uuid4().hex}.emb"
        write_shard(path, hashes, vectors)
        self._loaded.append(path)
        return path

    def compact(self, everything: dict[bytes, np.ndarray]) -> None:
        """Merge the many per-batch shards this cache has seen into one file, so the next load reads one file."""
        if len(self._loaded) <= 1 or not everything:
            return
        hashes = list(everything)
        merged = self.folder / f"{uuid.uuid4().hex}.emb"
        write_shard(merged, hashes, np.stack([everything[h] for h in hashes]))
        for path in self._loaded:
            path.unlink(missing_ok=True)
        self._loaded = [merged]


def write_shard(path: Path, hashes: list[bytes], vectors: np.ndarray) -> None:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(hashes) != len(vectors) or any(len(h) != HASH_BYTES for h in hashes):
        raise ValueError("write_shard needs one 16-byte hash per embedding row")
    payload = b"".join(hashes) + vectors.tobytes()
    header = json.dumps({"n": len(hashes), "dim": vectors.shape[1], "sha256": hashlib.sha256(payload).hexdigest()}).encode()
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(MAGIC + header + b"\n" + payload)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_shard(path: Path) -> tuple[list[bytes], np.ndarray]:
    data = Path(path).read_bytes()
    if not data.startswith(MAGIC):
        raise ValueError("not a LookBench embedding file (bad magic)")
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC):end])
        n, dim, checksum = int(header["n"]), int(header["dim"]), header["sha256"]
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"unreadable header: {err}") from err
    payload = data[end + 1:]
    if len(payload) != n * HASH_BYTES + n * dim * 4:
        raise ValueError(f"truncated: {len(payload)} payload bytes, expected {n * HASH_BYTES + n * dim * 4}")
    if hashlib.sha256(payload).hexdigest() != checksum:
        raise ValueError("checksum mismatch")
    hashes = [payload[i * HASH_BYTES:(i + 1) * HASH_BYTES] for i in range(n)]
    vectors = np.frombuffer(payload, dtype=np.float32, offset=n * HASH_BYTES).reshape(n, dim)
    return hashes, vectors
