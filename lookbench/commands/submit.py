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
    sp.add_argument("--model-repo", metavar="OWNER/NAME",
                    help="also open a pull request adding the scores as the Hub's .eval_results/lookbench.yaml on the "
                         "model's own repo (the Hub's community badge; with --dry-run: written to DIR/OWNER/NAME/)")
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
    from lookbench.hub import check_hub_id
    from lookbench.progress import quiet_libraries
    from lookbench.submissions.submit import open_model_pull_request, prepare, pull_request, write

    repo = checked_repo(args)
    model_repo = None if args.model_repo is None else check_hub_id(args.model_repo, "--model-repo")
    with quiet_libraries():  # the check re-scores the rankings against the data: its loading bars are not output
        submission = prepare(args.result, args.model_id, args.allow_synthetic)
    if args.dry_run:
        folder = write(submission, args.out)
        terminal.say(f"wrote {len(submission.files)} files to {folder} (nothing sent); the pull request would be titled: "
              f"{submission.title}")
        if model_repo is not None:
            terminal.say(f"wrote {_dry_eval_results(submission, args.out, repo, model_repo)} (nothing sent): the "
                         f"pull request on {model_repo} would add it")
        return 0
    said, url = pull_request(repo, "dataset", submission.files, submission.title, submission.description, submission.id)
    terminal.say(said)
    if model_repo is not None:
        terminal.say(open_model_pull_request(submission, model_repo, url or _folder_url(repo, submission)))
    return 0


def _folder_url(repo: str, submission) -> str:
    """Where the submission lives in the results repo once merged."""
    return f"https://huggingface.co/datasets/{repo}/tree/main/{submission.folder}"


def _dry_eval_results(submission, out, repo: str, model_repo: str):
    """``--dry-run --model-repo``: the model pull request's file, at its path under ``out/<model repo>/``."""
    from lookbench.files import replacing
    from lookbench.results.hub_results import RESULTS_FILE
    from lookbench.submissions.submit import eval_results

    path = out / model_repo / RESULTS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp:
        tmp.write_text(eval_results(submission, _folder_url(repo, submission)), encoding="utf-8")
    return path
