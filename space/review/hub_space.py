"""The review app as a private Hugging Face Space (``lookbench stage --review RAW`` copies this file as its ``app.py``).

The Space's settings hold the reviewers: ``LOOKBENCH_REVIEWERS`` maps Hub users to reviewers (``identity``), whom
Gradio's OAuth signs in (``hf_oauth: true`` in the card). The release under review is the Space's ``release/``
folder. A Space's disk is lost when it restarts, so with ``LOOKBENCH_DECISIONS`` (a private dataset repo; the write
token in the ``HF_TOKEN`` secret) the decisions are read from that repo at start and committed to it every minute (or
every ``LOOKBENCH_DECISIONS_EVERY`` minutes) and as the Space stops, whence the maintainer downloads them into
``RAW/reviews`` to audit and build (docs/building-a-release.md).
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

DECISIONS = "LOOKBENCH_DECISIONS"
EVERY = "LOOKBENCH_DECISIONS_EVERY"  # minutes between two commits of the decisions, 1 unless the Space sets it
EVENTS = "*/*.json"  # a reviewer's decision files: never the plan (drawn at stage) nor anything hidden


def release(here: Path) -> Path:
    """The release to serve: on persistent storage (``/data``) when the Space has it, copied there once."""
    staged = here / "release"
    data = Path("/data")
    if not data.is_dir() or not os.access(data, os.W_OK):
        return staged
    if not (data / "release").exists():
        shutil.copytree(staged, data / "release")
    return data / "release"


def every(value: str | None) -> float:
    """The minutes between two commits (``LOOKBENCH_DECISIONS_EVERY``): a positive number, 1 when not set."""
    if value is None:
        return 1.0
    try:
        minutes = float(value)
    except ValueError:
        minutes = float("nan")
    if not 0 < minutes < float("inf"):
        raise SystemExit(f"{EVERY}={value!r}: not a positive number of minutes between two commits of the decisions")
    return minutes


def keep_decisions(raw: Path, repo: str, minutes: float):
    """Decisions already in ``repo`` brought in, and every new one committed there each ``minutes``."""
    from huggingface_hub import CommitScheduler, snapshot_download

    snapshot_download(repo, repo_type="dataset", local_dir=raw, allow_patterns=[f"reviews/{EVENTS}"])
    return CommitScheduler(repo_id=repo, repo_type="dataset", folder_path=raw / "reviews", path_in_repo="reviews",
                           every=minutes, private=True, allow_patterns=[EVENTS])


def main() -> None:
    from lookbench.space.review.app import serve

    raw = release(Path(__file__).resolve().parent)
    minutes = every(os.environ.get(EVERY))
    if os.environ.get(DECISIONS):
        scheduler = keep_decisions(raw, os.environ[DECISIONS], minutes)  # noqa: F841 - its own thread while served
        # A restarting Space is sent SIGTERM: exit through Python, so the scheduler's last commit (at exit) is made.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    serve(raw, host=os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0"),
          port=int(os.environ.get("GRADIO_SERVER_PORT") or os.environ.get("PORT") or 7860))


if __name__ == "__main__":
    main()
