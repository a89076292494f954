"""``lookbench push``: upload a staged mirror with huggingface_hub (docs/architecture.md §5)."""
from __future__ import annotations

from pathlib import Path

from lookbench.upload_scripts.manifest import PARTS


def register(sub) -> None:
    push = sub.add_parser("push", help="create the staged repos on the Hub and upload them (a dry run without a token)")
    push.add_argument("--hub", type=Path, required=True, help="a mirror written by `lookbench stage`")
    push.add_argument("--namespace", help="Hub user or organisation (default: the one the mirror was staged for)")
    push.add_argument("--private", action="store_true", help="create new repos private")
    push.add_argument("--revision", help="branch to upload to (created if missing; default: main)")
    push.add_argument("--dry-run", action="store_true", help="only print the plan (the default when no token is configured)")
    push.add_argument("--only", metavar="PARTS", help=f"push only these repos, a comma list of: {', '.join(PARTS)}")
    push.set_defaults(run=run_push)


def run_push(args) -> int:
    from lookbench.upload_scripts.push import push

    push(args.hub, args.namespace, private=args.private, revision=args.revision, dry_run=args.dry_run, only=args.only)
    return 0
