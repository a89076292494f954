"""Each submission judged in a child process of its own, with a wall-time and a memory budget (docs/architecture.md
§5): a submission is data from anyone, and judging one must never stop, hang or exhaust the board that serves the
others. The data the board may load is its card's ``lookbench_data`` list (``allowed_data``) and the embedded
LookBench-Mini; anything else is ``UNKNOWN_DATA`` and is never fetched. The same list pins each sealed
release's private labels repo at a revision (``labels_pins``), read with the Space's token to score sealed submissions.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lookbench.leaderboard.load import Verdict
from lookbench.results.trust import NOT_CHECKED
from lookbench.settings import BOARD_DATA_KEY

TIME_VARIABLE = "LOOKBENCH_BOARD_TIME_BUDGET"  # seconds of wall time per submission (default 600)
MEMORY_VARIABLE = "LOOKBENCH_BOARD_MEMORY_BUDGET"  # GB of address space per submission (default 3)
DEFAULT_TIME_S, DEFAULT_MEMORY_GB = 600.0, 3.0
CARD_KEY = BOARD_DATA_KEY  # the Space card's list of Hub dataset ids the board may load
CAP_KEY, DEFAULT_CAP = "lookbench_sealed_cap", 5  # the card's cap of scored sealed submissions per submitter and release
# The not-checked reasons that are kept for their key: the same files would meet them again.
OVER_BUDGET = f"{NOT_CHECKED}: over budget"
UNKNOWN_DATA = f"{NOT_CHECKED}: unknown data"
ENDED = f"{NOT_CHECKED}: its check ended without a verdict"
_LOG_TAIL = 4096  # bytes of the child's output read back for the log
_CHILD = ("import importlib, json, sys; sys.path[:] = json.loads(sys.argv[1]); "
          "module, _, name = sys.argv[2].partition(':'); getattr(importlib.import_module(module), name)(sys.argv[3:])")
log = logging.getLogger("lookbench.space.board")


def _card(card: Path, key: str, otherwise: str):
    """The value at ``key`` of the card's YAML; ``None`` (logged, with what the board does ``otherwise``) when the
    card cannot be read."""
    from huggingface_hub import SpaceCard

    try:
        return SpaceCard.load(card).data.to_dict().get(key)
    except (OSError, ValueError) as err:
        log.warning("cannot read %s from %s (%s); %s", key, card, err, otherwise)
        return None


def allowed_data(card: Path) -> frozenset[str]:
    """The Hub dataset ids the card's YAML lists under ``lookbench_data``; none (no card, no list) when it cannot be
    read, so the board then judges the embedded Mini only."""
    listed = _card(card, CARD_KEY, "judging the embedded LookBench-Mini only")
    return frozenset(d for d in listed or () if isinstance(d, str))


def sealed_cap(card: Path) -> int:
    """The card's ``lookbench_sealed_cap``: how many submissions per submitter namespace and sealed release are
    scored while it is sealed (default ``DEFAULT_CAP``; what is not a whole number >= 0 is the default, logged)."""
    value = _card(card, CAP_KEY, f"scoring at most {DEFAULT_CAP} sealed submissions per submitter and release")
    if value is None:
        return DEFAULT_CAP
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        log.warning("%s=%r in %s is not a whole number >= 0; using %d", CAP_KEY, value, card, DEFAULT_CAP)
        return DEFAULT_CAP
    return value


def labels_pins(allowed) -> dict[str, str]:
    """The sealed releases' labels repos the allow-list pins, ``owner/lookbench-labels@<revision>`` (a data entry is
    ``owner/name``, without a revision): labels repo -> that entry, read with the Space's token."""
    return {entry.partition("@")[0]: entry for entry in allowed if "@" in entry}


def can_read_labels() -> bool:
    """Whether huggingface_hub holds a token (``HF_TOKEN``, a Space secret) to read the private labels repos with."""
    from huggingface_hub import get_token

    return get_token() is not None


def _budget(variable: str, default: float) -> float:
    raw = os.environ.get(variable)
    try:
        value = float(raw) if raw else default
        if value > 0:
            return value
    except ValueError:
        pass
    log.warning("%s=%r is not a positive number; using %g", variable, raw, default)
    return default


