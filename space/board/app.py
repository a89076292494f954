"""LookBench leaderboard Space: the published rows beside the community's, every submission re-scored from its rankings.

docs/architecture.md §5. At start and on **Refresh** it copies the results repo (``lookbench/results``, a Hub dataset
of pull-requested submissions: ``lookbench submit``), verifies each submission once (``lookbench.space.board.repo``),
and ranks everything with ``lookbench.leaderboard`` — ci95, rank groups, per subset and per release, the plot — with
filters on open weights, size and declared training cutoff (``lookbench.space.board.facts``). Runs as ``python app.py``
in the staged Space, which carries the ``lookbench`` package it imports, and as ``python -m lookbench.space.board.app``.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

import gradio as gr

from lookbench.leaderboard.ranking import leaderboard
from lookbench.leaderboard.render import GROUPS_NOTE, VERIFIED_NOTE, markdown_safe
from lookbench.schema import TEST_SUBSETS
from lookbench.settings import DEFAULT_REFERENCE, METRICS
from lookbench.space.board.facts import ANY_SIZE, FILTERS_NOTE, SIZES, Facts, keeps, of_result, registered
from lookbench.space.board.repo import SUBMISSIONS, Copy, Verdict, Verdicts, fetch, submission_folders

CONCURRENCY = 2
OVERALL = "overall"
log = logging.getLogger("lookbench.space.board")

INTRO = """# LookBench leaderboard
The published LookBench leaderboard beside the community's submissions. A submission is a result **with its
rankings** (`lookbench submit`, a pull request on the results repo); this Space re-judges every ranked item against the
data's own ground truth and recomputes every score it claims (`lookbench verify`), so a score cannot be typed in.
Rows that do not verify are shown as such and never ranked among verified ones."""


@dataclass(frozen=True)
class Submission:
    """One submission of the copy: its folder (relative to the copy), the row label its result gets, its verdict and
    its model's facts."""

    folder: str
    model: str
    verdict: Verdict
    facts: Facts = field(default_factory=Facts)


@dataclass(frozen=True)
class State:
    """What one refresh found; replaced whole by the next, so a request always reads one consistent state."""

    copy: Copy
    submissions: tuple[Submission, ...] = ()

    @property
    def verdicts(self) -> dict[str, str]:
        """Submission folder (as the leaderboard walks to it) -> its verified text."""
        return {s.verdict.folder: s.verdict.text for s in self.submissions}


