"""Push a staged mirror to the Hub with huggingface_hub: create each repo, commit the files it checked (docs/publishing.md).

The token is huggingface_hub's own (``HF_TOKEN``, else the file ``hf auth login`` wrote) and is never printed;
without one, or with ``dry_run``, only the plan is printed. Hub refusals (401/403/404, other HTTP errors) and
network failures become a one-line ``PushError`` naming the repo.
"""
from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from lookbench import terminal
from lookbench.hub import error_line, transport_errors

from lookbench.upload_scripts.manifest import StagedRepo, Staging, check_namespace, files_of, parts_of

LARGE_FOLDER_BYTES = 5 * 1024**3  # above this a dataset goes through upload_large_folder (resumable, many commits)


class PushError(ValueError):
    """A push the Hub refused or could not be reached for; the message is one line."""


def plan_lines(hub: Path, staging: Staging, private: bool, revision: str | None) -> list[str]:
    """The plan ``--dry-run`` prints: per repo the files it would send, which are exactly those ``repos.json`` lists
    (``Staging.sent``)."""
    lines = []
    for repo, files in staging.sent(hub).items():
        size = sum(p.stat().st_size for p in files)
        extra = (f", sdk {repo.space_sdk}" if repo.space_sdk else "") + (", private (sealed labels)" if repo.private else "")
        lines.append(f"{repo.repo_type:<8} {repo.repo_id:<32} {len(files):>3} files {size / 1e6:8.1f} MB  from {hub / repo.folder}{extra}")
        if repo.release_tag:
            lines.append(f"{'':<8} releases {', '.join(repo.releases)} (data revision {repo.data_revision}); "
                         + _tag_plan(repo, revision))
    lines.append(f"visibility: {'private' if private else 'public'}; revision: {revision or 'main'}")
    return lines


def _tag_plan(repo: StagedRepo, revision: str | None) -> str:
    if revision == repo.release_tag:
        return f"the branch {revision} carries the release name (no tag)"
    return f"tag {repo.release_tag} on the upload commit (an existing tag stays where it is)"


def _upload(api, hub: Path, staging: Staging, repo: StagedRepo, private: bool, revision: str | None) -> str:
    from lookbench._version import __version__

    private = private or repo.private
    api.create_repo(repo.repo_id, repo_type=repo.repo_type, space_sdk=repo.space_sdk, private=private, exist_ok=True)
    if private:  # a repo that was there before keeps its visibility on create: made private before anything is sent
        api.update_repo_settings(repo.repo_id, repo_type=repo.repo_type, private=True)
    if revision:
        api.create_branch(repo.repo_id, repo_type=repo.repo_type, branch=revision, exist_ok=True)
    folder = hub / repo.folder
    message = f"Upload {repo.repo_id} (lookbench {__version__})"
    if repo.releases:
        message = f"Upload {repo.repo_id}: releases {', '.join(repo.releases)}, data revision {repo.data_revision} (lookbench {__version__})"
    files = files_of(hub, repo, frozenset(staging.files))  # checked again now: only what repos.json lists is sent
    if repo.repo_type == "dataset" and sum(p.stat().st_size for p in files) > LARGE_FOLDER_BYTES:
        # Resumable, many commits; it reads the files by name again, so it is limited to the names just checked.
        names = [p.relative_to(folder.resolve()).as_posix() for p in files]
        api.upload_large_folder(repo.repo_id, folder, repo_type=repo.repo_type, revision=revision, allow_patterns=names,
                                private=private)
        line, commit = f"{repo.repo_id} ({repo.repo_type}): uploaded", revision  # many commits: tag the branch's head
    else:
        with contextlib.ExitStack() as opened:
            operations = [_checked_add(opened, folder.resolve(), path, repo) for path in files]
            info = api.create_commit(repo.repo_id, operations, repo_type=repo.repo_type, revision=revision,
                                     commit_message=message)
        line, commit = f"{repo.repo_id} ({repo.repo_type}): {info.oid or 'no change'}", info.oid or revision
    if repo.release_tag and revision != repo.release_tag:
        line += "; " + _tag(api, repo, commit)
    return line


