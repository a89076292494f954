"""``lookbench audit RAW``: the proposer's accuracy and the reviewers' agreement on an annotated raw release."""
from __future__ import annotations

import json
from pathlib import Path

from lookbench import terminal


def register(sub) -> None:
    audit = sub.add_parser("audit", help="measure the proposals against the reviewed labels and the reviewers' agreement")
    audit.add_argument("raw", type=Path, metavar="RAW", help="the raw release folder `lookbench annotate` wrote and people reviewed")
    audit.add_argument("--json", type=Path, metavar="FILE", help="also write the audit as JSON to FILE")
    audit.set_defaults(run=run_audit)


def run_audit(args) -> int:
    from lookbench.dataset_builder.review.audit import audit_release, lines
    from lookbench.files import replacing

    report = audit_release(args.raw)
    terminal.say("\n".join(lines(report)))
    if args.json is not None:
        with replacing(args.json) as tmp:
            tmp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        terminal.say(f"audit: {args.json}")
    return 0
