"""``lookbench reproduce-submission --job FLAVOR``: the re-run as a Hugging Face Job (``huggingface_hub``'s
``run_job``), for models too big for the machine at hand (docs/submitting.md, "Reproducing a submission").

The submitted model's code is anyone's, and the caller's token (a maintainer's: read access to the private labels,
write access to the results repo) must never be next to it. So the job installs this very lookbench release,
downloads the submission's folder of the results repo with ``hf download`` (real files, as the leaderboard reads
them), and ends in ``lookbench reproduce-submission --in-job``, which downloads the model at its commit and the data
with the token (``prefetch``), then replaces itself (``exec``: no process holding the token is left) by the same
command in an environment without any token (``tokenless``), offline, which runs the model and prints the re-run
(results and rankings) into the job's log as one block (``rerun_block``). The comparison, the record and its
signature are made on the maintainer's machine from that log (``--rerun-from``, ``read_rerun``); the job opens no
pull request. The token travels as a job secret, never in the command.
"""
from __future__ import annotations

import base64
import io
import os
import shlex
import sys
import zipfile
from pathlib import Path, PurePosixPath

from lookbench.hub import error_line, printable_name, shown, transport_errors
from lookbench.submissions.submit import ROOT

IMAGE = "python:3.12"  # torch's wheels from the package index carry the CUDA runtime; the job's GPU gives the driver
WORK = "/tmp/results"  # where the job downloads the submission
SUBMISSION_PARTS = 6  # submissions/<owner>/<name>/<commit>/<data>/<settings>
DROPPED = "LOOKBENCH_JOB_RERUN"  # set in the tokenless environment: a token seen there is refused, never looped on
BEGIN, END = "-----BEGIN LOOKBENCH RERUN-----", "-----END LOOKBENCH RERUN-----"
MAX_RERUN_FILES = 8  # the re-run's results.json and a ranking per subset
MAX_BLOCK_CHARS = 256 * 1024 * 1024  # of the block's base64 in a log
LINE = 76  # characters of base64 per log line
_TOKEN_FILES = ("HF_TOKEN_PATH", "HF_STORED_TOKENS_PATH")  # pointed at an empty file in the tokenless environment
_SET = (*_TOKEN_FILES, "HF_HUB_DISABLE_IMPLICIT_TOKEN")  # the token-named variables the tokenless environment sets


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
    """What the job runs: install this release, download the submission, then (``exec``: bash, which holds the token,
    is replaced) download the model and data and re-run it on the GPU without the token (``in_job``)."""
    from lookbench._version import __version__

    reproduce = ["lookbench", "reproduce-submission", f"{WORK}/{path}", "--device", "cuda", "--in-job"]
    reproduce += ["--precision", precision] if precision else []
    reproduce += ["--trust-remote-code"] if trust_remote_code else []
    steps = [["pip", "install", "--quiet", f"lookbench=={__version__}"],
             ["hf", "download", repo, "--repo-type", "dataset", "--include", f"{path}/*", "--local-dir", WORK]]
    return ["bash", "-c", " && ".join([*(shlex.join(step) for step in steps), f"exec {shlex.join(reproduce)}"])]


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
                         "account, and downloads the model and data with your token before it drops it)")
    try:
        job = HfApi(token=token).run_job(image=IMAGE, command=command(path, repo, precision, trust_remote_code),
                                         flavor=flavor, secrets={"HF_TOKEN": token},
                                         labels={"lookbench": "reproduce-submission"})
    except (HfHubHTTPError, *transport_errors()) as err:
        raise ValueError(f"cannot start the job ({flavor}): {error_line(err)}") from None
    return (f"started job {job.id} on {flavor}: {job.url} (follow it with `hf jobs logs {job.id}`); once it ends, make "
            f"the record here: hf jobs logs {job.id} > rerun.log && hf download {repo} --repo-type dataset --include "
            f"'{path}/*' --local-dir results && lookbench reproduce-submission results/{path} --rerun-from rerun.log "
            f"--sign KEY --repo {repo}")


# ------------------------------------------------------------------------------------------ inside the job

def _token_names(environ) -> list[str]:
    """The variables of ``environ`` that may hold a token or say where one lies."""
    return [k for k in environ if "TOKEN" in k.upper() or "HUGGING_FACE_HUB" in k.upper()]


