"""Fresh virtualenvs for the tests that install what people install (pip, from the package index and this machine's
wheels): a Space from its requirements.txt, the built wheel, the mteb extra.

Installing torch and the libraries beside it takes most of two minutes per venv. A Space's venv is built once per run
from exactly its requirements.txt, its card's Python and the gradio of its sdk_version, and shared by the Spaces whose
three are the same (the demo and the leaderboard): a venv is never shared by two different requirements files, so
none can hide a package its file lacks. A test that installs something of its own on top of those libraries starts
from ``linked_copy`` of it: a new venv whose site-packages are hard links to the same files pip wrote, made in
seconds, into which the test's own pip install then goes (so is a Space's whose requirements.txt extends the demo's).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from tests.helpers.shared import built_once

SITE = Path("lib") / "python{}" / "site-packages"


# The tests' environment before any test ran: tests/conftest.py imports this module right after it sets the offline
# variables. A worker runs many test files in one process, and what runs in it may set variables there — the demo app
# points GRADIO_EXAMPLES_CACHE at its own temporary folder — so a child given os.environ as it is later would inherit
# folders of tests that ran before it, on that worker only, in whatever order xdist dealt the files.
AT_START = dict(os.environ)


def clean_env() -> dict:
    """The environment of a child in another venv: the tests' environment at the start of the run, without
    PYTHONPATH or the VIRTUAL_ENV of the tests' own venv, so it imports only what its venv and its folder hold; and
    without PYTHONDONTWRITEBYTECODE, so its first import of a module writes the bytecode ``pip_install`` left out."""
    return {k: v for k, v in AT_START.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}


def pip_install(python, *args, cwd: Path) -> None:
    """``python -m pip install -q --no-compile *args`` in ``cwd``, failing the test with pip's own words. Without
    ``--no-compile`` pip spends most of an install compiling every module of torch, transformers and gradio to
    bytecode (60 s against 21 s here for the public libraries); the same source runs either way, and a module is
    compiled when it is first imported."""
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-compile", *args], cwd=cwd,
                          capture_output=True, text=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr[-3000:]


def interpreter(python_version: str) -> str:
    """The ``python<version>`` on this machine (a Space card's python_version)."""
    found = shutil.which(f"python{python_version}")
    assert found, f"the card's python_version {python_version} is not on this machine"
    return found


def space_venv(tmp_path_factory, space: Path) -> Path:
    """The venv of the staged Space folder ``space`` as the Hub builds it: ``pip install -r /tmp/requirements.txt
    gradio==<sdk_version>`` in a fresh venv of its card's python_version, run from an empty folder (the Hub installs
    before the repo's files are there)."""
    from huggingface_hub import SpaceCard

    card = SpaceCard.load(space / "README.md").data
    assert card.sdk == "gradio" and card.app_file == "app.py"
    return requirements_venv(tmp_path_factory, card.python_version, (space / "requirements.txt").read_text(),
                             card.sdk_version)


def requirements_venv(tmp_path_factory, python_version: str, requirements: str, sdk_version: str) -> Path:
    """The venv of one (python_version, requirements.txt, sdk_version), built once per run. A file that holds every
    line of the package's own Space requirements (``stage.space_requirements``: the demo's) and more, as the review
    Space's does, starts from a linked copy of that venv, into which pip then installs the whole file: what it holds
    is then what a fresh venv of the file holds, since every package of the copy is one the file needs too."""
    from lookbench.upload_scripts.stage import space_requirements

    key = hashlib.sha256(b"\0".join([python_version.encode(), requirements.encode(), sdk_version.encode()]))
    base = space_requirements()
    extends = requirements != base and set(base.splitlines()) <= set(requirements.splitlines())

    def build(folder: Path) -> None:
        empty = folder / "app"
        empty.mkdir(parents=True)
        (folder / "requirements.txt").write_text(requirements)  # the Hub's /tmp/requirements.txt
        if extends:
            linked_copy(requirements_venv(tmp_path_factory, python_version, base, sdk_version), folder / "venv")
        else:
            subprocess.run([interpreter(python_version), "-m", "venv", str(folder / "venv")], check=True)
        pip_install(folder / "venv/bin/python", "-r", str(folder / "requirements.txt"), f"gradio=={sdk_version}",
                    cwd=empty)

    return built_once(tmp_path_factory, f"space-venv-{key.hexdigest()[:16]}", build) / "venv"


def linked_copy(venv: Path, folder: Path) -> Path:
    """A new venv at ``folder`` of ``venv``'s Python holding what ``venv``'s site-packages holds, as hard links (a
    copy where the file system cannot link): pip only ever replaces a file, never writes into one, so what is installed
    into the copy later leaves ``venv`` as it was."""
    python = venv / "bin" / "python"
    version = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], check=True,
                             capture_output=True, text=True).stdout.strip()
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(folder)], check=True, env=clean_env())
    site = str(SITE).format(version)

    def link(source, target):
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)

    shutil.copytree(venv / site, folder / site, symlinks=True, copy_function=link, dirs_exist_ok=True)
    return folder
