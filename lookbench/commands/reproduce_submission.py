"""``lookbench reproduce-submission PATH``: re-run a submission's model at its pinned commit on the same data and
compare the rankings with the submitted ones; exit 0 reproduced, 1 not, 2 on bad input. The record goes to the
results repo as a pull request (``--dry-run --out DIR``: only its files), or ``--job FLAVOR`` runs the same command as
a Hugging Face Job (docs/submitting.md, "Reproducing a submission")."""
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
    rp.add_argument("--job", metavar="FLAVOR", help="run this command as a Hugging Face Job on that hardware (e.g. "
                                                    "a10g-small) instead of here; the job opens the record's pull request")
    rp.set_defaults(run=run)


def run(args) -> int:
    import tempfile

    from lookbench.commands.submit import checked_repo
    from lookbench.progress import quiet_libraries
    from lookbench.results.folder import read_submitted
    from lookbench.submissions import reproduction
    from lookbench.submissions.submit import open_pull_request, write

    repo = checked_repo(args)
    if args.job:
        from lookbench.submissions.jobs import submit_job

        if args.dry_run:
            raise ValueError("--job runs on the Hub and opens the record's pull request there: it takes no --dry-run")
        terminal.say(submit_job(args.path, args.job, repo, precision=args.precision,
                         trust_remote_code=args.trust_remote_code))
        return 0
    submission = read_submitted(args.path)
    with tempfile.TemporaryDirectory(prefix="lookbench-reproduce-") as tmp:
        with quiet_libraries():
            rerun, loaded = reproduction.rerun(submission, Path(tmp), args.device, args.precision,
                                               args.trust_remote_code)
        found = reproduction.compare(submission.result, submission.rankings, rerun,
                                     reproduction.rankings_of(Path(tmp), rerun, reproduction.RERUN))
        made = reproduction.record(submission, rerun, loaded, found)
        folder = reproduction.record_folder(submission, made["device"], made["precision"])
        record = reproduction.as_submission(reproduction.files_of(folder, made, Path(tmp)), folder, made)
    terminal.say(reproduction.render(found, made))
    if args.dry_run:
        terminal.say(f"wrote {len(record.files)} files to {write(record, args.out)} (nothing sent)")
    else:
        terminal.say(open_pull_request(record, repo))
    return 0 if found.reproduced else 1
