"""`lookbench reproduce-submission` (issue 45 item 2) and the trust it gives a row (item 3): a registered model (a tiny
DINOv2 in the test's Hub cache at the entry's pinned commit) submitted honestly is re-run at that commit and shows
`reproduced`; rankings made from the labels (the `category-text` oracle) submitted as that model are `consistent` and
refused naming the agreement figures; edited rankings are not reproduced; the board recomputes every record itself and
honours one only for the submission's current key; `--job` starts the same command as a Hugging Face Job on the
loopback fake."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.fake_jobs_hub import USER, FakeJobsHub
from tests.helpers.hub_cache import cache_family, put_snapshot, tiny_dinov2, with_processor
from tests.helpers.staged_hub import TOKEN, run_cli
from tests.helpers.submissions import files, lookbench, submission_folder

SUBSETS = ["AIGen-Studio", "RealStudioFlat"]
ORACLE_MODEL = "someone/labels-model"
ORACLE_COMMIT = "c0ffee" + "0" * 34


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A Hub cache holding dinov2-vitl's tiny stand-in at its pinned commit and the model the oracle's submitter
    names; the pinned commit."""
    from huggingface_hub import constants

    root = tmp_path_factory.mktemp("hub")
    commit = cache_family(root / "cache", "dinov2-vitl", root / "work")
    put_snapshot(root / "cache", ORACLE_MODEL, ORACLE_COMMIT, with_processor(tiny_dinov2(root / "work" / "named"), 56))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_CACHE", str(root / "cache"))  # the commands run in fresh processes
        patch.setattr(constants, "HF_HUB_CACHE", str(root / "cache"))
        yield commit


def _evaluated(model: str, out: Path) -> Path:
    import lookbench as lb

    lb.evaluate(model, subsets=SUBSETS, distractors=False, output_dir=out, save_predictions=True, quiet=True)
    return out / "results.json"


@pytest.fixture(scope="module")
def repo(hub, tmp_path_factory):
    """A results repo with the honest submission of dinov2-vitl and the oracle's rankings submitted as
    someone/labels-model, each reproduced (--dry-run --out into the same repo); the two commands' outputs."""
    root = tmp_path_factory.mktemp("results") / "repo"
    honest = _evaluated("dinov2-vitl", tmp_path_factory.mktemp("honest") / "out")
    oracle = _evaluated("category-text", tmp_path_factory.mktemp("oracle") / "out")
    for result, model_id in ((honest, []), (oracle, ["--model-id", f"{ORACLE_MODEL}@{ORACLE_COMMIT}"])):
        proc = lookbench("submit", result, "--dry-run", "--out", root, "--allow-synthetic", *model_id, cwd=root.parent)
        assert proc.returncode == 0, proc.stderr
    runs = {}
    for name, owner in (("honest", "facebook"), ("oracle", "someone")):
        runs[name] = lookbench("reproduce-submission", submission_folder(root / "submissions" / owner), "--dry-run",
                               "--out", root, cwd=root.parent)
    return root, runs


def _record(root: Path, owner: str) -> Path:
    (found,) = (root / "reproductions" / owner).rglob("reproduction.json")
    return found.parent


def _trust(root: Path) -> dict[str, str]:
    from lookbench.leaderboard.load import load_store

    entries, skipped = load_store(root / "submissions")
    assert skipped == []
    return {e.model.split("@")[0]: e.verified for e in entries}


@pytest.mark.slow
def test_an_honest_registered_model_submission_is_reproduced_and_its_record_is_bound_to_its_key(hub, repo):
    from lookbench.results.folder import snapshot

    root, runs = repo
    proc = runs["honest"]
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^reproduced: top-1 agreement 100\.00% of \d+ queries \(needs 98%\), top-10 overlap 100\.00%, "
                     r"(\d+) of \1 claimed scores inside the re-run's 95% interval$", proc.stdout, re.M), proc.stdout
    submission = submission_folder(root / "submissions" / "facebook")
    record = _record(root, "facebook")
    assert record.relative_to(root / "reproductions") == submission.relative_to(root / "submissions") / "cpu-fp32"
    assert files(record) == ["README.md", "reproduction.json", "rerun/results.json",
                             *(f"rerun/results.predictions/{s}.parquet" for s in SUBSETS)]
    made = json.loads((record / "reproduction.json").read_text())
    assert made["submission_key"] == snapshot(submission)[0]
    assert made["model"] == {**made["model"], "id": "facebook/dinov2-large", "commit": hub, "loaded_as": "dinov2-vitl"}
    assert (made["device"], made["precision"], made["reproduced"]) == ("cpu", "fp32", True)
    assert made["versions"]["torch"] and made["versions"]["transformers"] and made["versions"]["lookbench"]
    assert made["agreement"]["overall"]["top1"] == 100.0 and made["agreement"]["overall"]["top10"] == 100.0
    rerun = json.loads((record / "rerun" / "results.json").read_text())
    assert rerun["provenance"]["model"]["revision"] == hub
    assert rerun["provenance"]["counts"]["cache_hits"] == 0  # the model ran: no stored embedding was read


