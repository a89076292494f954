"""LookBench leaderboard Space: the published rows beside the community's, every submission re-scored from its rankings.

docs/architecture.md §5. It serves at once; at start and on **Refresh** it copies the results repo
(``lookbench/results``, a Hub dataset of pull-requested submissions: ``lookbench submit``), and judges each submission
it has no verdict for in the background, one at a time, each in a child process with a time and a memory budget
(``lookbench.space.board.judging``; verdicts kept by the key of the files: ``lookbench.space.board.repo``); until then
its row is pending. Everything is ranked with ``lookbench.leaderboard`` — ci95, rank groups, per subset and per
release, the plot — with filters on open weights, size and declared training cutoff (``lookbench.space.board.facts``)
and on zero-shot rows (``Leaderboard.zero_shot``).
Runs as ``python app.py`` in the staged Space, which carries the ``lookbench`` package it imports, and as
``python -m lookbench.space.board.app``.
"""
from __future__ import annotations

import logging
import math
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import gradio as gr

from lookbench.leaderboard.load import Verdict, load_store
from lookbench.leaderboard.ranking import Leaderboard, leaderboard
from lookbench.results.provenance import UNSEALED, Provenance, is_sealed
from lookbench.results.trust import (CONSISTENT, FAILED, NO, NOT_CHECKED, OVER_CAP, PENDING, REPRODUCED, SCORED_SEALED,
                                     TRUSTED, verdict_status)
from lookbench.terminal import markdown_safe
from lookbench.schema import TEST_SUBSETS
from lookbench.settings import DEFAULT_REFERENCE, METRICS
from lookbench.space.board.facts import ANY_SIZE, SIZES, Facts, keeps, of_entry, registered
from lookbench.space.board.judging import Judge, allowed_data, can_read_labels, labels_pins, sealed_cap
from lookbench.space.board import page
from lookbench.space.board.repo import SUBMISSIONS, Copy, Verdicts, fetch, submitter
from lookbench.space.views import CSS, KS, OVERALL
from lookbench.submissions.signing import card_keys

CARD = Path(__file__).with_name("README.md")  # the Space card beside the app: its lookbench_data is what it may load
MAX_RANKED = 128  # ranked boards kept per load (one per set of controls; the warmed views are 60)
REFRESH_EVERY = 30.0  # seconds between two refreshes a visitor or an API call can ask for
LOAD_WAIT = 5.0  # seconds a request waits for a load in progress before it reads the previous one
log = logging.getLogger("lookbench.space.board")

# The status line's counts, in its order: pending last, with how it is judged.
COUNTED = (REPRODUCED, SCORED_SEALED, CONSISTENT, NO, NOT_CHECKED, PENDING)


@dataclass(frozen=True)
class Submission:
    """One submission of the copy: its folder (relative to the copy), the row label its result gets, its verdict and
    its model's facts."""

    folder: str
    model: str
    verdict: Verdict
    facts: Facts = field(default_factory=Facts)
    trust: str = ""  # what the row's verified column shows: the verdict's text, or REPRODUCED over a consistent one

    @property
    def shown(self) -> str:
        """What the row's verified column shows: its trust, which may be lower than the judge's verdict (a row whose
        folder names another model than its result fails, however consistent its scores)."""
        return self.trust or self.verdict.text

    @property
    def status(self) -> str:
        """The row's trust as the status line counts it (one of ``COUNTED``): a trusted level, else the verdict's
        word (``trust.verdict_status``)."""
        return self.shown if self.shown in TRUSTED else verdict_status(self.shown)


@dataclass(frozen=True)
class State:
    """What one refresh found; replaced whole by the next (``generation`` counts them), so a request always reads
    one consistent state."""

    copy: Copy
    generation: int = 0


@dataclass(frozen=True)
class Loaded:
    """``load_store``'s reading of one state's copy with the verdicts of one moment (``at``: generation, verdict
    count): read and hashed once, ranked for every render until either changes."""

    at: tuple[int, int]
    entries: tuple = ()
    skipped: tuple[str, ...] = ()
    submissions: tuple[Submission, ...] = ()
    facts: dict = field(default_factory=dict)  # row label -> Facts
    ranked: dict = field(default_factory=dict)  # controls -> Leaderboard, filled as renders ask (Board.board)


