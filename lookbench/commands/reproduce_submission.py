"""``lookbench reproduce-submission PATH``: re-run a submission's model at its pinned commit on the same data and
compare the rankings with the submitted ones; exit 0 reproduced, 1 not, 2 on bad input. The record goes to the
results repo as a pull request (``--dry-run --out DIR``: only its files), signed with ``--sign KEY`` (the board trusts
only a record signed by a key its card lists); ``--job FLAVOR`` runs the re-run as a Hugging Face Job whose model
holds no token, and ``--rerun-from LOG`` makes the record from that job's log (docs/submitting.md, "Reproducing a
submission")."""
from __future__ import annotations

from pathlib import Path

from lookbench import terminal


def register(sub) -> None:
    from lookbench.commands.submit import pull_request_options
    from lookbench.settings import PRECISIONS

    rp = sub.add_parser("reproduce-submission",
                        help="re-run a submission's model at its pinned commit and compare its rankings with the "
                             "submitted ones (exit 0: reproduced; 1: not); writes a reproduction record")
    rp.add_argument("path", metavar="PATH", help="a submission folder (what verify takes); with --job, the submission's "
                                                 "folder in the results repo (submissions/<owner>/<name>/…)")
    rp.add_argument("--device", help="where the model runs (cpu, cuda, cuda:1, mps; default: the engine's choice)")
    rp.add_argument("--precision", choices=PRECISIONS, help="default: the submission's own")
    rp.add_argument("--trust-remote-code", action="store_true", help="let the submitted model run its own code")
    pull_request_options(rp)
    rp.add_argument("--sign", metavar="KEY", type=Path,
                    help="sign the record with this ed25519 private key (PEM; openssl genpkey -algorithm ed25519 -out "
                         "KEY): the leaderboard counts a record only when its card lists the public key")
    rp.add_argument("--job", metavar="FLAVOR", help="run the re-run as a Hugging Face Job on that hardware (e.g. "
                                                    "a10g-small); its model runs without your token, and --rerun-from "
                                                    "makes the record from its log")
    rp.add_argument("--rerun-from", metavar="LOG", type=Path,
                    help="take the re-run from a --job's log (hf jobs logs ID > LOG) instead of running the model here")
    rp.add_argument("--in-job", action="store_true",
                    help="what a --job runs: download the model and data with the token, drop every token, then re-run "
                         "and print the re-run into the log (no record, nothing sent)")
    rp.set_defaults(run=run)


def run(args) -> int:
    from lookbench.commands.submit import checked_repo

    repo = checked_repo(args)
    if args.job:
        from lookbench.submissions.jobs import submit_job

        if args.dry_run or args.sign or args.rerun_from or args.in_job:
            raise ValueError("--job runs on the Hub and prints the re-run into the job's log: it takes no --dry-run, "
                             "--sign, --rerun-from or --in-job (make the record from the log with --rerun-from)")
        terminal.say(submit_job(args.path, args.job, repo, precision=args.precision,
                                trust_remote_code=args.trust_remote_code))
        return 0
    if args.in_job:
        if args.dry_run or args.sign or args.rerun_from:
            raise ValueError("--in-job only re-runs and prints the re-run: it takes no --dry-run, --sign or --rerun-from")
        return _in_job(args)
    return _record(args, repo)


def _in_job(args) -> int:
    """Inside the job: download with the token, drop it (``jobs.in_job`` replaces this process), then re-run with no
    token visible and print the comparison and the re-run's block into the log."""
    import tempfile

    from lookbench.progress import quiet_libraries
    from lookbench.results.folder import read_submitted
    from lookbench.submissions import jobs, reproduction

    again = ["reproduce-submission", args.path, "--in-job", *(["--device", args.device] if args.device else []),
             *(["--precision", args.precision] if args.precision else []),
             *(["--trust-remote-code"] if args.trust_remote_code else [])]
    jobs.in_job(args.path, again)  # returns only in the process that holds no token
    submission = read_submitted(args.path)
    with tempfile.TemporaryDirectory(prefix="lookbench-reproduce-") as tmp:
        with quiet_libraries():
            reproduction.rerun(submission, Path(tmp), args.device, args.precision, args.trust_remote_code)
        terminal.say(jobs.rerun_block(Path(tmp), reproduction.rerun_files(Path(tmp))))
    return 0


def _record(args, repo: str) -> int:
    """Here (or from a job's log): the re-run compared, the record made (and signed), written or sent."""
    import tempfile

    from lookbench.progress import quiet_libraries
    from lookbench.results.folder import read_submitted
    from lookbench.submissions import reproduction
    from lookbench.submissions.signing import private_key, raw_public
    from lookbench.submissions.submit import open_pull_request, write

    key = private_key(args.sign) if args.sign else None  # a bad key is refused before anything runs
    submission = read_submitted(args.path)
    with tempfile.TemporaryDirectory(prefix="lookbench-reproduce-") as tmp:
        if args.rerun_from:
            from lookbench.submissions.jobs import read_rerun

            rerun, loaded = read_rerun(args.rerun_from, Path(tmp)), reproduction.pinned_model(submission.provenance)[0]
        else:
            with quiet_libraries():
                rerun, loaded = reproduction.rerun(submission, Path(tmp), args.device, args.precision,
                                                   args.trust_remote_code)
        found = reproduction.compare(submission.result, submission.rankings, rerun,
                                     reproduction.rankings_of(Path(tmp), rerun, reproduction.RERUN))
        found.reasons += reproduction.rerun_contradictions(rerun, submission)
        made = reproduction.record(submission, rerun, loaded, found)
        folder = reproduction.record_folder(submission, made["device"], made["precision"])
        files = reproduction.files_of(folder, made, Path(tmp))
        if key is not None:
            files = reproduction.signed_files(files, folder, key, submission.key)
        record = reproduction.as_submission(files, folder, made)
    terminal.say(reproduction.render(found, made))
    if key is not None:
        terminal.say(f"signed with the ed25519 key {raw_public(key.public_key())} (the leaderboard counts the record "
                     "when its card lists this key under reproduction_keys)")
    if args.dry_run:
        terminal.say(f"wrote {len(record.files)} files to {write(record, args.out)} (nothing sent)")
    else:
        terminal.say(open_pull_request(record, repo))
    return 0 if found.reproduced else 1
