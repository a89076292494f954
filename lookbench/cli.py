"""The ``lookbench`` command line: build releases, list subsets, evaluate encoders."""
from __future__ import annotations

import argparse
import sys

from .commands import build, evaluate


class CommandError(Exception):
    """An error to show the user as one clear line (no traceback)."""


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="lookbench", description="LookBench: attribute-supervised fashion image retrieval.")
    sub = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build.register(sub)
    evaluate.register(sub)
    return root


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args) or 0
    except KeyboardInterrupt:
        print("lookbench: interrupted", file=sys.stderr)
        return 130
    except (CommandError, ValueError, FileNotFoundError, NotADirectoryError, PermissionError, OSError) as err:
        print(f"lookbench {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
