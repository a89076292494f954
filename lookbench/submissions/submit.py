"""``lookbench submit``: a result and its saved rankings as a submission folder of the results repo, and the pull
request that adds it (docs/submitting.md).

A submission lives at ``submissions/<owner>/<name>/<commit>/<releases>-<data revision>/<mode>[-settings]/`` (after
the Hub id's two parts, the store's own segments, ``store.result_path``) and holds ``results.json`` and its rankings
beside it (``lookbench.results.rankings``) byte for byte as the store keeps them, and a ``README.md`` that is also the
pull request's description. Everything is
checked before any request: the scores against the result's own outcomes (``outcomes.check_result``), rankings of
every subset as deep as the deepest K it reports, a model named by a Hub id (as huggingface_hub validates one) at a
40-hex commit, real (not LookBench-Mini) data unless allowed, and every name that goes into the folder or the title
printable ASCII of a file name's length (``hub.printable_name``). Distinct Hub ids never share a folder: a
validated id has exactly one '/', and its owner and name, neither '.' nor '..', are two path segments as they are. The pull request's title carries the submission id (sha256 of the files it scores), so the same
submission is found among the repo's pull requests and never sent twice.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from lookbench import terminal
from lookbench.files import folder_lock, new_sibling, replace_folder
from lookbench.hub import (check_commit, check_hub_id, error_line, looks_like_hub_id, printable_name, shown,
                           split_revision, transport_errors)
from lookbench.paths import result_file
from lookbench.results.folder import RESULT_NAME, ResultFolder, files_digest
from lookbench.results.outcomes import check_result
from lookbench.results.provenance import Model, Provenance
from lookbench.results.store import read_json, result_path
from lookbench.submissions import DEFAULT_REPO
from lookbench.submissions.verify import SEALED, claimed_scores

ROOT = "submissions"  # the results repo's folder of submissions
RECORDS = "reproductions"  # its folder of reproduction records (lookbench.submissions.reproduction), never a submission's
MARK = "lookbench-submission"  # "[<MARK> <id>]" in a pull request's title names the submission it adds


@dataclass
class Submission:
    """What a pull request adds: ``files`` (path in the repo -> content) under ``folder``, its ``id`` and ``title``."""

    folder: str
    files: dict[str, bytes]
    id: str
    title: str

    @property
    def description(self) -> str:
        return self.files[f"{self.folder}/README.md"].decode()


def check_repo(repo: str) -> str:
    """``repo`` if it names a Hub dataset (``owner/name``, no revision: a pull request always targets main)."""
    if isinstance(repo, str) and "@" in repo:
        raise ValueError(f"--repo {shown(repo)} is not a Hub dataset id (owner/name): a pull request targets main")
    return check_hub_id(repo, "--repo")


def prepare(result, model_id: str | None = None, allow_synthetic: bool = False) -> Submission:
    """The submission of the result at ``result`` (a store file or an ``--output`` folder), every check passed."""
    path = result_file(result)
    if os.path.lexists(path.parent / RECORDS):
        raise ValueError(f"{path.parent} holds a {RECORDS}/ folder: a submission never carries a reproduction record (a "
                         "maintainer makes and signs one: lookbench reproduce-submission --sign)")
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("provenance"), dict):
        raise ValueError(f"{path} is not a LookBench result: it has no provenance")
    provenance = Provenance(data["provenance"])
    sealed = provenance.dataset.is_sealed
    if not sealed:
        check_result(data, str(path))  # the claimed scores are those its own outcomes give
    elif claimed_scores(data):
        raise ValueError(f"{path} is a run on a sealed release, yet it claims scores: a sealed submission sends "
                         "rankings only, and the leaderboard scores them")
    rankings = _rankings(path, data, provenance.saved_predictions)
    model, revision = hub_model(provenance.model, model_id)
    folder = folder_of(provenance, model, revision, str(path))
    data_name = printable_name(str(provenance.dataset.name), f"{path}: the data's name", limit=200)
    submitted = {**data, "provenance": provenance.submitted_as(model, revision)}
    files = {f"{folder}/{RESULT_NAME}": json.dumps(submitted, indent=2).encode()}
    files.update({f"{folder}/{relative}": content for relative, content in rankings.items()})
    placement = _verified(files, folder)
    if placement["synthetic"] and not allow_synthetic:
        raise ValueError(f"the data is {placement['name']}, a synthetic stand-in (its rows say so): the results repo is "
                         "for real LookBench snapshots; pass --allow-synthetic to submit it anyway (e.g. to a test repo)")
    sid = files_digest(files)
    files[f"{folder}/README.md"] = _readme(data, model, revision, sid, sealed).encode()
    title = f"{model}@{revision[:12]}: {Path(folder).name} on {data_name} [{MARK} {sid[:16]}]"
    return Submission(folder, files, sid, title)


def folder_of(provenance: Provenance, model: str, revision: str, where: str, root: str = ROOT) -> str:
    """The submission's folder in the results repo (``root``/<owner>/<name>/<commit>/<data>/<settings>), each part
    printable; ``reproductions/`` mirrors it (``lookbench.submissions.reproduction``)."""
    dataset = provenance.dataset
    try:
        stored = result_path(root, model=model, revision=revision, fingerprint=None,
                             releases=[str(r) for r in dataset.releases or []],
                             data_revision=dataset.revision, settings=provenance.settings)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{where}: the provenance's settings cannot be read ({err})") from None
    # The store's model segment is sanitised, which is not one-to-one: the Hub id's owner and name replace it, verbatim.
    folder = Path(root, *model.split("/"), *stored.with_suffix("").parts[2:]).as_posix()
    for segment in folder.split("/"):
        printable_name(segment, f"{where}: the submission folder's part")
    return folder


def _rankings(path: Path, data: dict, saved) -> dict[str, bytes]:
    """Each subset's ranking file (as the submission names it -> its bytes), every one as deep as the deepest K the
    result reports (or its whole gallery, less its self-matches, when that is smaller)."""
    deepest = max((int(at[1:]) for name, block in data.items() if name != "provenance" and isinstance(block, dict)
                   for values in block.values() if isinstance(values, dict)
                   for at in values if isinstance(at, str) and at.startswith("@") and at[1:].isdigit()), default=0)
    stored, named = ResultFolder.of(path), ResultFolder(path.parent)
    subsets = sorted(name for name in data if name not in ("overall", "provenance"))
    for subset in subsets:
        relative = stored.ranking(subset)
        if not isinstance(saved, list) or subset not in saved or not os.path.lexists(path.parent / relative):
            raise ValueError(f"{path} has no saved rankings of {subset} ({relative}): evaluate it with --save-predictions; "
                             "the leaderboard re-scores a submission from its rankings")
    out = {}
    for subset, _, content, ranking in stored.rankings(subsets, shown=lambda relative: str(path.parent / relative)):
        depth, query = ranking.shallowest()
        block = data[subset]
        gallery, removed = block.get("gallery_size"), block.get("self_matches_removed") or 0
        wanted = min(deepest, gallery - removed) if isinstance(gallery, int) and isinstance(removed, int) else deepest
        if depth < wanted:
            raise ValueError(f"the {subset} rankings are {depth} deep at query {query}, shallower than the deepest K the "
                             f"result reports ({deepest}): the scores at K cannot be checked from them")
        out[named.ranking(subset)] = content
    return out


def hub_model(model: Model, model_id: str | None) -> tuple[str, str]:
    """(Hub id, commit) of the model: ``--model-id owner/name@commit`` when given, else the provenance's own; the id
    checked as huggingface_hub checks one, the revision a 40-hex commit (``hub.check_hub_id``, ``check_commit``)."""
    if model_id is not None:
        printable_name(model_id, "--model-id", limit=2 * 96 + 1 + 1 + 40)  # owner/name@commit at its longest
        try:
            repo, revision = split_revision(model_id)
        except ValueError as err:
            raise ValueError(f"--model-id: {err}") from None
        if revision is None:
            raise ValueError(f"--model-id {shown(model_id)} is not owner/name@commit (the Hub repo its weights are "
                             "published in, and the commit)")
        repo = check_hub_id(repo, "--model-id")
        return repo, check_commit(repo, revision, "--model-id")
    source, revision = model.source, model.revision
    if isinstance(source, str) and looks_like_hub_id(source) and isinstance(revision, str) and revision:
        what = "the result's model (give --model-id owner/name@commit to name another)"
        source = check_hub_id(source, what)
        return source, check_commit(source, revision, what)
    what = (f"the local folder {source}" if isinstance(source, str) and os.path.isabs(source)
            else f"{source!r} with no Hub revision")
    raise ValueError(f"the model {model.name} is {what}, not a Hub model at a revision: give --model-id "
                     "owner/name@revision, the Hub repo and commit its weights are published at")


def _verified(files: dict[str, bytes], folder: str) -> dict:
    """What the board will compute: the submission exactly as it will be sent, verified against its data
    (``verify_submission``); its placement, or a ValueError with the first reason it would not verify. Whether the data
    is synthetic is read from the data's rows there, never from the result's editable name."""
    import tempfile

    from lookbench.submissions.verify import verify_submission

    with tempfile.TemporaryDirectory(prefix="lookbench-submit-") as tmp:
        for name, content in files.items():
            file = Path(tmp) / Path(name).relative_to(folder)
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(content)
        check = verify_submission(tmp)
    if check.sealed and check.reasons == [SEALED]:  # well formed; the leaderboard scores it against the labels
        return check.placement
    if not check.verified:
        more = f" (and {len(check.reasons) - 1} more: lookbench verify names them)" if len(check.reasons) > 1 else ""
        raise ValueError(f"the result does not verify against {check.data}: {check.reasons[0]}{more}")
    return check.placement


def _headline(overall) -> str:
    """Overall Fine Recall@1 as ``86.9 [83.6, 90.2] (95% interval, 282 queries)``."""
    score = overall["fine_recall"]["@1"]
    try:
        lo, hi = (float(v) for v in overall["ci95"]["fine_recall"]["@1"])
    except (KeyError, TypeError, ValueError):
        return f"{score:.1f} (no interval recorded, {overall.get('num_queries')} queries)"
    return f"{terminal.score(score, (lo, hi))} (95% interval, {overall.get('num_queries')} queries)"


def _readme(data: dict, model: str, revision: str, sid: str, sealed: bool = False) -> str:
    """The submission's README.md, also its pull request's description."""
    p = Provenance(data["provenance"])
    dataset = p.dataset
    settings = [f"{p.mode} mode", "with distractors" if p.distractors else "without distractors",
                f"{p.index} index", str(p.precision)]
    settings += [f"queries after {p.cutoff}"] if p.cutoff else []
    settings += [f"subsets {', '.join(p.subsets or [])}"] if p.chosen_subsets else []
    alias = p.model.registered_as
    copy = f", a copy of the registered {alias}" if isinstance(alias, str) else ""
    rows = [("model", f"[{model}](https://huggingface.co/{model}) at revision `{revision}` (evaluated as "
                      f"{p.model.name}{copy})"),
            ("data", f"{dataset.name}: releases {', '.join(map(str, dataset.releases or []))}, "
                     f"data revision `{dataset.revision}`"),
            ("settings", ", ".join(settings)),
            ("zero-shot (claimed)", f"{p.zero_shot.word}: {p.zero_shot.reason}"),
            ("overall Fine Recall@1", "sealed release: scored by the leaderboard against its withheld labels" if sealed
             else _headline(data["overall"])),
            ("lookbench", f"{p.version}, evaluated {p.evaluated_at}"),
            ("submission id", f"`{sid}`")]
    return "\n".join([f"# LookBench submission: {model} at {revision}", "", "| | |", "|---|---|",
                      *(f"| {key} | {value} |" for key, value in rows), "",
                      f"`{RESULT_NAME}` holds every score, each query's outcome and the provenance; "
                      f"`{ResultFolder(Path('.')).ranking('<subset>')}` each query's ranked gallery rows, from which the "
                      "leaderboard re-scores the submission: `lookbench verify <this folder>` (docs/submitting.md).", ""])


def write(submission: Submission, out) -> Path:
    """The submission's files under ``out`` at their paths in the repo (``--dry-run``); its folder is replaced whole,
    under the folder's lock, so two runs never mix their files and a failed write leaves the old one."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a folder")
    target = out / submission.folder
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.parent.resolve().is_relative_to(out.resolve()):
        raise ValueError(f"{target.parent} leads outside {out} (a symbolic link on the way); nothing is written")
    with folder_lock(target):
        staged = new_sibling(target, "writing", folder=True)
        try:
            for name, content in submission.files.items():
                file = staged / Path(name).relative_to(submission.folder)
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_bytes(content)
            replace_folder(staged, target)
        finally:
            shutil.rmtree(staged, ignore_errors=True)
    return target


