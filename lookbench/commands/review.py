"""``lookbench review RAW``: serve the review app of an annotated raw release on loopback (docs/building-a-release.md)."""
from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    review = sub.add_parser("review", help="review an annotated raw release in a Gradio app: accept or correct each proposal")
    review.add_argument("raw", type=Path, metavar="RAW", help="the raw release folder `lookbench annotate` wrote")
    review.add_argument("--reviewer", help="your name (letters, digits, . _ -); the page asks for it when not given")
    review.add_argument("--overlap", type=int, help="how many reviewers decide each item of the shared sample, for their "
                                                    "agreement (default 2; fixed by the release's first review)")
    review.add_argument("--shared", type=int, metavar="N", help="items in the shared sample (default a tenth of the items, "
                                                                "at least 20; fixed by the release's first review)")
    review.add_argument("--gold", type=Path, metavar="FILE", help="gold items (JSONL with known labels, "
                        "docs/building-a-release.md) mixed unmarked into every reviewer's queue (fixed by the first review)")
    review.add_argument("--gold-rate", type=float, metavar="R", help="share of each queue that is gold (default 0.1)")
    review.add_argument("--gold-threshold", type=float, metavar="T", help="item-level gold accuracy under which a "
                        "reviewer is flagged and held out: the 95%% interval's upper bound below T (default 0.7)")
    review.add_argument("--adjudicate", action="store_true", help="settle disputed items as an adjudicator (with "
                        "--reviewer NAME); your decision is the item's label, the reviewers' kept beside it")
    review.add_argument("--port", type=int, help="port (default: gradio's, 7860 or the next free one)")
    review.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: loopback only)")
    review.set_defaults(run=run_review)


def run_review(args) -> int:
    from lookbench.dataset_builder.decisions import ReviewError, check_reviewer
    from lookbench.space.review.app import serve

    if args.adjudicate:
        from lookbench.space.review.adjudicate import serve_adjudication

        if args.reviewer is None:
            raise ReviewError("--adjudicate needs --reviewer NAME: the adjudicator's name on every decision")
        name = check_reviewer(args.reviewer)
        serve_adjudication(args.raw, lambda request: name, host=args.host, port=args.port)
        return 0
    serve(args.raw, reviewer=args.reviewer, overlap=args.overlap, shared=args.shared, host=args.host, port=args.port,
          gold=args.gold, gold_rate=args.gold_rate, gold_threshold=args.gold_threshold)
    return 0
