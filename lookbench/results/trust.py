"""The trust ladder: what a leaderboard row's ``verified`` column can say, strongest first, what each level proves,
and what follows from it — kept by ``--trusted``, placing a row, the block of its group it is ranked in.

The one place the levels are named: the leaderboard (loading, ranking, its footer), the board (intro, legend,
status line, "Your results") and the docs (docs/submitting.md, "What each trust level proves", checked by
tests/results/test_trust.py) all read them here, so no two can disagree. DESIGN §8.
"""
from __future__ import annotations

from dataclasses import dataclass

REPRODUCED, SCORED_SEALED, CONSISTENT, PENDING, NOT_CHECKED, PUBLISHED = (
    "reproduced", "scored (sealed)", "consistent", "pending", "not checked", "published")
NO = "no"  # a failed check's word in the board's status line
# A row read back from the Hub's own leaderboard (a model repo's .eval_results): a claim no one re-scored here, never
# merged into a row LookBench checked (docs/results-and-leaderboard.md).
HUB_COMMUNITY = f"{NOT_CHECKED}: Hub community result"
FAILED = f"{NO}: "  # a failed check reads FAILED + its reason; "not checked" may be followed by ": <reason>" too
# A sealed submission past its submitter's cap on the release (the board's card, ``lookbench_sealed_cap``): not scored.
OVER_CAP = f"{PENDING}: over the cap"


@dataclass(frozen=True)
class Level:
    """One value of the verified column. ``standing`` is the block of its comparable group a row is ranked in
    (``BLOCKS``), so an unverified row is never ranked above a verified one."""

    name: str  # as the column shows it (a failed check: FAILED + its reason)
    meaning: str  # one line: the board's legend and the leaderboard's footer (``VERIFIED_NOTE``)
    standing: int
    trusted: bool = False  # more than arithmetic on public labels: what ``--trusted`` keeps
    places: bool = False  # a verdict that places its row by the fields verify recomputed from the data
    verdict: bool = True  # a judge's verdict can say it (reproduced needs a record, published is the paper's)

    @property
    def word(self) -> str:
        """The level as the board's status line counts it (a failed check's reason left out)."""
        return NO if self.name.startswith(FAILED) else self.name


# What a row can prove, strongest first. A failed check is listed apart; a row whose text names no level (a
# "not checked: <reason>") stands with NOT_CHECKED.
LADDER = (
    Level(REPRODUCED, "the model at its pinned commit was re-run on the same data and its rankings agree (top-1 "
                      "agreement >= 98%, every claimed score inside the re-run's 95% interval), recomputed from both "
                      "rankings for this submission's exact files, from a record signed by a maintainer key the "
                      "leaderboard's card lists that names the submission's model, commit, data and settings",
          standing=0, trusted=True, verdict=False),
    Level(SCORED_SEALED, "the leaderboard scored the rankings while the release's labels were held back: no one "
                         "outside could fit them; it needs no training cutoff to be clean. While sealed it shows the "
                         "overall scores on the shown half of the queries only, to one decimal; once unsealed it is "
                         "ranked by the held half",
          standing=0, trusted=True, places=True),
    Level(CONSISTENT, "the claimed scores follow from the submitted rankings on the data's public labels (lookbench "
                      "verify): arithmetic, not a model; rankings made from the labels themselves are consistent too",
          standing=0, places=True),
    Level(PENDING, "a submission not judged yet, or (over the cap) a sealed release's submission past its "
                   "submitter's cap of scored submissions on that release, not scored while it is sealed", standing=1),
    Level(NOT_CHECKED, "not re-scored from rankings (a stored result; a submission over the board's time or memory "
                       "budget, or naming data other than the benchmark's own): ranked only among the not-checked "
                       "rows of its group, below the rows above", standing=1),
    Level(FAILED + "<reason>", "a check failed (its outcomes or rankings do not give the scores it claims, or it "
                               "cannot be read or scored): listed apart, unranked, with the score it claims and no "
                               "interval", standing=2),
)
# The paper's figures: ranked with the verified rows, though nothing of them was checked (no rankings were published).
FIGURES = Level(PUBLISHED, "the paper's figures as published, not checked", standing=0, verdict=False)
LEVELS = (*LADDER, FIGURES)
_BY_NAME = {lv.name: lv for lv in LEVELS}
_FAILED_LEVEL = next(lv for lv in LADDER if lv.name.startswith(FAILED))
_NOT_CHECKED_LEVEL = _BY_NAME[NOT_CHECKED]

TRUSTED = tuple(lv.name for lv in LEVELS if lv.trusted)
PLACED = tuple(lv.name for lv in LEVELS if lv.places)
# The blocks of a comparable group, by standing: the title each adds after the group's label when an earlier block
# precedes it (the last, unranked, always says what it is).
BLOCKS = ("", f" — {NOT_CHECKED} (ranked among themselves, below the verified and published rows)",
          " — not verified (a check failed: unranked)")
VERIFIED_NOTE = "verified, strongest first:\n" + "\n".join(f"- {lv.name}: {lv.meaning}" for lv in LEVELS)


def level(text: str) -> Level:
    """The level a verified column's ``text`` stands at: the one it names, a failed check for FAILED + a reason,
    pending for ``pending: <reason>`` (``OVER_CAP``), else not checked (``not checked: <reason>``, or any text that
    names no level)."""
    if text.startswith(FAILED):
        return _FAILED_LEVEL
    if text.startswith(f"{PENDING}: "):
        return _BY_NAME[PENDING]
    return _BY_NAME.get(text, _NOT_CHECKED_LEVEL)


def verdict_status(text: str) -> str:
    """A judge's verdict ``text`` as one word: consistent, scored (sealed), no, pending or not checked — a level no
    judge gives (reproduced, published) is not checked."""
    found = level(text)
    return found.word if found.verdict else NOT_CHECKED
