"""`lookbench` run as a user runs it (offline, in a fresh process) and the files of a submission folder, for the
tests of `lookbench submit` and `lookbench verify`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# gr-lite-mini lives in the package as a local folder: a submission names the Hub repo its weights are published in.
MODEL_ID = "lookbench/gr-lite-mini@5e1f0c2d9a7b3e4f6a8b0c1d2e3f4a5b6c7d8e9f"


def lookbench(*argv, cwd: Path) -> subprocess.CompletedProcess:
    """`lookbench ...` in a fresh process with the tests' (offline) environment."""
    return subprocess.run([sys.executable, "-m", "lookbench", *map(str, argv)], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=600)


def files(folder: Path) -> list[str]:
    """Every file below ``folder``, relative to it, sorted."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def submission_folder(root: Path) -> Path:
    """The one submission folder below a dry run's output."""
    (found,) = root.rglob("results.json")
    return found.parent
