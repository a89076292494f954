"""The ``lookbench`` command line: build releases, list subsets and models, evaluate encoders, reproduce the
published leaderboard, rank, compare, explain and export results, serve the demo, stage and push the Hub repos,
submit a result to the leaderboard and verify a submission."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from lookbench.errors import report_errors, tell
from lookbench.commands import (
    annotate,
    audit,
    build,
    compare,
    demo,
    evaluate,
    explain,
    export,
    leaderboard,
    models,
    push,
    reproduce,
    reproduce_submission,
    review,
    seal,
    stage,
    submit,
    verify,
)


class Parser(argparse.ArgumentParser):
    """argparse's parser whose usage error is one message wrapped to the terminal's width (``errors.tell``), as every
    other error; its subcommands' parsers are of this class too."""

    def error(self, message):
        self.print_usage(sys.stderr)
        tell(f"{self.prog}: error: {message}")
        sys.exit(2)


def parser() -> argparse.ArgumentParser:
    root = Parser(prog="lookbench", description="LookBench: attribute-supervised fashion image retrieval.")
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build.register(sub)
    annotate.register(sub)
    evaluate.register(sub)
    models.register(sub)
    reproduce.register(sub)
    leaderboard.register(sub)
    compare.register(sub)
    explain.register(sub)
    export.register(sub)
    demo.register(sub)
    stage.register(sub)
    push.register(sub)
    submit.register(sub)
    verify.register(sub)
    seal.register(sub)
    reproduce_submission.register(sub)
    review.register(sub)
    audit.register(sub)
    return root


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    return report_errors(f"lookbench {args.command}", lambda: args.run(args))


if __name__ == "__main__":
    sys.exit(main())
