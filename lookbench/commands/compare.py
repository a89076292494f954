"""``lookbench compare A B``: paired difference of two results on the same queries, with intervals and p-values.

Reads two result JSON files (numpy only, no torch); docs/architecture.md §5.
"""
from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    from lookbench.results.comparison import FORMATS
    from lookbench.settings import METRICS

    cp = sub.add_parser("compare", help="paired difference A − B of two results on the same data and queries, with "
                                        "95%% intervals, exact McNemar / bootstrap p-values and Holm across subsets")
    cp.add_argument("a", type=Path, metavar="A", help="a result JSON (results store file, or an --output folder)")
    cp.add_argument("b", type=Path, metavar="B", help="the result to compare it with, on the same data and queries")
    cp.add_argument("--metric", choices=list(METRICS), default="fine", help="fine or coarse Recall@K, or nDCG@K")
    cp.add_argument("--k", type=int, default=1, help="the K of the metric (1, 5, 10 or 20)")
    cp.add_argument("--format", choices=FORMATS, default="table")
    cp.add_argument("--attributes", action="store_true",
                    help="compare the attribute error rate@1 instead, attribute by attribute (paired, McNemar, Holm)")
    cp.set_defaults(run=run)


def run(args) -> int:
    import sys

    from lookbench import terminal
    from lookbench.results.comparison import (compare, compare_attributes, label, read_result, render,
                                              zero_shot_warning)

    a, b = read_result(args.a), read_result(args.b)
    if args.attributes and (args.metric != "fine" or args.k != 1):
        raise ValueError("--attributes compares the attribute error rate@1: give it without --metric and --k")
    rows = compare_attributes(a, b) if args.attributes else compare(a, b, args.metric, args.k)
    warning = zero_shot_warning(a, b)
    if warning:  # stderr, once the results are known comparable: stdout stays the table or the JSON
        print("\n".join(terminal.paragraph(warning)), file=sys.stderr)
    print(render(rows, args.format, label(a), label(b), "attributes" if args.attributes else args.metric, args.k))
    return 0
