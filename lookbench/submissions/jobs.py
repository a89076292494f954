"""``lookbench reproduce-submission --job FLAVOR``: the same command run as a Hugging Face Job (``huggingface_hub``'s
``run_job``), for models too big for the machine at hand (docs/submitting.md, "Reproducing a submission").

The job installs this very lookbench release from the package index, downloads the submission's folder of the results
repo with ``hf download`` (real files, as the leaderboard reads them), and runs ``lookbench reproduce-submission`` on
it with ``--device cuda``; the token (huggingface_hub's own) travels as a job secret, never in the command, so the job
can open the record's pull request.
"""
from __future__ import annotations

import shlex
from pathlib import PurePosixPath

from lookbench.hub import error_line, printable_name, shown, transport_errors
from lookbench.submissions.submit import ROOT

IMAGE = "python:3.12"  # torch's wheels from the package index carry the CUDA runtime; the job's GPU gives the driver
WORK = "/tmp/results"  # where the job downloads the submission
SUBMISSION_PARTS = 6  # submissions/<owner>/<name>/<commit>/<data>/<settings>


def repo_path(path: str) -> str:
    """``path`` if it names a submission folder of the results repo (``submissions/<owner>/<name>/<commit>/<data>/
    <settings>``, every part printable, none ``.`` or ``..``): the job downloads exactly that folder."""
    parts = PurePosixPath(path).parts
    if (len(parts) != SUBMISSION_PARTS or parts[0] != ROOT or PurePosixPath(path).is_absolute()
            or any(p in (".", "..") for p in parts)):
        raise ValueError(f"with --job, PATH is a submission's folder in the results repo ({ROOT}/<owner>/<name>/"
                         f"<commit>/<data>/<settings>), not {shown(path)}")
    for part in parts:
        printable_name(part, "PATH's part")
    return "/".join(parts)


def command(path: str, repo: str, precision: str | None = None, trust_remote_code: bool = False) -> list[str]:
    """What the job runs: install this release, download the submission, reproduce it on the GPU."""
    from lookbench._version import __version__

    reproduce = ["lookbench", "reproduce-submission", f"{WORK}/{path}", "--device", "cuda", "--repo", repo]
    reproduce += ["--precision", precision] if precision else []
    reproduce += ["--trust-remote-code"] if trust_remote_code else []
    steps = [["pip", "install", "--quiet", f"lookbench=={__version__}"],
             ["hf", "download", repo, "--repo-type", "dataset", "--include", f"{path}/*", "--local-dir", WORK],
             reproduce]
    return ["bash", "-c", " && ".join(shlex.join(step) for step in steps)]


def submit_job(path: str, flavor: str, repo: str, precision: str | None = None,
               trust_remote_code: bool = False) -> str:
    """Start the job; returns what to tell the user (its id, address and how to follow it). No token, a refusal or
    an unreachable Hub is a one-line ValueError."""
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    path = repo_path(path)
    token = get_token()
    if token is None:
        raise ValueError("not logged in to the Hugging Face Hub: run `hf auth login` or set HF_TOKEN (a job runs on your "
                         "account and opens the record's pull request with your token)")
    try:
        job = HfApi(token=token).run_job(image=IMAGE, command=command(path, repo, precision, trust_remote_code),
                                         flavor=flavor, secrets={"HF_TOKEN": token},
                                         labels={"lookbench": "reproduce-submission"})
    except (HfHubHTTPError, *transport_errors()) as err:
        raise ValueError(f"cannot start the job ({flavor}): {error_line(err)}") from None
    return (f"started job {job.id} on {flavor}: {job.url} (follow it with `hf jobs logs {job.id}`); it opens the "
            f"reproduction record's pull request on {repo}")
