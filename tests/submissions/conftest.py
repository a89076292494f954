"""One honest run for the submission tests, made once per session because it is slow: gr-lite-mini evaluated on the
embedded LookBench-Mini with its rankings saved, and the folder `lookbench submit --dry-run` writes from it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.submissions import MODEL_ID, lookbench, submission_folder


@pytest.fixture(scope="session")
def honest(tmp_path_factory) -> Path:
    """The results.json of an honest evaluation (``evaluate --output``), its rankings beside it."""
    import lookbench as lb

    out = tmp_path_factory.mktemp("honest") / "out"
    lb.evaluate("gr-lite-mini", output_dir=out, save_predictions=True, quiet=True)
    return out / "results.json"


@pytest.fixture(scope="session")
def dry_run(honest, tmp_path_factory) -> Path:
    """The folder ``submit --dry-run --out`` wrote: the files the pull request would add, at their repo paths."""
    root = tmp_path_factory.mktemp("dry-run") / "out"
    proc = lookbench("submit", honest, "--dry-run", "--out", root, "--allow-synthetic", "--model-id", MODEL_ID,
                     cwd=root.parent)
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.fixture
def copy(dry_run, tmp_path) -> Path:
    """A copy of the honest submission folder to tamper with."""
    import shutil

    folder = tmp_path / "submission"
    shutil.copytree(submission_folder(dry_run), folder)
    return folder
