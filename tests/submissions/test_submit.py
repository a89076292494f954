"""`lookbench submit` (issue 36 item 1): a result and its rankings become a submission folder of the results repo,
written by --dry-run or sent as a pull request to the loopback fake Hub; the same submission is never sent twice, and
every refusal is one line made before any request."""
from __future__ import annotations

import hashlib
import json
import re
import shutil

import pyarrow.parquet as pq
import pytest

from tests.helpers.fake_results_hub import FakeResultsHub
from tests.helpers.staged_hub import TOKEN, run_cli
from tests.helpers.submissions import MODEL_ID, files, submission_folder

SUBSETS = ("AIGen-StreetLook", "AIGen-Studio", "RealStreetLook", "RealStudioFlat")
REVISION = MODEL_ID.split("@")[1]


def test_dry_run_writes_the_result_its_rankings_and_a_description_at_the_submission_path(honest, dry_run):
    folder = submission_folder(dry_run)
    assert re.fullmatch(rf"submissions/lookbench/gr-lite-mini/{REVISION}/mini-v20240601\+mini-v20250101\+mini-v20251201"
                        r"-local-[0-9a-f]{16}/strict", folder.relative_to(dry_run).as_posix())
    assert files(dry_run) == [f"{folder.relative_to(dry_run).as_posix()}/{name}" for name in
                              ["README.md", "results.json", *(f"results.predictions/{s}.parquet" for s in SUBSETS)]]
    for subset in SUBSETS:  # the rankings as the store keeps them, byte for byte
        name = f"results.predictions/{subset}.parquet"
        assert (folder / name).read_bytes() == (honest.parent / name).read_bytes()
    original, submitted = json.loads(honest.read_text()), json.loads((folder / "results.json").read_text())
    assert submitted["provenance"].pop("submission") == {"model": "lookbench/gr-lite-mini", "revision": REVISION}
    assert submitted == original
    readme = (folder / "README.md").read_text()
    overall, (lo, hi) = original["overall"]["fine_recall"]["@1"], original["overall"]["ci95"]["fine_recall"]["@1"]
    for fact in ("lookbench/gr-lite-mini", REVISION, "LookBench-Mini (synthetic)", "mini-v20251201", "strict",
                 f"{overall:.1f} [{lo:.1f}, {hi:.1f}] (95% interval", original["provenance"]["dataset"]["revision"]):
        assert fact in readme


