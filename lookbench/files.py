"""Content hashes of files (model weights, dataset folders), parameter counts read from weight-file headers, the
one way a file given from outside is opened (contained, regular, size-capped, never blocking), and the one way
anything is written: a file through ``replacing`` (a new ``O_EXCL`` sibling swapped in), a folder through
``replace_folder`` (swapped in one step, never missing), each output under its ``folder_lock`` where two runs could
write it at once.

Hashes and counts are read without torch, so ``lookbench models`` and a dataset's revision stay cheap.
docs/architecture.md §5.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import pickle
import re
import secrets
import shutil
import stat
import struct
from pathlib import Path
from typing import Iterator

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
            opened = os.fstat(file.fileno())
            if not stat.S_ISREG(opened.st_mode):
                raise ValueError(f"{shown} is not a regular file")
            # Sized by the file, not the limit (a read of n bytes allocates n first); a file grown since is read on.
            data = file.read(min(limit, opened.st_size) + 1)
            if opened.st_size < len(data) <= limit:
                data += read_at_most(file, limit - len(data))
    except OSError as err:
        raise ValueError(f"cannot read {shown}: {err.strerror}") from None
    if len(data) > limit:
        raise ValueError(f"{shown} is larger than the {limit}-byte limit of one file")
    return data


def blank_line(raw: bytes) -> bool:
    """A line with nothing but whitespace (NUL included: the second byte of a UTF-16 newline)."""
    return not raw.strip(b" \t\r\n\x00")


def json_lines(lines) -> Iterator[tuple[int, object]]:
    """(1-based line number, the JSON object or an error message) of every non-blank line of a JSONL file's
    ``lines`` (bytes each)."""
    for line_no, raw in enumerate(lines, start=1):
        if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]  # a UTF-8 byte-order mark is still UTF-8
        if blank_line(raw):
            continue
        if b"\x00" in raw or raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            yield line_no, "not UTF-8 text (it looks like UTF-16; save the file as UTF-8)"
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            yield line_no, f"not UTF-8 text (byte 0x{raw[err.start]:02x} at column {err.start + 1})"
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as err:
            yield line_no, f"not valid JSON ({err.msg} at column {err.colno})"
            continue
        yield line_no, record if isinstance(record, dict) else f"not a JSON object but a JSON {type(record).__name__}"


def read_at_most(file, limit: int, chunk: int = 1 << 20) -> bytearray:
    """At most ``limit + 1`` bytes of the file object ``file`` (a ``GzipFile``: the data decompressed), read in chunks:
    one byte past ``limit`` tells the caller the stream holds more than it may, and nothing larger is ever allocated,
    so a gzip bomb stops there."""
    data = bytearray()
    while len(data) <= limit:
        block = file.read(min(chunk, limit + 1 - len(data)))
        if not block:
            break
        data += block
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
    hashes, changed = [], False
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
        hashes.append((path.name, memo[key]))
    if changed:
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        with replacing(memo_path) as tmp:
            tmp.write_text(json.dumps(memo))
    return digest(hashes, end="")


def digest(hashes, salt: str = "", end: str = "\n") -> str:
    """The one digest of a set of files: sha256 over ``salt`` and a ``name\\0sha256<end>`` line per (name, sha256) of
    ``hashes``, in the order given (callers sort). A submission's key, a pull request's id and a record's digest end
    each line with a newline; ``hash_files`` (weights, a dataset folder) does not, and keeps its values."""
    return hashlib.sha256((salt + "".join(f"{name}\0{sha}{end}" for name, sha in hashes)).encode()).hexdigest()


def folder_revision(folder: Path) -> str:
    """Identify a local dataset folder by the content of its card and data files, ``<Config>/*.parquet`` (hashes
    memoised by mtime); an appended release changes it, a staged copy of the folder keeps it, and so do the repos
    staged inside it (the demo Space's assets are parquet files too, deeper down)."""
    return "local-" + hash_files([folder / "README.md", *folder.glob("*/*.parquet")])[:16]


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
    """Put the finished folder ``staged`` in place of ``target`` (same parent file system, so moves are renames),
    with ``target`` present at every instant: the two are swapped in one step (``renameat2(RENAME_EXCHANGE)``), then
    the old content, now at the staged name, is removed. A symlink at ``target`` is swapped out, never followed.

    Where the file system cannot swap, the old folder is moved aside to ``<staged>.previous`` first; a run killed
    between the two renames leaves it there, and the next run holding ``folder_lock(target)`` puts it back.
    """
    try:
        swapped = _exchange(staged, target)
    except FileNotFoundError:
        swapped = False
    if swapped:
        _remove(staged)
        return
    if not os.path.lexists(target):
        os.rename(staged, target)  # nothing to swap with
        return
    old = staged.with_name(f"{staged.name}.previous")
    os.replace(target, old)
    try:
        os.replace(staged, target)
    except OSError:
        os.replace(old, target)
        raise
    _remove(old)


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically; False where the C library or the file system cannot (ENOSYS, EINVAL)."""
    import ctypes

    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL):
        return False
    raise OSError(error, os.strerror(error), str(first), None, str(second))


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _remove(path: Path) -> None:
    """Remove a file, a symlink (not what it points to) or a whole folder."""
    if _is_folder(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


@contextlib.contextmanager
def folder_lock(target: Path, wait: bool = False):
    """An exclusive lock on writing ``target`` (``flock`` on ``.<name>.lock`` beside it, which carries the holder's
    pid and is removed on release), so two runs never both replace a folder and report success while one's work is
    lost. Another holder: ``wait`` blocks until it ends, else a one-line ``ValueError``. Once held, what killed runs
    left beside ``target`` is cleared (``remove_stale_siblings``). The folder that holds ``target`` must exist."""
    target = Path(target)
    lock = target.with_name(f".{target.name}.lock")
    fd = _acquire(lock, target, wait)
    try:
        with contextlib.suppress(OSError):  # a lock file opened read-only keeps no pid
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        remove_stale_siblings(target)
        yield target
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)  # still held: a run waiting on this file sees it gone and opens a new one
        os.close(fd)


def _acquire(lock: Path, target: Path, wait: bool) -> int:
    """A descriptor of the lock file ``lock`` holding its ``flock``; opened again when the holder it waited for
    removed the file meanwhile. Never follows a symlink, never opens anything but a regular file."""
    flags = os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    while True:
        try:
            try:
                fd = os.open(lock, os.O_RDWR | flags, 0o666)
            except PermissionError:  # another user's lock file in a shared folder: lockable, if not writable
                fd = os.open(lock, os.O_RDONLY | flags)
        except FileNotFoundError:
            raise ValueError(f"cannot write {target}: no such folder {target.parent}") from None
        except OSError as err:
            reason = "it is a symbolic link, which is never followed" if err.errno == errno.ELOOP else err.strerror
            raise ValueError(f"cannot open the lock file {lock}: {reason}") from None
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                raise ValueError(f"the lock file {lock} is not a regular file; remove it")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                raise ValueError(f"{target} is being written by another lookbench run (pid {holder}, lock file {lock}); "
                                 "wait for it to finish") from None
            with contextlib.suppress(FileNotFoundError):
                if os.stat(lock, follow_symlinks=False)[:3] == opened[:3]:  # mode, inode, device: still the lock file
                    return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def remove_stale_siblings(target: Path) -> None:
    """Clear what runs killed while writing ``target`` left beside it: ``new_sibling`` folders and files
    (``.<name>.<tag>-<hex>``) and the ``<staged>.previous`` of a two-rename swap, which is first put back when
    ``target`` is missing. Call it only holding ``folder_lock(target)``: then no live run owns any of them.
    Symlinks among them are removed, never followed."""
    target = Path(target)
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[a-z]+-[0-9a-f]+(\.previous)?")
    stale = sorted(p for p in target.parent.iterdir() if pattern.fullmatch(p.name))
    if not os.path.lexists(target):
        previous = [p for p in stale if p.name.endswith(".previous")]
        previous += [p / f"{target.name}.previous" for p in stale if _is_folder(p)]  # a build's staging folder
        for old in previous:
            if _is_folder(old):
                os.rename(old, target)
                break
    for path in stale:
        _remove(path)


def _is_folder(path: Path) -> bool:
    """A real folder: not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def writable_file(path: Path) -> Path:
    """``path`` if a file can be written there whole: its folder exists and it is new, a regular file or a symlink
    (which the write replaces, never follows). A FIFO, a device or a folder is refused in one line."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"cannot write {path}: no such folder {path.parent}")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    kind = next((name for test, name in _KINDS if test(mode)), None)
    if kind:
        raise ValueError(f"{path} is {kind}, not a regular file; give a new file or a regular one to replace")
    return path


@contextlib.contextmanager
def replacing(path: Path):
    """A new temporary sibling of ``path`` to write (created ``O_EXCL``, so never an existing file or link); it
    replaces ``path`` when the block succeeds (a symlink at ``path`` is replaced, not written through) and is removed
    when it fails, so a failed write never damages what was there. ``path`` must be ``writable_file``."""
    tmp = new_sibling(writable_file(path), "tmp", folder=False)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
