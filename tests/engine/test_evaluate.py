"""`lookbench evaluate` and `lookbench.evaluate` end to end (lookbench.engine) on a tiny offline folder: the scores,
intervals, provenance and figures it writes, and its errors in one line."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import lookbench
from lookbench.cli import main

from tests.helpers.engine_data import UNIQUE_IMAGES


def test_cli_end_to_end(data, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["evaluate", "--data", str(data), "--model", "raw-pixels", "--output", str(out),
                 "--cache-dir", str(tmp_path / "cache"), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "RealStudioFlat" in printed and "AIGen-Studio" in printed and "overall" in printed
    assert "2 self-match(es) removed" in " ".join(printed.split())  # the footer wraps at the terminal's width
    result = json.loads((out / "results.json").read_text())
    assert set(result) == {"RealStudioFlat", "AIGen-Studio", "overall", "provenance"}
    flat = result["RealStudioFlat"]
    assert flat["fine_recall"] == {"@1": 100.0, "@5": 100.0, "@10": 100.0, "@20": 100.0}
    assert set(flat["coarse_recall"]) == {"@1", "@5", "@10", "@20"} and "@5" in flat["ndcg"]
    assert flat["num_queries"] == 4 and flat["self_matches_removed"] == 2 and flat["gallery_size"] == 7 + 4
    assert result["overall"]["num_queries"] == 7
    prov = result["provenance"]
    assert prov["lookbench_version"] == lookbench.__version__
    assert prov["dataset"]["releases"] == ["v20250101"] and prov["dataset"]["revision"].startswith("local-")
    assert prov["model"]["name"] == "raw-pixels" and prov["model"]["embedding_dim"] == 3072
    assert prov["counts"]["unique_images"] == UNIQUE_IMAGES and prov["counts"]["rows"] == 11 + 6 + 4
    assert prov["search"].startswith("exact") and prov["mode"] == "strict"
    # every score has its interval, per subset and overall, from each query's stored outcome
    assert prov["intervals"]["resamples"] == 1000 and prov["intervals"]["seed"] == 0 and "outfit_id" in prov["intervals"]["method"]
    for block in (flat, result["AIGen-Studio"], result["overall"]):
        for metric in ("fine_recall", "coarse_recall", "ndcg", "map", "mrr"):
            assert set(block["ci95"][metric]) == {"@1", "@5", "@10", "@20"}
            for at, (lo, hi) in block["ci95"][metric].items():
                assert lo <= block[metric][at] <= hi, (metric, at)
    assert flat["ci95"]["fine_recall"]["@1"] == [100.0, 100.0]  # every query is a hit: no spread
    per_query = flat["per_query"]
    assert per_query["first_fine_rank"] == [1, 1, 1, 1] and len(per_query["item_id"]) == 4
    assert per_query["release"] == ["v20250101"] * 4 and set(per_query["ndcg"]) == {"@1", "@5", "@10", "@20"}
    assert np.mean(per_query["ndcg"]["@5"]) * 100 == pytest.approx(flat["ndcg"]["@5"], abs=1e-4)
    table = printed[: printed.index("saved in the results store")] if "saved in" in printed else printed
    assert "100.0 ±0.0" in table
    for name in ("fine_vs_coarse_r1.png", "per_category_fine_r1.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_errors_are_one_line(data, tmp_path):
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "lookbench", "evaluate", "--data", str(data), "--model", "raw-pixel",
                           "--quiet"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "Did you mean 'raw-pixels'" in proc.stderr
