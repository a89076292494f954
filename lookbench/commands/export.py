"""``lookbench export mteb RESULT --out DIR``: a stored or ``--output`` result as an mteb ``TaskResult`` JSON.

Needs the ``mteb`` extra; ``lookbench/mteb/export.py`` says how the scores map onto mteb's (docs/architecture.md §5).
"""
from __future__ import annotations

from pathlib import Path

from lookbench import terminal

FORMATS = ("mteb",)


def register(sub) -> None:
    ex = sub.add_parser("export", help="write a result in another benchmark's format (mteb TaskResult JSON)")
    ex.add_argument("format", choices=FORMATS, help="the format to write")
    ex.add_argument("result", type=Path, metavar="RESULT", help="a result JSON (results store file, or an --output folder)")
    ex.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder to write <task name>.json into")
    ex.set_defaults(run=run)


def run(args) -> int:
    from lookbench.paths import result_file

    try:
        from lookbench.mteb import export_result
    except ModuleNotFoundError as err:
        raise ValueError(str(err)) from err
    terminal.say(export_result(result_file(args.result), args.out))
    return 0
