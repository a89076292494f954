"""The published leaderboard shipped as data, and store files read as entries: every value shown is type-checked, and a
bad file is skipped and named, never a stop."""
from __future__ import annotations

import json

import pytest

from lookbench.leaderboard.load import load_reference

from tests.helpers.leaderboard import FOUR, result, run_cli



@pytest.fixture(autouse=True)
def _one_line_each(monkeypatch):
    """A skipped file's line whole, as these tests parse it (tests/test_widths.py checks the narrow terminal)."""
    monkeypatch.setenv("COLUMNS", "1000")

def test_published_overall_figures_are_recomputed_from_the_subsets():
    entries, source = load_reference("release_v2601")
    assert len(entries) == 16 and "benchmark.json" in source
    by_model = {e.model: e for e in entries}
    assert round(by_model["GR-Pro"].score("fine_recall", 1), 2) == 67.38
    assert round(by_model["GR-Lite"].score("fine_recall", 1), 2) == 65.71
    assert round(by_model["GR-Pro"].score("coarse_recall", 1), 2) == 87.93


# -- hostile store files (issue 19 cases 4, 5) --------------------------------------------------------------------


def _store_with_one_good_result(tmp_path):
    store = tmp_path / "results"
    store.mkdir()
    (store / "good.json").write_text(json.dumps(result("good-model", FOUR)))
    return store


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_one_bad_store_file_never_stops_the_table_and_is_named_on_stderr(tmp_path, capsys, fmt):
    """Case 4: a FIFO named *.json, a deeply nested JSON, a string score and a list metric are each skipped and
    named (in every format, csv included); the good result is still ranked."""
    import os
    import threading

    store = _store_with_one_good_result(tmp_path)
    os.mkfifo(store / "fifo.json")
    (store / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    string_score = result("string-score", FOUR)
    string_score["RealStudioFlat"]["fine_recall"]["@1"] = "70"
    (store / "string.json").write_text(json.dumps(string_score))
    list_metric = result("list-metric", FOUR)
    list_metric["RealStudioFlat"]["fine_recall"] = [70.0]
    (store / "list.json").write_text(json.dumps(list_metric))
    (store / "not-a-dict.json").write_text("[1, 2]")
    answer = {}
    worker = threading.Thread(target=lambda: answer.update(zip(("code", "out", "err"), run_cli(
        capsys, "--results", str(store), "--reference", "none", "--format", fmt))), daemon=True)
    worker.start()
    worker.join(120)
    if worker.is_alive():  # a blocked open of the FIFO: unblock it so the session can end, then fail
        with open(store / "fifo.json", "w"):
            pass
        pytest.fail("the leaderboard blocked on a FIFO in the store")
    assert answer["code"] == 0, answer["err"]
    assert "good-model" in answer["out"] and not any(n in answer["out"] for n in ("string-score", "list-metric"))
    skipped = {line.split(": ", 2)[1].removeprefix("skipped ").rsplit("/", 1)[-1]: line for line in answer["err"].splitlines()}
    assert set(skipped) == {"fifo.json", "deep.json", "string.json", "list.json", "not-a-dict.json"}, answer["err"]
    assert "FIFO, not a regular file" in skipped["fifo.json"]
    assert "nested deeper than" in skipped["deep.json"]
    assert "RealStudioFlat fine_recall @1 is '70', not a percentage" in skipped["string.json"]
    assert "RealStudioFlat fine_recall is list" in skipped["list.json"]


def test_impossible_scores_are_skipped_and_json_output_is_strict(tmp_path, capsys):
    """Case 5: Infinity, NaN and 250 are not percentages: those files are skipped, never ranked."""
    store = _store_with_one_good_result(tmp_path)
    for name, value in (("inf", "Infinity"), ("nan", "NaN"), ("big", "250")):
        text = json.dumps(result(f"{name}-model", FOUR)).replace('"@1": 70.0', f'"@1": {value}', 1)
        assert value in text
        (store / f"{name}.json").write_text(text)
    code, out, err = run_cli(capsys, "--results", str(store), "--reference", "none", "--format", "json")
    assert code == 0
    parsed = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON output"))
    assert [r["model"] for r in parsed[0]["rows"]] == ["good-model"]
    for name, value in (("inf", "inf"), ("nan", "nan"), ("big", "250")):
        assert any(f"{name}.json: not a LookBench result" in line and "not a percentage" in line and value in line
                   for line in err.splitlines()), (name, err)


def test_a_stored_result_whose_outcomes_do_not_give_its_scores_is_shown_not_verified_and_unranked(tmp_path, capsys):
    """Issue 36 item 3: an edited score (or edited outcomes) in a stored result is never ranked, and no longer hidden
    among the skipped files: its row says "no: … claimed X, outcomes give Y" in a block of its own, unranked. The
    honest result is "not checked" (not re-scored from rankings), one without outcomes too."""
    import lookbench
    from lookbench.leaderboard.load import load_store
    from tests.helpers.engine_data import write_folder

    store = _store_with_one_good_result(tmp_path)
    evaluated = lookbench.evaluate("raw-pixels", data=write_folder(tmp_path / "lookbench"), results_dir=store,
                                   cache_dir=tmp_path / "cache", quiet=True, mode="strict")
    honest = json.loads(evaluated.stored.read_text())
    boosted = json.loads(json.dumps(honest))
    boosted["provenance"]["model"]["name"] = "boosted"
    boosted["RealStudioFlat"]["ndcg"]["@5"] = 99.0
    (store / "boosted.json").write_text(json.dumps(boosted))
    infinite = json.loads(json.dumps(honest))
    infinite["provenance"]["model"]["name"] = "infinite"
    infinite["overall"]["fine_recall"]["@1"] = 1e999
    (store / "infinite.json").write_text(json.dumps(infinite))  # written as Infinity
    entries, skipped = load_store(store)
    assert skipped == []
    verified = {e.model: e.verified for e in entries}
    assert verified == {
        "good-model": "not checked", "raw-pixels": "not checked",
        "boosted": "no: damaged or edited: RealStudioFlat claimed ndcg@5 99, outcomes give 86.731975",
        "infinite": "no: damaged or edited: overall claimed fine_recall@1 inf, outcomes give "
                    f"{honest['overall']['fine_recall']['@1']:.8g}"}
    capsys.readouterr()  # the data folder's build output
    code, out, err = run_cli(capsys, "--results", str(store), "--reference", "none", "--metric", "ndcg", "--k", "5")
    assert code == 0 and err == ""
    ranked, failed = out.split("\n\n")[:2]
    assert "raw-pixels" in ranked and "boosted" not in ranked
    assert failed.splitlines()[0].endswith(" — not verified (a check failed: unranked)")
    (row,) = [line for line in failed.splitlines() if "boosted" in line]
    assert row.split()[:2] == ["-", "boosted"] and row.endswith(
        "no: damaged or edited: RealStudioFlat claimed ndcg@5 99, outcomes give 86.731975")


def test_a_submission_is_re_scored_from_its_rankings_and_the_rest_say_what_was_checked(submissions):
    """Issue 36 item 3: a folder of submissions (`submit --dry-run --out`) is read like a store; each submission is
    re-scored from its rankings (`verify_submission`), labelled with the Hub id it was submitted for."""
    from lookbench.leaderboard.load import load_store

    entries, skipped = load_store(submissions)
    assert skipped == []
    assert {e.model: e.verified for e in entries} == {
        "someone/raw-pixels@aaaaaaaaaaaa": "consistent",
        # the result itself, rankings beside it but no submission: only its outcomes are checked
        "raw-pixels": "not checked",
        # a ranking's top two swapped: the JSON agrees with itself, the rankings do not give it
        "swapped/raw-pixels@aaaaaaaaaaaa": "no: RealStudioFlat fine_recall@1 claimed 100.000000, recomputed 75.000000 "
                                           "(and 20 more: lookbench verify names them)",
        # a score edited in the JSON: the rankings re-judged give another
        "edited/raw-pixels@aaaaaaaaaaaa": "no: RealStudioFlat fine_recall@1 claimed 99.000000, recomputed 100.000000",
        # bad input is the one line `lookbench verify` gives
        "unreadable/raw-pixels@aaaaaaaaaaaa": "no: results.json has no saved ranking of AIGen-Studio "
                                              "(results.predictions/AIGen-Studio.parquet); a result is verified from "
                                              "its rankings"}


def test_the_caller_can_give_its_verdicts_and_data_that_cannot_be_loaded_is_not_checked(submissions, tmp_path):
    """The leaderboard Space keeps each submission's verdict by the hash of its files, so it passes them in: ``verify``
    is asked once per submission and never about a result that is not one. Without it, a submission whose data cannot
    be loaded here is "not checked", with the reason, ranked below the verified rows; it is not failed."""
    import shutil

    from lookbench.leaderboard.load import Verdict, judge_submission, load_store

    asked = []
    entries, _ = load_store(submissions, verify=lambda folder, key: asked.append(folder.name) or Verdict("pending", key))
    assert sorted(asked) == ["strict"] * 4 and {e.verified for e in entries} == {"pending", "not checked"}
    (honest,) = (submissions / "submissions").glob("someone/raw-pixels/*/*/strict")
    moved = tmp_path / "strict"
    shutil.copytree(honest, moved)
    result = json.loads((moved / "results.json").read_text())
    (tmp_path / "empty").mkdir()
    result["provenance"]["dataset"]["data"] = str(tmp_path / "empty")
    (moved / "results.json").write_text(json.dumps(result))
    assert judge_submission(moved).text.startswith(f"not checked: its data cannot be loaded here ({tmp_path / 'empty'}")
