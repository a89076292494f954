"""Which of the project's files a staged mirror carries, and where (docs/publishing.md).

Only the project's own files are published: the code, cards and model folders are copied from what git tracks (a
checkout) or what the wheel installed (its RECORD), never an untracked file (a ``.env`` with a token, a training run's
``optimizer.bin``), a dotfile or a compiled cache, and never through a link that leaves its folder — all of it listed
and checked (``carried``) before anything is written.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lookbench.files import contained_file
from lookbench.encoders.entries import gr_lite_mini_folder, gr_lite_mini_text_folder
from lookbench.upload_scripts.manifest import BOARD, METRIC, MODEL, SPACE, TEXT_MODEL

# The files the two Spaces take from their package folders (the model folder is copied whole, the dataset by config).
METRIC_FILES = ("fine_recall.py", "records.py", "judging.py", "bootstrap.py", "README.md", "app.py", "requirements.txt")
SPACE_FILES = ("app.py", "README.md")  # the demo's, and the leaderboard Space's from lookbench.space.board
# Subpackages of an optional extra the Space does not install (its requirements leave extras out): not carried.
EXTRA_ONLY = ("mteb",)


def _package_dir(module: str) -> Path:
    import importlib.util

    return Path(next(iter(importlib.util.find_spec(module).submodule_search_locations)))


def project_files(folder: Path) -> list[str]:
    """The project's own files in ``folder`` (relative, sorted): what the installed wheel put there (its RECORD), else,
    in a checkout, what git tracks there (``git ls-files``). A file lying about the folder — an untracked ``.env``, a
    training run's ``optimizer.bin`` — is not the project's and is never published; nor is a dotfile or a compiled
    cache. Each is checked as it will be copied: a link that leaves ``folder`` is refused, naming it."""
    folder = Path(folder)
    if folder.is_symlink():
        raise ValueError(f"{folder} is a symbolic link; stage copies the project's folders, never through a link; "
                         "nothing was staged")
    names = _installed_files(folder)
    if names is None:
        names = _tracked_files(folder)
    kept = sorted(name for name in names if not name.endswith(".pyc")
                  and not any(part.startswith(".") or part == "__pycache__" for part in name.split("/")))
    for name in kept:
        try:
            contained_file(folder, name)
        except ValueError as err:
            raise ValueError(f"{folder}: {err}; nothing was staged") from None
    return kept


def _installed_files(folder: Path) -> list[str] | None:
    """The files a lookbench wheel installed in ``folder`` (its RECORD); ``None`` when none did, as for an editable
    install, whose RECORD names only its finder. Only a RECORD counts: an egg-info's SOURCES.txt is a build's list."""
    from importlib.metadata import distributions

    base = os.path.abspath(folder)
    for dist in distributions(name="lookbench"):
        if dist.read_text("RECORD") is None:
            continue
        names = (os.path.relpath(os.path.abspath(record.locate()), base) for record in dist.files or ())
        inside = [name.replace(os.sep, "/") for name in names if name != ".." and not name.startswith(f"..{os.sep}")]
        if inside:
            return inside
    return None


def _tracked_files(folder: Path) -> list[str]:
    """What git tracks in ``folder`` (its index, relative to the folder); a folder outside any git checkout is refused."""
    import subprocess

    try:
        listed = subprocess.run(["git", "-C", str(folder), "ls-files", "-z", "--", "."], capture_output=True, check=True,
                                timeout=120).stdout
    except (OSError, subprocess.SubprocessError) as err:
        said = getattr(err, "stderr", None) or str(err).encode()
        reason = " ".join(said.decode(errors="replace").split())[:200]
        raise ValueError(f"{folder} is neither installed from a wheel nor in a git checkout ({reason}): stage publishes "
                         "only the project's own files, what git tracks or what the wheel installed") from None
    return [os.fsdecode(name) for name in listed.split(b"\0") if name]


@dataclass(frozen=True)
class Carried:
    """One project file stage copies: ``name`` inside the project folder ``source``, to ``target`` in the mirror."""

    source: Path
    name: str
    target: str


def carried(namespace: str) -> list[Carried]:
    """Every project file of the mirror (the metric Space's files, the model folders, the Spaces' apps and cards and
    the package they carry), listed and checked by ``project_files`` before anything is written."""
    fine_recall, space, board = (_package_dir(m) for m in ("lookbench.metric.fine_recall", "lookbench.space",
                                                           "lookbench.space.board"))
    plan = _named(fine_recall, METRIC_FILES, f"{namespace}/{METRIC}")
    for folder, name in ((gr_lite_mini_folder(), MODEL), (gr_lite_mini_text_folder(), TEXT_MODEL)):
        plan += [Carried(folder, f, f"{namespace}/{name}/{f}") for f in project_files(folder)]
    package = _package()
    for source, repo in ((space, SPACE), (board, BOARD)):
        plan += _named(source, SPACE_FILES, f"{namespace}/{repo}")
        plan += [Carried(c.source, c.name, f"{namespace}/{repo}/lookbench/{c.target}") for c in package]
    return plan


def _named(source: Path, names, target: str) -> list[Carried]:
    """The files ``names`` of ``source``, each one of the project's (``project_files``)."""
    own = set(project_files(source))
    for name in names:
        if name not in own:
            raise ValueError(f"{source / name} is not one of the project's files (not tracked by git, or not installed "
                             "by the wheel); nothing was staged")
    return [Carried(source, name, f"{target}/{name}") for name in names]


def _package() -> list[Carried]:
    """The lookbench package as site-packages lays it out (``python app.py`` puts a Space's folder first on
    ``sys.path``, so ``import lookbench`` finds it there): its own files, and the mapped folders' of a checkout;
    targets relative to the carried ``lookbench/`` folder."""
    root = _package_dir("lookbench")
    plan = [Carried(root, name, name) for name in project_files(root) if name.split("/")[0] not in EXTRA_ONLY]
    moved = {folder: name.removeprefix("lookbench.") for name, folder in _package_dirs(root).items()
             if name.count(".") == 1 and "/" in folder}  # lookbench.training = models/training
    for mapped in mapped_packages(root):
        folder = _package_dir(f"lookbench.{mapped}")
        for name in project_files(folder):
            target = f"{mapped}/{name}"
            inside = next((f for f in moved if target.startswith(f"{f}/")), None)
            plan.append(Carried(folder, name, target if inside is None else moved[inside] + target[len(inside):]))
    return plan


def mapped_packages(root: Path) -> list[str]:
    """The top folders setup.cfg's ``package_dir`` maps into the namespace (``lookbench.models`` = ``models``), read
    from setup.cfg itself — the one list. They lie outside ``lookbench/`` only in a checkout (an editable install),
    where setup.cfg sits beside it; an installed package already holds them, so there is nothing to add. A folder
    inside one that is a package of its own name (``lookbench.training`` = ``models/training``) lands there."""
    return [name.split(".")[1] for name, folder in _package_dirs(root).items() if name.count(".") == 1 and "/" not in folder]


def _package_dirs(root: Path) -> dict[str, str]:
    """setup.cfg's ``package_dir`` beside ``root`` (package name → folder); none beside an installed package."""
    import configparser

    setup_cfg = root.parent / "setup.cfg"
    if not setup_cfg.is_file():
        return {}
    config = configparser.ConfigParser()
    config.read(setup_cfg, encoding="utf-8")
    pairs = (line.split("=") for line in config["options"]["package_dir"].strip().splitlines())
    return {name.strip(): folder.strip() for name, folder in pairs}