def _checked_add(opened: contextlib.ExitStack, root: Path, path: Path, repo: StagedRepo):
    """An upload of the file ``files_of`` checked, opened now without following links and checked again on its
    descriptor: what the commit sends is that file, even if its name is swapped for another before the upload."""
    from huggingface_hub import CommitOperationAdd

    where = path.relative_to(root).as_posix()
    try:
        file = opened.enter_context(os.fdopen(os.open(path.resolve(), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb"))
    except OSError as err:
        raise ValueError(f"{repo.repo_id} ({repo.repo_type}): cannot read {repo.folder}/{where}: {err.strerror}; "
                         "the commit was not sent") from None
    opened_at = Path(f"/proc/self/fd/{file.fileno()}")
    if not stat.S_ISREG(os.fstat(file.fileno()).st_mode) or (opened_at.is_symlink() and not opened_at.resolve().is_relative_to(root)):
        raise ValueError(f"{repo.repo_id} ({repo.repo_type}): {repo.folder}/{where} is no longer a regular file of the "
                         "repo folder; the commit was not sent")
    return CommitOperationAdd(path_in_repo=where, path_or_fileobj=file)


def _tag(api, repo: StagedRepo, commit: str | None) -> str:
    """Tag the commit that holds this data with its newest release; a tag that exists already is left where it is
    (on the commit that first published the release)."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        api.create_tag(repo.repo_id, repo_type=repo.repo_type, tag=repo.release_tag, revision=commit,
                       tag_message=f"LookBench releases {', '.join(repo.releases)} (data revision {repo.data_revision})")
    except HfHubHTTPError as err:
        if err.response is None or err.response.status_code != 409:
            raise
        return f"tag {repo.release_tag} exists already, left where it is"
    return f"tagged {repo.release_tag}"


def push(hub, namespace: str | None = None, *, private: bool = False, revision: str | None = None, dry_run: bool = False,
         only: str | None = None) -> None:
    """Create and upload every repo of the staged mirror ``hub`` (only print the plan when ``dry_run`` or tokenless);
    ``only``: the parts (a comma list of ``PARTS``) to push, the others left as they are on the Hub."""
    from huggingface_hub import HfApi, constants, get_token
    from huggingface_hub.errors import HfHubHTTPError

    hub = Path(hub).expanduser()
    parts = None if only is None else parts_of(only)  # an unknown part is refused before the mirror is read
    staging = Staging.load(hub)
    if parts is not None:
        staging = staging.only(hub, parts)
    if namespace is not None and check_namespace(namespace) != staging.namespace:
        raise ValueError(f"{hub} was staged for namespace {staging.namespace!r}, whose ids its cards name; "
                         f"run `lookbench stage --namespace {namespace}` first")
    if not dry_run and get_token() is None:
        terminal.say("No Hub token (HF_TOKEN or `hf auth login`): dry run, nothing is uploaded.")
        dry_run = True
    lines = plan_lines(hub, staging, private, revision)  # every file checked against repos.json before anything is said
    terminal.say(f"{'Plan' if dry_run else 'Pushing'} {hub} to {HfApi().endpoint}:")
    for line in lines:
        terminal.say("  " + line)
    if dry_run:
        return
    if constants.HF_HUB_OFFLINE:  # huggingface_hub's own message names neither the repo nor the variable
        first = staging.repos[0]
        raise PushError(f"{first.repo_id} ({first.repo_type}): HF_HUB_OFFLINE=1 is set, so nothing can be uploaded to "
                        f"{constants.ENDPOINT}; unset HF_HUB_OFFLINE to push, or add --dry-run to see the plan only")
    api = HfApi()
    for repo in staging.repos:
        try:
            terminal.say("  " + _upload(api, hub, staging, repo, private, revision))
        except (HfHubHTTPError, *transport_errors()) as err:
            raise PushError(f"{repo.repo_id} ({repo.repo_type}): {error_line(err)}") from err
