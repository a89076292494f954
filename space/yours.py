"""The "Your results" tab: a stored result with saved rankings (``lookbench evaluate --save-predictions``, a
submission folder) browsed in the page — its attribute error chart and its worst queries with their marked top
results, filtered by subset, category and attribute.

The records are ``lookbench explain --report``'s (``lookbench.report.records.worst_queries``), each row drawn by the
report's ``query_row`` with its tiles (``lookbench.report.style``); only the results found under the folder the demo was given are offered, each read through
the project's containment readers, so a visitor's choice never names a file of its own.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from lookbench.errors import shown
from lookbench.terminal import markdown_safe
from lookbench.report.records import Report
from lookbench.results.folder import MAX_FOLDERS, ResultFolder

ALL = "all"  # a filter that keeps every query
TOP = 10  # results per query, as ``lookbench explain --report`` shows them
WORST = 100  # the worst queries read, as its --worst; the filters choose among them
SHOWN = 30  # the rows drawn at once (each row inlines its thumbnails)
MAX_OPENED = 16  # results kept opened (records and thumbnails, a few MB each); past it the first opened is dropped
log = logging.getLogger("lookbench.space")


@dataclass
class Opened:
    """A result as the tab shows it: its records, and its thumbnails (``{}`` with ``images`` saying why not)."""

    report: Report
    thumbnails: dict
    images: str = ""


def offered(given) -> tuple[Path | None, list[str], bool]:
    """The folder the tab reads inside, the results under it with saved rankings (paths relative to it), and whether
    the walk stopped at ``MAX_FOLDERS`` before the end:
    ``given`` a result JSON (itself), or a folder — an ``evaluate --output`` folder, a submission, a results store or
    a folder of submissions — walked without following links to folders (``results_below``)."""
    from lookbench.results.folder import results_below

    if given is None:
        return None, [], False
    given = Path(given)
    if given.is_file():
        return given.parent, [given.name], False
    if not given.is_dir():
        return None, [], False
    return given, *results_below(given, MAX_FOLDERS)


class YourResults:
    """The stored results under one folder, each opened once (records and thumbnails kept while its JSON is the
    same file) and browsed by ``browse``. A subclass offers other results (``listing``) read another way (``stamp``,
    ``read``): the leaderboard's verified submissions (``lookbench.space.board.browse``)."""

    INTRO = ("A stored result with saved rankings (`lookbench evaluate --save-predictions`, given as "
             "`lookbench demo --results PATH`): its attribute errors and its worst queries, as "
             "`lookbench explain --report` shows them.")

    def __init__(self, given, data=None):
        self.given = given
        self.root, self.choices, self.cut = offered(given)
        # The local data a result's images may be read from: inside the folder given, or the demo's own --data.
        self.data_folders = [Path(f).resolve() for f in (self.root, data) if f is not None and Path(f).is_dir()]
        self._opened: dict[tuple, Opened] = {}
        self._lock = threading.Lock()

    @property
    def empty(self) -> str:
        """What the tab says when it has nothing to offer."""
        start = "start with `lookbench demo --results PATH` (a result JSON or folder written with --save-predictions)"
        if self.given is None:
            return f"No stored result given: {start}"
        return f"No result with saved rankings in {shown(str(self.given))}: {start}"

    def listing(self) -> list:
        """The results offered now: each a value, or a (label, value) pair."""
        return self.choices

    def values(self) -> list[str]:
        return [c[1] if isinstance(c, tuple) else c for c in self.listing()]

    def stamp(self, choice) -> tuple:
        """What the opened result is kept by: its JSON's file (every file read inside the given folder)."""
        from lookbench.files import contained_file

        path = contained_file(self.root, choice)
        stored = ResultFolder.of(path)
        for relative in stored.ranking_files():  # every ranking inside the folder
            contained_file(self.root, str((stored.folder / relative).relative_to(self.root.resolve())))
        stat = path.stat()
        return choice, stat.st_ino, stat.st_size, stat.st_mtime_ns

    def read(self, choice) -> Opened:
        """The report of ``choice`` and its thumbnails (a result's own files: the user's run)."""
        from lookbench.files import contained_file
        from lookbench.report import records

        report = records.worst_queries(contained_file(self.root, choice), TOP, WORST)
        return Opened(report, *self._thumbnails(choice, lambda: records.thumbnails(report, self._data(report))))

    def _data(self, report):
        """The data whose images the result shows, as ``records.thumbnails`` takes it: the embedded Mini, a Hub
        dataset at its commit, or a local folder only inside the folders the demo was given (a result names any path)."""
        from lookbench.results.provenance import Provenance, named_data

        data = named_data(Provenance(report.provenance).dataset)
        if isinstance(data, str) and Path(data).is_dir() and not any(
                Path(data).resolve().is_relative_to(folder) for folder in self.data_folders):
            raise ValueError(f"its data {shown(data)} lies outside the folders given to the demo (--results, --data)")
        return data

    @staticmethod
    def _thumbnails(choice, make) -> tuple[dict, str]:
        """``make()``'s thumbnails; failing, none and the line saying why (the records stand without their pictures)."""
        try:
            return make(), ""
        except Exception as err:
            log.warning("thumbnails of %s: %s", choice, " ".join(str(err).split())[:300])
            return {}, f"Images not shown: {' '.join(str(err).split())[:200]}"

    def browse(self, choice, subset=ALL, category=ALL, attribute=ALL):
        """The tab's answer: its line, the attribute error chart (of the subset chosen, else overall; ``None``: not
        in the result), the worst queries kept by the filters as HTML, and each filter's values."""
        from lookbench.results.plots import attribute_figure
        from lookbench.space.views import worst_html

        opened = self.open(choice)
        report = opened.report
        kept = filtered(report, subset, category, attribute)
        errors = report.attribute_errors.get("overall" if subset == ALL else subset)
        figure = attribute_figure(errors, "Attribute error rate@1, " + ("all subsets" if subset == ALL else subset)
                                  ) if errors else None  # the result's name is the line above it
        line = (f"**{markdown_safe(report.title)}** ({markdown_safe(choice)}): {report.evaluated} queries evaluated; "
                + ", ".join(f"{label} {value}" for label, value in report.headline[:-1])
                + f". The {len(report.queries)} worst (fine misses, by how far the first fine hit is): "
                + f"**{len(kept)}** kept by the filters" + (f", the first {SHOWN} shown" if len(kept) > SHOWN else "")
                + f"; top {TOP} results each.")
        if not errors:
            line += (" No attribute errors in this result (written before they were kept)." if errors is None else
                     " No query with attributes has a top-1 item of its category.")
        if opened.images:
            line += f" {markdown_safe(opened.images)}"
        if self.cut:
            line += f" Only the results in the first {MAX_FOLDERS:,} folders under the given one are offered."
        return line, figure, worst_html(kept[:SHOWN], opened.thumbnails, report.mode), filters(report)

    def open(self, choice) -> Opened:
        """The result ``choice`` (one of those offered now), or a ``ValueError`` with the one line the tab shows."""
        values = self.values()
        if choice not in values:
            raise ValueError(f"Unknown result {shown(choice)}; choose one of {', '.join(values)}" if values
                             else self.empty)
        key = self.stamp(choice)
        with self._lock:
            opened = self._opened.get(key)
        if opened is None:  # read outside the lock: one slow result never holds up another's page
            opened = self.keep(key, self.read(choice))
        return opened

    def keep(self, key: tuple, opened: Opened) -> Opened:
        """``opened`` kept under ``key`` (its choice's older ones dropped, at most ``MAX_OPENED`` in all)."""
        with self._lock:
            kept = {k: v for k, v in self._opened.items() if k[0] != key[0]}
            self._opened = dict(list(kept.items())[-(MAX_OPENED - 1):]) | {key: opened}
        return opened

    def answer(self, choice, subset=ALL, category=ALL, attribute=ALL):
        """The tab's outputs: its line, the attribute error chart, the worst queries kept by the filters (HTML) and
        the three filters (their values); anything wrong with the choice or the stored result is the line alone."""
        import gradio as gr

        try:
            line, figure, rows, values = self.browse(choice, subset, category, attribute)
        except ValueError as err:  # a bad choice, a result without saved rankings, a damaged file: one line
            message = " ".join(str(err).split())
            log.warning("refused: %s", message)  # bad input is expected: no traceback
            return (f"⚠️ {markdown_safe(message)}", None, "", *(gr.update(choices=[ALL], value=ALL) for _ in range(3)))
        except Exception as err:  # never a traceback in front of the user; the app keeps serving
            log.exception("opening %s failed", choice)
            return (f"⚠️ {markdown_safe(f'{choice} cannot be opened: {type(err).__name__}: {err}'[:400])}", None, "",
                    *(gr.update(choices=[ALL], value=ALL) for _ in range(3)))
        chosen = {"subset": subset, "category": category, "attribute": attribute}
        return (line, figure, rows, *(gr.update(choices=[ALL, *values[name]], value=chosen[name])
                                      for name in ("subset", "category", "attribute")))

    def offer(self, current=None):
        """The results offered now as the dropdown's update (a board's change as it judges): ``current`` kept while
        it is still offered, else the first."""
        import gradio as gr

        values = self.values()
        return gr.update(choices=self.listing(), value=current if current in values else next(iter(values), None))

    def tab(self, tab) -> None:
        """The tab's components and events, inside ``tab`` (a ``gr.Tab`` of any Blocks: the demo's, or a board's
        over its submissions). Its API: ``/your_results`` (result, subset, category, attribute)."""
        import gradio as gr

        gr.Markdown(self.INTRO)
        listing = self.listing()
        with gr.Row():
            # a row of its own on a phone (its name is a path): at half a 390 px screen it was cut off
            stored = gr.Dropdown(listing, value=next(iter(self.values()), None), label="Stored result",
                                 elem_id="your-result", scale=2, min_width=280)
            filters = [gr.Dropdown([ALL], value=ALL, label=name.title(), elem_id=f"your-{name}")
                       for name in ("subset", "category", "attribute")]
        note = gr.Markdown("" if listing else f"⚠️ {markdown_safe(self.empty)}", elem_id="your-note")
        with gr.Row(equal_height=False):  # the chart beside the worst queries, stacked on a phone
            with gr.Column(scale=2, min_width=320):
                chart = gr.Plot(label="Attribute error rate@1", elem_id="your-chart")
            with gr.Column(scale=3, min_width=340):
                rows = gr.HTML(elem_id="your-queries")
        browse = dict(fn=self.answer, outputs=[note, chart, rows, *filters], preprocess=False)
        # Another result: every filter back to all; the tab opened: the results offered now, the chosen one browsed;
        # a filter: the result filtered.
        stored.input(**browse, inputs=stored, api_name=False)
        tab.select(self.offer, stored, stored, api_name=False).then(**browse, inputs=stored, api_name=False)
        for name, control in zip(("your_results", False, False), filters):
            control.input(**browse, inputs=[stored, *filters], api_name=name)


def filtered(report: Report, subset=ALL, category=ALL, attribute=ALL) -> list:
    """The worst queries kept by the filters (``ALL``: any); a value the report does not have is a ``ValueError``."""
    options = filters(report)
    for name, value in (("subset", subset), ("category", category), ("attribute", attribute)):
        if value not in (ALL, *options[name]):
            raise ValueError(f"Unknown {name} {shown(value)} in this result; choose one of "
                             f"{', '.join([ALL, *options[name]])}")
    return [w for w in report.queries if subset in (ALL, w.subset) and category in (ALL, w.category)
            and (attribute == ALL or attribute in w.attribute_names())]


def filters(report: Report) -> dict[str, list[str]]:
    """Each filter's values: those of the worst queries shown (as the report's filters offer them)."""
    return {"subset": list(dict.fromkeys(w.subset for w in report.queries)),
            "category": sorted({w.category for w in report.queries}),
            "attribute": sorted({a for w in report.queries for a in w.attribute_names()})}
