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


def test_cli_end_to_end(data, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # every column shown, no cell folded (narrower: tests/test_widths.py)
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
    # every query is a hit, which is not certainty: the Wilson interval of 4 of 4 (issue 36 item 5; was [100, 100])
    assert flat["ci95"]["fine_recall"]["@1"] == [51.0109, 100.0]
    per_query = flat["per_query"]
    assert per_query["first_fine_rank"] == [1, 1, 1, 1] and len(per_query["item_id"]) == 4
    assert per_query["release"] == ["v20250101"] * 4 and set(per_query["ndcg"]) == {"@1", "@5", "@10", "@20"}
    assert np.mean(per_query["ndcg"]["@5"]) * 100 == pytest.approx(flat["ndcg"]["@5"], abs=1e-4)
    table = printed[: printed.index("saved in the results store")] if "saved in" in printed else printed
    assert "100.0 [100.0, 100.0]" in table  # a zero-width interval is its bounds, never ±0.0
    for name in ("fine_vs_coarse_r1.png", "per_category_fine_r1.png", "attribute_errors_r1.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_errors_are_one_line(data, tmp_path):
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "lookbench", "evaluate", "--data", str(data), "--model", "raw-pixel",
                           "--quiet"], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "Did you mean 'raw-pixels'" in proc.stderr


# ------------------------------------------------------------------ text queries (issue 39 item 2)

COLOURS = {"red": (200, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 200), "yellow": (220, 220, 40),
           "cyan": (40, 220, 220), "magenta": (220, 40, 220), "grey": (120, 120, 120)}


class ColourReader:
    """An image tower (the mean colour) and a text tower that reads the colour word: the API's custom-model path."""

    name = "colour-reader"
    revision = "1"

    def __init__(self):
        self.texts = []

    def encode(self, images):
        return np.stack([np.asarray(im, dtype=np.float32).reshape(-1, 3).mean(axis=0) for im in images])

    def encode_text(self, texts):
        self.texts += texts
        return np.stack([np.asarray(next(COLOURS[w] for w in t.split() if w in COLOURS), dtype=np.float32) for t in texts])


@pytest.fixture(scope="module")
def text_data(tmp_path_factory):
    from tests.helpers.engine_data import write_folder

    return write_folder(tmp_path_factory.mktemp("tiny-text") / "lookbench", texts=True)


def test_text_queries_search_the_same_gallery_with_words(text_data, tmp_path):
    """The words are read by encode_text, the gallery and noise encoded as for image queries, the query's own image
    left out of its ranking as it is for image queries, and every score of the metric given."""
    reader = ColourReader()
    result = lookbench.evaluate(reader, data=text_data, queries="text", cache_dir=tmp_path, quiet=True).to_dict()
    assert reader.texts == ["red long top", "green short top", "blue midi dress", "yellow mini skirt",
                            "red long top", "green short top", "blue midi dress"]
    flat = result["RealStudioFlat"]
    assert flat["fine_recall"]["@1"] == 100.0 and flat["num_queries"] == 4 and flat["gallery_size"] == 11
    assert flat["self_matches_removed"] == 2  # query 0's image is in its gallery and in the noise
    assert set(flat["ci95"]) >= {"fine_recall", "coarse_recall", "ndcg", "map", "mrr"}
    prov = result["provenance"]
    assert prov["queries"] == "text-short" and prov["model"]["text_tower"] == "object"
    assert prov["dataset"]["text_queries"] == {"config": "text", "column": "text_short", "form": "short",
                                               "template_version": [1]}
    # only the galleries and the noise: 7 + 3 + 4 images, one noise row a copy of a gallery row; no query image
    assert prov["counts"]["texts_encoded"] == 7 and prov["counts"]["forward_images"] == 13
    assert "per_release" in result["overall"]


def test_text_queries_are_stored_apart_and_compare_refuses_mixing_them(text_data, tmp_path, capsys):
    store = tmp_path / "store"
    image = lookbench.evaluate(ColourReader(), data=text_data, results_dir=store, cache_dir=tmp_path, quiet=True)
    short = lookbench.evaluate(ColourReader(), data=text_data, results_dir=store, cache_dir=tmp_path, quiet=True,
                               queries="text")
    long = lookbench.evaluate(ColourReader(), data=text_data, results_dir=store, cache_dir=tmp_path, quiet=True,
                              queries="text", text_form="long")
    assert (image.stored.name, short.stored.name, long.stored.name) == (
        "strict.json", "strict-text-short.json", "strict-text-long.json")
    again = lookbench.evaluate(ColourReader(), data=text_data, results_dir=store, cache_dir=tmp_path, quiet=True,
                               queries="text")
    assert again.reused and again.stored == short.stored
    assert "text queries (short form)" in " ".join(short.table(width=200).split())
    assert main(["compare", str(image.stored), str(short.stored)]) == 2
    assert ("A and B differ in queries (image vs text-short): a paired comparison needs the same data and queries"
            in capsys.readouterr().err)
    assert main(["compare", str(short.stored), str(short.stored)]) == 0
    assert "colour-reader, text-short queries" in capsys.readouterr().out


def test_an_encoder_without_a_text_tower_is_refused_in_one_line_before_the_data_loads(text_data, tmp_path, capsys):
    assert main(["evaluate", "--data", str(tmp_path / "nowhere"), "--model", "raw-pixels", "--queries", "text",
                 "--no-save", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "lookbench evaluate: error: model raw-pixels has no text tower, so it cannot read text queries (--queries text); "
        "registered models with one: gr-lite-mini-text, random, category-text, marqo-fashionclip, marqo-fashionsiglip, "
        "siglip2-b16, siglip2-l16, clip-b32, clip-l14 (or any object with encode_text(list_of_str) beside encode(images))")
    assert main(["evaluate", "--data", str(text_data), "--model", "raw-pixels", "--text-form", "long", "--no-save"]) == 2
    assert "--text-form chooses the words of text queries: give it with --queries text" in capsys.readouterr().err


def test_data_without_text_queries_is_named(data, tmp_path):
    from lookbench.errors import EvaluationError

    with pytest.raises(EvaluationError, match=r"has no text config \(its queries in words\): it was built "
                                                        r"before lookbench wrote them; rebuild it"):
        lookbench.evaluate(ColourReader(), data=data, queries="text", cache_dir=tmp_path, quiet=True)


def test_the_category_oracle_ranks_the_query_category_first_and_reads_nothing(text_data, tmp_path):
    """Issue 39 item 5: told the categories, it finds the category at rank 1 always and the item by chance."""
    result = lookbench.evaluate("category-text", data=text_data, queries="text", cache_dir=tmp_path, quiet=True).to_dict()
    for name in ("RealStudioFlat", "AIGen-Studio"):
        assert result[name]["coarse_recall"]["@1"] == 100.0
    assert result["provenance"]["counts"]["forward_images"] == 0 and result["provenance"]["counts"]["texts_encoded"] == 0
    again = lookbench.evaluate("category-text", data=text_data, queries="text", cache_dir=tmp_path, quiet=True).to_dict()
    assert again["RealStudioFlat"]["per_query"] == result["RealStudioFlat"]["per_query"]  # a fixed order
