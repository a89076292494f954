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
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from lookbench.files import replace_folder

MANIFEST = "repos.json"
DATASET, METRIC, MODEL, SPACE = "lookbench", "fine_recall", "gr-lite-mini", "demo"
# The files the two Spaces take from their package folders (the model folder is copied whole, the dataset by config).
METRIC_FILES = ("fine_recall.py", "README.md", "app.py", "requirements.txt")
SPACE_FILES = ("app.py", "README.md", "requirements.txt")


@dataclass(frozen=True)
class StagedRepo:
    """One Hub repo of a staged mirror: its id, type and folder (relative to HUB); ``ignore`` are the patterns of
    the other repos nested inside the folder, which are not part of it. The dataset repo also names the releases
    it holds and its content revision: ``push`` tags the commit with the newest release, so each snapshot stays
    reachable on the Hub (``revision="v20251201"``) after later ones are pushed."""

    repo_id: str
    repo_type: str
    folder: str
    ignore: tuple[str, ...] = ()
    releases: tuple[str, ...] = ()
    data_revision: str | None = None

    @property
    def release_tag(self) -> str | None:
        """The newest release: the tag ``push`` puts on the commit that uploads this data."""
        from lookbench.schema import release_date

        return max(self.releases, key=release_date) if self.releases else None

    @property
    def space_sdk(self) -> str | None:
        return "gradio" if self.repo_type == "space" else None


@dataclass(frozen=True)
class Staging:
    namespace: str
    repos: tuple[StagedRepo, ...]

    @classmethod
    def load(cls, hub) -> "Staging":
        path = Path(hub) / MANIFEST
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            staging = cls(raw["namespace"], tuple(
                StagedRepo(**{**r, "ignore": tuple(r["ignore"]), "releases": tuple(r.get("releases", ()))}) for r in raw["repos"]))
        except FileNotFoundError:
            raise FileNotFoundError(f"{path} not found: {hub} is not a folder written by `lookbench stage`") from None
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path} is not a staging manifest of `lookbench stage`: {err}") from err
        root = Path(hub).resolve()
        for repo in staging.repos:  # push uploads these folders: never one outside the mirror it was given
            folder = (root / repo.folder).resolve()
            if not folder.is_relative_to(root) or not folder.is_dir():
                raise ValueError(f"{path}: repo {repo.repo_id} names folder {repo.folder!r}, which is not a folder inside {hub}")
        return staging

    def save(self, hub: Path) -> None:
        (hub / MANIFEST).write_text(json.dumps({"namespace": self.namespace, "repos": [asdict(r) for r in self.repos]}, indent=2) + "\n")


def check_namespace(namespace: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][\w.-]*", namespace) or ".." in namespace:
        raise ValueError(f"--namespace {namespace!r} is not a Hub user or organisation name")
    return namespace


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
    """The card and the Parquet shards of every config folder (the build's and each append's validation report too)."""
    from lookbench.dataset_builder.export import is_report
    from lookbench.schema import SUBSETS

    target.mkdir(parents=True)
    shutil.copyfile(source / "README.md", target / "README.md")
    for report in sorted(p for p in source.iterdir() if p.is_file() and is_report(p.name)):
        shutil.copyfile(report, target / report.name)
    for shard in sorted(source.glob("*/*.parquet")):
        if shard.parent.name in SUBSETS:
            (target / shard.parent.name).mkdir(exist_ok=True)
            shutil.copyfile(shard, target / shard.parent.name / shard.name)


def stage(out, data=None, namespace: str = "lookbench") -> Staging:
    """Write the four repos into ``out`` (new, empty or an earlier staging, which is replaced whole)."""
    namespace = check_namespace(namespace)
    out = Path(out).expanduser()
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MANIFEST).is_file())):
        raise ValueError(f"--out {out} exists and is not an earlier `lookbench stage` output; choose a new or empty folder")
    source = _dataset_source(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
    try:
        _stage_dataset(source, tmp / DATASET)
        _copy_files(_package_dir("lookbench.metric.fine_recall"), METRIC_FILES, tmp / namespace / METRIC)
        shutil.copytree(_package_dir("lookbench.models.gr_lite") / MODEL, tmp / namespace / MODEL,
                        ignore=shutil.ignore_patterns("__pycache__"))
        _copy_files(_package_dir("lookbench.space"), SPACE_FILES, tmp / namespace / SPACE)
        for name in (METRIC, MODEL, SPACE):
            _retarget(tmp / namespace / name / "README.md", namespace)
        nested = tuple(f"{name}/**" for name in (METRIC, MODEL, SPACE)) if namespace == DATASET else ()
        from lookbench.dataset_builder.export import release_facts
        from lookbench.files import folder_revision

        dataset = StagedRepo(f"{namespace}/{DATASET}", "dataset", DATASET, nested, tuple(release_facts(tmp / DATASET)),
                             folder_revision(tmp / DATASET))
        staging = Staging(namespace, (
            dataset,
            StagedRepo(f"{namespace}/{METRIC}", "space", f"{namespace}/{METRIC}"),
            StagedRepo(f"{namespace}/{MODEL}", "model", f"{namespace}/{MODEL}"),
            StagedRepo(f"{namespace}/{SPACE}", "space", f"{namespace}/{SPACE}"),
        ))
        staging.save(tmp)
        replace_folder(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return staging
