"""``lookbench reproduce-submission PATH``: re-run a submission's model at its pinned commit on the same data and
compare the rankings with the submitted ones; exit 0 reproduced, 1 not, 2 on bad input. The record goes to the
results repo as a pull request (``--dry-run --out DIR``: only its files), or ``--job FLAVOR`` runs the same command as
a Hugging Face Job (docs/submitting.md, "Reproducing a submission")."""
from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    from lookbench.settings import PRECISIONS
    from lookbench.submissions import DEFAULT_REPO

    rp = sub.add_parser("reproduce-submission",
                        help="re-run a submission's model at its pinned commit and compare its rankings with the "
                             "submitted ones (exit 0: reproduced; 1: not); writes a reproduction record")
    rp.add_argument("path", metavar="PATH", help="a submission folder (what verify takes); with --job, the submission's "
                                                 "folder in the results repo (submissions/<owner>/<name>/…)")
    rp.add_argument("--device", help="where the model runs (cpu, cuda, cuda:1, mps; default: the engine's choice)")
    rp.add_argument("--precision", choices=PRECISIONS, help="default: the submission's own")
    rp.add_argument("--trust-remote-code", action="store_true", help="let the submitted model run its own code")
    rp.add_argument("--repo", default=DEFAULT_REPO, help=f"the results repo the record goes to (default: {DEFAULT_REPO})")
    rp.add_argument("--dry-run", action="store_true", help="send nothing; write the record's files into --out")
    rp.add_argument("--out", type=Path, metavar="DIR", help="with --dry-run: the folder the files are written to, at "
                                                            "their paths in the repo")
    rp.add_argument("--job", metavar="FLAVOR", help="run this command as a Hugging Face Job on that hardware (e.g. "
                                                    "a10g-small) instead of here; the job opens the record's pull request")
    rp.set_defaults(run=run)


def run(args) -> int:
    import tempfile

    from lookbench.progress import quiet_libraries
    from lookbench.submissions import reproduction
    from lookbench.submissions.submit import check_repo, open_pull_request, write

    if args.dry_run != (args.out is not None):
        raise ValueError("--dry-run and --out DIR go together: the dry run writes the record's files into DIR")
    repo = check_repo(args.repo)
    if args.job:
        from lookbench.submissions.jobs import submit_job

        if args.dry_run:
            raise ValueError("--job runs on the Hub and opens the record's pull request there: it takes no --dry-run")
        print(submit_job(args.path, args.job, repo, precision=args.precision,
                         trust_remote_code=args.trust_remote_code))
        return 0
    submission = reproduction.read(args.path)
    with tempfile.TemporaryDirectory(prefix="lookbench-reproduce-") as tmp:
        with quiet_libraries():
            rerun, loaded = reproduction.rerun(submission, Path(tmp), args.device, args.precision,
                                               args.trust_remote_code)
        found = reproduction.compare(submission.result, submission.rankings, rerun,
                                     reproduction.rankings_of(Path(tmp), rerun, reproduction.RERUN))
        made = reproduction.record(submission, rerun, loaded, found)
        folder = reproduction.record_folder(submission, made["device"], made["precision"])
        record = reproduction.as_submission(reproduction.files_of(folder, made, Path(tmp)), folder, made)
    print(reproduction.render(found, made))
    if args.dry_run:
        print(f"wrote {len(record.files)} files to {write(record, args.out)} (nothing sent)")
    else:
        print(open_pull_request(record, repo))
    return 0 if found.reproduced else 1
