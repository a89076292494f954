"""A staged Hub mirror as the stage and push tests read it: its six repos, the files of a repo folder, a copy
to tamper with, and `lookbench` run as a user runs it, reaching only a fake Hub on loopback."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TOKEN = "hf_fakeTokenForTheLoopbackHub0123456789"
REPOS = {"lookbench/lookbench": "dataset", "lookbench/fine_recall": "space", "lookbench/gr-lite-mini": "model",
         "lookbench/gr-lite-mini-text": "model",
         "lookbench/demo": "space", "lookbench/leaderboard": "space"}


def staged_files(hub: Path, folder: str) -> list[str]:
    """Every file (or link) of one repo folder of the mirror, relative to it, sorted."""
    root = hub / folder
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink())


def copy_mirror(hub: Path, tmp_path: Path) -> Path:
    """A copy of the mirror (links kept as links) for a test to tamper with."""
    mirror = tmp_path / "hub"
    shutil.copytree(hub, mirror, symlinks=True)
    return mirror


def run_cli(*argv, endpoint: str | None, token: str | None, cwd: Path) -> subprocess.CompletedProcess:
    """`lookbench ...` in a fresh process that may reach only `endpoint` (loopback), logging at debug level."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PYTHONPATH")}
    env.update(HF_HUB_VERBOSITY="debug", HF_TOKEN_PATH=str(cwd / "no-token-file"), HF_HUB_DISABLE_XET="1")
    if endpoint:
        env["HF_ENDPOINT"] = endpoint
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "lookbench", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