def tokenless(environ) -> dict:
    """``environ`` with no token left for the submitted model's code to find: every variable naming a token dropped
    (``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``, any ``*_TOKEN*``, the token files' paths), huggingface_hub's token files
    pointed at an empty one and implicit tokens off, and every Hub library offline (all it needs was downloaded)."""
    env = {k: v for k, v in environ.items() if k not in _token_names(environ)}
    env.update({name: os.devnull for name in _TOKEN_FILES})
    env.update(HF_HUB_DISABLE_IMPLICIT_TOKEN="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               HF_EVALUATE_OFFLINE="1", **{DROPPED: "1"})
    return env


def prefetch(submission) -> None:
    """Download, with the token, everything the re-run loads: the model's files at its pinned commit (a registered
    model's as its entry fetches them) and the data at its commit (the embedded LookBench-Mini is built, not
    downloaded). Nothing here imports or runs the submitted model's code."""
    from lookbench.encoders.base import resolve_model_folder
    from lookbench.encoders.convert import hub_snapshot
    from lookbench.encoders.registry import REGISTRY
    from lookbench.engine.data import resolve_data
    from lookbench.results.provenance import named_data
    from lookbench.submissions.reproduction import pinned_model

    loaded, hub_id, commit = pinned_model(submission.provenance)
    if loaded in REGISTRY:
        hub_snapshot(REGISTRY[loaded])
    else:
        resolve_model_folder(hub_id, commit)
    data = named_data(submission.provenance.dataset)
    if data is not None:
        resolve_data(data)


def in_job(path, argv: list[str]) -> None:
    """The job's last step: the first time, ``prefetch`` (with the token) and replace this process by the same command
    (``argv``) in the ``tokenless`` environment; there (``DROPPED``) return, so the caller re-runs the model — unless a
    token is still visible, which is refused."""
    from huggingface_hub import get_token

    from lookbench.results.folder import read_submitted

    if os.environ.get(DROPPED):
        if get_token() is not None or set(_token_names(os.environ)) - set(_SET):
            raise ValueError("a token is still visible after it was dropped: the submitted model is not run next to it")
        return
    prefetch(read_submitted(path))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "lookbench", *argv], tokenless(os.environ))


def rerun_block(work: Path, files: list[str]) -> str:
    """The re-run's ``files`` (relative to ``work``) as one block of the job's log: a zip, in base64 lines between
    ``BEGIN`` and ``END``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in files:
            archive.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), (work / name).read_bytes())
    text = base64.b64encode(buffer.getvalue()).decode()
    return "\n".join([BEGIN, *(text[i:i + LINE] for i in range(0, len(text), LINE)), END])


def read_rerun(log: Path, out: Path) -> dict:
    """The re-run a job printed into its ``log`` (``hf jobs logs ID > FILE``; the last block, each line's last word, so
    timestamps before it do not matter) written into ``out`` (``results.json`` and its rankings) and its result parsed.
    The log is the submitted code's output: names, count and sizes are checked before a byte is written, and bad input
    is a one-line ValueError."""
    from lookbench.files import read_regular
    from lookbench.results.folder import RESULT_NAME, ResultFolder
    from lookbench.results.provenance import result_parts
    from lookbench.results.rankings import MAX_RANKING_BYTES
    from lookbench.results.store import MAX_RESULT_BYTES, parse_json
    from lookbench.schema import TEST_SUBSETS

    lines = read_regular(Path(log), MAX_BLOCK_CHARS * 2, f"--rerun-from {log}").decode("utf-8", "replace").splitlines()
    start = max((i for i, line in enumerate(lines) if line.rstrip().endswith(BEGIN)), default=None)
    end = None if start is None else next((i for i in range(start + 1, len(lines)) if lines[i].rstrip().endswith(END)),
                                          None)
    if end is None:
        raise ValueError(f"--rerun-from {log} holds no complete re-run ({BEGIN} … {END}): is it the job's whole log?")
    payload = "".join(line.split()[-1] for line in lines[start + 1:end] if line.split())
    try:
        archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(payload, validate=True)))
        infos = archive.infolist()
    except (ValueError, zipfile.BadZipFile) as err:
        raise ValueError(f"--rerun-from {log}: its re-run block is damaged ({type(err).__name__})") from None
    allowed = {RESULT_NAME, *(ResultFolder(out).ranking(subset) for subset in TEST_SUBSETS)}
    names = [info.filename for info in infos]
    if len(infos) > MAX_RERUN_FILES or len(set(names)) != len(names) or RESULT_NAME not in names or set(names) - allowed:
        raise ValueError(f"--rerun-from {log}: its re-run block holds other files than a results.json and its rankings")
    for info in infos:
        limit = MAX_RESULT_BYTES if info.filename == RESULT_NAME else MAX_RANKING_BYTES
        with archive.open(info) as member:
            content = member.read(limit + 1)
        if len(content) > limit:
            raise ValueError(f"--rerun-from {log}: {info.filename} in its re-run block is larger than {limit} bytes")
        target = out / info.filename
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    result = parse_json((out / RESULT_NAME).read_bytes())
    result_parts(result, "the re-run")
    return result
