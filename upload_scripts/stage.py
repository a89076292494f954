"""Stage the six Hub repos into a local mirror laid out as the Hub serves them (docs/architecture.md §2, §5).

``HUB/lookbench/`` is the dataset repo (``<namespace>/lookbench`` on the Hub) and ``HUB/<namespace>/`` holds the
metric Space ``fine_recall/``, the model ``gr-lite-mini/``, the demo Space ``demo/`` and the leaderboard Space
``leaderboard/``; with the default namespace ``lookbench`` the four sit inside the dataset folder, as their ids share
the prefix on the Hub. From ``HUB`` the users' calls then work word for word: ``load_dataset("lookbench", ...)``,
``evaluate.load("lookbench/fine_recall")``, ``AutoModel.from_pretrained("lookbench/gr-lite-mini",
trust_remote_code=True)``. Every staged file is a real file, and ``repos.json`` names each repo and lists exactly
the files ``lookbench push`` sends (``files_of``).

Only the project's own files are published: the code, cards and model folders are copied from what git tracks (a
checkout) or what the wheel installed (its RECORD), never an untracked file (a ``.env`` with a token, a training run's
``optimizer.bin``), a dotfile or a compiled cache, and never through a link that leaves its folder — all of it listed
and checked (``carried``) before anything is written.

Each Space folder is self-contained, as the Hub runs it: the Hub installs ``requirements.txt`` alone (mounted at
``/tmp/requirements.txt`` before the repo's files are copied in) plus the gradio of ``sdk_version``, then runs
``python app.py`` in ``/home/user/app``. So no requirement may name a file of the repo (a wheel would not be there
yet): the demo and leaderboard Spaces carry the ``lookbench`` package they import, and their requirements are the
package's own dependencies, from the index.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from lookbench.files import contained_file, folder_lock, new_sibling, regular_file, replace_folder
from lookbench.encoders.entries import gr_lite_mini_folder, gr_lite_mini_text_folder

MANIFEST = "repos.json"
DATASET, METRIC, MODEL, TEXT_MODEL, SPACE, BOARD = (
    "lookbench", "fine_recall", "gr-lite-mini", "gr-lite-mini-text", "demo", "leaderboard")
NAMED = (METRIC, MODEL, TEXT_MODEL, SPACE, BOARD)  # the repos beside the dataset, <namespace>/<name>
# The files the two Spaces take from their package folders (the model folder is copied whole, the dataset by config).
METRIC_FILES = ("fine_recall.py", "records.py", "judging.py", "bootstrap.py", "README.md", "app.py", "requirements.txt")
SPACE_FILES = ("app.py", "README.md")  # the demo's, and the leaderboard Space's from lookbench.space.board
# Subpackages of an optional extra the Space does not install (its requirements leave extras out): not carried.
EXTRA_ONLY = ("mteb",)


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
    private: bool = False  # the labels of a sealed release: pushed as a private repo, whatever push's --private
    unsealed: bool = False  # a release unsealed since it was pushed sealed: its new revision gets a tag of its own

    @property
    def release_tag(self) -> str | None:
        """The newest release (``<release>-unsealed`` for the revision that publishes its labels): the tag ``push`` puts
        on the commit that uploads this data."""
        from lookbench.schema import release_date

        newest = max(self.releases, key=release_date) if self.releases else None
        return f"{newest}-unsealed" if newest and self.unsealed else newest

    @property
    def space_sdk(self) -> str | None:
        return "gradio" if self.repo_type == "space" else None


REPO_TYPES = ("dataset", "model", "space")
_REPO_KEYS = {"repo_id", "repo_type", "folder", "ignore"}
_DATA_KEYS = {"releases", "data_revision", "private", "unsealed"}  # a dataset repo's too: its releases, content revision, privacy


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
            if not isinstance(entry, dict) or not _REPO_KEYS <= set(entry) <= _REPO_KEYS | _DATA_KEYS:
                raise ValueError(f"a repo entry must have exactly the keys {', '.join(sorted(_REPO_KEYS))} (a dataset's "
                                 f"also {', '.join(sorted(_DATA_KEYS))}): {entry!r}"[:300])
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
            flags = [entry.get(flag, False) for flag in ("private", "unsealed")]
            if any(not isinstance(f, bool) or f and kind != "dataset" for f in flags):
                raise ValueError(f"repo {repo_id}: private / unsealed {flags!r} are not true or false of a dataset"[:300])
            repos.append(StagedRepo(repo_id, kind, folder, tuple(ignore), *_data_of(repo_id, kind, entry), *flags))
        return cls(namespace, tuple(repos), tuple(files))

    def sent(self, hub: Path) -> dict[StagedRepo, list[Path]]:
        """Each repo's files as ``push`` sends them (``files_of``), checked to be exactly the files this manifest lists:
        a file added to the mirror after stage, or one missing, is refused, naming it, before any request."""
        listed = frozenset(self.files)
        sent = {repo: files_of(hub, repo, listed) for repo in self.repos}
        found = {f"{repo.folder}/{p.relative_to((hub / repo.folder).resolve()).as_posix()}"
                 for repo, files in sent.items() for p in files}
        missing = sorted(listed - found)
        if missing:
            raise ValueError(f"{MANIFEST} lists {missing[0]}, which no repo folder of {hub} holds; stage again "
                             "(nothing was uploaded)")
        return sent

    def save(self, hub: Path) -> None:
        manifest = {"namespace": self.namespace, "repos": [{**asdict(r), "ignore": list(r.ignore), "releases": list(r.releases)}
                                                           for r in self.repos],
                    "files": list(self.files)}
        (hub / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def _data_of(repo_id: str, kind: str, entry: dict) -> tuple[tuple[str, ...], str | None]:
    """A dataset entry's releases (snapshot names: push makes a tag of the newest) and data revision, checked."""
    from lookbench.schema import RELEASE_PATTERN

    releases, revision = entry.get("releases", []), entry.get("data_revision")
    if (releases or revision is not None) and kind != "dataset":
        raise ValueError(f"repo {repo_id} is a {kind}, which carries no releases")
    if not isinstance(releases, list) or not all(isinstance(r, str) and RELEASE_PATTERN.match(r) for r in releases):
        raise ValueError(f"repo {repo_id}: releases {releases!r} is not a list of release names v<YYYYMMDD>"[:300])
    if revision is not None and not (isinstance(revision, str) and re.fullmatch(r"[\w.+-]{1,64}", revision)):
        raise ValueError(f"repo {repo_id}: data_revision {revision!r} is not a content revision"[:300])
    return tuple(releases), revision


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


