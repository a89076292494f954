"""Stage the six Hub repos into a local mirror laid out as the Hub serves them (docs/publishing.md).

``HUB/lookbench/`` is the dataset repo (``<namespace>/lookbench`` on the Hub) and ``HUB/<namespace>/`` holds the
metric Space ``fine_recall/``, the model ``gr-lite-mini/``, the demo Space ``demo/`` and the leaderboard Space
``leaderboard/``; with the default namespace ``lookbench`` the four sit inside the dataset folder, as their ids share
the prefix on the Hub. From ``HUB`` the users' calls then work word for word: ``load_dataset("lookbench", ...)``,
``evaluate.load("lookbench/fine_recall")``, ``AutoModel.from_pretrained("lookbench/gr-lite-mini",
trust_remote_code=True)``. Every staged file is a real file, and ``repos.json`` names each repo and lists exactly
the files ``lookbench push`` sends (``files_of``, ``manifest.py``); ``carried.py`` lists the project files it copies.

Each Space folder is self-contained, as the Hub runs it: the Hub installs ``requirements.txt`` alone (mounted at
``/tmp/requirements.txt`` before the repo's files are copied in) plus the gradio of ``sdk_version``, then runs
``python app.py`` in ``/home/user/app``. So no requirement may name a file of the repo (a wheel would not be there
yet): the demo and leaderboard Spaces carry the ``lookbench`` package they import, and their requirements are the
package's own dependencies, from the index.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from dataclasses import replace
from pathlib import Path

from lookbench.files import contained_file, folder_lock, new_sibling, replace_folder
from lookbench.upload_scripts.carried import Carried, carried
from lookbench.upload_scripts.manifest import (BOARD, DATASET, MANIFEST, METRIC, MODEL, NAMED, PARTS, REVIEW, SPACE,
                                               TEXT_MODEL, StagedRepo, Staging, check_namespace, files_of, part_of,
                                               parts_of)


def _check_replaceable(out: Path) -> None:
    """``out`` is new, empty, or a mirror stage wrote holding nothing else (so replacing it deletes nothing of the user's)."""
    if not out.exists() and not out.is_symlink():
        return
    if not out.is_dir() or out.is_symlink():
        raise ValueError(f"--out {out} exists and is not a folder; choose a new or empty folder")
    if not any(out.iterdir()):
        return
    refusal = f"--out {out} exists and is not an earlier `lookbench stage` output"
    try:
        staging = Staging.load(out)
    except (OSError, ValueError) as err:
        raise ValueError(f"{refusal} ({err}); choose a new or empty folder (nothing was deleted)") from None
    written = set(staging.files) | {MANIFEST}
    parents = {p.as_posix() for f in written for p in Path(f).parents if p != Path(".")}
    for top, dirs, names in os.walk(out):
        for name in dirs + names:
            path = Path(top) / name
            relative = path.relative_to(out).as_posix()
            expected = relative in parents if name in dirs else relative in written
            if path.is_symlink() or not expected:
                raise ValueError(f"{refusal}: it holds {relative}, which stage did not write; choose a new or empty "
                                 "folder (nothing was deleted)")


def _retarget(card: Path, namespace: str) -> None:
    """Cards name the repos as ``lookbench/<repo>``; under another namespace they are ``<namespace>/<repo>``."""
    if namespace != "lookbench":
        pattern = rf"\blookbench/({'|'.join((DATASET, *NAMED))})\b"
        card.write_text(re.sub(pattern, rf"{namespace}/\1", card.read_text(encoding="utf-8")), encoding="utf-8")


def space_requirements() -> str:
    """The demo's requirements.txt: the package's own dependencies (its distribution metadata, extras left out; gradio
    comes with the SDK), torch pinned to the tested release (an unpinned torch resolves to the newest, a CUDA build)."""
    from importlib.metadata import requires, version

    from packaging.requirements import Requirement
    from packaging.version import Version

    lines = []
    for line in requires("lookbench") or ():
        requirement = Requirement(line)
        if requirement.marker is not None and "extra" in str(requirement.marker):
            continue
        if requirement.name == "torch":
            requirement = Requirement(f"torch=={Version(version('torch')).base_version}")
        lines.append(str(requirement))
    return "\n".join(lines) + "\n"


def _space_card(card: Path, datasets: list[str] | None = None) -> None:
    """The Space YAML of what was tested: this Python and the installed gradio (``datasets`` set, if given)."""
    from importlib.metadata import PackageNotFoundError, version

    from huggingface_hub import SpaceCard

    try:
        gradio = version("gradio")
    except PackageNotFoundError:
        raise ValueError("lookbench stage writes the Spaces' sdk_version from the installed gradio, and gradio is not "
                         "installed: pip install 'lookbench[space]'") from None
    space = SpaceCard.load(card)
    space.data.sdk_version, space.data.python_version = gradio, f"{sys.version_info.major}.{sys.version_info.minor}"
    if datasets is not None:
        space.data.datasets = datasets or None
    space.save(card)


def _dataset_source(data) -> Path:
    if data is None:
        from lookbench.dataset_builder import ensure_default_mini

        return ensure_default_mini()
    folder = Path(data).expanduser()
    if not (folder / "README.md").is_file() or not any(folder.glob("*/*.parquet")):
        raise ValueError(f"--data {folder} is not a folder written by `lookbench build` (README.md + <Config>/*.parquet)")
    return folder


def _stage_dataset(source: Path, target: Path, shown: str | None = None) -> None:
    """The card and the Parquet shards of every config folder, the text queries' included (the build's and each
    append's validation report, the release's taxonomy and the maps of its sealed rows too), each copied through ``_copy_contained``: nothing from
    outside ``--data`` reaches the mirror."""
    from lookbench.dataset_builder.card import is_report
    from lookbench.dataset_builder.sealed import is_map
    from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE
    from lookbench.dataset_builder.text_queries import TEXT_CONFIG
    from lookbench.schema import SUBSETS

    target.mkdir(parents=True)
    names = ["README.md", *sorted(p.name for p in source.iterdir()
                                  if is_report(p.name) or is_map(p.name) or p.name == TAXONOMY_FILE)]
    names += sorted(f"{p.parent.name}/{p.name}" for p in source.glob("*/*.parquet") if p.parent.name in (*SUBSETS, TEXT_CONFIG))
    for name in names:
        (target / name).parent.mkdir(exist_ok=True)
        _copy_contained(source, name, target / name, shown)


def _copy_contained(source: Path, relative: str, destination: Path, shown: str | None = None) -> None:
    """Copy ``source/relative`` if it is a regular file inside ``source`` (a link is followed only when it resolves
    inside): the file checked is the file copied, as it is opened once, without following links, and checked again on
    its descriptor. ``shown`` names ``source`` in messages (default: as ``--data``)."""
    shown = f"--data {source}" if shown is None else str(shown)
    try:
        path = contained_file(source, relative)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        raise ValueError(f"{shown}: cannot read {relative}: {err.strerror}") from None
    except ValueError as err:
        raise ValueError(f"{shown}: {err}; nothing was staged") from None
    with os.fdopen(fd, "rb") as file, open(destination, "xb") as copy:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{shown}: {relative} is not a regular file; nothing was staged")
        shutil.copyfileobj(file, copy)


def _labels_source(source: Path, labels) -> Path | None:
    """The labels folder of a sealed ``--data`` (required, and written by ``seal`` for exactly that public part);
    ``--labels`` for a public one is refused."""
    from lookbench.dataset_builder.sealed import LABELS_KEY, card_yaml, sealed_state
    from lookbench.files import folder_revision

    try:
        sealed = sealed_state(source)
    except ValueError as err:  # a card that is no regular file inside --data is never read
        raise ValueError(f"{err}; nothing was staged") from None
    if sealed is None:
        if labels is not None:
            raise ValueError(f"--labels {labels}: --data {source} is not sealed, its labels are in it")
        return None
    if labels is None:
        raise ValueError(f"--data {source} is sealed ({sealed.shown}): give its labels folder with --labels DIR, "
                         "pushed as a private repo")
    labels = Path(labels).expanduser()
    made_for = (card_yaml(labels).get(LABELS_KEY) or {}).get("public_revision") if labels.is_dir() else None
    if made_for != folder_revision(source):
        raise ValueError(f"--labels {labels} are not the labels `lookbench seal` wrote for --data {source} (their card "
                         f"names public revision {str(made_for)[:40]}, the data is {folder_revision(source)})")
    return labels


def stage(out, data=None, namespace: str = "lookbench", photos=None, labels=None, only=None, review=None) -> Staging:
    """Write the six repos into ``out`` (new, empty or an earlier staging holding only what stage wrote, which is
    replaced whole; anything else is refused and nothing is deleted). ``photos``: the folder of Fashion-MNIST's IDX
    files the demo's real-photo gallery is built from (default: the Debian package dataset-fashion-mnist's).
    ``labels``: a sealed ``data``'s labels folder, staged as a seventh repo, the private ``<namespace>/lookbench-labels``,
    which the leaderboard Space's card pins at the release's tag. ``review``: an annotated raw release, staged as the
    private review Space ``<namespace>/lookbench-review`` (``review_space.py``), the part ``review``. ``only``: the
    parts (``PARTS``, a comma list) to stage; the other repos of an earlier staging in ``out`` are kept as they are,
    and nothing is prepared for a part not asked for (no demo assets, no encoder)."""
    namespace = check_namespace(namespace)
    parts = parts_of(only if only is None or isinstance(only, str) else ",".join(only))
    if only is not None and ("review" in parts) != (review is not None):
        raise ValueError("--only review stages the review app of --review RAW: give both or neither")
    out = Path(out).expanduser()
    source = _dataset_source(data)
    labels = _labels_source(source, labels)
    if labels is not None and len({"dataset", "labels"} & set(parts)) == 1:
        raise ValueError(f"--data {source} is sealed: its dataset and labels are staged together (--only dataset,labels), "
                         "so the labels repo always holds the labels of the public part beside it")
    named = {f"{namespace}/{name}" for name in NAMED if name in parts}
    # every project file listed and checked before anything is written
    plan = [item for item in carried(namespace) if "/".join(item.target.split("/")[:2]) in named] if named else []
    with folder_lock(out):  # a second stage into the same folder is refused, not raced
        _check_replaceable(out)
        kept = _kept(out, namespace, parts)
        return _stage_into(out, source, data is None, namespace, plan, photos, labels, parts, kept, review)


def _kept(out: Path, namespace: str, parts: tuple[str, ...]) -> Staging | None:
    """The repos of the earlier staging in ``out`` that ``parts`` leaves as they are (None: nothing to keep)."""
    if parts == PARTS or not out.is_dir() or not any(out.iterdir()):
        return None
    earlier = Staging.load(out)
    if earlier.namespace != namespace:
        raise ValueError(f"--out {out} was staged for namespace {earlier.namespace!r}, whose ids its cards name; stage "
                         f"every part for namespace {namespace!r} (without --only) or into a new folder")
    left = tuple(part for part in PARTS if part not in parts)
    return earlier.only(out, tuple(part for part in left if part in {part_of(r.repo_id) for r in earlier.repos}))


def _link_kept(out: Path, tmp: Path, kept: Staging) -> None:
    """The kept repos' files (exactly those the earlier manifest lists, checked by ``files_of``) in the new mirror:
    hard links where the file system allows, else copies."""
    for name in kept.files:
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(out / name, tmp / name)
        except OSError:
            shutil.copyfile(out / name, tmp / name)


def _stage_into(out: Path, source: Path, embedded: bool, namespace: str, plan: list[Carried], photos=None,
                labels: Path | None = None, parts: tuple[str, ...] = PARTS, kept: Staging | None = None,
                review=None) -> Staging:
    from lookbench.dataset_builder.card import release_facts
    from lookbench.dataset_builder.sealed import LABELS_REPO, UNSEALED_KEY, card_yaml
    from lookbench.files import folder_revision

    tmp = new_sibling(out, "staging", folder=True)
    try:
        fresh = {}
        data = tmp / DATASET if "dataset" in parts else source  # the dataset's facts, from its staged copy if staged
        if "dataset" in parts:
            _stage_dataset(source, data)
            _stage_benchmark(data)
            fresh["dataset"] = StagedRepo(f"{namespace}/{DATASET}", "dataset", DATASET, (), tuple(release_facts(data)),
                                          folder_revision(data), unsealed=UNSEALED_KEY in card_yaml(data))
        pins = []  # a sealed release's labels repo at its tag, which the leaderboard pins
        if labels is not None:
            held = tmp / namespace / LABELS_REPO if "labels" in parts else labels
            if "labels" in parts:
                _stage_dataset(labels, held, shown=f"--labels {labels}")
            private = StagedRepo(f"{namespace}/{LABELS_REPO}", "dataset", f"{namespace}/{LABELS_REPO}",
                                 releases=tuple(release_facts(data)), data_revision=folder_revision(held), private=True)
            fresh["labels"] = private
            pins.append(f"{private.repo_id}@{private.release_tag}")
        for item in plan:
            (tmp / item.target).parent.mkdir(parents=True, exist_ok=True)
            _copy_contained(item.source, item.name, tmp / item.target, shown=item.source)
        if SPACE in parts:
            (tmp / namespace / SPACE / "requirements.txt").write_text(space_requirements())
            _stage_demo_assets(tmp / namespace / SPACE, photos)
            # The demo serves the embedded LookBench-Mini: the dataset repo holds that same data only when staged without --data.
            _space_card(tmp / namespace / SPACE / "README.md", datasets=[f"lookbench/{DATASET}"] if embedded else [])
        if METRIC in parts:
            _space_card(tmp / namespace / METRIC / "README.md")
        if BOARD in parts:
            _stage_board(tmp / namespace / BOARD, pins)
        for name in (MODEL, TEXT_MODEL):
            if name in parts:
                _stage_eval_results(tmp / namespace / name, data, namespace)
        for name in NAMED:
            if name in parts:
                fresh[name] = StagedRepo(f"{namespace}/{name}", MODEL_TYPES.get(name, "space"), f"{namespace}/{name}")
        for card in (tmp / DATASET, *(tmp / namespace / name for name in NAMED)):
            if card.is_dir() and part_of(f"{namespace}/{card.name}") in parts:
                _retarget(card / "README.md", namespace)
        if review is not None and "review" in parts:
            from lookbench.upload_scripts.review_space import stage_review

            fresh["review"] = stage_review(tmp, review, namespace, space_requirements(), _space_card, lfs_rules)
        if kept is not None:
            _link_kept(out, tmp, kept)
        repos = _in_order({part: fresh[part] for part in parts if part in fresh}, kept, namespace)
        sent = sorted(f"{repo.folder}/{path.relative_to((tmp / repo.folder).resolve()).as_posix()}"
                      for repo in repos for path in files_of(tmp, repo))
        staging = Staging(namespace, repos, tuple(sent))  # the manifest lists exactly what push sends
        staging.save(tmp)
        replace_folder(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return staging


MODEL_TYPES = {MODEL: "model", TEXT_MODEL: "model"}  # the other named repos are Spaces


def _in_order(fresh: dict, kept: Staging | None, namespace: str) -> tuple[StagedRepo, ...]:
    """The mirror's repos, staged now or kept, in the manifest's order (the dataset first, the private labels last).
    The dataset's ``ignore`` names the repos nested in its folder (with the default namespace, all of them)."""
    from lookbench.dataset_builder.sealed import LABELS_REPO

    repos = {**{part_of(r.repo_id): r for r in (kept.repos if kept else ())}, **fresh}
    if "dataset" in repos and namespace == DATASET:
        nested = (*NAMED, *((LABELS_REPO,) if "labels" in repos else ()), *((REVIEW,) if "review" in repos else ()))
        repos["dataset"] = replace(repos["dataset"], ignore=tuple(f"{name}/**" for name in nested))
    return tuple(repos[part] for part in ("dataset", *NAMED, "labels", "review") if part in repos)


def _stage_benchmark(dataset: Path) -> None:
    """The dataset repo's ``eval.yaml``, which makes it a Hub Benchmark: its tasks name the configs and splits its card
    declares (a sealed release's public part: the card staged is the public one), in every mode."""
    import yaml
    from huggingface_hub import DatasetCard

    from lookbench.results.hub_results import EVAL_YAML, eval_yaml
    from lookbench.settings import MODES

    data = DatasetCard.load(dataset / "README.md").data
    configs = {c["config_name"]: [f["split"] for f in c.get("data_files") or [] if isinstance(f, dict)]
               for c in data.get("configs") or [] if isinstance(c, dict) and "config_name" in c}
    spec = eval_yaml(data.get("pretty_name") or "LookBench", configs, MODES)
    (dataset / EVAL_YAML).write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _stage_eval_results(model: Path, dataset: Path, namespace: str) -> None:
    """A model repo's ``.eval_results``: its card's ``model-index`` scores on the dataset repo (the same values,
    ``hub_results.from_model_index``), pointing at ``<namespace>/lookbench`` and at tasks of its ``eval.yaml``; none
    when the card names no score there."""
    from huggingface_hub import ModelCard

    from lookbench.files import folder_revision
    from lookbench.results.hub_results import RESULTS_FILE, Measured, from_model_index, to_yaml
    from lookbench.results.trust import NOT_CHECKED

    settings = Measured("strict", True, None, "image", folder_revision(dataset), NOT_CHECKED)
    found = from_model_index(ModelCard.load(model / "README.md").data.eval_results or [], f"lookbench/{DATASET}",
                             settings, f"https://huggingface.co/{namespace}/{model.name}")
    if not found:
        return
    for entry in found:
        entry.dataset_id = f"{namespace}/{DATASET}"
    (model / RESULTS_FILE).parent.mkdir(exist_ok=True)
    (model / RESULTS_FILE).write_text(to_yaml(found), encoding="utf-8")


def _stage_board(target: Path, pins: list[str]) -> None:
    """The leaderboard Space, staged as the demo is (its app, card and the lookbench package it imports are copied by
    ``carried``): the same requirements; its card's ``datasets:`` is the results repo it reads; ``pins`` (a sealed
    release's labels repo at its tag, ``owner/lookbench-labels@<release>``) join its ``lookbench_data`` allow-list."""
    from huggingface_hub import SpaceCard

    from lookbench.settings import BOARD_DATA_KEY as CARD_KEY

    (target / "requirements.txt").write_text(space_requirements())
    _space_card(target / "README.md")
    if pins:
        card = SpaceCard.load(target / "README.md")
        card.data[CARD_KEY] = [*(card.data.get(CARD_KEY) or []), *pins]
        card.save(target / "README.md")


def _stage_demo_assets(target: Path, photos) -> None:
    """The demo's galleries — the embedded Mini and the real-photo release — prepared as ``lookbench demo --prepare
    --real-photos`` prepares them (in ``$HF_HOME/lookbench/space``, reused while fresh), each copied file by file from
    its manifest into the Space's ``assets/``, so the Space serves its first query without building anything; then
    the Space's ``.gitattributes``, a Git LFS rule for every binary file in it (the Hub takes binaries only by LFS)."""
    from lookbench.space.assets import SHIPPED_IN, copy_assets, galleries, open_galleries

    served, _ = open_galleries(galleries(None, photos or True))
    for assets in served:
        copy_assets(assets, target / SHIPPED_IN / assets.folder.name)
    (target / ".gitattributes").write_text(lfs_rules(target))


def lfs_rules(folder: Path) -> str:
    """``.gitattributes`` lines putting every binary file under ``folder`` (a NUL byte, or not UTF-8) in Git LFS: one
    ``*.<suffix>`` rule per suffix found, the file's own path when it has none."""
    patterns = {f"*{path.suffix}" if path.suffix else path.relative_to(folder).as_posix()
                for path in folder.rglob("*") if path.is_file() and _binary(path.read_bytes())}
    return "".join(f"{p} filter=lfs diff=lfs merge=lfs -text\n" for p in sorted(patterns))


def _binary(blob: bytes) -> bool:
    """A NUL byte or bytes that are not UTF-8 (git's own test looks for a NUL in the first 8000 bytes only)."""
    if b"\0" in blob:
        return True
    try:
        blob.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False
