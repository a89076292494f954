"""``lookbench review RAW``: serve the review app of an annotated raw release, or invite and revoke its reviewers
(docs/building-a-release.md)."""
from __future__ import annotations

from pathlib import Path

DEFAULT_PORT = 7860


def register(sub) -> None:
    review = sub.add_parser("review", help="review an annotated raw release in a Gradio app: accept or correct each proposal")
    review.add_argument("raw", type=Path, metavar="RAW", help="the raw release folder `lookbench annotate` wrote")
    review.add_argument("--reviewer", help="review yourself: serve and print your link, valid while this server runs")
    review.add_argument("--invite", action="append", default=[], metavar="NAME",
                        help="print a link with a new secret token for reviewer NAME (again: a new link, the old one "
                             "stops working) and exit; may be given several times")
    review.add_argument("--adjudicator", action="store_true", help="with --invite or --reviewer: that reviewer settles disputes")
    review.add_argument("--revoke", action="append", default=[], metavar="NAME", help="NAME's link stops working, at once")
    review.add_argument("--overlap", type=int, help="how many reviewers decide each item of the shared sample, for their "
                                                    "agreement (default 2; fixed by the release's first review)")
    review.add_argument("--shared", type=int, metavar="N", help="items in the shared sample (default a tenth of the items, "
                                                                "at least 20; fixed by the release's first review)")
    review.add_argument("--gold", type=Path, metavar="FILE", help="gold items (JSONL with known labels, "
                        "docs/building-a-release.md) mixed unmarked into every reviewer's queue (fixed by the first review)")
    review.add_argument("--gold-rate", type=float, metavar="R", help="share of each queue that is gold (default 0.1)")
    review.add_argument("--gold-threshold", type=float, metavar="T", help="item-level gold accuracy under which a "
                        "reviewer is flagged and held out: the 95%% interval's upper bound below T (default 0.7)")
    review.add_argument("--adjudicate", action="store_true", help="serve the adjudication app: reviewers marked "
                        "adjudicator settle disputed items (their decision is the item's label, the reviewers' kept "
                        "beside it); with --reviewer NAME, print your own adjudicator's link")
    review.add_argument("--port", type=int, help=f"port (default: gradio's, {DEFAULT_PORT} or the next free one)")
    review.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: loopback only)")
    review.set_defaults(run=run_review)


def run_review(args) -> int:
    from lookbench.dataset_builder.decisions import ReviewError, check_reviewer

    if args.invite or args.revoke:
        return manage(args)
    if args.adjudicator and not args.reviewer:
        raise ReviewError("--adjudicator goes with --invite NAME or --reviewer NAME")
    if args.reviewer is not None:
        check_reviewer(args.reviewer)  # before the release is read: a bad name is the first thing said
    if args.adjudicate:
        from lookbench.space.review.adjudicate import serve_adjudication

        serve_adjudication(args.raw, reviewer=args.reviewer, host=args.host, port=args.port)
        return 0
    from lookbench.space.review.app import serve

    serve(args.raw, reviewer=args.reviewer, overlap=args.overlap, shared=args.shared, host=args.host, port=args.port,
          adjudicator=args.adjudicator, gold=args.gold, gold_rate=args.gold_rate, gold_threshold=args.gold_threshold)
    return 0


def manage(args) -> int:
    """Invitations only: the links are printed here, once (only their hashes are kept)."""
    from lookbench import terminal
    from lookbench.dataset_builder.decisions import ReviewError
    from lookbench.space.review.identity import invite, invites_path, link, revoke

    if not (args.raw / "taxonomy.json").is_file():
        raise ReviewError(f"{args.raw} has no taxonomy.json; invite reviewers to an annotated release")
    for name in args.revoke:
        revoke(args.raw, name)
        terminal.say(f"revoked {name}: their link no longer opens the review")
    for name in args.invite:
        token = invite(args.raw, name, adjudicator=args.adjudicator)
        role = " (adjudicator)" if args.adjudicator else ""
        terminal.say(f"{name}{role}: {link(args.host, args.port or DEFAULT_PORT, token)}")
    if args.invite:
        terminal.say(f"Send each link to its reviewer only; serve with `lookbench review {args.raw}"
                     + (f" --port {args.port}" if args.port else "") + "`"
                     + (" (with --adjudicate: the adjudication app)" if args.adjudicator else "")
                     + f". Hashes kept in {invites_path(args.raw)}.")
    return 0