@pytest.mark.slow
def test_an_oracle_submission_is_consistent_never_reproduced_and_refused_naming_the_figures(repo):
    root, runs = repo
    proc = runs["oracle"]
    assert proc.returncode == 1, proc.stderr
    (line,) = [l for l in proc.stdout.splitlines() if l.startswith("not reproduced: ")]
    top1 = float(re.match(r"not reproduced: top-1 agreement ([\d.]+)% of \d+ queries \(needs 98%\), top-10 overlap "
                          r"[\d.]+%, \d+ of \d+ claimed scores inside the re-run's 95% interval", line)[1])
    assert top1 < 98
    assert re.search(r"^- top-1 agreement [\d.]+% \(\d+ of \d+ queries\) is below 98%$", proc.stdout, re.M)
    assert "outside the re-run's 95% interval" in proc.stdout  # the labels score far above the model
    made = json.loads((_record(root, "someone") / "reproduction.json").read_text())
    assert made["reproduced"] is False and made["agreement"]["overall"]["top1"] == pytest.approx(top1, abs=0.01)
    trust = _trust(root)
    assert trust == {"facebook/dinov2-large": "reproduced", ORACLE_MODEL: "consistent"}


@pytest.mark.slow
def test_the_board_recomputes_a_record_and_never_takes_its_typed_figures(repo, tmp_path):
    """A record copied onto the oracle's submission, bound to its key and claiming 100% agreement, is judged again from
    both rankings: the oracle stays consistent. The honest row's record stops counting once its files change."""
    from lookbench.results.folder import snapshot

    root = tmp_path / "repo"
    shutil.copytree(repo[0], root)
    oracle = submission_folder(root / "submissions" / "someone")
    forged = _record(root, "someone").parent / "forged"
    shutil.copytree(_record(root, "facebook"), forged)
    made = json.loads((forged / "reproduction.json").read_text())
    made["submission_key"] = snapshot(oracle)[0]
    (forged / "reproduction.json").write_text(json.dumps(made))
    assert made["reproduced"] is True and made["agreement"]["overall"]["top1"] == 100.0
    honest = submission_folder(root / "submissions" / "facebook")
    with open(honest / "README.md", "a") as readme:  # still consistent, but no longer the files the record re-ran
        readme.write("\nedited after the reproduction\n")
    assert _trust(root) == {"facebook/dinov2-large": "consistent", ORACLE_MODEL: "consistent"}


@pytest.mark.slow
def test_a_record_of_more_files_than_are_hashed_never_counts(repo, tmp_path):
    """A check is kept by the digest of every file of its record: a record padded past MAX_RECORD_FILES (names that
    sort before its own files) has bytes no digest would cover, so it is not read at all."""
    from lookbench.submissions.reproduction import MAX_RECORD_FILES

    root = tmp_path / "repo"
    shutil.copytree(repo[0], root)
    assert _trust(root)["facebook/dinov2-large"] == "reproduced"
    for i in range(MAX_RECORD_FILES):
        (_record(root, "facebook") / f"a{i:02d}").write_text("padding")
    assert _trust(root)["facebook/dinov2-large"] == "consistent"


