"""lookbench.files' writers (issue 37): the lock per output folder, stale staging of killed runs, a folder swap that
never leaves the folder missing (real processes killed between its steps), and ``replacing``, the one file writer."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from lookbench.files import folder_lock, new_sibling, replace_folder, replacing

from tests.helpers.lock_holder import hold, python, release


def contents(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def fill(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


OLD = {"a.txt": "old a", "b.txt": "old b"}
NEW = {"a.txt": "new a", "b.txt": "new b", "sub/c.txt": "new c"}


@pytest.fixture
def holder(tmp_path):
    """Another process holding the lock of ``tmp_path/DIR`` until the test ends (or closes its stdin)."""
    process = hold(tmp_path / "DIR")
    yield process
    release(process)


def test_a_second_writer_is_refused_in_one_line_naming_the_holder(tmp_path, holder):
    with pytest.raises(ValueError) as caught, folder_lock(tmp_path / "DIR"):
        pass
    message = str(caught.value)
    assert message == (f"{tmp_path / 'DIR'} is being written by another lookbench run (pid {holder.pid}, lock file "
                       f"{tmp_path / '.DIR.lock'}); wait for it to finish")


def test_a_writer_that_waits_gets_the_lock_when_the_holder_ends(tmp_path, holder):
    acquired = threading.Event()

    def wait_for_it():
        with folder_lock(tmp_path / "DIR", wait=True):
            acquired.set()

    thread = threading.Thread(target=wait_for_it)
    thread.start()
    assert not acquired.wait(1)  # still held by the other process
    holder.stdin.close()
    assert acquired.wait(60)
    thread.join()


def test_a_holder_killed_with_sigkill_blocks_no_later_run(tmp_path):
    process = hold(tmp_path / "DIR")
    process.kill()
    process.wait(timeout=60)
    assert (tmp_path / ".DIR.lock").read_text() == f"{process.pid}\n"  # left by the dead run
    with folder_lock(tmp_path / "DIR"):
        pass
    assert os.listdir(tmp_path) == []


def test_the_lock_file_is_never_followed_through_a_symlink(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / ".DIR.lock").symlink_to(outside)
    with pytest.raises(ValueError, match=r"\.DIR\.lock") as caught, folder_lock(tmp_path / "data" / "DIR"):
        pass
    assert len(str(caught.value).splitlines()) == 1 and "symbolic link" in str(caught.value)
    assert outside.read_text() == "precious"


def test_the_next_lock_holder_removes_what_killed_runs_left_and_nothing_else(tmp_path):
    outside = fill(tmp_path / "outside", {"keep.txt": "keep"})
    data = tmp_path / "data"
    target = fill(data / "DIR", OLD)
    stale = [fill(data / ".DIR.building-abc123", {"DIR/x.parquet": "half"}), data / ".DIR.tmp-0f9e8d7c6b5a",
             fill(data / ".DIR.writing-abc123.previous", OLD), data / ".DIR.staging-abc124"]
    stale[1].write_text("half a file")
    stale[3].symlink_to(outside, target_is_directory=True)  # removed as a link; what it points to stays
    kept = [fill(data / name, {"f": "x"}) for name in (".DIR.notes", ".DIRX.tmp-abc123", ".DIR.tmp-xyz", ".DIR.x.tmp-abc")]
    with folder_lock(target):
        assert not [p for p in stale if os.path.lexists(p)]
        assert (data / ".DIR.lock").read_text() == f"{os.getpid()}\n"
    assert sorted(p.name for p in data.iterdir()) == sorted(["DIR", *(p.name for p in kept)])
    assert contents(target) == OLD and contents(outside) == {"keep.txt": "keep"}


# Pauses a replace_folder in a child process before its N-th file-system change (counted from the audit events of
# renames and removals), so the test can SIGKILL it there, as a power cut or an OOM kill would.
SWAP = """
    import sys, time
    from pathlib import Path
    import lookbench.files as files
    staged, target, pause_at, exchange = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if exchange == "unavailable":  # a file system without RENAME_EXCHANGE: the swap falls back to two renames
        files._exchange = lambda a, b: False
    steps = 0

    def pause(event, args):
        global steps
        if event in ("os.rename", "shutil.rmtree", "os.remove", "os.rmdir"):
            steps += 1
            if steps == pause_at:
                print("paused", flush=True)
                time.sleep(600)

    sys.addaudithook(pause)
    files.replace_folder(staged, target)
    print("done", flush=True)