def test_submit_opens_a_pull_request_adding_exactly_the_dry_runs_files(honest, dry_run, tmp_path):
    with FakeResultsHub() as hub:
        proc = run_cli("submit", str(honest), "--repo", "someone/results", "--allow-synthetic", "--model-id", MODEL_ID,
                       endpoint=hub.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (commit,) = hub.commit_log
    assert commit["repo"] == "dataset/someone/results"
    assert commit["paths"] == files(dry_run)
    assert commit["sha256"] == {p: hashlib.sha256((dry_run / p).read_bytes()).hexdigest() for p in files(dry_run)}
    (pull,) = hub.pulls
    assert pull["status"] == "open" and "lookbench/gr-lite-mini" in pull["title"]
    assert pull["title"].startswith(f"{MODEL_ID[:len('lookbench/gr-lite-mini@') + 12]}: strict on LookBench-Mini")
    assert pull["description"] == (submission_folder(dry_run) / "README.md").read_text()
    assert f"opened pull request #1 on someone/results: {hub.url}/datasets/someone/results/discussions/1" in proc.stdout
    assert all(r["authorization"] == f"Bearer {TOKEN}" for r in hub.requests)


@pytest.mark.slow
def test_the_same_submission_twice_sends_no_second_commit_and_names_the_pull_request(honest, tmp_path):
    argv = ("submit", str(honest), "--repo", "someone/results", "--allow-synthetic", "--model-id", MODEL_ID)
    with FakeResultsHub() as hub:
        first = run_cli(*argv, endpoint=hub.url, token=TOKEN, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        sent = len(hub.requests)
        again = run_cli(*argv, endpoint=hub.url, token=TOKEN, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "already submitted: pull request #1 on someone/results" in again.stdout
    assert len(hub.commit_log) == 1 and len(hub.pulls) == 1
    assert [r["method"] for r in hub.requests[sent:]] == ["GET"]  # only the look-up of open pull requests


def test_without_a_token_submit_is_one_line_saying_how_to_log_in_and_sends_nothing(honest, tmp_path):
    with FakeResultsHub() as hub:
        proc = run_cli("submit", str(honest), "--allow-synthetic", "--model-id", MODEL_ID, endpoint=hub.url, token=None,
                       cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("lookbench submit: error: not logged in")
    assert "hf auth login" in proc.stderr and "HF_TOKEN" in proc.stderr
    assert hub.requests == []


def _no_rankings(result):
    shutil.rmtree(result.parent / "results.predictions")


def _none_saved(result):
    data = json.loads(result.read_text())
    data["provenance"]["saved_predictions"] = []
    result.write_text(json.dumps(data))
    shutil.rmtree(result.parent / "results.predictions")


def _shallow(result):
    path = result.parent / "results.predictions" / "RealStudioFlat.parquet"
    table = pq.read_table(path)
    pq.write_table(table.filter(pq.read_table(path, columns=["rank"])["rank"].to_numpy() <= 10), path)


def _edited(result):
    data = json.loads(result.read_text())
    data["overall"]["fine_recall"]["@1"] = 250.0
    result.write_text(json.dumps(data))


def _drop(flag, value=False):
    """The argv without ``flag`` (and the value after it)."""
    return lambda argv: [a for i, a in enumerate(argv) if a != flag and not (value and argv[i - 1] == flag)]


@pytest.mark.parametrize("tamper, argv, message", [
    (_no_rankings, None, "has no saved rankings of AIGen-StreetLook (results.predictions/AIGen-StreetLook.parquet): "
                         "evaluate it with --save-predictions"),
    (_none_saved, None, "has no saved rankings of AIGen-StreetLook"),
    (_shallow, None, "the RealStudioFlat rankings are 10 deep at query 1, shallower than the deepest K the result "
                     "reports (20)"),
    (_edited, None, "damaged or edited: overall claimed fine_recall@1 250, outcomes give"),
    (None, _drop("--model-id", value=True), "the model gr-lite-mini is the local folder /"),
    (None, _drop("--allow-synthetic"), "the data is LookBench-Mini (synthetic), a synthetic stand-in"),
    (None, lambda argv: argv[:-1] + ["gr-lite-mini@main"], "--model-id 'gr-lite-mini' is not a Hub repo id owner/name"),
    (None, lambda argv: argv[:-1] + ["lookbench/gr-lite-mini"], "--model-id 'lookbench/gr-lite-mini' is not owner/name@commit"),
    (None, lambda argv: argv + ["--repo", "../results"], "--repo '../results' is not a Hub repo id owner/name"),
    # issue "Hostile users, round 4", item 6: names that cannot collide or deceive
    (None, lambda argv: argv[:-1] + [f"{MODEL_ID}\u202e"], "--model-id 'lookbench/gr-lite-mini@" + REVISION + "\\u202e' has a character that is not"),
    (None, lambda argv: argv[:-1] + [f"lookbench/gr-lite-mi\u0144i@{REVISION}"],
     "--model-id 'lookbench/gr-lite-mi\\u0144i@" + REVISION + "' has a character that is not printable ASCII"),
    (None, lambda argv: argv + ["--repo", "some\u043ene/results"], "--repo 'some\\u043ene/results' has a character that is not"),
    (None, lambda argv: argv[:-1] + ["lookbench/gr-lite-mini@main"],
     "--model-id lookbench/gr-lite-mini@'main': the revision must be the model's 40-hex commit sha, not a branch or tag "
     "(they move); find it with python -c \"from huggingface_hub import HfApi; print(HfApi().model_info("
     "'lookbench/gr-lite-mini', revision='main').sha)\" or in the Hub page's commit history"),
    (None, lambda argv: argv[:-1] + ["lookbench/gr-lite-mini@" + "a" * 5000], "(5023 characters) is longer than the"),
], ids=["no-rankings", "none-saved", "shallow", "edited", "local-model", "synthetic", "bad-model-id", "unpinned",
        "bad-repo", "rlo-revision", "non-ascii-id", "non-ascii-repo", "branch", "long-revision"])
def test_refusals_are_one_line_before_any_request(honest, tmp_path, tamper, argv, message):
    copy = tmp_path / "out"
    shutil.copytree(honest.parent, copy)
    if tamper:
        tamper(copy / "results.json")
    args = ["submit", str(copy), "--allow-synthetic", "--model-id", MODEL_ID]
    with FakeResultsHub() as hub:
        proc = run_cli(*(argv(args) if argv else args), endpoint=hub.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.isascii() and len(proc.stderr) < 600, proc.stderr[:600]
    assert hub.requests == []


def test_hub_ids_that_a_separator_escape_made_one_get_folders_of_their_own(honest):
    """`a__b/c` and `a/b__c` were both `a__b__c`: the second submission overwrote the first. The owner and name are
    two path segments as they are now, and huggingface_hub's validation keeps '/' out of either."""
    from lookbench.submissions.submit import prepare

    first, second = (prepare(honest, model_id=f"{model}@{REVISION}", allow_synthetic=True) for model in ("a__b/c", "a/b__c"))
    assert first.folder.startswith("submissions/a__b/c/") and second.folder.startswith("submissions/a/b__c/")
    assert first.folder != second.folder and first.id != second.id


@pytest.mark.slow
def test_a_dry_run_replaces_its_own_earlier_folder_whole(honest, tmp_path):
    """A second dry run into the same DIR leaves exactly the new submission's files, never a mix of two."""
    from tests.helpers.submissions import lookbench

    root = tmp_path / "dir"
    args = ("submit", honest, "--dry-run", "--out", root, "--allow-synthetic", "--model-id", MODEL_ID)
    assert lookbench(*args, cwd=tmp_path).returncode == 0
    folder = submission_folder(root)
    (folder / "results.predictions" / "stale.parquet").write_bytes(b"left by hand")
    proc = lookbench(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "stale.parquet" not in files(folder) and len(files(folder)) == 6


def test_a_result_folder_holding_reproductions_is_refused_in_one_line(honest, tmp_path):
    """Issue 53 item 3: a submission never carries a reproduction record (a maintainer signs one)."""
    copy = tmp_path / "out"
    shutil.copytree(honest.parent, copy)
    (copy / "reproductions" / "cpu-fp32").mkdir(parents=True)
    (copy / "reproductions" / "cpu-fp32" / "reproduction.json").write_text('{"reproduced": true}')
    with FakeResultsHub() as hub:
        proc = run_cli("submit", str(copy), "--allow-synthetic", "--model-id", MODEL_ID, endpoint=hub.url, token=TOKEN,
                       cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"lookbench submit: error: {copy} holds a reproductions/ folder: a submission never "
                                  "carries a reproduction record")
    assert hub.requests == []


def test_the_board_ignores_a_reproductions_folder_inside_a_submission_saying_why(dry_run, tmp_path):
    """A pull request that slips a record into a submission's own folder: never read as a record, one skipped line
    says why, and the submission, holding a second JSON, is no row at all."""
    from lookbench.leaderboard.load import load_store

    repo = tmp_path / "repo"
    shutil.copytree(dry_run, repo)
    folder = submission_folder(repo)
    (folder / "reproductions" / "cpu-fp32").mkdir(parents=True)
    (folder / "reproductions" / "cpu-fp32" / "reproduction.json").write_text('{"reproduced": true}')
    entries, skipped = load_store(repo / "submissions")
    assert entries == []  # its folder holds a second JSON: not a submission at all
    inside = folder.relative_to(repo / "submissions").as_posix()
    assert skipped == [f"{inside}/reproductions: not read: a reproduction record lies in the results repo's "
                       "reproductions/, signed by a maintainer, never in a submission",
                       f"{inside}/results.json: not a LookBench result ('reproductions/cpu-fp32/reproduction.json' is a "
                       "second JSON beside results.json: a submission holds exactly one result)"]