@pytest.mark.slow
def test_edited_rankings_are_not_reproduced_naming_the_figures(hub, repo, tmp_path):
    """The honest submission with every query's first two items swapped in one subset (its claims left as they were):
    the board says no, and the re-run refuses it naming the agreement."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "repo"
    shutil.copytree(repo[0] / "submissions" / "facebook", root / "submissions" / "facebook")
    folder = submission_folder(root)
    path = folder / "results.predictions" / "RealStudioFlat.parquet"
    table = pq.read_table(path)
    rank = table["rank"].to_numpy()
    pq.write_table(table.set_column(table.schema.get_field_index("rank"), "rank",
                                    pa.array(np.where(rank == 1, 2, np.where(rank == 2, 1, rank)))), path)
    proc = lookbench("reproduce-submission", folder, "--dry-run", "--out", root, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"^RealStudioFlat +\d+ +0\.00% +100\.00%$", proc.stdout, re.M), proc.stdout
    assert re.search(r"^AIGen-Studio +\d+ +100\.00% +100\.00%$", proc.stdout, re.M), proc.stdout
    assert re.search(r"^not reproduced: top-1 agreement [\d.]+% of \d+ queries \(needs 98%\)", proc.stdout, re.M)
    (trust,) = _trust(root).values()
    assert trust.startswith("no: RealStudioFlat")


@pytest.mark.slow
def test_the_trusted_filter_keeps_reproduced_rows_with_their_full_table_rank(repo, tmp_path):
    root, _ = repo
    proc = lookbench("leaderboard", "--results", root, "--reference", "none", "--trusted", "--format", "json",
                     cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [row for section in json.loads(proc.stdout) for row in section["rows"]]
    assert [(r["model"].split("@")[0], r["verified"]) for r in rows] == [("facebook/dinov2-large", "reproduced")]
    full = lookbench("leaderboard", "--results", root, "--reference", "none", "--format", "json", cwd=tmp_path)
    ranks = {r["model"]: r["rank"] for s in json.loads(full.stdout) for r in s["rows"]}
    assert rows[0]["rank"] == ranks[rows[0]["model"]] and len(ranks) == 2
    table = lookbench("leaderboard", "--results", root, "--reference", "none", cwd=tmp_path).stdout
    for value in ("reproduced", "scored (sealed)", "consistent", "pending", "not checked", "no: <reason>"):
        assert f"\n- {value}: " in table  # the legend under the table, one line each


# ------------------------------------------------------------------------------------------ as a Hugging Face Job

@pytest.mark.slow
def test_job_starts_the_same_command_on_the_hub_with_the_token_as_a_secret(repo, tmp_path):
    from lookbench._version import __version__

    root, _ = repo
    path = submission_folder(root / "submissions" / "facebook").relative_to(root).as_posix()
    with FakeJobsHub() as hub:
        proc = run_cli("reproduce-submission", path, "--job", "a10g-small", "--repo", "someone/results",
                       "--precision", "bf16", endpoint=hub.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (job,) = hub.jobs
    spec = job["spec"]
    assert job["namespace"] == USER and job["authorization"] == f"Bearer {TOKEN}"
    assert spec["flavor"] == "a10g-small" and spec["dockerImage"] == "python:3.12"
    assert spec["secrets"] == {"HF_TOKEN": TOKEN} and TOKEN not in json.dumps(spec["command"] + [spec["environment"]])
    assert spec["command"][:2] == ["bash", "-c"]
    steps = spec["command"][2].split(" && ")
    assert steps == [f"pip install --quiet lookbench=={__version__}",
                     f"hf download someone/results --repo-type dataset --include '{path}/*' --local-dir /tmp/results",
                     f"lookbench reproduce-submission /tmp/results/{path} --device cuda --repo someone/results "
                     "--precision bf16"]
    assert f"started job job1 on a10g-small: {hub.url}/jobs/{USER}/job1" in proc.stdout


@pytest.mark.parametrize("argv, token, message", [
    (["/etc/passwd"], TOKEN, "with --job, PATH is a submission's folder in the results repo"),
    (["submissions/a/b/c/../e"], TOKEN, "with --job, PATH is a submission's folder in the results repo"),
    (["submissions/a/b/c/d/e"], None, "not logged in to the Hugging Face Hub"),
    (["submissions/a/b/c/d/e", "--dry-run", "--out", "x"], TOKEN, "--job runs on the Hub"),
])
def test_a_job_that_cannot_start_is_one_line_and_sends_nothing(argv, token, message, tmp_path):
    with FakeJobsHub() as hub:
        proc = run_cli("reproduce-submission", *argv, "--job", "a10g-small", endpoint=hub.url, token=token,
                       cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"lookbench reproduce-submission: error: {message}")
    assert hub.jobs == [] and hub.requests == []


def test_a_job_the_hub_refuses_is_one_line_naming_the_flavor(tmp_path):
    with FakeJobsHub(refuse=403) as hub:
        proc = run_cli("reproduce-submission", "submissions/a/b/c/d/e", "--job", "h100", endpoint=hub.url,
                       token=TOKEN, cwd=tmp_path)
    last = proc.stderr.splitlines()[-1]  # above it, huggingface_hub's debug log of the request
    assert proc.returncode == 2 and last.startswith("lookbench reproduce-submission: error: cannot start the job "
                                                     "(h100): the token may not write there (403)"), proc.stderr
    assert "Traceback" not in proc.stderr and hub.jobs == []


@pytest.mark.slow
def test_the_board_shows_the_reproduced_and_the_consistent_row_truthfully(repo, tmp_path):
    """The leaderboard Space over the repo, each submission judged in its child process as the Hub runs it: the honest
    row reproduced, the oracle's consistent, in the rows, the submissions table, the status line and the filter."""
    from lookbench.space.board.app import Board
    from lookbench.space.board.repo import Verdicts
    from tests.helpers.board import judged

    board = Board(folder=repo[0], verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=frozenset())
    board.refresh()
    status = judged(board)
    assert status.endswith("2 submission(s) — verified: 1 reproduced, 1 consistent.")
    answer = board.api_board("fine", 1, "overall")
    rows = {r["model"].split("@")[0]: r for s in answer["sections"] for r in s["rows"]}
    assert rows["facebook/dinov2-large"]["verified"] == "reproduced" and rows["facebook/dinov2-large"]["rank"]
    assert rows[ORACLE_MODEL]["verified"] == "consistent"
    assert sorted((s["model"].split("@")[0], s["verified"]) for s in answer["submissions"]) == [
        ("facebook/dinov2-large", "reproduced"), (ORACLE_MODEL, "consistent")]
    trusted = board.api_board("fine", 1, "overall", trusted=True)
    assert [(r["model"].split("@")[0], r["verified"], r["rank"]) for s in trusted["sections"] for r in s["rows"]] == [
        ("facebook/dinov2-large", "reproduced", rows["facebook/dinov2-large"]["rank"])]
