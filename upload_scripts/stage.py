"""Stage the four Hub repos into a local mirror laid out as the Hub serves them (docs/architecture.md §2, §5).

``HUB/lookbench/`` is the dataset repo (``<namespace>/lookbench`` on the Hub) and ``HUB/<namespace>/`` holds the
metric Space ``fine_recall/``, the model ``gr-lite-mini/`` and the demo Space ``demo/``; with the default namespace
``lookbench`` the three sit inside the dataset folder, as their ids share the prefix on the Hub. From ``HUB`` the
users' calls then work word for word: ``load_dataset("lookbench", ...)``, ``evaluate.load("lookbench/fine_recall")``,
``AutoModel.from_pretrained("lookbench/gr-lite-mini", trust_remote_code=True)``. Every staged file is a real file
(links are followed), and ``repos.json`` names each repo for ``lookbench push``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from lookbench.files import new_sibling, replace_folder

MANIFEST = "repos.json"
DATASET, METRIC, MODEL, SPACE = "lookbench", "fine_recall", "gr-lite-mini", "demo"
# The files the two Spaces take from their package folders (the model folder is copied whole, the dataset by config).
METRIC_FILES = ("fine_recall.py", "README.md", "app.py", "requirements.txt")
SPACE_FILES = ("app.py", "README.md", "requirements.txt")


@dataclass(frozen=True)
class StagedRepo:
    """One Hub repo of a staged mirror: its id, type and folder (relative to HUB); ``ignore`` are the patterns of
    the other repos nested inside the folder, which are not part of it."""

    repo_id: str
    repo_type: str
    folder: str
    ignore: tuple[str, ...] = ()

    @property
    def space_sdk(self) -> str | None:
        return "gradio" if self.repo_type == "space" else None


REPO_TYPES = ("dataset", "model", "space")
_REPO_KEYS = {"repo_id", "repo_type", "folder", "ignore"}


@dataclass(frozen=True)
class Staging:
    """What ``repos.json`` records: the namespace, the repos, and every file stage wrote (relative to HUB), so a
    later stage replaces the mirror only when it holds nothing else."""

    namespace: str
    repos: tuple[StagedRepo, ...]
    files: tuple[str, ...] = ()

    @classmethod
    def load(cls, hub) -> "Staging":
        """The manifest of ``hub``, checked against what stage writes: ids ``<namespace>/<name>``, known repo types,
        distinct folders inside the mirror (not the mirror itself), ``ignore`` a list of patterns."""
        path = Path(hub) / MANIFEST
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FileNotFoundError(f"{path} not found: {hub} is not a folder written by `lookbench stage`") from None
        except (OSError, ValueError, RecursionError) as err:
            raise ValueError(f"{path} is not a staging manifest of `lookbench stage`: {type(err).__name__}") from None
        try:
            return cls._checked(raw, Path(hub))
        except ValueError as err:
            raise ValueError(f"{path} is not a staging manifest of `lookbench stage`: {err}") from None

    @classmethod
    def _checked(cls, raw, hub: Path) -> "Staging":
        if not isinstance(raw, dict) or not isinstance(raw.get("repos"), list) or not isinstance(raw.get("namespace"), str):
            raise ValueError("it needs a namespace string and a list of repos")
        namespace = check_namespace(raw["namespace"])
        files = raw.get("files", [])
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ValueError("files is not a list of paths")
        root, repos, seen = hub.resolve(), [], {}
        for entry in raw["repos"]:
            if not isinstance(entry, dict) or set(entry) != _REPO_KEYS:
                raise ValueError(f"a repo entry must have exactly the keys {', '.join(sorted(_REPO_KEYS))}: {entry!r}"[:300])
            repo_id, kind, folder, ignore = (entry[k] for k in ("repo_id", "repo_type", "folder", "ignore"))
            if not isinstance(repo_id, str) or repo_id.count("/") != 1 or repo_id.split("/")[0] != namespace:
                raise ValueError(f"repo {repo_id!r} is not <namespace>/<name> for namespace {namespace!r}")
            _validate(repo_id)
            if kind not in REPO_TYPES:
                raise ValueError(f"repo {repo_id} has type {kind!r}; types are {', '.join(REPO_TYPES)}")
            if not isinstance(ignore, list) or not all(isinstance(p, str) for p in ignore):
                raise ValueError(f"repo {repo_id}: ignore {ignore!r} is not a list of patterns")
            resolved = (root / folder).resolve() if isinstance(folder, str) and not os.path.isabs(folder) else None
            if resolved is None or not resolved.is_relative_to(root) or not resolved.is_dir():
                raise ValueError(f"repo {repo_id} names folder {folder!r}, which is not a folder inside {hub}")
            if resolved == root:
                raise ValueError(f"repo {repo_id} names folder {folder!r}, the mirror itself")
            if resolved in seen or repo_id in {r.repo_id for r in repos}:
                raise ValueError(f"repo {repo_id} names folder {folder!r}, which repo {seen.get(resolved, repo_id)} has too")
            seen[resolved] = repo_id
            repos.append(StagedRepo(repo_id, kind, folder, tuple(ignore)))
        return cls(namespace, tuple(repos), tuple(files))

    def save(self, hub: Path) -> None:
        manifest = {"namespace": self.namespace, "repos": [{**asdict(r), "ignore": list(r.ignore)} for r in self.repos],
                    "files": list(self.files)}
        (hub / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def _validate(repo_id: str) -> None:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise ValueError(f"{repo_id!r} is not a Hub repo id: {' '.join(str(err).split())}") from None


def check_namespace(namespace: str) -> str:
    """A Hub user or organisation name, as huggingface_hub's own ``validate_repo_id`` accepts it."""
    if not isinstance(namespace, str) or "/" in namespace:
        raise ValueError(f"--namespace {namespace!r} is not a Hub user or organisation name")
    try:
        _validate(f"{namespace}/{DATASET}")
    except ValueError as err:
        raise ValueError(f"--namespace {namespace!r} is not a Hub user or organisation name "
                         f"({str(err).split(': ', 1)[-1]})") from None
    return namespace


