"""Community submissions to the leaderboard: ``submit`` writes a result and its rankings as a pull request on the
results repo, ``verify`` re-scores one from its rankings (docs/submitting.md). ``verify_submission`` is what the
leaderboard calls; importing this package loads neither."""
from __future__ import annotations

DEFAULT_REPO = "lookbench/results"  # the dataset repo the leaderboard reads submissions from


def __getattr__(name):
    if name in ("Verification", "verify_submission"):
        from lookbench.submissions import verify

        return getattr(verify, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
