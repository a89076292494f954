"""Content hashes of files (model weights, dataset folders), parameter counts read from weight-file headers, and
the one way a built folder replaces an old one.

Hashes and counts are read without torch, so ``lookbench models`` and a dataset's revision stay cheap.
docs/architecture.md §5.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import shutil
import struct
from pathlib import Path

from .paths import lookbench_home


def hash_files(paths: list[Path]) -> str:
    """sha256 over file names and contents, memoised on (path, size, mtime) under lookbench_home() so big weights
    hash once."""
    memo_path = lookbench_home() / "weight_hashes.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    digest = hashlib.sha256()
    changed = False
    for path in sorted(paths):
        stat = path.stat()
        key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
        if key not in memo:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 22), b""):
                    h.update(block)
            memo[key] = h.hexdigest()
            changed = True
        digest.update(path.name.encode() + b"\0" + memo[key].encode())
    if changed:
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo))
        os.replace(tmp, memo_path)
    return digest.hexdigest()


def folder_revision(folder: Path) -> str:
    """Identify a local dataset folder by the content of its card and data files (hashes memoised by mtime); an
    appended release changes it, a staged copy of the folder keeps it."""
    return "local-" + hash_files([folder / "README.md", *folder.rglob("*.parquet")])[:16]


# Batch-norm statistics are stored with the weights but are not learnt parameters.
_BUFFER_SUFFIXES = ("running_mean", "running_var", "num_batches_tracked")


def count_parameters(path: Path) -> int:
    """Learnt parameters in a ``.safetensors`` file (its JSON header) or a legacy ``torch.save`` state dict (its
    pickle, with tensors read as shapes only: nothing is executed and no tensor data is loaded)."""
    path = Path(path)
    with open(path, "rb") as f:
        if path.suffix == ".safetensors":
            (size,) = struct.unpack("<Q", f.read(8))
            shapes = {k: v["shape"] for k, v in json.loads(f.read(size)).items() if k != "__metadata__"}
        else:
            for _ in range(3):  # legacy format: magic number, protocol version, system info
                pickle.load(f)
            shapes = _ShapeUnpickler(f).load()
    return sum(math.prod(shape) for key, shape in shapes.items() if not key.endswith(_BUFFER_SUFFIXES))


class _ShapeUnpickler(pickle.Unpickler):
    """Reads a legacy torch state dict as {name: shape}; any class but the tensor rebuild and OrderedDict is refused."""

    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return lambda storage, offset, size, *rest: tuple(size)
        if (module, name) == ("collections", "OrderedDict"):
            from collections import OrderedDict

            return OrderedDict
        if module == "torch" and name.endswith("Storage"):
            return name
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a plain state dict")

    def persistent_load(self, pid):
        return pid  # ("storage", type, key, location, numel): only the tensor's shape is kept


def replace_folder(staged: Path, target: Path) -> None:
    """Put the finished folder ``staged`` in place of ``target`` (same parent file system, so both moves are renames).

    The old folder is moved aside, not deleted, until the new one is in place: a failure leaves ``target`` as it was.
    """
    old = staged.with_name(f"{staged.name}.previous")
    if target.exists():
        os.replace(target, old)
    try:
        os.replace(staged, target)
    except OSError:
        if old.exists():
            os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
