"""The leaderboard's tables as text: a terminal table, Markdown, CSV or JSON, and as the DataFrame the Space shows.

Model names and sources come from results files, so every text form escapes them (terminal, Markdown, CSV); JSON is
strict (no NaN).
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field

from lookbench import terminal
from lookbench.results.trust import PUBLISHED
from lookbench.terminal import markdown_safe, terminal_safe

FORMATS = ("table", "markdown", "csv", "json")
GROUPS_NOTE = ("ci95: the 95% interval of the ranked score, from the stored per-query outcomes (ci_method: Wilson (effective "
               "n), a Wilson interval on the queries divided by the design effect the outfit-clustered bootstrap measures, "
               "each outfit one observation at 0% and 100%, for Fine/Coarse Recall; bootstrap percentiles for nDCG); a "
               "published row's is a Wilson interval from its score and query count, approximate. group: rows share a rank group when "
               "the data cannot separate them from the group's best row (paired test p >= 0.05 where both have "
               "per-query outcomes, else overlapping intervals).")
TOP = 5  # the rows of each section the terminal table shows (`lookbench leaderboard --all`: every row)
CUTOFF_COLUMN = "training cutoff"  # the model's declared training cutoff, shown beside its scores per release
ZERO_SHOT_COLUMN = "zero-shot"  # yes / no / unknown: the model's declared training data shares no source with the data
ZERO_SHOT_NOTE = ("zero-shot: yes when the model's declared training data shares no source with the data ranked; no: "
                  "trained on that source (in-distribution); unknown: the model declares none. Registered models' "
                  "declarations are the registry's; \"(claimed)\" is a submission's own claim, not checked.")


@dataclass
class Section:
    """One ranked table: a comparable group, its rows best first, and where its figures come from. ``releases``:
    the columns that hold the score on one release's queries (``by_release``)."""

    title: str
    source: str
    columns: list[str]
    rows: list[dict]
    releases: list[str] = field(default_factory=list)

    def frame(self):
        """The rows as a pandas DataFrame (what the Space shows), percentages to two decimals as published; the
        interval as two columns, ``ci95_lo`` and ``ci95_hi``."""
        import pandas as pd

        frame = pd.DataFrame(self.rows, columns=self.columns)
        at = frame.columns.get_loc("ci95")
        bounds = [r["ci95"] or [None, None] for r in self.rows]
        frame.insert(at, "ci95_hi", [b[1] for b in bounds])
        frame.insert(at, "ci95_lo", [b[0] for b in bounds])
        return frame.drop(columns="ci95").round(2)


def render_sections(sections: list[Section], skipped: list[str], fmt: str = "table", at: int | None = None,
                    top: int | None = None) -> str:
    """The sections as text; the terminal table no wider than ``at`` (default: the terminal's) and, with ``top``,
    each section's first ``top`` rows (``shown``). The skipped files are part of the JSON only (``lookbench
    leaderboard`` names them on stderr, in every format); Markdown, CSV and JSON are files' text and keep every row."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "json":
        return json.dumps([{"title": s.title, "source": s.source, "rows": s.rows} for s in sections]
                          + ([{"skipped": skipped}] if skipped else []), indent=2, allow_nan=False)
    parts = [_render_section(s, fmt, at, top) for s in sections]
    if not sections and fmt != "csv":
        parts.append("No results to show.")
    return "\n\n".join(parts)


def _drop_order(section: Section) -> list[str]:
    """The columns the terminal table leaves out, in this order, when it is too wide: ci_method, queries, then the
    columns between ci95 and queries from the right (subsets, releases, training cutoff), then group; rank, model,
    the ranked score, ci95 and verified always stay."""
    middle = section.columns[section.columns.index("ci95") + 1:section.columns.index("queries")]
    return ["ci_method", "queries", *reversed(middle), "group"]


def shown(section: Section, top: int | None) -> list[dict]:
    """The rows a terminal table shows: its first ``top`` (all for None), and beside a published table every row that
    is not published (a user's own run stays in view however it ranks)."""
    if top is None or len(section.rows) <= top:
        return section.rows
    mixed = any(r["verified"] == PUBLISHED for r in section.rows)
    return [r for i, r in enumerate(section.rows) if i < top or (mixed and r["verified"] != PUBLISHED)]


def _render_section(section: Section, fmt: str, at: int | None = None, top: int | None = None) -> str:
    def cell(v):
        if isinstance(v, list):  # an interval
            return terminal.bounds(v, 2)
        return "-" if v is None else (f"{v:.2f}" if isinstance(v, float) else terminal_safe(v))

    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["section", *section.columns])
        writer.writerows([terminal_safe(section.title),
                          *(terminal_safe(r[c]) if isinstance(r[c], str) else r[c] for c in section.columns)]
                         for r in section.rows)
        return buffer.getvalue().rstrip("\r\n")
    if fmt == "markdown":
        cells = [[markdown_safe(cell(r[c])) for c in section.columns] for r in section.rows]
        lines = [f"### {markdown_safe(section.title)}", "", "| " + " | ".join(section.columns) + " |",
                 "|" + "|".join("---:" if i != 1 else "---" for i in range(len(section.columns))) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines + ["", f"Source: {markdown_safe(section.source)}"])
    rows = shown(section, top)
    left = len(section.rows) - len(rows)
    more = [f"{len(rows)} of {len(section.rows)} rows shown; --all shows the other {left}."] if left else []
    return "\n".join(terminal.table(
        [terminal.Column(c, "left" if c == "model" else "right") for c in section.columns],
        [[cell(r[c]) for c in section.columns] for r in rows],
        title=section.title, footnotes=[*more, f"source: {section.source}"], drop_order=_drop_order(section), at=at))