def files_of(hub: Path, repo: StagedRepo, listed: frozenset[str] | None = None) -> list[Path]:
    """What ``push`` sends of one repo, and what ``repos.json`` lists: every file under its folder except the nested
    repos' (``ignore``, huggingface_hub's own filter).

    Anything that is not a regular file of the folder (a link resolving outside it, a FIFO, a device), or, given the
    manifest's ``listed`` files, a file it does not list, is refused, naming it, before any request: push never
    uploads or lists a file stage did not write."""
    from huggingface_hub.utils import filter_repo_objects

    root = (hub / repo.folder).resolve()
    # Links to folders are not followed by the walk, but listed and checked like the files.
    entries = sorted((Path(top) / name).relative_to(root).as_posix() for top, dirs, names in os.walk(root)
                     for name in names + [d for d in dirs if (Path(top) / d).is_symlink()])
    files = []
    for shown in filter_repo_objects(entries, ignore_patterns=list(repo.ignore) or None):
        path, where = root / shown, f"{repo.folder}/{shown}"
        try:
            if not path.resolve().is_relative_to(root):
                raise ValueError(f"{where} resolves to {path.resolve()}, outside the repo folder")
            files.append(regular_file(path, where))
            if listed is not None and where not in listed:
                raise ValueError(f"{where} is not in {MANIFEST}: stage did not write it")
        except ValueError as err:
            raise ValueError(f"{repo.repo_id} ({repo.repo_type}): {err}; nothing was uploaded") from None
    return files


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


def _retarget(card: Path, namespace: str) -> None:
    """Cards name the repos as ``lookbench/<repo>``; under another namespace they are ``<namespace>/<repo>``."""
    if namespace != "lookbench":
        pattern = rf"\blookbench/({'|'.join((DATASET, *NAMED))})\b"
        card.write_text(re.sub(pattern, rf"{namespace}/\1", card.read_text(encoding="utf-8")), encoding="utf-8")


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