def open_pull_request(submission: Submission, repo: str = DEFAULT_REPO) -> str:
    """Open the pull request adding ``submission`` to the dataset ``repo`` (or name the open one that adds it already);
    returns what to tell the user. A missing token, a refusal or an unreachable Hub is a one-line ValueError."""
    return pull_request(repo, "dataset", submission.files, submission.title, submission.description, submission.id)[0]


def eval_results(submission: Submission, source: str) -> str:
    """The submission's headline scores as the Hub's ``.eval_results/lookbench.yaml`` (``hub_results``), on the Hub
    dataset it names (else LookBench's), ``source`` its pull request; its notes say the row is pending on LookBench's
    board (or, sealed, scored there once judged)."""
    from lookbench.hub import DATASET_ID
    from lookbench.results import hub_results
    from lookbench.results.trust import PENDING

    result = json.loads(submission.files[f"{submission.folder}/{RESULT_NAME}"])
    named = Provenance.of(result).dataset.data
    dataset = named.partition("@")[0] if isinstance(named, str) and looks_like_hub_id(named) else DATASET_ID
    found = hub_results.entries(result, dataset, source, PENDING, "the submission")
    text = hub_results.to_yaml(found)
    hub_results.parse(text, hub_results.RESULTS_FILE)  # what the Hub reads, through huggingface_hub's parser
    return text


