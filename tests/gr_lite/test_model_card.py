"""The GR-Lite-mini model card's tables are what `lookbench evaluate` gives: on the default LookBench-Mini release
(here) and on the real-photo release (tests/gr_lite_text/test_real_photo_cards.py).

The table is written by benchmarks/compare_encoders.py and the weights may be retrained, so the expected numbers
are parsed from the card, never copied here.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lookbench.cli import main
from lookbench.leaderboard.load import entry_from_result
from tests.helpers import model_card
from tests.helpers.model_card import SUBSETS, check

CARD = Path(__file__).resolve().parents[2] / "models" / "gr_lite" / "gr-lite-mini" / "README.md"
ROW = "GR-Lite-mini (this model)"


def card_rows(table: str = "mini", modes=("strict", "leaderboard"), subsets=SUBSETS) -> dict:
    return model_card.card_rows(CARD, ROW, table, modes, subsets)


@pytest.mark.slow
def test_card_scores_are_reproduced(tmp_path):
    for mode, expected in card_rows().items():
        out = tmp_path / mode
        assert main(["evaluate", "--model", "gr-lite-mini", "--mode", mode, "--cache-dir", str(tmp_path / "cache"),
                     "--output", str(out), "--no-save", "--quiet"]) == 0
        result = json.loads((out / "results.json").read_text())
        assert result["provenance"]["dataset"]["name"] == "LookBench-Mini (synthetic)"  # from the card's pretty_name
        # and so its leaderboard section says what it was measured on: synthetic data, a Mini release
        section = entry_from_result(result, "results.json").group.data
        assert section.startswith("LookBench-Mini (synthetic) mini-v20240601+mini-v20250101+mini-v20251201"), section
        check(expected, result, mode)
