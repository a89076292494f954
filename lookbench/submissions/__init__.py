"""Community submissions to the leaderboard: ``submit`` writes a result and its rankings as a pull request on the
results repo, ``verify`` re-scores one from its rankings (docs/submitting.md), ``reproduction`` re-runs its model.
Importing this package loads none of them."""
from __future__ import annotations

DEFAULT_REPO = "lookbench/results"  # the dataset repo the leaderboard reads submissions from