@dataclass(frozen=True)
class Judge:
    """Judges one submission (``folder``, for the files ``key`` names) in a child process: ``judge_submission`` under
    ``time_s`` of wall time and ``memory_bytes`` of address space (``RLIMIT_AS``), on the ``allowed`` data only."""

    time_s: float = DEFAULT_TIME_S
    memory_bytes: int = int(DEFAULT_MEMORY_GB * 2**30)
    allowed: frozenset = field(default_factory=frozenset)

    @classmethod
    def from_environment(cls, allowed=frozenset()) -> "Judge":
        """The budgets of ``$LOOKBENCH_BOARD_TIME_BUDGET`` (s) and ``$LOOKBENCH_BOARD_MEMORY_BUDGET`` (GB)."""
        return cls(_budget(TIME_VARIABLE, DEFAULT_TIME_S), int(_budget(MEMORY_VARIABLE, DEFAULT_MEMORY_GB) * 2**30),
                   frozenset(allowed))

    def __call__(self, folder, key: str) -> Verdict:
        """The verdict for ``key``: the child's, or over budget, or ENDED when the child gave none."""
        with tempfile.TemporaryDirectory(prefix="lookbench-judge-") as tmp:
            out = Path(tmp) / "verdict.json"
            status, tail = self.run(f"{__name__}:child", [str(folder), json.dumps(sorted(self.allowed)),
                                                          str(self.memory_bytes), str(out)], Path(tmp))
            if status is None:
                return Verdict(self.over_time(), key)
            try:
                verdict = Verdict.from_json(json.loads(out.read_text()))
            except (OSError, ValueError):
                log.warning("judging %s ended with %s and no verdict: %s", folder, status, tail[-500:])
                if out_of_memory(tail):
                    return Verdict(self.over_memory(), key)
                return Verdict(f"{ENDED} (exit status {status})", key)
        if verdict.text.startswith(OVER_BUDGET):  # the child's own MemoryError
            return Verdict(self.over_memory(), key)
        if verdict.text.startswith(ENDED):
            log.warning("judging %s failed: %s", folder, tail[-500:])
            return Verdict(verdict.text, key)
        return verdict

    def run(self, entry: str, args: list[str], tmp: Path) -> tuple[int | None, str]:
        """``entry`` (``module:function``, called with ``args``; it sets the memory limit itself) in a child process
        of its own session, killed with all it started past ``time_s``: its exit status (``None``: killed) and the
        tail of its output."""
        output = tmp / "output.log"
        command = [sys.executable, "-c", _CHILD, json.dumps(sys.path), entry, *args]
        with open(output, "wb") as sink:
            child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink,
                                     start_new_session=True)  # its own group: a timeout ends all it started
            try:
                child.wait(timeout=self.time_s)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                return None, _tail(output)
        return child.returncode, _tail(output)

    def over_time(self) -> str:
        return f"{OVER_BUDGET} (time: more than {self.time_s:g} s)"

    def over_memory(self) -> str:
        return f"{OVER_BUDGET} (memory: more than {self.memory_bytes / 2**20:.0f} MB)"


def _tail(path: Path) -> str:
    with open(path, "rb") as file:
        file.seek(max(0, file.seek(0, os.SEEK_END) - _LOG_TAIL))
        return file.read().decode("utf-8", "replace")


def out_of_memory(text: str) -> bool:
    text = text.lower()
    return any(s in text for s in ("memoryerror", "cannot allocate memory", "bad_alloc", "out of memory",
                                   "failed to map segment"))


def limit_memory(memory) -> None:
    """A child's first step: its address space capped at ``memory`` bytes."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))


def child(argv: list[str]) -> None:
    """The child's work: the memory limit first, then ``judge_submission``, its verdict written to the last
    argument as JSON (every failure becomes a verdict: the parent reads nothing else)."""
    folder, allowed, memory, out = argv
    limit_memory(memory)
    try:
        from lookbench.leaderboard.load import judge_submission

        listed = set(json.loads(allowed))
        verdict = judge_submission(Path(folder), allowed=listed, labels=labels_pins(listed))
    except MemoryError:
        verdict = Verdict(OVER_BUDGET)
    except Exception as err:  # a failure inside a library: the parent keeps it as ENDED, the log says what
        verdict = Verdict(OVER_BUDGET if out_of_memory(f"{type(err).__name__} {err}") else f"{ENDED} ({type(err).__name__})")
        print(f"judging failed: {type(err).__name__}: {err}", file=sys.stderr)
    Path(out).write_text(json.dumps(verdict.to_json()))
