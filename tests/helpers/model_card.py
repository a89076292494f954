"""Reading a model card's results tables (written by benchmarks/compare_encoders.py and compare_text_models.py) and
checking them against what `lookbench evaluate` gives, so no expected number is ever copied into a test."""
from __future__ import annotations

from pathlib import Path

import pytest

OVERALL = {"Fine R@1": ("fine_recall", "@1"), "Fine R@5": ("fine_recall", "@5"), "Fine R@10": ("fine_recall", "@10"),
           "Fine R@20": ("fine_recall", "@20"), "Coarse R@1": ("coarse_recall", "@1"), "nDCG@5": ("ndcg", "@5")}
SUBSETS = ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook")


def shown(cell: str) -> tuple[float, float]:
    """A card cell ``85.82 ±3.95`` as (score, half its 95 % interval)."""
    value, half = cell.split(" ±")
    return float(value), float(half)


def card_rows(card: Path, row: str, table: str, modes, subsets=SUBSETS) -> dict:
    """{mode: {column: (percent, ± half the 95 % interval)}} of the rows named `row` in one of `card`'s tables (the
    second column, "mode" or "mode, words", names the row's mode)."""
    text = card.read_text()
    block = text[text.index(f"<!-- results:{table}:begin -->"):text.index(f"<!-- results:{table}:end -->")]
    lines = [[c.strip() for c in line.strip().strip("|").split("|")] for line in block.splitlines() if line.startswith("|")]
    header = lines[0]
    assert header[0] == "encoder" and header[1].startswith("mode"), header
    rows = {cells[1]: dict(zip(header[2:], map(shown, cells[2:]))) for cells in lines[2:] if cells[0] == row}
    assert set(rows) == set(modes), f"{card} lacks {row!r} rows: {set(rows)}"
    for columns in rows.values():
        assert set(columns) == set(OVERALL) | {f"{s} Fine R@1" for s in subsets}, columns.keys()
    return rows


def measured(result: dict, subsets=SUBSETS) -> dict:
    """The card's columns, from one results.json: (score, its 95 % interval, the number of queries of its scope)."""
    def of(block, m, k):
        return block[m][k], block["ci95"][m][k], block["num_queries"]

    values = {column: of(result["overall"], m, k) for column, (m, k) in OVERALL.items()}
    values |= {f"{s} Fine R@1": of(result[s], "fine_recall", "@1") for s in subsets}
    return values


def check(expected: dict, result: dict, mode: str, subsets=SUBSETS) -> None:
    for column, (value, (lo, hi), num_queries) in measured(result, subsets).items():
        # Two decimals in the card; a near-tie resolved differently by another BLAS thread count moves one query.
        score, half = expected[column]
        assert value == pytest.approx(score, abs=100 / num_queries + 0.005), (mode, column)
        assert (hi - lo) / 2 == pytest.approx(half, abs=100 / num_queries + 0.005), (mode, column)
