"""The review app as a private Hugging Face Space (``lookbench stage --review RAW`` copies this file as its ``app.py``).

The Space's settings hold the reviewers: ``LOOKBENCH_REVIEWERS`` maps Hub users to reviewers (``identity``), whom
Gradio's OAuth signs in (``hf_oauth: true`` in the card). The release under review is the Space's ``release/``
folder. A Space's disk is lost when it restarts, so with ``LOOKBENCH_DECISIONS`` (a private dataset repo; the write
token in the ``HF_TOKEN`` secret) the decisions are read from that repo at start and committed to it every minute,
whence the maintainer downloads them into ``RAW/reviews`` to audit and build (docs/building-a-release.md).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

DECISIONS = "LOOKBENCH_DECISIONS"
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


def keep_decisions(raw: Path, repo: str):
    """Decisions already in ``repo`` brought in, and every new one committed there each minute."""
    from huggingface_hub import CommitScheduler, snapshot_download

    snapshot_download(repo, repo_type="dataset", local_dir=raw, allow_patterns=[f"reviews/{EVENTS}"])
    return CommitScheduler(repo_id=repo, repo_type="dataset", folder_path=raw / "reviews", path_in_repo="reviews",
                           every=1, private=True, allow_patterns=[EVENTS])


def main() -> None:
    from lookbench.space.review.app import serve

    raw = release(Path(__file__).resolve().parent)
    if os.environ.get(DECISIONS):
        scheduler = keep_decisions(raw, os.environ[DECISIONS])  # noqa: F841 - runs in its own thread while served
    serve(raw, host="0.0.0.0", port=int(os.environ.get("PORT", 7860)))


if __name__ == "__main__":
    main()
