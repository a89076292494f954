"""The ``lookbench`` command line: build releases, list subsets and models, evaluate encoders, reproduce the
published leaderboard, rank, compare, explain and export results, serve the demo, stage and push the Hub repos."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from .commands import build, compare, demo, evaluate, explain, export, leaderboard, models, push, reproduce, stage


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="lookbench", description="LookBench: attribute-supervised fashion image retrieval.")
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build.register(sub)
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
    return root


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    return report_errors(f"lookbench {args.command}", lambda: args.run(args))


def report_errors(prog: str, run: Callable[[], object]) -> int:
    """Run a command so that a failure reaches the user as one line naming its cause, not as a traceback; the
    exit code is the command's own when it returns one. Shared by `lookbench` and the model scripts."""
    try:
        result = run()
        return result if isinstance(result, int) else 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `lookbench leaderboard | head`: the reader has gone; end quietly, as SIGPIPE would
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return 141
    except (ValueError, OSError) as err:  # bad input: the message names the file, row, id or model at fault
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # a failure inside torch/transformers/faiss: still one line (LOOKBENCH_DEBUG=1 for the traceback)
        if os.environ.get("LOOKBENCH_DEBUG") == "1":
            raise
        print(f"{prog}: error: {type(err).__name__}: {' '.join(str(err).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
