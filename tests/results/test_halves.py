"""Issue 53 item 2: the shown and held halves of a sealed release's queries (lookbench.results.halves), what a kept
verdict shows of them while sealed and once unsealed, and the cap's place on the trust ladder."""
from __future__ import annotations

import pytest

from lookbench.leaderboard.load import Verdict
from lookbench.results.halves import HELD, SHOWN, headline, rounded, shown
from lookbench.results.provenance import UNSEALED
from lookbench.results.trust import OVER_CAP, PENDING, SCORED_SEALED, level, verdict_status

IDS = [f"rsf-{i:06d}" for i in range(2000)]


def test_a_keyed_split_is_stable_about_half_and_another_key_gives_another():
    first = shown("a" * 64, IDS)
    assert first.tolist() == shown("a" * 64, IDS).tolist()  # stable
    assert 900 < first.sum() < 1100
    other = shown("b" * 64, IDS)
    assert 800 < (first != other).sum() < 1200  # unpredictable without the key: as if drawn again
    assert shown("a" * 64, IDS[:7]).tolist() == first[:7].tolist()  # a query's half is its own, not the set's


def test_the_headline_holds_every_ranked_metric_and_the_shown_one_is_one_decimal():
    from lookbench.metric.fine_recall.judging import DEFAULT_K
    from lookbench.settings import METRICS

    flat = {f"{m}@{k}": 100 / 3 + k for m in METRICS.values() for k in DEFAULT_K}
    block = headline({**flat, "num_queries": 17, "per_category": {"x": 1}})
    assert set(block) == {*METRICS.values(), "num_queries"} and block["num_queries"] == 17
    short = rounded(block)
    assert short["fine_recall"]["@1"] == 34.3 and short["num_queries"] == 17
    assert all(round(v, 1) == v for m in METRICS.values() for v in short[m].values())


def _sealed(labels: str) -> Verdict:
    both = {SHOWN: {"fine_recall": {"@1": 12.3}, "num_queries": 10},
            HELD: {"fine_recall": {"@1": 45.678}, "num_queries": 11}}
    return Verdict(SCORED_SEALED, "k" * 64, {"key": "r", "labels": labels}, {"overall": {}}, both, "acme")


def test_a_sealed_verdict_shows_its_shown_half_while_sealed_and_its_held_half_once_unsealed():
    sealed, unsealed = _sealed("withheld"), _sealed(UNSEALED)
    assert sealed.scored_while_sealed and sealed.headline["fine_recall"]["@1"] == 12.3
    assert not unsealed.scored_while_sealed and unsealed.headline["fine_recall"]["@1"] == 45.678
    assert Verdict.from_json(sealed.to_json()) == sealed  # kept and read back whole, with its submitter
    bare = sealed.to_json()
    del bare["halves"]
    with pytest.raises(ValueError, match="halves"):  # kept before the halves: dropped, judged again
        Verdict.from_json(bare)
    assert Verdict("consistent", "k", {"key": "r"}).headline is None


def test_over_the_cap_is_pending_on_the_one_ladder():
    assert OVER_CAP == "pending: over the cap"
    assert level(OVER_CAP).name == PENDING and verdict_status(OVER_CAP) == PENDING
    assert "over the cap" in level(PENDING).meaning
