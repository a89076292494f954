"""`lookbench compare`: paired differences of two results, checked against exact McNemar computed here."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import lookbench
from lookbench.cli import main
from lookbench.results.comparison import compare
from lookbench.results.store import MAX_RESULT_BYTES
from tests.helpers.engine_data import write_folder
from tests.helpers.results import synthetic


def exact_mcnemar(b, c):
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n)


def hits(result, subset, k):
    return np.array([r is not None and r <= k for r in result[subset]["per_query"]["first_fine_rank"]])


SIZES = {"RealStudioFlat": 300, "RealStreetLook": 240, "AIGen-StreetLook": 60}


@pytest.mark.parametrize("k", [1, 10])
def test_compare_agrees_with_exact_mcnemar_on_the_per_query_outcomes(k):
    a, b = synthetic(1, SIZES), synthetic(2, SIZES)
    rows = compare(a, b, "fine", k)
    assert [r["subset"] for r in rows] == ["RealStudioFlat", "RealStreetLook", "AIGen-StreetLook", "overall"]
    pooled = {"a": [], "b": []}
    for row in rows:
        if row["subset"] == "overall":
            ha, hb = np.concatenate(pooled["a"]), np.concatenate(pooled["b"])
        else:
            ha, hb = hits(a, row["subset"], k), hits(b, row["subset"], k)
            pooled["a"].append(ha)
            pooled["b"].append(hb)
            assert row["diff"] == pytest.approx(a[row["subset"]]["fine_recall"][f"@{k}"] - b[row["subset"]]["fine_recall"][f"@{k}"])
        only_a, only_b = int(np.sum(ha & ~hb)), int(np.sum(hb & ~ha))
        assert (row["a_only"], row["b_only"], row["n_queries"]) == (only_a, only_b, ha.size)
        assert row["p"] == pytest.approx(exact_mcnemar(only_a, only_b), rel=1e-12)
        assert row["ci95"][0] <= row["diff"] <= row["ci95"][1]
    assert rows[-1]["diff"] == pytest.approx(a["overall"]["fine_recall"][f"@{k}"] - b["overall"]["fine_recall"][f"@{k}"])
    # Holm across the three subsets
    p = [r["p"] for r in rows[:3]]
    order = np.argsort(p)
    expected = np.maximum.accumulate([min(1.0, (3 - i) * p[j]) for i, j in enumerate(order)])
    assert [rows[j]["p_holm"] for j in order] == pytest.approx(list(expected))
    assert rows[-1]["p_holm"] == rows[-1]["p"]


def test_ndcg_uses_the_paired_bootstrap_and_finds_a_real_difference():
    a, b = synthetic(1, SIZES), synthetic(1, SIZES, ndcg_drop=0.1)  # B is A with every nDCG lowered by 0.1
    rows = compare(a, b, "ndcg", 5)
    for row in rows:
        assert 0 < row["ci95"][0] <= row["diff"] <= row["ci95"][1] and row["p"] < 0.01 and row["b_only"] == 0


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    data = write_folder(root / "lookbench")
    out = {}
    for name, kwargs in (("strict", {}), ("leaderboard", {"mode": "leaderboard"}), ("cutoff", {"cutoff": "2025-01-02"})):
        lookbench.evaluate("raw-pixels", data=data, output_dir=root / name, cache_dir=root / "cache", quiet=True, **kwargs)
        out[name] = root / name / "results.json"
    return out


def test_a_result_against_itself_gives_zero_and_p_one(results, capsys):
    for metric in ("fine", "coarse", "ndcg"):
        assert main(["compare", str(results["strict"]), str(results["strict"].parent), "--metric", metric, "--k", "5",
                     "--format", "json"]) == 0
        rows = json.loads(capsys.readouterr().out)
        assert [r["subset"] for r in rows] == ["RealStudioFlat", "AIGen-Studio", "overall"]
        for row in rows:
            assert (row["diff"], row["ci95"], row["p"], row["p_holm"], row["a_only"], row["b_only"]) == (0.0, [0.0, 0.0], 1.0, 1.0, 0, 0)
        assert rows[-1]["n_queries"] == 7
    assert main(["compare", str(results["strict"]), str(results["strict"])]) == 0
    table = capsys.readouterr().out
    assert "exact McNemar" in table and "overall" in table and "raw-pixels" in table


@pytest.mark.parametrize("other, words", [("leaderboard", "differ in mode (strict vs leaderboard)"),
                                          ("cutoff", "differ in cutoff")])
def test_results_on_other_data_or_queries_are_refused_in_one_line(results, capsys, other, words):
    assert main(["compare", str(results["strict"]), str(results[other])]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_other_queries_or_no_outcomes_are_refused(results, tmp_path, capsys):
    data = json.loads(results["strict"].read_text())
    data["AIGen-Studio"]["per_query"]["item_id"][1] = "someone-else"
    (tmp_path / "other.json").write_text(json.dumps(data))
    assert main(["compare", str(results["strict"]), str(tmp_path / "other.json")]) == 2
    assert "different queries in AIGen-Studio: 3 vs 3 queries, first difference at query 2" in capsys.readouterr().err
    del data["AIGen-Studio"]["per_query"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert main(["compare", str(tmp_path / "old.json"), str(results["strict"])]) == 2
    assert "no per-query outcomes for AIGen-Studio" in capsys.readouterr().err
    assert main(["compare", str(results["strict"]), str(tmp_path / "missing.json")]) == 2
    assert f"{tmp_path / 'missing.json'}: cannot read it: No such file or directory" in capsys.readouterr().err


# -- hostile files (issue 37): compare reads through the store's reader ------------------------------------------


def compare_cli(a, b) -> subprocess.CompletedProcess:
    """``lookbench compare A B`` in its own process: a read that blocks is a failed test, never a hung one."""
    try:
        return subprocess.run([sys.executable, "-m", "lookbench", "compare", str(a), str(b)], capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"compare {a} {b} did not end within 60 s")


def test_a_fifo_is_refused_in_one_line_without_blocking(results, tmp_path):
    os.mkfifo(tmp_path / "results.json")  # given as a file, and found in a folder as ``evaluate --output`` leaves it
    for a, b in ((tmp_path / "results.json", results["strict"]), (results["strict"], tmp_path)):
        proc = compare_cli(a, b)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.strip().splitlines() == [
            f"lookbench compare: error: {tmp_path / 'results.json'}: it is a FIFO, not a regular file"]


def test_a_result_over_the_size_cap_is_refused_in_one_line(results, tmp_path):
    """A valid result padded past MAX_RESULT_BYTES is refused for its size, before it is parsed."""
    text = results["strict"].read_text()
    big = tmp_path / "big.json"
    big.write_text(text[:-1] + " " * (MAX_RESULT_BYTES - len(text) + 10) + text[-1])
    assert json.loads(big.read_text()) == json.loads(text)
    proc = compare_cli(big, results["strict"])
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"lookbench compare: error: {big}: it is larger than the {MAX_RESULT_BYTES}-byte limit of one file"]


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["AIGen-Studio"]["per_query"]["ndcg"]["@5"].__setitem__(0, float("nan")),
     "AIGen-Studio per_query.ndcg.@5[0] is nan, not a fraction in [0, 1]"),
    (lambda d: d["AIGen-Studio"]["per_query"]["first_fine_rank"].__setitem__(1, 0),
     "AIGen-Studio per_query.first_fine_rank[1] is 0, not a rank"),
    (lambda d: d["RealStudioFlat"]["fine_recall"].__setitem__("@1", 12.5),
     "RealStudioFlat claimed fine_recall@1 12.5, outcomes give 100"),
])
def test_tampered_outcomes_or_scores_are_refused_naming_the_file(results, tmp_path, capsys, edit, words):
    """NaN used to give ``nan`` with p = 0.002, rank 0 counted as a hit: the outcomes check refuses both."""
    data = json.loads(results["strict"].read_text())
    edit(data)
    (tmp_path / "edited.json").write_text(json.dumps(data))
    assert main(["compare", str(results["strict"]), str(tmp_path / "edited.json"), "--metric", "ndcg", "--k", "5"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert f"{tmp_path / 'edited.json'}: damaged or edited: {words}" in captured.err