def recheck(earlier: Verdict, now: Verdict) -> Verdict:
    """``earlier`` (scored while sealed) against ``now``: once the release is unsealed, the scores it published must
    be those the public labels give; a difference is the row's verdict, never hidden. Still sealed, or not judged
    now: ``earlier`` stands."""
    if now.text != SCORED_SEALED or (now.placement or {}).get("labels") != UNSEALED:
        return earlier
    if now.scores == earlier.scores:
        return replace(now, submitter=earlier.submitter)
    then, later = (v.scores["overall"]["fine_recall"]["@1"] for v in (earlier, now))
    return Verdict(f"{FAILED}{SCORED_SEALED} overall fine_recall@1 {then:.6f} while sealed; its unsealed labels give "
                   f"{later:.6f}", earlier.key)


class Board:
    """The Space over one results repo; its handlers are plain methods (the tests call them too). ``judge``
    (``(folder, key) -> Verdict``, default ``Judge`` with the environment's budgets and the card's data) runs in one
    background thread; ``allowed``: the Hub datasets it may load (default: the card's ``lookbench_data``); ``cap``:
    the sealed submissions scored per submitter and release (default: the card's ``lookbench_sealed_cap``); ``keys``:
    the keys whose signed reproduction records count (``signing.trusted_keys``; default: the card's
    ``reproduction_keys``)."""

    def __init__(self, repo_id: str | None = None, folder=None, reference: str = DEFAULT_REFERENCE,
                 verdicts: Verdicts | None = None, judge=None, allowed=None, cap: int | None = None,
                 keys: dict | None = None, hub: str | None = None):
        self.repo_id, self.folder, self.reference = repo_id, folder, reference
        self.cap = sealed_cap(CARD) if cap is None else cap
        # ``hub``: the Benchmark dataset whose Hub leaderboard rows are shown beside, not checked (read at refresh)
        self.hub, self._hub_rows, self._hub_problem = hub, (), None
        self.verdicts = verdicts if verdicts is not None else Verdicts()
        self.allowed = allowed = allowed_data(CARD) if allowed is None else allowed
        self.keys = card_keys(CARD) if keys is None else keys
        self.judge = judge or Judge.from_environment(allowed)
        # Sealed submissions are scored only with a token to read the pinned labels; without one they stay pending.
        self.sealed_unreadable = bool(labels_pins(allowed)) and not can_read_labels()
        self.state = State(Copy(None, "the results repo", "not read yet"))
        self._refreshing, self._loading, self._lock = threading.Lock(), threading.Lock(), threading.Lock()
        self._changes = 0  # verdicts that arrived: a new one re-reads the copy at the next request
        self._transient: dict[str, Verdict] = {}  # this refresh's verdicts that are not kept (tried again next time)
        self._queued: set[str] = set()  # keys waiting for the judge or being judged
        self._rechecked: set[str] = set()  # SCORED_SEALED verdicts judged again since this start
        self._queue: queue.Queue = queue.Queue()
        self._worker: threading.Thread | None = None
        self._loaded = Loaded((-1, -1))
        self._snapshots: dict = {}  # this refresh's submissions, read and hashed once: folder -> (key, result)
        self._warming = False  # a thread ranks the other views (``_warm``), when ``warm_views`` (the served Space)
        self.warm_views = False
        self._load_waited = False  # a request gave up waiting for the load in progress (``loaded``)
        self._refreshed_at = float("-inf")  # when the last refresh ended (``refresh_from_page``)

    def refresh(self) -> str:
        """Copy the results repo again and queue what has no verdict (one refresh at a time); the status line."""
        with self._refreshing:
            copy = fetch(self.repo_id, self.folder)
            self._read_hub()
            with self._lock:
                self._transient.clear()
                self._snapshots = {}
                self.state = State(copy, self.state.generation + 1)
            loaded = self.loaded(wait=None)
            if copy.folder is not None:
                self.verdicts.retain(s.verdict.key for s in loaded.submissions)
        self._refreshed_at = time.monotonic()
        self._warm()
        return self.status()

    def _read_hub(self) -> None:
        """The Hub's own leaderboard rows of ``hub`` (``lookbench.leaderboard.hub_rows``), kept until the next refresh;
        a failed read keeps none and says why in the status line."""
        if self.hub is None:
            return
        from lookbench.leaderboard.hub_rows import read_leaderboard

        try:
            self._hub_rows, self._hub_problem = tuple(read_leaderboard(self.hub)), None
        except ValueError as err:
            self._hub_rows, self._hub_problem = (), str(err)

    def refresh_from_page(self) -> str:
        """The Refresh button and ``/refresh``, open to anyone: a refresh re-reads and re-hashes the whole copy, so at
        most one per ``REFRESH_EVERY`` seconds; within it, the status line as it is."""
        if time.monotonic() - self._refreshed_at < REFRESH_EVERY:
            return self.status()
        return self.refresh()

    def _warm(self) -> None:
        """Rank the page's first view now, off any request (a visitor's render then reads it, ``Loaded.ranked``), and
        in a background thread every other view the page offers (each metric, K and scope; per release on request), so
        no visitor waits for a ranking."""
        try:
            self.board("fine", 1, OVERALL)
        except ValueError as err:  # nothing to rank yet, said on the page when asked
            log.info("nothing ranked yet: %s", err)
            return
        with self._lock:
            if self._warming or not self.warm_views:
                return
            self._warming = True
        threading.Thread(target=self._warm_views, name="board-warm", daemon=True).start()

    def warmed(self, timeout: float) -> bool:
        """Wait until no view is being ranked in the background (at most ``timeout`` seconds); whether none is."""
        deadline = time.monotonic() + timeout
        while self._warming and time.monotonic() < deadline:
            time.sleep(0.05)
        return not self._warming

    def _warm_views(self) -> None:
        views = [(metric, k, scope) for scope in (OVERALL, *TEST_SUBSETS) for metric in METRICS for k in KS]
        try:
            for view in views:
                try:
                    self.board(*view)
                except ValueError:  # a K or metric no row has
                    continue
        finally:
            with self._lock:
                self._warming = False

    def _verdict(self, folder: Path, key: str) -> Verdict:
        """``load_store``'s ``verify``: the verdict kept for exactly these files, else PENDING (queued for judging)."""
        with self._lock:
            known = self.verdicts.get(key) or self._transient.get(key)
            if known is not None:
                if known.scored_while_sealed and key not in self._rechecked:  # judged again once per start: unsealed since?
                    self._rechecked.add(key)
                    self._enqueue(folder, key)
                return known
            if self.sealed_unreadable and is_sealed(self._snapshots.get(folder, (None, {}))[1]):
                return Verdict(PENDING, key)  # never queued: no token to read its labels (the status line says so)
            self._enqueue(folder, key)
        return Verdict(PENDING, key)

    def _enqueue(self, folder: Path, key: str) -> None:
        """Queue a submission for the judge (once), starting the worker; the caller holds the lock."""
        if key not in self._queued:
            self._queued.add(key)
            self._queue.put((folder, key))
            if self._worker is None:
                self._worker = threading.Thread(target=self._judging, name="board-judge", daemon=True)
                self._worker.start()

    def _judging(self) -> None:
        """The one worker: judge each queued submission, keep its verdict, and let the next request read it."""
        while True:
            folder, key = self._queue.get()
            try:
                earlier = self.verdicts.get(key)
                if earlier is not None and earlier.scored_while_sealed:
                    verdict = recheck(earlier, self.judge(folder, key))
                elif earlier is not None:
                    verdict = earlier
                else:
                    verdict = self._capped(folder, key) or self._sealed_by(folder, self.judge(folder, key))
                if verdict.key != key:
                    verdict = Verdict(f"{NOT_CHECKED}: its files changed while it was judged", key)
            except Exception as err:  # a failure of the board itself: said on the row, tried again next refresh
                log.exception("judging %s failed", folder)
                verdict = Verdict(f"{NOT_CHECKED}: the check failed ({type(err).__name__})", key)
            with self._lock:
                if verdict.text == OVER_CAP or not self.verdicts.keep(verdict):
                    self._transient[key] = verdict
                self._queued.discard(key)
                self._changes += 1
                idle = not self._queued
            if idle:  # the queue is done: the next view is ranked here, not in a visitor's request
                self._warm()

    def _capped(self, folder: Path, key: str, release: str | None = None) -> Verdict | None:
        """OVER_CAP for a sealed submission whose submitter has ``cap`` submissions scored on its ``release`` (data
        key; default: the one its result claims) already: the worker judges one at a time, so the count is exact.
        Counted: every kept verdict scored while sealed, also of a submission since removed or replaced, so neither
        renaming nor replacing files buys another score; the first scored keep their place (a refresh's new ones are
        judged in the order of their folders). Never kept: looked at again at each refresh (unsealed since?)."""
        if release is None:
            _, raw = self._snapshots.get(folder, (None, None))
            if not is_sealed(raw or {}):
                return None  # judged first, and counted then (``_sealed_by``)
            release = Provenance.of(raw).dataset.key
        who = submitter(folder, self.state.copy.folder)
        scored = sum(1 for v in self.verdicts.all() if v.scored_while_sealed and v.submitter == who
                     and (v.placement or {}).get("key") == release)
        return Verdict(OVER_CAP, key) if scored >= self.cap else None

    def _sealed_by(self, folder: Path, verdict: Verdict) -> Verdict:
        """A verdict scored while sealed with the namespace it counts against, or OVER_CAP when that namespace reached
        its cap meanwhile (``_capped``; its scores are dropped unseen)."""
        if not verdict.scored_while_sealed:
            return verdict
        return self._capped(folder, verdict.key, verdict.placement["key"]) or replace(
            verdict, submitter=submitter(folder, self.state.copy.folder))

    def loaded(self, wait: float | None = LOAD_WAIT) -> Loaded:
        """The copy as ``load_store`` reads it with the verdicts known now, read again only after a refresh or a
        new verdict (never per render). A request waits at most ``wait`` seconds for a load another thread is doing
        (a refresh of a large copy), then reads the previous one: the board keeps serving whatever the repo holds."""
        if not self._loading.acquire(blocking=False):
            if wait is not None and self._load_waited:  # a request already waited for this load: none waits again
                return self._loaded
            if not self._loading.acquire(timeout=-1 if wait is None else wait):
                self._load_waited = True
                return self._loaded
        self._load_waited = False
        try:
            return self._load()
        finally:
            self._loading.release()

    def _load(self) -> Loaded:
        state, at = self.state, (self.state.generation, self._changes)
        if self._loaded.at == at:
            return self._loaded
        root = state.copy.folder / SUBMISSIONS if state.copy.folder is not None else None
        if root is None or not root.is_dir():
            self._loaded = Loaded(at)
            return self._loaded
        seen: dict[Path, Verdict] = {}

        def verify(folder, key):
            seen[folder] = self._verdict(folder, key)
            return seen[folder]

        entries, skipped = load_store(root, verify, self._snapshots, self.keys)
        if self._hub_rows:
            from lookbench.leaderboard.hub_rows import hub_entries

            rows, unplaced = hub_entries(self.hub, entries, self._hub_rows)
            entries, skipped = [*entries, *rows], [*skipped, *unplaced]
        by_folder = {Path(e.origin).parent: e for e in entries}
        submissions = tuple(Submission(folder.relative_to(state.copy.folder).as_posix(), by_folder[folder].model,
                                       verdict, of_entry(by_folder[folder]), by_folder[folder].verified)
                            for folder, verdict in sorted(seen.items()) if folder in by_folder)
        facts = {}
        for s in submissions:
            facts.setdefault(s.model, s.facts)
        self._loaded = Loaded(at, tuple(entries), tuple(skipped), submissions, facts)
        return self._loaded

    def status(self) -> str:
        state, loaded = self.state, self.loaded()
        if state.copy.folder is None:
            return f"⚠️ {markdown_safe(state.copy.problem)}: showing the published rows only."
        counts = {word: 0 for word in COUNTED}
        for s in loaded.submissions:
            counts[s.status] += 1
        told = [f"{n} {word}" for word, n in counts.items() if n and word != PENDING]
        over = sum(s.shown == OVER_CAP for s in loaded.submissions)
        if counts[PENDING] > over:
            told.append(f"{counts[PENDING] - over} {PENDING} (judged in the background, one at a time; Refresh shows the "
                        "verdicts)")
        if over:
            told.append(f"{over} {OVER_CAP} (while a release is sealed, at most {self.cap} submissions per submitter "
                        "are scored on it)")
        unreadable = (" No read token (HF_TOKEN, a Space secret) for the sealed labels: sealed submissions stay "
                      f"{PENDING}." if self.sealed_unreadable else "")
        hub = f" The Hub's own leaderboard was not read: {markdown_safe(self._hub_problem)}." if self._hub_problem else ""
        return (f"Results from {markdown_safe(state.copy.source)}: {len(loaded.submissions)} submission(s)"
                + (f" — verified: {', '.join(told)}." if told else ".") + unreadable + hub)

    def facts(self, model: str) -> Facts | None:
        """A row's facts: a submission's (by its row label), else the registry's (a published or registered model)."""
        found = self.loaded().facts.get(model)
        return found if found is not None else registered(model)

    def board(self, metric, k, subset, by_release=False, open_weights=False, size=ANY_SIZE, trained_before="",
              trusted=False, zero_shot=False):
        """The ranked sections, filtered (``trusted``: only rows reproduced or scored sealed; ``zero_shot``: only rows
        whose zero-shot column says yes, ``Leaderboard.zero_shot``); a bad metric, K, subset,
        size or date is a ``ValueError`` with the message. Ranked once per set of controls and load
        (``Loaded.ranked``); the result is shared: callers do not change it."""
        from lookbench.filtering import to_utc

        if not isinstance(size, str) or size not in SIZES:
            raise ValueError(f"size must be one of {', '.join(SIZES)}, got {str(size)[:40]!r}")
        if not isinstance(k, (int, float)) or isinstance(k, bool) or not math.isfinite(k) or int(k) != k:
            raise ValueError(f"K must be a whole number, got {str(k)[:40]!r}")
        if not isinstance(metric, str) or not isinstance(subset, (str, type(None))):
            raise ValueError("metric and subset must be names")
        if not isinstance(trained_before, (str, type(None))):
            raise ValueError(f"the training cutoff must be a date such as 2024-06-01, got {str(trained_before)[:40]!r}")
        trained_before = (trained_before or "").strip() or None
        if trained_before:
            to_utc(trained_before)
        subset = None if subset in (None, OVERALL) else subset
        loaded, ranking = self.loaded(), (metric, int(k), subset, bool(by_release))
        controls = (*ranking, bool(open_weights), size, trained_before, bool(trusted), bool(zero_shot))
        cache = loaded.ranked
        if controls not in cache:
            if ranking not in cache:
                cache[ranking] = leaderboard(reference=self.reference, metric=metric, k=int(k), subset=subset,
                                             by_release=bool(by_release), loaded=(list(loaded.entries), loaded.skipped))
            full = cache[ranking].trusted() if trusted else cache[ranking]
            full = full.zero_shot() if zero_shot else full
            # A row scored while sealed is clean whatever its training cutoff: no one outside could see the labels.
            sections = [replace(s, rows=[r for r in s.rows if keeps(
                self.facts(r["model"]), bool(open_weights), size,
                None if r["verified"] == SCORED_SEALED else trained_before)]) for s in full.sections]
            if len(cache) >= MAX_RANKED:
                cache.clear()
            cache[controls] = Leaderboard(sections, full.skipped, full.metric, full.k)
        return cache[controls]

    def submissions(self) -> list[list[str]]:
        """Every submission of the copy with its verdict (the Submissions table)."""
        return [[s.model, s.folder, s.shown] for s in self.loaded().submissions]

    def api_board(self, metric: str = "fine", k: int = 1, subset: str = OVERALL, by_release: bool = False,
                  open_weights: bool = False, size: str = ANY_SIZE, trained_before: str = "",
                  trusted: bool = False, zero_shot: bool = False) -> dict:
        """The board as data (``/leaderboard``): the sections, their rows, the skipped files and every submission's
        verdict; a bad control is ``{"error": message}``."""
        try:
            ranked = self.board(metric, k, subset, by_release, open_weights, size, trained_before, trusted, zero_shot)
        except ValueError as err:
            return {"error": str(err)}
        return {"status": self.status(),
                "sections": [{"title": s.title, "source": s.source, "columns": s.columns, "rows": s.rows}
                             for s in ranked.sections],
                "skipped": ranked.skipped,
                "submissions": [{"folder": s.folder, "model": s.model, "verified": s.shown}
                                for s in self.loaded().submissions]}

    def blocks(self) -> gr.Blocks:
        return page.blocks(self)


def serve(host=None, port=None, repo_id=None, folder=None, board: Board | None = None, hub: str | None = None,
          **launch_kwargs):
    """Serve the board at once, then copy the results repo: every submission is judged in the background, so no
    submission can keep the board from serving (``prevent_thread_lock=True`` returns instead of serving on).
    ``host`` None: gradio's GRADIO_SERVER_NAME, else 127.0.0.1 (loopback). ``hub``: the Benchmark dataset whose
    Hub leaderboard rows it shows beside (the Space: LookBench's)."""
    board = board or Board(repo_id, folder, hub=hub)
    board.warm_views = True
    block = not launch_kwargs.pop("prevent_thread_lock", False)
    demo = board.blocks()
    demo.launch(server_name=host, server_port=port, show_error=True, prevent_thread_lock=True, css=CSS, **launch_kwargs)
    log.info(board.refresh())
    if block:
        demo.block_thread()
    return demo


if __name__ == "__main__":  # as a Hub Space: gradio reads GRADIO_SERVER_NAME / GRADIO_SERVER_PORT
    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s")
    log.setLevel(logging.INFO)
    from lookbench.hub import DATASET_ID

    serve(hub=DATASET_ID)
