"""A `lookbench build` killed part-way (issue "Hostile users, round 4", kill safety): what it leaves is cleared or
repaired by the next build, and a dataset folder whose training set was never swapped in is reported, not used."""
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from lookbench import cli
from lookbench.errors import EvaluationError

from tests.helpers.lock_holder import hold, release

ROOT = Path(__file__).resolve().parents[2]

# A build in a process of its own, killed (SIGKILL: nothing cleans up) at the hook named by argv[1].
KILLED = """
    import os, signal, sys
    from lookbench import cli
    from lookbench.dataset_builder import export

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    swaps, real_swap = [], export.replace_folder
    def swap(staged, target):
        swaps.append(target)
        if sys.argv[1] == "second-swap" and len(swaps) == 2:
            die()
        real_swap(staged, target)

    export.replace_folder = swap
    if sys.argv[1] == "card":
        export.write_card = die
    cli.main(sys.argv[2:])
"""


def mini_build(root: Path, seed: int) -> list[str]:
    return ["build", "--source", "mini", "--scale", "0.2", "--seed", str(seed), "--out", str(root / "lookbench"),
            "--train-out", str(root / "train"), "--quiet"]


def killed(at: str, args: list[str], tmp: Path) -> None:
    """``lookbench <args>`` run in a new process that is killed at ``at``, its temporary folder ``tmp``."""
    tmp.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED), at, *args], cwd=ROOT,
                          env={**os.environ, "TMPDIR": str(tmp)}, capture_output=True, text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_a_killed_build_leaves_no_temporary_folder_the_next_build_does_not_clear(tmp_path, monkeypatch):
    """Its scratch folder (raw release, datasets cache) was a `lookbench-build-*` folder in the system's temporary
    folder that nothing ever removed; now everything a build writes lies beside its --out, and the next build holding
    --out's lock clears it, while a live build of another folder keeps its own."""
    root, tmp = tmp_path / "data", tmp_path / "tmp"
    killed("card", mini_build(root, seed=1), tmp)
    assert not list(tmp.iterdir())  # nothing left where no later run looks
    other = hold(root / "other")  # a live build of another folder beside it, with its staging folder
    (root / ".other.building-abc123").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    try:
        assert cli.main(mini_build(root, seed=1)) == 0
        assert sorted(p.name for p in root.iterdir()) == [".other.building-abc123", ".other.lock", "lookbench", "train"]
    finally:
        release(other)
    assert not list(tmp.iterdir())


@pytest.mark.slow
def test_a_build_killed_between_its_two_swaps_is_reported_and_repaired_by_the_next(tmp_path, capsys):
    """--out was replaced, --train-out still held the earlier build's training set, and nothing said so; now the
    dataset folder is marked until both are swapped in, loaders refuse it in one line naming both folders, and the next
    build replaces both."""
    from lookbench.engine.data import resolve_data

    root = tmp_path / "data"
    out, train = root / "lookbench", root / "train"
    assert cli.main(mini_build(root, seed=1)) == 0
    old_train = _files(train)
    killed("second-swap", mini_build(root, seed=2), tmp_path / "tmp")
    assert _files(train) == old_train  # the mismatched pair: a new --out, the old --train-out
    capsys.readouterr()

    with pytest.raises(EvaluationError) as refused:
        resolve_data(out)
    message = str(refused.value)
    assert "\n" not in message and str(out) in message and str(train) in message and "killed" in message
    raw = tmp_path / "raw"
    from tests.helpers.raw_release import write_release

    assert cli.main(["build", "--append", str(write_release(raw)), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out) in err and str(train) in err

    assert cli.main(mini_build(root, seed=2)) == 0
    assert f"Repaired {out} and {train}" in capsys.readouterr().out
    assert _files(train) != old_train
    assert resolve_data(out).path == str(out)
    assert sorted(p.name for p in root.iterdir()) == ["lookbench", "train"]


@pytest.mark.slow
def test_a_build_without_the_training_set_says_it_is_left_from_an_earlier_build(tmp_path, capsys):
    """The next build of --out alone drops the mark, so it says which training set stays as it was."""
    root = tmp_path / "data"
    out, train = root / "lookbench", root / "train"
    assert cli.main(mini_build(root, seed=1)) == 0
    killed("second-swap", mini_build(root, seed=2), tmp_path / "tmp")
    capsys.readouterr()
    assert cli.main(["build", "--source", "mini", "--scale", "0.2", "--seed", "2", "--out", str(out), "--quiet"]) == 0
    said = capsys.readouterr().out
    assert f"{train} was not replaced by the killed build" in said


def test_an_out_folder_named_like_the_scratch_folder_gets_only_the_dataset(tmp_path):
    """The scratch folder lies beside the staged folder, under a name that is never --out's own."""
    from tests.helpers.raw_build import build
    from tests.helpers.raw_release import write_release

    release = write_release(tmp_path / "raw")
    assert build(release, tmp_path / "a" / "scratch") == 0 and build(release, tmp_path / "b" / "lookbench") == 0
    assert sorted(p.name for p in (tmp_path / "a" / "scratch").iterdir()) == \
        sorted(p.name for p in (tmp_path / "b" / "lookbench").iterdir())
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["scratch"]