class Board:
    """The Space over one results repo; its handlers are plain methods (the tests call them too)."""

    def __init__(self, repo_id: str | None = None, folder=None, reference: str = DEFAULT_REFERENCE,
                 verdicts: Verdicts | None = None):
        self.repo_id, self.folder, self.reference = repo_id, folder, reference
        self.verdicts = verdicts if verdicts is not None else Verdicts()
        self.state = State(Copy(None, "the results repo", "not read yet"))
        self._refreshing = threading.Lock()

    def refresh(self) -> str:
        """Copy the results repo again and verify what is new (one refresh at a time); the status line."""
        with self._refreshing:
            copy = fetch(self.repo_id, self.folder)
            submissions = []
            if copy.folder is not None:
                try:
                    folders = submission_folders(copy.folder)
                except ValueError as err:
                    copy, folders = Copy(None, copy.source, str(err)), []
                submissions = [self._submission(copy, folder) for folder in folders]
            self.state = State(copy, tuple(submissions))
        return self.status()

    def _submission(self, copy: Copy, folder) -> Submission:
        from lookbench.leaderboard.load import FAILED, entry_from_result
        from lookbench.results.store import read_json
        from lookbench.submissions.verify import RESULT_NAME

        verdict = self.verdicts.verify(folder)
        relative = folder.relative_to(copy.folder).as_posix()
        try:
            result = read_json(folder / RESULT_NAME, relative)
            label = entry_from_result(result, relative, FAILED).model  # its row's label, whatever it claims
            return Submission(relative, label, verdict, of_result(result))
        except ValueError:  # the verdict names what is wrong with it
            return Submission(relative, relative, verdict)

    def status(self) -> str:
        state = self.state
        if state.copy.folder is None:
            return f"⚠️ {markdown_safe(state.copy.problem)}: showing the published rows only."
        counts = {}
        for s in state.submissions:
            counts[s.verdict.status] = counts.get(s.verdict.status, 0) + 1
        told = ", ".join(f"{n} {status}" for status, n in counts.items())
        return (f"Results from {markdown_safe(state.copy.source)}: {len(state.submissions)} submission(s)"
                + (f" — verified: {told}." if told else "."))

    def _verified(self, folder) -> str:
        """The verified text of a submission folder: this refresh's verdict, else (a folder the refresh did not see)
        the kept one or a new check."""
        known = self.state.verdicts.get(str(folder))
        return known if known is not None else self.verdicts.verify(folder).text

    def facts(self, model: str) -> Facts | None:
        """A row's facts: a submission's (by its row label), else the registry's (a published or registered model)."""
        found = [s.facts for s in self.state.submissions if s.model == model]
        return found[0] if found else registered(model)

    def board(self, metric, k, subset, by_release=False, open_weights=False, size=ANY_SIZE, trained_before=""):
        """The ranked sections, filtered; a bad metric, K, subset, size or date is a ``ValueError`` with the message."""
        from lookbench.filtering import to_utc

        if size not in SIZES:
            raise ValueError(f"size must be one of {', '.join(SIZES)}, got {str(size)[:40]!r}")
        if not isinstance(k, (int, float)) or isinstance(k, bool) or int(k) != k:
            raise ValueError(f"K must be a whole number, got {str(k)[:40]!r}")
        trained_before = (trained_before or "").strip() or None
        if trained_before:
            to_utc(trained_before)
        copy = self.state.copy
        results = copy.folder / SUBMISSIONS if copy.folder is not None and (copy.folder / SUBMISSIONS).is_dir() else None
        ranked = leaderboard(results=results, reference=self.reference, metric=metric, k=int(k),
                             subset=None if subset in (None, OVERALL) else subset, by_release=bool(by_release),
                             verify=self._verified)
        for section in ranked.sections:
            section.rows = [r for r in section.rows if keeps(self.facts(r["model"]), bool(open_weights), size, trained_before)]
        return ranked

    def submissions(self) -> list[list[str]]:
        """Every submission of the copy with its verdict (the Submissions table)."""
        return [[s.model, s.folder, s.verdict.text] for s in self.state.submissions]

    def api_board(self, metric: str = "fine", k: int = 1, subset: str = OVERALL, by_release: bool = False,
                  open_weights: bool = False, size: str = ANY_SIZE, trained_before: str = "") -> dict:
        """The board as data (``/leaderboard``): the sections, their rows, the skipped files and every submission's
        verdict; a bad control is ``{"error": message}``."""
        try:
            ranked = self.board(metric, k, subset, by_release, open_weights, size, trained_before)
        except ValueError as err:
            return {"error": str(err)}
        return {"status": self.status(),
                "sections": [{"title": s.title, "source": s.source, "columns": s.columns, "rows": s.rows}
                             for s in ranked.sections],
                "skipped": ranked.skipped,
                "submissions": [{"folder": s.folder, "model": s.model, "verified": s.verdict.text}
                                for s in self.state.submissions]}

    def blocks(self) -> gr.Blocks:
        with gr.Blocks(title="LookBench leaderboard") as demo:
            gr.Markdown(INTRO)
            with gr.Row():
                status = gr.Markdown(self.status, elem_id="status")  # a callable: read at each page load
                refresh = gr.Button("Refresh", scale=0, elem_id="refresh")
            with gr.Row():
                metric = gr.Radio(list(METRICS), value="fine", label="Metric")
                k = gr.Dropdown([1, 5, 10, 20], value=1, label="K")
                subset = gr.Dropdown([OVERALL, *TEST_SUBSETS], value=OVERALL, label="Subset", elem_id="subset")
                by_release = gr.Checkbox(False, label="Per release (the score on each release's queries)")
            with gr.Row():
                open_weights = gr.Checkbox(False, label="Open weights only", elem_id="open-weights")
                size = gr.Dropdown(list(SIZES), value=ANY_SIZE, label="Size (parameters)", elem_id="size")
                trained_before = gr.Textbox(label="Declared training cutoff on or before", placeholder="e.g. 2024-06-01",
                                            elem_id="trained-before")
            generation = gr.State(0)  # moved on by each refresh, so the tables are drawn again

            @gr.render(inputs=[metric, k, subset, by_release, open_weights, size, trained_before, generation])
            def _board(*controls):
                try:
                    ranked = self.board(*controls[:-1])
                except ValueError as err:
                    gr.Markdown(f"⚠️ {markdown_safe(err)}")
                    return
                for section in ranked.sections:
                    gr.Markdown(f"### {markdown_safe(section.title)}")
                    if section.rows:
                        gr.Dataframe(_frame(section), interactive=False, elem_classes=["board-table"])
                    else:
                        gr.Markdown("No row of this table passes the filters.")
                    gr.Markdown(f"Source: {markdown_safe(section.source)}")
                gr.Markdown(f"{GROUPS_NOTE}\n\n{VERIFIED_NOTE}\n\n{FILTERS_NOTE}")
                for line in ranked.skipped:
                    gr.Markdown(f"Skipped: {markdown_safe(line)}")
                if ranked.sections:
                    gr.Plot(ranked.figure(), label="The ranked score with its 95% interval")

            with gr.Accordion("Submissions and their verification", open=True):
                table = gr.Dataframe(self.submissions, headers=["model", "submission", "verified"], interactive=False,
                                     elem_id="submissions")

            def _refresh(count):
                return self.refresh(), count + 1, self.submissions()

            refresh.click(_refresh, generation, [status, generation, table], api_name="refresh")
            gr.api(self.api_board, api_name="leaderboard")
        demo.queue(default_concurrency_limit=CONCURRENCY, max_size=64)
        return demo

    def launch(self, host=None, port=None, **kwargs):
        """``host`` None: gradio's GRADIO_SERVER_NAME, else 127.0.0.1 (loopback)."""
        return self.blocks().launch(server_name=host, server_port=port, show_error=True, **kwargs)


def _frame(section):
    """The section's DataFrame with the verified column beside the model, where a reader looks first."""
    frame = section.frame()
    frame.insert(frame.columns.get_loc("model") + 1, "verified", frame.pop("verified"))
    return frame


def serve(host=None, port=None, repo_id=None, folder=None, **launch_kwargs):
    """Copy and verify the results repo, then serve the board."""
    board = Board(repo_id, folder)
    log.info(board.refresh())
    return board.launch(host=host, port=port, **launch_kwargs)


if __name__ == "__main__":  # as a Hub Space: gradio reads GRADIO_SERVER_NAME / GRADIO_SERVER_PORT
    serve()
