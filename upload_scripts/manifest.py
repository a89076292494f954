"""The staged mirror's manifest, ``repos.json``: the repos (id, type, folder, a dataset's releases) and exactly the
files ``lookbench push`` sends of each (docs/publishing.md), read back checked against what stage writes."""
from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from lookbench.files import regular_file

MANIFEST = "repos.json"
DATASET, METRIC, MODEL, TEXT_MODEL, SPACE, BOARD = (
    "lookbench", "fine_recall", "gr-lite-mini", "gr-lite-mini-text", "demo", "leaderboard")
NAMED = (METRIC, MODEL, TEXT_MODEL, SPACE, BOARD)  # the repos beside the dataset, <namespace>/<name>
REVIEW = "lookbench-review"  # the private review Space, staged only with --review RAW (review_space.py)
# What ``--only`` of stage and push names: one part per repo of the mirror, the dataset and its labels by what they are.
PARTS = ("dataset", "labels", *NAMED, "review")


def parts_of(only: str | None) -> tuple[str, ...]:
    """The parts a ``--only`` comma list names (``None``: every part), in ``PARTS`` order; an unknown name is refused
    with the list of parts."""
    if only is None:
        return PARTS
    asked = {name.strip() for name in only.split(",")} - {""}
    unknown = sorted(asked - set(PARTS))
    if unknown or not asked:
        raise ValueError(f"--only {only!r}: {'no part named' if not unknown else 'unknown part ' + repr(unknown[0])}; "
                         f"the parts are {', '.join(PARTS)}")
    return tuple(part for part in PARTS if part in asked)


def part_of(repo_id: str) -> str:
    """The part (``PARTS``) a repo ``<namespace>/<name>`` of the mirror is."""
    from lookbench.dataset_builder.sealed import LABELS_REPO

    name = repo_id.split("/", 1)[1]
    return {DATASET: "dataset", LABELS_REPO: "labels", REVIEW: "review"}.get(name, name)


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
            if any(not isinstance(f, bool) for f in flags) or flags[0] and kind == "model" or flags[1] and kind != "dataset":
                raise ValueError(f"repo {repo_id}: private / unsealed {flags!r} are not true or false of a dataset (private "
                                 "also of a Space)"[:300])
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

    def only(self, hub: Path, parts: tuple[str, ...]) -> "Staging":
        """This manifest narrowed to the repos of ``parts`` and the files it lists of them (each checked by
        ``files_of``); a part the mirror does not hold is refused, naming those it holds."""
        held = {part_of(repo.repo_id) for repo in self.repos}
        missing = [part for part in parts if part not in held]
        if missing:
            raise ValueError(f"--only {missing[0]}: {hub} holds no such repo; it holds "
                             f"{', '.join(p for p in PARTS if p in held)}")
        repos = tuple(repo for repo in self.repos if part_of(repo.repo_id) in parts)
        listed = frozenset(self.files)
        kept = {f"{repo.folder}/{p.relative_to((hub / repo.folder).resolve()).as_posix()}"
                for repo in repos for p in files_of(hub, repo, listed)}
        return Staging(self.namespace, repos, tuple(f for f in self.files if f in kept))

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
