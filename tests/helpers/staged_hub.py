"""A staged Hub mirror as the stage, push and acceptance tests read it: the run's one mirror and the photos of its
real-photo gallery, its six repos, the files of a repo folder, a copy to tamper with, and `lookbench` run as a user
runs it, reaching only a fake Hub on loopback."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers.shared import built_once

TOKEN = "hf_fakeTokenForTheLoopbackHub0123456789"
REPOS = {"lookbench/lookbench": "dataset", "lookbench/fine_recall": "space", "lookbench/gr-lite-mini": "model",
         "lookbench/gr-lite-mini-text": "model",
         "lookbench/demo": "space", "lookbench/leaderboard": "space"}


def shared_photos(tmp_path_factory) -> Path:
    """The IDX folder of the demo's real-photo gallery (the first 200 t10k photos, tests/helpers/photos.py), written
    once per run, with the demo's two galleries (the embedded Mini and these photos) prepared in
    ``$HF_HOME/lookbench/space`` as ``lookbench stage`` prepares them: every stage of the run then only reads them, and
    no two build them at once (one would swap the folder the other copies from)."""
    from lookbench.space.assets import galleries, open_galleries
    from tests.helpers.photos import small_photos

    def build(folder: Path) -> None:
        small_photos(folder)
        open_galleries(galleries(None, folder), quiet=True)

    return built_once(tmp_path_factory, "photos", build)


def shared_mirror(tmp_path_factory) -> Path:
    """``HUB``, the run's one mirror staged with ``shared_photos``; read it, tamper only with a ``copy_mirror``."""
    from lookbench.upload_scripts.stage import stage

    photos = shared_photos(tmp_path_factory)

    def build(folder: Path) -> None:
        folder.mkdir()
        stage(folder / "HUB", photos=photos)

    return built_once(tmp_path_factory, "mirror", build) / "HUB"


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
