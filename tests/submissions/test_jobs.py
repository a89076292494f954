"""`lookbench reproduce-submission --job` (issue 45 item 2, issue 53 item 4): the re-run as a Hugging Face Job on the
loopback fake, whose submitted model code runs in a process that holds no token — the job downloads the submission,
the model and the data with the token first, then replaces itself by the re-run in an environment without one — and
whose re-run comes back through the job's log to be compared and signed on the maintainer's machine."""
from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers.fake_jobs_hub import USER, FakeJobsHub
from tests.helpers.hub_cache import put_snapshot
from tests.helpers.signing import new_signer
from tests.helpers.spy_model import SPY_VARIABLE, spy_model
from tests.helpers.staged_hub import TOKEN, run_cli
from tests.helpers.submissions import files, lookbench, submission_folder

SPY = "someone/spy-model"
SPY_COMMIT = "5b1e" + "0" * 36
RESULTS = "someone/results"
RESULTS_COMMIT = "4e5" + "0" * 37


@pytest.fixture(scope="module")
def spy(tmp_path_factory):
    """A submission of the spy model (it runs its own code) on two Mini subsets, as `submit --dry-run` writes it: the
    dry run's root, the submission's path in the results repo, and the model's repo folder."""
    import lookbench as lb
    from huggingface_hub import constants

    root = tmp_path_factory.mktemp("spy")
    model = spy_model(root / "model")
    put_snapshot(root / "cache", SPY, SPY_COMMIT, model)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_CACHE", str(root / "cache"))
        patch.setattr(constants, "HF_HUB_CACHE", str(root / "cache"))
        lb.evaluate(f"{SPY}@{SPY_COMMIT}", subsets=["AIGen-Studio", "RealStudioFlat"], distractors=False,
                    output_dir=root / "out", save_predictions=True, quiet=True, trust_remote_code=True)
    proc = lookbench("submit", root / "out" / "results.json", "--dry-run", "--out", root / "repo", "--allow-synthetic",
                     cwd=root)
    assert proc.returncode == 0, proc.stderr
    path = submission_folder(root / "repo").relative_to(root / "repo").as_posix()
    return root / "repo", path, model


