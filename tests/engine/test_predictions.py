"""Saved rankings (--save-predictions): Parquet that datasets reads, agreeing with the result's Recall@K, and the
`lookbench explain` view built on them."""
from __future__ import annotations

import datasets
import numpy as np
import pytest

import lookbench
from lookbench.cli import main
from lookbench.results.rankings import predictions_folder

from tests.helpers.engine_data import ShadeReader, graded_release, write_folder


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("graded") / "lookbench", graded_release())


@pytest.fixture(scope="module")
def saved(graded, tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    return lookbench.evaluate("raw-pixels", data=graded, results_dir=store, save_predictions=True, quiet=True, use_cache=False)


def test_saved_rankings_round_trip_and_agree_with_the_recalls(saved):
    for subset, scores in saved.subsets.items():
        path = predictions_folder(saved.stored) / f"{subset}.parquet"
        table = datasets.load_dataset("parquet", data_files=str(path), split="train")
        num_queries = scores["num_queries"]
        assert sorted(set(table["query"])) == list(range(1, num_queries + 1))
        query, rank = np.array(table["query"]), np.array(table["rank"])
        for kind in ("fine", "coarse"):
            hits = np.array(table[f"{kind}_hit"])
            for k in (1, 5, 10, 20):
                hit_queries = len(set(query[hits & (rank <= k)]))
                assert 100.0 * hit_queries / num_queries == pytest.approx(scores[f"{kind}_recall@{k}"]), (subset, kind, k)
        assert 0 < scores["fine_recall@1"] < 100  # the graded release is not saturated: the check has teeth
        first = table.filter(lambda r: r["query"] == 1)
        assert list(first["rank"]) == list(range(1, len(first) + 1))
        assert np.all(np.diff(first["score"]) <= 1e-6)  # best first (up to float rounding between the two searches)
        # gallery_index counts subset gallery rows first, then the noise gallery
        gallery_size = scores["gallery_size"]
        assert max(table["gallery_index"]) < gallery_size


def test_gallery_index_and_item_ids_name_the_same_rows(saved, graded):
    subset = "RealStudioFlat"
    table = datasets.load_dataset("parquet", data_files=str(predictions_folder(saved.stored) / f"{subset}.parquet"), split="train")
    gallery = datasets.load_dataset(str(graded), subset)["gallery"]
    noise = datasets.load_dataset(str(graded), "noise")["gallery"]
    item_ids = list(gallery["item_id"]) + list(noise["item_id"])
    assert [item_ids[i] for i in table["gallery_index"]] == list(table["item_id"])
    assert any(i >= len(gallery) for i in table["gallery_index"])  # noise rows are ranked too


def test_a_reused_result_keeps_its_rankings_and_asking_for_them_recomputes(graded, tmp_path):
    plain = lookbench.evaluate("raw-pixels", data=graded, results_dir=tmp_path, quiet=True, use_cache=False)
    assert not predictions_folder(plain.stored).exists()
    with_rankings = lookbench.evaluate("raw-pixels", data=graded, results_dir=tmp_path, save_predictions=True, quiet=True)
    assert not with_rankings.reused and (predictions_folder(plain.stored) / "AIGen-Studio.parquet").is_file()
    out = tmp_path / "out"
    reused = lookbench.evaluate("raw-pixels", data=graded, results_dir=tmp_path, save_predictions=True, quiet=True, output_dir=out)
    import pyarrow.parquet as pq

    assert reused.reused and pq.read_table(out / "results.predictions" / "AIGen-Studio.parquet").equals(
        pq.read_table(predictions_folder(plain.stored) / "AIGen-Studio.parquet"))  # --output gets them too


def test_explain_shows_what_each_result_lacks_or_has_differently(saved, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one line per row here; tests/test_widths.py checks the narrow terminal
    # Query 1 of RealStudioFlat (product 0): its near-duplicate with another colour attribute ranks first, a noise
    # image of another category second, the true match third.
    assert main(["explain", str(saved.stored), "--subset", "real_studio_flat", "--query", "1", "--top", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "RealStudioFlat query 1 of 6 (item p0), strict mode: first fine hit at rank 3, first coarse hit at rank 1"
    assert out[1].endswith("category top, main attribute red; attributes: colour=red, sleeve=long")
    assert out[2].split()[:3] == ["rank", "score", "fine"] and set(out[3]) == {"─"}  # the header and its rule
    assert out[4].split()[2:5] == ["no", "yes", "dup0"] and out[4].endswith("colour green (query red)")
    assert out[5].split()[2:5] == ["no", "no", "n-far16"] and out[5].endswith("category dress (query top)")
    assert out[6].split()[2:5] == ["yes", "yes", "p0"] and out[6].endswith("all query attributes match")
    assert len(out) == 4 + 3

    assert main(["explain", str(saved.stored), "--subset", "RealStudioFlat", "--query", "0"]) == 2
    assert "has queries 1..6; there is no query 0" in capsys.readouterr().err
    assert main(["explain", str(saved.stored), "--subset", "RealStreetLook", "--query", "1"]) == 2
    assert "has no saved rankings for RealStreetLook" in capsys.readouterr().err


def test_differences_compare_as_the_metric_does():
    from lookbench.report.records import chips

    def differences(query_attributes, item_attributes):
        return [c.text for c in chips({"category": "-", "attributes": query_attributes},
                                      {"category": "-", "attributes": item_attributes}, "strict", True)]

    query = [{"name": "Colour", "value": "Red"}, {"name": "sleeve", "value": "long"}, {"name": "fit", "value": "slim"}]
    item = [{"name": "colour", "value": " red"}, {"name": "fit", "value": "loose"}, {"name": "neck", "value": "v"}]
    assert differences(query, item) == ["lacks sleeve", "fit loose (query slim)"]  # case and spacing ignored, extras too
    assert differences(query, query) == []


def test_rankings_of_an_earlier_run_never_stand_beside_a_newer_result(graded, tmp_path):
    first = lookbench.evaluate("raw-pixels", data=graded, results_dir=tmp_path, save_predictions=True, quiet=True)
    assert first.provenance["saved_predictions"] == ["AIGen-Studio", "RealStudioFlat"]
    newer = lookbench.evaluate("raw-pixels", data=graded, results_dir=tmp_path, overwrite=True, quiet=True)
    assert newer.stored == first.stored and newer.provenance["saved_predictions"] == []
    assert not predictions_folder(newer.stored).exists()


def test_the_rankings_of_text_queries_carry_their_words_and_explain_shows_them(tmp_path, capsys):
    """Issue 39 item 2: a saved ranking of text queries says what each query asked, and so does explain."""
    from lookbench.commands.explain import explain

    data = write_folder(tmp_path / "data", texts=True)
    result = lookbench.evaluate(ShadeReader(), data=data, queries="text", quiet=True, save_predictions=True,
                                output_dir=tmp_path / "out", use_cache=False)
    ranking = result.rankings["RealStudioFlat"]
    first = ranking.filter(lambda r: r["query"] == 1)
    assert set(first["query_text"]) == {"red long top"} and len(first) == 7 + 4 - 2  # its own image left out twice
    shown = explain(tmp_path / "out", "RealStudioFlat", 1, 2)
    assert "\n  text query: red long top\n" in shown