def _written_files(folder: Path) -> tuple[str, ...]:
    return tuple(sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST))


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


def _package_dir(module: str) -> Path:
    import importlib.util

    return Path(next(iter(importlib.util.find_spec(module).submodule_search_locations)))


def _copy_files(source: Path, names, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(source / name, target / name)  # follows links: the copy is a real file


def _retarget(card: Path, namespace: str) -> None:
    """Cards name the other repos as ``lookbench/<repo>``; under another namespace they are ``<namespace>/<repo>``."""
    if namespace != "lookbench":
        text = re.sub(rf"\blookbench/({METRIC}|{MODEL}|{SPACE})\b", rf"{namespace}/\1", card.read_text(encoding="utf-8"))
        card.write_text(text, encoding="utf-8")


def _dataset_source(data) -> Path:
    if data is None:
        from lookbench.dataset_builder import ensure_default_mini

        return ensure_default_mini()
    folder = Path(data).expanduser()
    if not (folder / "README.md").is_file() or not any(folder.glob("*/*.parquet")):
        raise ValueError(f"--data {folder} is not a folder written by `lookbench build` (README.md + <Config>/*.parquet)")
    return folder


def _stage_dataset(source: Path, target: Path) -> None:
    """The card and the Parquet shards of every config folder (the build's validation report too, if any)."""
    from lookbench.schema import SUBSETS

    target.mkdir(parents=True)
    shutil.copyfile(source / "README.md", target / "README.md")
    if (source / "validation_report.json").is_file():
        shutil.copyfile(source / "validation_report.json", target / "validation_report.json")
    for shard in sorted(source.glob("*/*.parquet")):
        if shard.parent.name in SUBSETS:
            (target / shard.parent.name).mkdir(exist_ok=True)
            shutil.copyfile(shard, target / shard.parent.name / shard.name)


def stage(out, data=None, namespace: str = "lookbench") -> Staging:
    """Write the four repos into ``out`` (new, empty or an earlier staging holding only what stage wrote, which is
    replaced whole; anything else is refused and nothing is deleted)."""
    namespace = check_namespace(namespace)
    out = Path(out).expanduser()
    _check_replaceable(out)
    source = _dataset_source(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = new_sibling(out, "staging", folder=True)
    try:
        _stage_dataset(source, tmp / DATASET)
        _copy_files(_package_dir("lookbench.metric.fine_recall"), METRIC_FILES, tmp / namespace / METRIC)
        shutil.copytree(_package_dir("lookbench.models.gr_lite") / MODEL, tmp / namespace / MODEL,
                        ignore=shutil.ignore_patterns("__pycache__"))
        _copy_files(_package_dir("lookbench.space"), SPACE_FILES, tmp / namespace / SPACE)
        for name in (METRIC, MODEL, SPACE):
            _retarget(tmp / namespace / name / "README.md", namespace)
        nested = tuple(f"{name}/**" for name in (METRIC, MODEL, SPACE)) if namespace == DATASET else ()
        staging = Staging(namespace, (
            StagedRepo(f"{namespace}/{DATASET}", "dataset", DATASET, nested),
            StagedRepo(f"{namespace}/{METRIC}", "space", f"{namespace}/{METRIC}"),
            StagedRepo(f"{namespace}/{MODEL}", "model", f"{namespace}/{MODEL}"),
            StagedRepo(f"{namespace}/{SPACE}", "space", f"{namespace}/{SPACE}"),
        ), _written_files(tmp))
        staging.save(tmp)
        replace_folder(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return staging
