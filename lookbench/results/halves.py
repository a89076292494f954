"""The shown and the held half of a sealed release's queries (Kaggle's public and private leaderboard).

While a release is sealed the leaderboard shows a submission's headline scores on the shown half only, to one
decimal, and keeps the held half's until the release is unsealed, when the sealed rows are ranked by it: however many
submissions differ in one query's top-1, what the board shows of them never depends on a held query's labels. A
query's half is HMAC-SHA256(key, its id): stable, and unpredictable without the key, a random secret made when the
release is sealed and kept with its labels (``dataset_builder/seal.py``), public once they are.
"""
from __future__ import annotations

import hashlib
import hmac

import numpy as np

SHOWN, HELD = "shown", "held"
SHOWN_DECIMALS = 1  # what a shown score is rounded to: one query more or less moves it, a near-tie does not


def shown(key: str, query_ids) -> np.ndarray:
    """Whether each query (by its id) is in the shown half under ``key``."""
    secret = key.encode()
    return np.array([hmac.new(secret, str(q).encode(), hashlib.sha256).digest()[0] < 128 for q in query_ids],
                    dtype=bool)


def headline(overall: dict) -> dict:
    """The headline of one judgement's ``overall`` scores: every ranked metric at every K and the query count, as
    a result's blocks hold them (``metric -> "@K" -> percent``)."""
    from lookbench.metric.fine_recall.judging import DEFAULT_K
    from lookbench.settings import METRICS

    return {**{m: {f"@{k}": overall[f"{m}@{k}"] for k in DEFAULT_K} for m in METRICS.values()},
            "num_queries": int(overall["num_queries"])}


def rounded(block: dict, decimals: int = SHOWN_DECIMALS) -> dict:
    """A headline with every score rounded to ``decimals`` (the shown half's, while sealed)."""
    return {name: {at: round(v, decimals) for at, v in value.items()} if isinstance(value, dict) else value
            for name, value in block.items()}