def open_model_pull_request(submission: Submission, model_repo: str, source: str) -> str:
    """Open the pull request adding the submission's ``.eval_results`` to the model's own repo (the Hub shows it with
    the ``community`` badge while open), or name the open one that adds it; what to tell the user."""
    from lookbench.results.hub_results import RESULTS_FILE

    model_repo = check_hub_id(model_repo, "--model-repo")
    files = {RESULTS_FILE: eval_results(submission, source).encode()}
    title = f"LookBench scores of {submission.title.split(': ', 1)[0]} [{MARK} {submission.id[:16]}]"
    description = (f"Adds `{RESULTS_FILE}`: this model's LookBench scores as the Hub's evaluation results (shown on "
                   f"the model page and on the benchmark's leaderboard). They come from the submission {source}, which "
                   "LookBench's leaderboard re-scores from its rankings (docs/submitting.md).")
    return pull_request(model_repo, "model", files, title, description, submission.id)[0]


def pull_request(repo: str, repo_type: str, files: dict[str, bytes], title: str, description: str,
                  sid: str) -> tuple[str, str | None]:
    """Open a pull request adding ``files`` to ``repo`` unless an open one carries the submission's mark; (what to tell
    the user, the pull request's URL)."""
    from huggingface_hub import CommitOperationAdd, HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    token = get_token()
    if token is None:
        raise ValueError("not logged in to the Hugging Face Hub: run `hf auth login` or set HF_TOKEN, then submit again "
                         "(or write the files with --dry-run --out DIR)")
    api = HfApi(token=token)
    mark = f"[{MARK} {sid[:16]}]"
    try:
        for pull in api.get_repo_discussions(repo, repo_type=repo_type, discussion_type="pull_request"):
            if mark in pull.title and pull.status != "closed":
                return (f"already submitted: pull request #{pull.num} on {repo} ({pull.status}, {pull.url}); "
                        "nothing sent", pull.url)
        info = api.create_commit(repo, [CommitOperationAdd(name, content) for name, content in files.items()],
                                 commit_message=title, commit_description=description, repo_type=repo_type,
                                 create_pr=True)
    except (HfHubHTTPError, *transport_errors()) as err:
        raise ValueError(f"cannot open the pull request on {repo}: {error_line(err)}") from None
    return f"opened pull request #{info.pr_num} on {repo}: {info.pr_url}", info.pr_url
