"""Text for a terminal: its width, tables that fit it, wrapped notes, scores with their intervals, names made safe.

Every command prints through this module, so no line is wider than the terminal (``COLUMNS``; 100 when stdout is
not a terminal) and an interval reads the same everywhere. Tables are rich's: when a table is wider than the
terminal, its columns are left out in the order the caller states (and a note says which), then rich folds the
remaining cells. docs/architecture.md §2; each command's order is in docs/evaluating.md ("Fitting the terminal").
"""
from __future__ import annotations

import io
import re
import shutil
import sys
from dataclasses import dataclass
from typing import Sequence

DEFAULT_WIDTH = 100  # when stdout is not a terminal and COLUMNS is unset
UNBOUNDED = 10**6  # a console this wide measures a table's unfolded width
MIN_WIDTH = 20  # narrower than this, a table cannot hold a column per score; rendered at this width


def width() -> int:
    """The terminal's width: ``COLUMNS`` when set, else the terminal's, else ``DEFAULT_WIDTH`` (at least ``MIN_WIDTH``)."""
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def terminal_safe(text) -> str:
    """``text`` with every non-printable character (escape sequences, newlines, bidi controls) written as its Python
    escape, so a name from a results file can neither move the cursor, retitle the window nor break a row."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


def markdown_safe(text) -> str:
    """``terminal_safe`` text with Markdown's active characters backslash-escaped (``|`` cannot end a cell)."""
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", terminal_safe(text))


def score(value, bounds=None, digits: int = 1, signed: bool = False) -> str:
    """A score with its 95 % interval, ``86.9 [83.3, 89.8]``: the bounds themselves, since an interval is seldom
    symmetric (a Wilson interval near 0 or 100, a bootstrap's percentiles) and ``±`` half its width would claim
    values past 0 or 100. ``-`` for no value; the value alone when there is no interval. ``signed``: a difference,
    ``+1.4 [-5.7, +8.6]``."""
    if value is None:
        return "-"
    form = f"{{:{'+' if signed else ''}.{digits}f}}"
    if bounds is None:
        return form.format(value)
    lo, hi = bounds
    return f"{form.format(value)} [{form.format(lo)}, {form.format(hi)}]"


def bounds(interval, digits: int = 2) -> str:
    """An interval alone, ``[65.46, 69.25]`` (``-`` for none), as ``score`` writes it."""
    if interval is None:
        return "-"
    return score(0, interval, digits).split(" ", 1)[1]


@dataclass(frozen=True)
class Column:
    """A table column: its header, ``left`` or ``right`` aligned."""

    header: str
    align: str = "right"


def _console(at: int):
    from rich.console import Console

    return Console(file=io.StringIO(), width=at, color_system=None, force_terminal=False, force_jupyter=False,
                   force_interactive=False, highlight=False, emoji=False, markup=False, legacy_windows=False)


def _lines(console) -> list[str]:
    return [line.rstrip() for line in console.file.getvalue().splitlines()]


def paragraph(text: str, at: int | None = None, indent: str = "") -> list[str]:
    """``text`` wrapped at spaces to ``at`` columns (default: the terminal's); a word longer than a line (a path) is
    folded. ``indent`` starts the lines after the first."""
    from rich.text import Text

    at = at or width()
    console = _console(max(1, at - len(indent)))
    console.print(Text(terminal_safe(text)), overflow="fold")
    lines = _lines(console)
    return lines[:1] + [indent + line for line in lines[1:]]


def say(*texts, file=None) -> None:
    """Print each line of ``texts`` no wider than the terminal: a longer line wrapped, its continuation indented two
    spaces past its own indent. The one way a command's plain lines (plans, summaries, paths) reach the terminal."""
    at = width()
    for text in texts:
        for line in str(text).split("\n"):
            lead = line[:len(line) - len(line.lstrip())]
            shown = paragraph(line, at, lead + "  ") if len(line) > at else [terminal_safe(line)]
            print("\n".join(shown), file=file or sys.stdout, flush=True)


def table(columns: Sequence[Column | str], rows: Sequence[Sequence], *, title: str | None = None,
          footnotes: Sequence[str] = (), drop_order: Sequence[str] = (), at: int | None = None) -> list[str]:
    """The lines of a table no wider than ``at`` (default: the terminal's): the title and footnotes wrapped, the
    columns named in ``drop_order`` left out in that order while the table is too wide (a footnote names them),
    then rich folds what is left. Cells are strings (``None`` is ``-``), made terminal-safe."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    at = max(MIN_WIDTH, at or width())
    columns = [c if isinstance(c, Column) else Column(c) for c in columns]
    headers = [c.header for c in columns]
    unknown = [h for h in drop_order if h not in headers]
    if unknown:
        raise ValueError(f"drop_order names columns the table does not have: {', '.join(unknown)}")
    cells = [[Text(terminal_safe("-" if v is None else v)) for v in row] for row in rows]

    def build(shown: list[int]) -> Table:
        grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True, expand=False)
        for i in shown:
            grid.add_column(Text(terminal_safe(columns[i].header)), justify=columns[i].align, overflow="fold")
        for row in cells:
            grid.add_row(*(row[i] for i in shown))
        return grid

    shown, dropped = list(range(len(columns))), []
    for header in drop_order:
        if _console(UNBOUNDED).measure(build(shown)).maximum <= at:
            break
        shown.remove(headers.index(header))
        dropped.append(header)
    console = _console(at)
    console.print(build(shown))
    lines = (paragraph(title, at) if title else []) + _lines(console)
    if dropped:
        footnotes = [f"Left out to fit {at} columns (COLUMNS): {', '.join(dropped)}.", *footnotes]
    for note in footnotes:
        lines += paragraph(note, at)
    return lines
