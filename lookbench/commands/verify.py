"""``lookbench verify PATH``: re-score a submission from its rankings against the data's ground truth; exit 0 when
every claimed score agrees, 1 when one does not, 2 on bad input (docs/submitting.md)."""
from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    vp = sub.add_parser("verify", help="re-score a submission from its rankings against the data's own ground truth; "
                                       "verified only when every claimed score agrees (exit 0; 1: not verified)")
    vp.add_argument("path", type=Path, metavar="PATH", help="a submission folder (or the folder submit --dry-run wrote), "
                                                           "or a result JSON with saved rankings")
    vp.add_argument("--data", help="the data to judge against: a folder from `lookbench build` or a Hub dataset id "
                                   "(default: the data the result names; the embedded LookBench-Mini is rebuilt)")
    vp.add_argument("--labels", help="a sealed release's labels: their folder or Hub dataset id (default: the release's "
                                     "own repo once it is unsealed)")
    vp.add_argument("--format", choices=("table", "json"), default="table")
    vp.set_defaults(run=run)


def run(args) -> int:
    from lookbench.progress import quiet_libraries
    from lookbench.submissions.verify import render, verify_submission

    with quiet_libraries():
        verdict = verify_submission(args.path, args.data, labels=args.labels)
    print(render(verdict, args.format))
    return 0 if verdict.verified else 1