def _space_requirements() -> str:
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
    append's validation report and the release's taxonomy too), each copied through ``_copy_contained``: nothing from
    outside ``--data`` reaches the mirror."""
    from lookbench.dataset_builder.export import is_report
    from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE
    from lookbench.dataset_builder.text_queries import TEXT_CONFIG
    from lookbench.schema import SUBSETS

    target.mkdir(parents=True)
    names = ["README.md", *sorted(p.name for p in source.iterdir() if is_report(p.name) or p.name == TAXONOMY_FILE)]
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
    from lookbench.dataset_builder.seal import LABELS_KEY, card_yaml, sealed_state
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


def stage(out, data=None, namespace: str = "lookbench", photos=None, labels=None) -> Staging:
    """Write the six repos into ``out`` (new, empty or an earlier staging holding only what stage wrote, which is
    replaced whole; anything else is refused and nothing is deleted). ``photos``: the folder of Fashion-MNIST's IDX
    files the demo's real-photo gallery is built from (default: the Debian package dataset-fashion-mnist's).
    ``labels``: a sealed ``data``'s labels folder, staged as a seventh repo, the private ``<namespace>/lookbench-labels``,
    which the leaderboard Space's card pins at the release's tag."""
    namespace = check_namespace(namespace)
    out = Path(out).expanduser()
    source = _dataset_source(data)
    labels = _labels_source(source, labels)
    plan = carried(namespace)  # every project file listed and checked before anything is written
    with folder_lock(out):  # a second stage into the same folder is refused, not raced
        _check_replaceable(out)
        return _stage_into(out, source, data is None, namespace, plan, photos, labels)


def _stage_into(out: Path, source: Path, embedded: bool, namespace: str, plan: list[Carried], photos=None,
                labels: Path | None = None) -> Staging:
    from lookbench.dataset_builder.export import release_facts
    from lookbench.dataset_builder.seal import LABELS_REPO
    from lookbench.files import folder_revision

    tmp = new_sibling(out, "staging", folder=True)
    try:
        _stage_dataset(source, tmp / DATASET)
        private = ()
        if labels is not None:
            _stage_dataset(labels, tmp / namespace / LABELS_REPO, shown=f"--labels {labels}")
            private = (StagedRepo(f"{namespace}/{LABELS_REPO}", "dataset", f"{namespace}/{LABELS_REPO}",
                                  releases=tuple(release_facts(tmp / DATASET)),
                                  data_revision=folder_revision(tmp / namespace / LABELS_REPO), private=True),)
        for item in plan:
            (tmp / item.target).parent.mkdir(parents=True, exist_ok=True)
            _copy_contained(item.source, item.name, tmp / item.target, shown=item.source)
        (tmp / namespace / SPACE / "requirements.txt").write_text(_space_requirements())
        _stage_demo_assets(tmp / namespace / SPACE, photos)
        _space_card(tmp / namespace / METRIC / "README.md")
        # The demo serves the embedded LookBench-Mini: the dataset repo holds that same data only when staged without --data.
        _space_card(tmp / namespace / SPACE / "README.md", datasets=[f"lookbench/{DATASET}"] if embedded else [])
        _stage_board(tmp / namespace / BOARD, [f"{r.repo_id}@{r.release_tag}" for r in private])
        for card in (tmp / DATASET, *(tmp / namespace / name for name in NAMED)):
            _retarget(card / "README.md", namespace)
        nested = tuple(f"{name}/**" for name in (*NAMED, *(LABELS_REPO for _ in private))) if namespace == DATASET else ()
        from lookbench.dataset_builder.seal import UNSEALED_KEY, card_yaml

        dataset = StagedRepo(f"{namespace}/{DATASET}", "dataset", DATASET, nested, tuple(release_facts(tmp / DATASET)),
                             folder_revision(tmp / DATASET), unsealed=UNSEALED_KEY in card_yaml(tmp / DATASET))
        repos = (
            dataset,
            StagedRepo(f"{namespace}/{METRIC}", "space", f"{namespace}/{METRIC}"),
            StagedRepo(f"{namespace}/{MODEL}", "model", f"{namespace}/{MODEL}"),
            StagedRepo(f"{namespace}/{TEXT_MODEL}", "model", f"{namespace}/{TEXT_MODEL}"),
            StagedRepo(f"{namespace}/{SPACE}", "space", f"{namespace}/{SPACE}"),
            StagedRepo(f"{namespace}/{BOARD}", "space", f"{namespace}/{BOARD}"),
            *private,
        )
        sent = sorted(f"{repo.folder}/{path.relative_to((tmp / repo.folder).resolve()).as_posix()}"
                      for repo in repos for path in files_of(tmp, repo))
        staging = Staging(namespace, repos, tuple(sent))  # the manifest lists exactly what push sends
        staging.save(tmp)
        replace_folder(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return staging


def _stage_board(target: Path, pins: list[str]) -> None:
    """The leaderboard Space, staged as the demo is (its app, card and the lookbench package it imports are copied by
    ``carried``): the same requirements; its card's ``datasets:`` is the results repo it reads; ``pins`` (a sealed
    release's labels repo at its tag, ``owner/lookbench-labels@<release>``) join its ``lookbench_data`` allow-list."""
    from huggingface_hub import SpaceCard

    from lookbench.settings import BOARD_DATA_KEY as CARD_KEY

    (target / "requirements.txt").write_text(_space_requirements())
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
