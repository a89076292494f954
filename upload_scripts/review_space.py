"""The review app of one annotated raw release staged as a private Space, ``<namespace>/lookbench-review``
(``lookbench stage --review RAW``; docs/building-a-release.md "Reviewing on a private Space").

The Space carries what it serves: the app (``space/review/hub_space.py`` as ``app.py``), the ``lookbench`` package
(as the demo Space carries it), and the release itself in ``release/`` — its rows, images and taxonomy, and the review plan
when one was drawn, so every reviewer works to it; never a decision or an invitation (reviewers sign in with Hugging
Face; decisions go to the dataset repo named by ``LOOKBENCH_DECISIONS``). Its card turns Gradio's OAuth on.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from lookbench.dataset_builder.decisions import PLAN, REVIEWS
from lookbench.dataset_builder.gold import GoldSettings
from lookbench.upload_scripts.carried import carried
from lookbench.upload_scripts.manifest import REVIEW, SPACE, StagedRepo

CARD = """---
title: LookBench review
emoji: 🏷️
colorFrom: gray
colorTo: blue
sdk: gradio
app_file: app.py
hf_oauth: true
pinned: false
---

# LookBench review

The review app of one annotated LookBench release, for the reviewers the Space's `LOOKBENCH_REVIEWERS` names
(`hubuser=reviewer,other=name2:adjudicator`): sign in with Hugging Face, review, and your decisions are committed to
the dataset repo `LOOKBENCH_DECISIONS` names each minute (`LOOKBENCH_DECISIONS_EVERY` sets the minutes). Keep this
Space private.
"""


def release_files(raw: Path) -> list[Path]:
    """The release's regular files, relative to it, without its decisions: only ``reviews/plan.json`` of that folder."""
    files = []
    for path in sorted(raw.rglob("*")):
        relative = path.relative_to(raw)
        if path.is_symlink() or not path.is_file() or relative.name.startswith("."):
            continue
        if relative.parts[0] == REVIEWS and relative.as_posix() != f"{REVIEWS}/{PLAN}":
            continue
        files.append(relative)
    return files


def stage_review(tmp: Path, raw, namespace: str, requirements: str, space_card, lfs_rules) -> StagedRepo:
    """The private review Space in the staging folder ``tmp``; ``requirements``, ``space_card`` and ``lfs_rules`` are
    stage's, as every Space it stages gets them."""
    from lookbench.space.review import hub_space

    raw = Path(raw)
    if not (raw / "taxonomy.json").is_file():
        raise ValueError(f"--review {raw}: no taxonomy.json; stage an annotated release (lookbench annotate --out RAW)")
    if (gold := GoldSettings.from_plan(raw)) is not None:  # its plan names a file of this machine, read at every start
        raise ValueError(f"--review {raw}: its review mixes in gold items ({gold.file}), which a Space cannot read; "
                         "review this release locally (lookbench review RAW --invite NAME)")
    target = tmp / namespace / REVIEW
    package = f"{namespace}/{SPACE}/lookbench/"  # the package the demo carries (checked by ``carried``), whether or not
    for item in carried(namespace):             # the demo is staged too
        if item.target.startswith(package):
            (target / "lookbench" / item.target[len(package):]).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(item.source / item.name, target / "lookbench" / item.target[len(package):])
    shutil.copyfile(hub_space.__file__, target / "app.py")
    for relative in release_files(raw):
        (target / "release" / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(raw / relative, target / "release" / relative)
    (target / "requirements.txt").write_text(requirements + "authlib\nitsdangerous\n")  # gradio[oauth]'s
    (target / "README.md").write_text(CARD, encoding="utf-8")
    space_card(target / "README.md")
    (target / ".gitattributes").write_text(lfs_rules(target))
    return StagedRepo(f"{namespace}/{REVIEW}", "space", f"{namespace}/{REVIEW}", private=True)
