"""The board's "Your results" tab: a submission verified from its rankings, browsed as the demo browses a stored run
(its attribute errors, its worst queries with their marked top results), with nothing shown that the judge did not
recompute.

Only rows shown ``BROWSABLE`` (consistent, or reproduced) are offered: re-judged on public labels (a sealed
release's stay closed until it is unsealed) and bound to the folder that names them. One is opened by verifying it again in a child process
under the judge's budgets (``judging.Judge.run``), so no visitor can make the board's own process load data or hold
memory: its files must be those the verdict was for (the same key), and the records are the judge's on the data it
judged (``lookbench.report.records.judged_queries``): marks, annotations and headline scores recomputed, never read
from the submission; its similarity scores are not shown, as no one checked them. Each is made once per key (a
second request for it waits for the first; others go on) and kept while its key is (``yours.MAX_OPENED`` of them).
"""
from __future__ import annotations

import json
import sys
import tempfile
import threading
from pathlib import Path

from lookbench.errors import shown
from lookbench.files import read_regular
from lookbench.results.trust import CONSISTENT, REPRODUCED
from lookbench.space.board.judging import Judge, limit_memory, out_of_memory
from lookbench.space.yours import TOP, WORST, Opened, YourResults

BROWSABLE = (REPRODUCED, CONSISTENT)  # the rows whose records may be shown: re-judged on public labels
MAX_RECORDS_BYTES = 64 << 20  # a child's answer: the records of WORST queries and their thumbnails (a few MB)


class SubmittedResults(YourResults):
    """"Your results" over ``board``'s copy of the results repo (``lookbench.space.board.app.Board``), each opened
    by ``judge`` (default: the environment's budgets on the board's data)."""

    INTRO = (f"A submission of this board whose claimed scores follow from its rankings (verified **{CONSISTENT}** or "
             "better), re-judged here on the data it names: its attribute errors and its worst queries, as "
             "`lookbench explain --report` shows a run. Marks, annotations and scores are the judge's; the "
             "submitted similarity scores are not shown (no one checks them). Sealed releases open once unsealed.")

    def __init__(self, board, judge: Judge | None = None):
        super().__init__(None)
        self.board = board
        self.judge = judge or Judge.from_environment(board.allowed)
        self._making: dict[tuple, threading.Lock] = {}  # per (submission, key): each made once, others meanwhile

    @property
    def empty(self) -> str:
        return ("No submission verified from its rankings yet: one opens here once the board has judged it "
                f"{CONSISTENT} (Refresh on the Leaderboard tab shows the verdicts).")

    def _offered(self) -> dict:
        """The submissions offered now, by folder (relative to the copy)."""
        return {s.folder: s for s in self.board.loaded().submissions if s.shown in BROWSABLE}

    def listing(self) -> list:
        return [(f"{s.model} — {s.shown} ({s.folder})", s.folder) for s in self._offered().values()]

    def stamp(self, choice) -> tuple:
        return choice, self._offered()[choice].verdict.key

    def read(self, choice) -> Opened:
        submission, folder = self._offered()[choice], self.board.state.copy.folder
        key = (choice, submission.verdict.key)
        with self._lock:
            making = self._making.setdefault(key, threading.Lock())
        with making:  # a second request for the same submission waits for the first's records
            with self._lock:
                made = self._opened.get(key)
            if made is not None:
                return made
            answer = self._made(folder / choice, submission.verdict.key, submission.model)
            if "error" in answer:
                raise ValueError(f"{shown(choice)}: {answer['error']}")
            from lookbench.report.records import Report

            return self.keep(key, Opened(Report.from_json(answer["report"]), answer["thumbnails"], answer["images"]))

    def _made(self, folder: Path, key: str, label: str) -> dict:
        """``records_child``'s answer for the submission in ``folder`` (shown as ``label``, its row's name, never the
        model its file claims), or ``{"error": line}``."""
        with tempfile.TemporaryDirectory(prefix="lookbench-records-") as tmp:
            out = Path(tmp) / "records.json"
            status, tail = self.judge.run(f"{__name__}:records_child", [
                str(folder), json.dumps(sorted(self.judge.allowed)), str(self.judge.memory_bytes), key, label, str(out)], Path(tmp))
            if status is None:
                return {"error": self.judge.over_time()}
            try:
                answer = json.loads(read_regular(out, MAX_RECORDS_BYTES))
                return {"error": self.judge.over_memory()} if answer.get("over") == "memory" else answer
            except (OSError, ValueError):
                return {"error": self.judge.over_memory() if out_of_memory(tail) else
                        f"its records could not be made (exit status {status})"}


def records_child(argv: list[str]) -> None:
    """The child's work: verify the submission again, then its records and thumbnails, written to the last argument
    as JSON (``Report.to_json``), or ``{"error": line}``."""
    from lookbench.report import records
    from lookbench.submissions.verify import verify_submission

    folder, allowed, memory, key, label, out = argv
    limit_memory(memory)
    try:
        verification = verify_submission(Path(folder), allowed=set(json.loads(allowed)))
        if verification.key != key:
            answer = {"error": "its files changed since the board judged them; Refresh to judge them again"}
        elif not verification.verified or verification.judged is None:
            answer = {"error": f"it does not verify here: {'; '.join(verification.reasons)[:300]}"}
        else:
            report = records.judged_queries(verification, TOP, WORST, label)
            thumbnails, images = YourResults._thumbnails(
                folder, lambda: records.thumbnails(report, bench=verification.judged.bench))
            answer = {"report": report.to_json(), "thumbnails": thumbnails, "images": images}
    except MemoryError:
        answer = {"over": "memory"}
    except Exception as err:  # the parent shows the line; the log keeps the rest
        answer = {"error": f"its records could not be made ({type(err).__name__}: {' '.join(str(err).split())[:200]})"}
        print(f"records failed: {type(err).__name__}: {err}", file=sys.stderr)
    Path(out).write_text(json.dumps(answer))
