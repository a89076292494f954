"""Content hashes of files (model weights, dataset folders), parameter counts read from weight-file headers, the
one way a built folder replaces an old one, and the one way a file given from outside is opened (contained, regular,
size-capped, never blocking).

Hashes and counts are read without torch, so ``lookbench models`` and a dataset's revision stay cheap.
docs/architecture.md §5.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import pickle
import secrets
import shutil
import stat
import struct
from pathlib import Path

from lookbench.paths import weight_hashes_file

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
          (stat.S_ISSOCK, "a socket"))


def contained_file(base: Path, relative: str) -> Path:
    """``base/relative`` resolved (symlinks followed), if it is a regular file inside ``base``."""
    if os.path.isabs(relative):
        raise ValueError(f"{relative} is an absolute path; paths are relative to the {Path(base).name}/ folder")
    root = Path(base).resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root):
        raise ValueError(f"{relative} lies outside the {Path(base).name}/ folder (it resolves to {path})")
    return regular_file(path, relative)


def regular_file(path: Path, shown=None) -> Path:
    """``path`` if it is a regular file (links followed); checked with ``stat`` before anything opens it, so a FIFO
    or a device never blocks or floods a reader. ``shown`` names it in messages (default: the path)."""
    shown = path if shown is None else shown
    try:
        mode = Path(path).stat().st_mode
    except OSError as err:
        raise ValueError(f"cannot read {shown}: {err.strerror}") from None
    kind = next((name for test, name in _KINDS if test(mode)), None)
    if kind:
        raise ValueError(f"{shown} is {kind}, not a regular file")
    return Path(path)


def read_regular(path: Path, limit: int, shown=None) -> bytes:
    """The bytes of the regular file ``path`` (checked by ``regular_file``), read with the limit ``limit``.

    Opened with O_NONBLOCK and checked again on the open descriptor: a file swapped for a FIFO after the check still
    cannot block. ``shown`` names the file in messages (default: the path).
    """
    shown = path if shown is None else shown
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise ValueError(f"{shown} is not a regular file")
            data = file.read(limit + 1)
    except OSError as err:
        raise ValueError(f"cannot read {shown}: {err.strerror}") from None
    if len(data) > limit:
        raise ValueError(f"{shown} is larger than the {limit}-byte limit of one file")
    return data


def new_sibling(target: Path, tag: str, folder: bool) -> Path:
    """A new, empty file or folder beside ``target`` (``.<name>.<tag>-<random>``), for work that replaces ``target``
    when it is complete. Made as ``open``/``mkdir`` make them, so the umask decides the mode (``mkstemp`` and
    ``mkdtemp`` make 0600 / 0700, which would become the final modes and shut a team out of a shared folder)."""
    target = Path(target)
    while True:
        candidate = target.with_name(f".{target.name}.{tag}-{secrets.token_hex(6)}")
        try:
            if folder:
                candidate.mkdir()
            else:
                os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return candidate
        except FileExistsError:
            continue


def hash_files(paths: list[Path]) -> str:
    """sha256 over file names and contents, memoised on (path, size, mtime) in ``weight_hashes_file()`` so big weights
    hash once."""
    memo_path = weight_hashes_file()
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


@contextlib.contextmanager
def replacing(path: Path):
    """A new temporary sibling of ``path`` to write; it replaces ``path`` when the block succeeds and is removed when
    it fails, so a failed write never damages what was there."""
    tmp = new_sibling(path, "tmp", folder=False)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
