"""What several test files read and none changes, built once per test run and shared by the pytest-xdist workers.

Under xdist each worker is a session of its own, so a session fixture alone is built once per worker. Here the first
worker to ask builds it, under a lock in the run's own temporary folder (the controller's, which holds every worker's;
pytest removes it when the run passes), and the others wait for it and read it; a build that failed is started again
by the next one to ask, from nothing."""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Callable


def run_folder(tmp_path_factory) -> Path:
    """The temporary folder of the whole run: under xdist the controller's (each worker's own folder is in it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """``<run folder>/shared/<name>``, which ``build(folder)`` fills (``folder`` does not exist yet) by the first caller
    of the run; every other caller, in any worker, waits for that build and gets the same folder. It is finished when
    ``<name>.done`` sits beside it."""
    root = run_folder(tmp_path_factory) / "shared"
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed build left
            build(folder)
            done.touch()
    return folder


def mini_copy(folder: Path) -> Path:
    """LookBench-Mini as ``build_release("mini", folder)`` writes it, copied to ``folder`` for a test to change: the
    default Mini under the tests' HF_HOME (built once by the first test that needs it), which is that build byte for
    byte."""
    from lookbench.dataset_builder import ensure_default_mini

    shutil.copytree(ensure_default_mini(), folder)
    return folder


def sealed_mini(tmp_path_factory, into: Path) -> tuple[Path, Path]:
    """``lookbench build --source mini --out DATA --seal --until 2027-06-01`` as the command writes it, run once per
    test run: copies of its public part and its labels in ``into`` (``data``, ``data-labels``), for a test to change."""
    from lookbench.cli import main

    def build(folder: Path) -> None:
        folder.mkdir()
        assert main(["build", "--source", "mini", "--out", str(folder / "data"), "--seal", "--until", "2027-06-01",
                     "--quiet"]) == 0

    built = built_once(tmp_path_factory, "sealed-mini", build)
    for name in ("data", "data-labels"):
        shutil.copytree(built / name, into / name)
    return into / "data", into / "data-labels"