def _job(path: str, *options: str, cwd: Path) -> tuple[FakeJobsHub, subprocess.CompletedProcess]:
    with FakeJobsHub() as hub:
        proc = run_cli("reproduce-submission", path, "--job", "a10g-small", "--repo", RESULTS, *options,
                       endpoint=hub.url, token=TOKEN, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return hub, proc


@pytest.mark.slow
def test_job_starts_the_re_run_on_the_hub_with_the_token_as_a_secret(spy, tmp_path):
    from lookbench._version import __version__

    _, path, _ = spy
    hub, proc = _job(path, "--precision", "bf16", cwd=tmp_path)
    (job,) = hub.jobs
    spec = job["spec"]
    assert job["namespace"] == USER and job["authorization"] == f"Bearer {TOKEN}"
    assert spec["flavor"] == "a10g-small" and spec["dockerImage"] == "python:3.12"
    assert spec["secrets"] == {"HF_TOKEN": TOKEN} and TOKEN not in json.dumps(spec["command"] + [spec["environment"]])
    assert spec["command"][:2] == ["bash", "-c"]
    steps = spec["command"][2].split(" && ")
    assert steps == [f"pip install --quiet lookbench=={__version__}",
                     f"hf download {RESULTS} --repo-type dataset --include '{path}/*' --local-dir /tmp/results",
                     f"exec lookbench reproduce-submission /tmp/results/{path} --device cuda --in-job --precision bf16"]
    assert f"started job job1 on a10g-small: {hub.url}/jobs/{USER}/job1" in proc.stdout
    assert f"--rerun-from rerun.log --sign KEY --repo {RESULTS}" in proc.stdout  # how the record is made, here


@pytest.mark.parametrize("argv, token, message", [
    (["/etc/passwd"], TOKEN, "with --job, PATH is a submission's folder in the results repo"),
    (["submissions/a/b/c/../e"], TOKEN, "with --job, PATH is a submission's folder in the results repo"),
    (["submissions/a/b/c/d/e"], None, "not logged in to the Hugging Face Hub"),
    (["submissions/a/b/c/d/e", "--dry-run", "--out", "x"], TOKEN, "--job runs on the Hub"),
    (["submissions/a/b/c/d/e", "--sign", "key.pem"], TOKEN, "--job runs on the Hub"),
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


def _run_job_here(command: str, hub: FakeJobsHub, work: Path) -> subprocess.CompletedProcess:
    """The job's command as the Hub's container would run it — past its `pip install` (this release is installed
    here), on the CPU, in ``work`` instead of /tmp — with the token as its secret, against the fake Hub, an empty Hub
    cache and the spy's file."""
    steps = command.split(" && ")[1:]
    script = " && ".join(steps).replace("/tmp/results", str(work / "results")).replace("--device cuda", "--device cpu")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
                                                             "PYTHONPATH")}
    env.update(HF_ENDPOINT=hub.url, HF_TOKEN=TOKEN, HF_HUB_DISABLE_XET="1", HF_HUB_CACHE=str(work / "job-cache"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               **{SPY_VARIABLE: str(work / "spy.jsonl")})
    return subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_job_runs_the_submitted_code_with_no_token_and_the_record_is_made_and_signed_here(spy, tmp_path):
    """The job on this machine against the loopback fake: the submission and the model come down with the token; the
    model's own code, run next, finds no token anywhere it looks (environment, get_token, its own and its parent's
    /proc environ, the token files); its re-run, read from the job's log, reproduces, signed here."""
    from lookbench.leaderboard.load import load_store

    repo, path, model = spy
    (job,) = _job(path, "--trust-remote-code", cwd=tmp_path)[0].jobs
    work = tmp_path / "job"
    work.mkdir()
    with FakeJobsHub() as hub:
        served = {p: (repo / p).read_bytes() for p in (f"{path}/{f}" for f in files(repo / path))}
        hub.contents[f"dataset/{RESULTS}"] = served  # the results repo at main (repo_info), then its files
        hub.commit_log.append({"repo": f"dataset/{RESULTS}", "oid": RESULTS_COMMIT})
        hub.served[f"dataset/{RESULTS}"] = {"revision": RESULTS_COMMIT, "files": served}
        hub.served[f"model/{SPY}"] = {"revision": SPY_COMMIT, "files": {f: (model / f).read_bytes() for f in files(model)}}
        ran = _run_job_here(job["spec"]["command"][2], hub, work)
    assert ran.returncode == 0, ran.stderr[-3000:]
    downloads = [r for r in hub.requests if any(part in r["path"] for part in ("/resolve/", "/tree/", "/revision/"))]
    assert any(f"/{SPY}/" in r["path"] for r in downloads) and any(f"/{RESULTS}/" in r["path"] for r in downloads)
    assert all(r["authorization"] == f"Bearer {TOKEN}" for r in downloads)  # every download carried the token

    (seen,) = [json.loads(line) for line in (work / "spy.jsonl").read_text().splitlines()]  # the model ran once
    assert TOKEN not in json.dumps(seen) and seen["get_token"] is None
    assert sorted(k for k in seen["environ"] if "TOKEN" in k.upper()) == [
        "HF_HUB_DISABLE_IMPLICIT_TOKEN", "HF_STORED_TOKENS_PATH", "HF_TOKEN_PATH"]
    assert seen["environ"]["HF_TOKEN_PATH"] == os.devnull and seen["environ"]["HF_HUB_DISABLE_IMPLICIT_TOKEN"] == "1"
    assert seen["environ"]["HF_HUB_OFFLINE"] == "1" and seen["token_file"] == ""

    log = tmp_path / "rerun.log"
    log.write_text("".join(f"2026-12-06T19:00:00Z {line}\n" for line in ran.stdout.splitlines()))  # as `hf jobs logs`
    signer = new_signer(tmp_path / "maintainer")
    made = lookbench("reproduce-submission", repo / path, "--rerun-from", log, "--sign", signer.pem, "--dry-run",
                     "--out", repo, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[-3].startswith("reproduced: top-1 agreement 100.00%"), made.stdout
    assert f"signed with the ed25519 key {signer.public} " in made.stdout
    (entry,), skipped = load_store(repo / "submissions", keys=signer.keys)
    assert (entry.verified, skipped) == ("reproduced", [])


@pytest.mark.parametrize("log, message", [
    ("no block here\n", "holds no complete re-run"),
    ("-----BEGIN LOOKBENCH RERUN-----\nnot base64!\n-----END LOOKBENCH RERUN-----\n", "its re-run block is damaged"),
    ("-----BEGIN LOOKBENCH RERUN-----\nUEsFBgAAAAAAAAAAAAAAAAAAAAAAAA==\n", "holds no complete re-run"),
])
def test_a_log_without_a_whole_re_run_is_one_line(log, message, tmp_path):
    from lookbench.submissions.jobs import read_rerun

    (tmp_path / "job.log").write_text(log)
    with pytest.raises(ValueError, match=message):
        read_rerun(tmp_path / "job.log", tmp_path / "out")


@pytest.mark.parametrize("name", ["../escaped.json", "results.predictions/../../x.parquet", "other.json",
                                  "results.predictions/Nope.parquet"])
def test_a_re_run_block_holding_other_files_writes_nothing(name, tmp_path):
    """The log is the submitted code's output: a block with any file but a results.json and its rankings is refused
    whole, before a byte is written."""
    from lookbench.submissions.jobs import read_rerun, rerun_block

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text("{}")
    block = rerun_block(tmp_path / "run", ["results.json"])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results.json", "{}")
        archive.writestr(name, "x")
    forged = "\n".join(["-----BEGIN LOOKBENCH RERUN-----", base64.b64encode(buffer.getvalue()).decode(),
                        "-----END LOOKBENCH RERUN-----"])
    (tmp_path / "job.log").write_text(block + "\n" + forged + "\n")  # the last block counts
    with pytest.raises(ValueError, match="holds other files than a results.json and its rankings"):
        read_rerun(tmp_path / "job.log", tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "escaped.json").exists()


def test_a_bad_signing_key_is_refused_in_one_line_before_anything_runs(tmp_path):
    (tmp_path / "key.pem").write_text("not a key")
    proc = run_cli("reproduce-submission", "nowhere", "--sign", tmp_path / "key.pem", "--dry-run", "--out",
                   tmp_path / "out", endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"lookbench reproduce-submission: error: --sign {tmp_path / 'key.pem'} is not an "
                                  "unencrypted PEM private key")