"""


@pytest.mark.parametrize("exchange", ["renameat2", "unavailable"])
def test_a_kill_at_any_step_of_a_folder_swap_leaves_the_folder_whole(tmp_path, exchange):
    """Killed before each step in turn: DIR is there, old or new and complete, at every instant; with two renames
    (no RENAME_EXCHANGE) the next run puts the old folder back when the kill came between them."""
    for step in range(1, 50):
        data = tmp_path / str(step)
        target = fill(data / "DIR", OLD)
        staged = fill(new_sibling(target, "writing", folder=True), NEW)
        child = python(SWAP, staged, target, step, exchange)
        said = child.stdout.readline()
        if said == "paused\n":
            child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        if exchange == "renameat2":
            assert contents(target) in (OLD, NEW), step
        with folder_lock(target):  # the next run
            assert contents(target) in (OLD, NEW), step
        assert sorted(p.name for p in data.iterdir()) == ["DIR"], step
        if said == "done\n":
            assert contents(target) == NEW
            break
    else:
        pytest.fail("the swap never finished")


def test_a_kill_between_two_renames_inside_a_build_staging_folder_is_repaired(tmp_path):
    """The state a build leaves when killed between the fallback's renames: its staging folder holds the new
    folder and the old one as ``<name>.previous``, and DIR is missing."""
    staging = tmp_path / ".DIR.building-1a2b3c"
    fill(staging / "DIR", NEW)
    fill(staging / "DIR.previous", OLD)
    with folder_lock(tmp_path / "DIR"):
        assert contents(tmp_path / "DIR") == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DIR"]


def test_a_folder_swap_replaces_a_symlink_at_the_target_name_and_leaves_its_target(tmp_path):
    outside = fill(tmp_path / "outside", {"keep.txt": "keep"})
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "DIR"
    target.symlink_to(outside, target_is_directory=True)
    replace_folder(fill(new_sibling(target, "writing", folder=True), NEW), target)
    assert not target.is_symlink() and contents(target) == NEW
    assert sorted(p.name for p in target.parent.iterdir()) == ["DIR"] and contents(outside) == {"keep.txt": "keep"}


def test_replacing_writes_whole_and_replaces_a_symlink_rather_than_writing_through_it(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    target = tmp_path / "out" / "result.json"
    target.parent.mkdir()
    target.symlink_to(outside)
    with replacing(target) as tmp:
        assert tmp.parent == target.parent and tmp.read_bytes() == b""
        tmp.write_text("new")
    assert not target.is_symlink() and target.read_text() == "new" and outside.read_text() == "precious"
    assert sorted(p.name for p in target.parent.iterdir()) == ["result.json"]


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_replacing_refuses_a_target_that_is_no_regular_file_and_leaves_it(tmp_path, kind):
    target = Path(os.devnull) if kind == "device" else tmp_path / "thing"
    os.mkfifo(target) if kind == "fifo" else target.mkdir() if kind == "directory" else None
    before = sorted(os.listdir(target.parent))
    with pytest.raises(ValueError) as caught, replacing(target):
        pytest.fail("the block must not run")
    expected = {"fifo": "a FIFO", "device": "a device", "directory": "a directory"}[kind]
    assert str(caught.value) == f"{target} is {expected}, not a regular file; give a new file or a regular one to replace"
    assert sorted(os.listdir(target.parent)) == before and not target.is_file() and not target.is_symlink()


@pytest.mark.parametrize("writer", [replacing, folder_lock])
def test_writing_into_a_missing_folder_is_one_line_and_makes_no_folder(tmp_path, writer):
    with pytest.raises(ValueError) as caught, writer(tmp_path / "nowhere" / "plot.png"):
        pass
    assert str(caught.value) == f"cannot write {tmp_path / 'nowhere' / 'plot.png'}: no such folder {tmp_path / 'nowhere'}"
    assert os.listdir(tmp_path) == []


def test_the_weight_hash_memo_is_never_written_through_a_symlink_planted_at_a_predictable_name(tmp_path, monkeypatch):
    """Its temporary file was ``<memo>.<pid>.tmp``: a symlink planted there was written through."""
    import lookbench.files
    from lookbench.files import hash_files

    memo = tmp_path / "cache" / "weight_hashes.json"
    memo.parent.mkdir()
    monkeypatch.setattr(lookbench.files, "weight_hashes_file", lambda: memo)
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    memo.with_suffix(f".{os.getpid()}.tmp").symlink_to(outside)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights")
    digest = hash_files([weights])
    assert outside.read_text() == "precious" and len(digest) == 64
    assert list(json.loads(memo.read_text()).values()) == [hashlib.sha256(b"weights").hexdigest()]
