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
    review.add_argument("--port", type=int, help="port (default: gradio's, 7860 or the next free one)")
    review.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: loopback only)")
    review.set_defaults(run=run_review)


def run_review(args) -> int:
    from lookbench.space.review.app import serve

    serve(args.raw, reviewer=args.reviewer, overlap=args.overlap, shared=args.shared, host=args.host, port=args.port)
    return 0
