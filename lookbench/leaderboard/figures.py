"""The leaderboard drawn: the ranked score as bars with their 95 % intervals, or, with scores per release, each
model's score against the release date with its declared training cutoff marked.

matplotlib is imported on first draw (``lookbench leaderboard --help`` stays light, docs/architecture.md §5), and a
figure is a ``matplotlib.figure.Figure`` that pyplot never keeps.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from lookbench.files import replacing, writable_file
from lookbench.leaderboard.render import CUTOFF_COLUMN, Section, terminal_safe


def _title(section: Section) -> str:
    """The section's title (its data, mode and distractors), wrapped so no line is clipped."""
    return "\n".join(textwrap.wrap(terminal_safe(section.title), 95, break_on_hyphens=False))


def figure(sections: list[Section]):
    """Bar chart of the ranked score with its 95 % interval as an error bar, one panel per section (as tall as its
    rows), each bar labelled with its rank group; with scores per release, the release figure instead."""
    from matplotlib.figure import Figure

    if any(s.releases for s in sections):
        return release_figure(sections)
    score = sections[0].columns[3] if sections else "score"
    heights = [max(2, len(s.rows)) * 0.35 + 1.4 for s in sections] or [2]
    fig = Figure(figsize=(10, sum(heights)), layout="constrained")
    axes = fig.subplots(len(sections) or 1, 1, squeeze=False, gridspec_kw={"height_ratios": heights})
    for ax, section in zip(axes[:, 0], sections):
        rows = section.rows[::-1]
        names = [terminal_safe(f"{r['model']} (group {r['group']})" if r["group"] else r["model"]) for r in rows]
        values = [r[score] if r[score] is not None else 0.0 for r in rows]
        bounds = [r["ci95"] or (v, v) for r, v in zip(rows, values)]
        errors = [[v - lo for v, (lo, _) in zip(values, bounds)], [hi - v for v, (_, hi) in zip(values, bounds)]]
        ax.barh(names, values, xerr=errors, capsize=3, color="#4c72b0", ecolor="#222222", height=0.7)
        ax.set_ylim(-0.75, max(len(rows), 2) - 0.25)  # one row keeps a bar's height, not the panel's
        ax.set_xlim(0, 100)
        ax.set_title(_title(section), fontsize=9)
        ax.set_xlabel(f"{score} (%), 95% interval")
    return fig


def release_figure(sections: list[Section]):
    """The score against the release date with its 95 % interval, one line per model, its declared training cutoff
    dashed; one panel per section that has scores per release. The date axis spans the releases: a cutoff outside
    them is named at the edge it lies beyond, never stretching the axis."""
    import datetime

    import matplotlib
    from matplotlib.dates import DateFormatter
    from matplotlib.figure import Figure

    from lookbench.filtering import to_utc
    from lookbench.schema import release_date

    sections = [s for s in sections if s.releases]
    fig = Figure(figsize=(10, 4.2 * len(sections)), layout="constrained")
    axes = fig.subplots(len(sections), 1, squeeze=False)
    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, section in zip(axes[:, 0], sections):
        dates = [release_date(r) for r in section.releases]
        margin = max((max(dates) - min(dates)) * 0.08, datetime.timedelta(days=30))
        left, right = min(dates) - margin, max(dates) + margin
        for i, row in enumerate(section.rows):
            points = [(d, row[r], (row.get("release_ci95") or {}).get(r)) for d, r in zip(dates, section.releases)
                      if row[r] is not None]
            if not points:
                continue
            colour = colours[i % len(colours)]
            xs, ys, bounds = zip(*points)
            bounds = [b or (y, y) for y, b in zip(ys, bounds)]
            ax.errorbar(xs, ys, yerr=[[y - lo for y, (lo, _) in zip(ys, bounds)], [hi - y for y, (_, hi) in zip(ys, bounds)]],
                        marker="o", capsize=3, color=colour, label=terminal_safe(row["model"]))
            try:
                cutoff = to_utc(row[CUTOFF_COLUMN]) if row.get(CUTOFF_COLUMN) else None
            except ValueError:
                cutoff = None  # a declared cutoff that is no date is shown in the table, not drawn
            if cutoff is None:
                continue
            if left <= cutoff <= right:
                ax.axvline(cutoff, color=colour, linestyle="--", linewidth=1)
            else:
                edge = left if cutoff < left else right
                ax.annotate(f"{'← ' if edge == left else ''}cutoff {cutoff:%Y-%m-%d}{' →' if edge == right else ''}",
                            (edge, 3 + 6 * (i % 4)), color=colour, fontsize=8, ha="left" if edge == left else "right")
        ax.set_xlim(left, right)
        ax.set_ylim(0, 105)
        ax.set_ylabel(f"{section.columns[3]} (%), 95% interval")
        ax.set_xlabel("release date (dashed: the model's declared training cutoff)")
        ax.set_title(_title(section), fontsize=9)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
        # Every panel its own dated axis (autofmt_xdate kept only the bottom one's, which the others were read by)
        ax.xaxis.set_major_formatter(DateFormatter("%Y-%m-%d"))
        ax.tick_params(axis="x", labelrotation=30)
    return fig


def plot_path(path) -> Path:
    """The file a plot named ``path`` is written to (``.png`` added when it has no suffix), checked before anything
    is drawn: the name given and the one written are each new, a regular file or a symlink (replaced, never written
    through) in an existing folder, and matplotlib writes the suffix's format."""
    from matplotlib.backend_bases import FigureCanvasBase

    given = writable_file(Path(path))
    path = given if given.suffix else writable_file(given.with_name(given.name + ".png"))
    formats = FigureCanvasBase.get_supported_filetypes()
    if path.suffix[1:].lower() not in formats:
        raise ValueError(f"{path}: matplotlib writes no {path.suffix} files; name it .png, .pdf or .svg "
                         f"(or {', '.join(f'.{f}' for f in sorted(formats))})")
    return path


def plot(sections: list[Section], path) -> Path:
    """The figure written whole to ``plot_path(path)`` in the format its suffix names; returns the path written."""
    path = plot_path(path)
    with replacing(path) as tmp:
        figure(sections).savefig(tmp, dpi=100, format=path.suffix[1:].lower())
    return path
