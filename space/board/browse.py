"""The board's "Your results" tab: a submission verified from its rankings, browsed as the demo browses a stored run
(its attribute errors, its worst queries with their marked top results), with nothing shown that was not checked.

Only submissions whose verdict is **consistent** are offered (re-judged on public labels; a sealed release's stay
closed until it is unsealed). One is opened by verifying it again here: its files must be those the verdict was for
(the same key), and the records are the judge's on the data it judged (``lookbench.report.records.judged_queries``):
marks, annotations and headline scores recomputed, never read from the submission; its similarity scores are not
shown, as no one checked them.
"""
from __future__ import annotations

from lookbench.errors import shown
from lookbench.leaderboard.load import VERIFIED
from lookbench.space.yours import TOP, WORST, Opened, YourResults


class SubmittedResults(YourResults):
    """"Your results" over ``board``'s copy of the results repo (``lookbench.space.board.app.Board``)."""

    INTRO = ("A submission of this board whose claimed scores follow from its rankings (verified **consistent** or "
             "better), re-judged here on the data it names: its attribute errors and its worst queries, as "
             "`lookbench explain --report` shows a run. Marks, annotations and scores are the judge's; the "
             "submitted similarity scores are not shown (no one checks them). Sealed releases open once unsealed.")

    def __init__(self, board):
        super().__init__(None)
        self.board = board

    @property
    def empty(self) -> str:
        return ("No submission verified from its rankings yet: one opens here once the board has judged it "
                "consistent (Refresh on the Leaderboard tab shows the verdicts).")

    def _offered(self) -> dict:
        """The submissions offered now, by folder (relative to the copy): those verified on public labels."""
        return {s.folder: s for s in self.board.loaded().submissions if s.verdict.text == VERIFIED}

    def listing(self) -> list:
        return [(f"{s.model} — {s.trust or s.verdict.text} ({s.folder})", s.folder) for s in self._offered().values()]

    def stamp(self, choice) -> tuple:
        return choice, self._offered()[choice].verdict.key

    def read(self, choice) -> Opened:
        from lookbench.report import records
        from lookbench.submissions.verify import verify_submission

        submission, folder = self._offered()[choice], self.board.state.copy.folder
        verification = verify_submission(folder / choice, allowed=self.board.allowed)
        if verification.key != submission.verdict.key:
            raise ValueError(f"{shown(choice)}: its files changed since the board judged them; Refresh to judge them again")
        if not verification.verified:  # the judge's verdict stands for the files it judged; this is another run of it
            raise ValueError(f"{shown(choice)} does not verify here: {'; '.join(verification.reasons)[:300]}")
        report = records.judged_queries(verification, TOP, WORST)
        return Opened(report, *self._thumbnails(
            choice, lambda: records.thumbnails(report, bench=verification.judged.bench)))
