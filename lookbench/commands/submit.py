"""``lookbench submit RESULT``: a result and its saved rankings as a pull request on the leaderboard's results repo,
or with ``--dry-run --out DIR`` the files it would add (docs/submitting.md)."""
from __future__ import annotations

from pathlib import Path

from lookbench import terminal


def register(sub) -> None:
    sp = sub.add_parser("submit", help="send a result and its saved rankings to the leaderboard's results repo as a pull "
                                       "request (--dry-run --out DIR: only write the files it would add)")
    sp.add_argument("result", type=Path, metavar="RESULT",
                    help="a result JSON with saved rankings (a results store file, or an --output folder)")
    pull_request_options(sp)
    sp.add_argument("--model-id", metavar="OWNER/NAME@REV", help="the Hub repo and revision of the model's weights, for a "
                                                                 "model evaluated from a local folder")
    sp.add_argument("--allow-synthetic", action="store_true", help="submit a result on LookBench-Mini (for a test repo)")
    sp.set_defaults(run=run)


def pull_request_options(parser) -> None:
    """--repo, --dry-run and --out: where a pull request goes, or the folder its files are written to instead."""
    from lookbench.submissions import DEFAULT_REPO

    parser.add_argument("--repo", default=DEFAULT_REPO, help=f"the Hub dataset of submissions (default: {DEFAULT_REPO})")
    parser.add_argument("--dry-run", action="store_true", help="send nothing; write the pull request's files into --out")
    parser.add_argument("--out", type=Path, metavar="DIR", help="with --dry-run: the folder the files are written to, "
                                                                "at their paths in the repo")


def checked_repo(args) -> str:
    """The repo of ``pull_request_options``, once --dry-run and --out come together."""
    from lookbench.submissions.submit import check_repo

    if args.dry_run != (args.out is not None):
        raise ValueError("--dry-run and --out DIR go together: the dry run writes the pull request's files into DIR")
    return check_repo(args.repo)


def run(args) -> int:
    from lookbench.progress import quiet_libraries
    from lookbench.submissions.submit import open_pull_request, prepare, write

    repo = checked_repo(args)
    with quiet_libraries():  # the check re-scores the rankings against the data: its loading bars are not output
        submission = prepare(args.result, args.model_id, args.allow_synthetic)
    if args.dry_run:
        folder = write(submission, args.out)
        terminal.say(f"wrote {len(submission.files)} files to {folder} (nothing sent); the pull request would be titled: "
              f"{submission.title}")
    else:
        terminal.say(open_pull_request(submission, repo))
    return 0
