"""Both scoring modes from one run (issue 46 item 1): one encode and one search judged in strict and leaderboard mode,
each stored, both in `lookbench leaderboard`; and the settings a run parses once (item 8)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import lookbench
from lookbench.cli import main
from lookbench.engine import check_options
from lookbench.errors import EvaluationError
from lookbench.filtering import Cutoff
from lookbench.leaderboard.ranking import leaderboard, published_best
from lookbench.settings import Modes, QueryKind

from tests.helpers.engine_data import png, record, write_folder


def modes_release() -> dict:
    """Query 0's nearest gallery image is a decoy of its category and main attribute with another sleeve (a hit in
    leaderboard mode, a miss in strict mode); query 1's is its match."""
    queries = [record(png((200, 30, 30), 1), "q0", "top", "red", {"colour": "red", "sleeve": "long"}, day=1),
               record(png((30, 30, 200), 2), "q1", "dress", "blue", {"colour": "blue", "length": "midi"}, day=2)]
    gallery = [record(png((200, 30, 30), 11), "d0", "top", "red", {"colour": "red", "sleeve": "short"}, day=1),
               record(png((150, 60, 60), 12), "q0", "top", "red", {"colour": "red", "sleeve": "long"}, day=1),
               record(png((30, 30, 200), 13), "q1", "dress", "blue", {"colour": "blue", "length": "midi"}, day=1),
               record(png((60, 60, 150), 14), "d1", "dress", "blue", {"colour": "blue", "length": "maxi"}, day=1)]
    noise = [record(png((120, 120, 120), 20 + i), f"n{i}", "bag", "grey", {"colour": "grey"}, day=1) for i in range(2)]
    return {"RealStudioFlat": {"query": queries, "gallery": gallery}, "noise": {"gallery": noise}}


@pytest.fixture(scope="module")
def two_modes(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("modes") / "lookbench", modes_release())


class Counting:
    """An image's mean colour, counting the forward passes asked of it."""

    name = "counting-mean-colour"

    def __init__(self):
        self.calls = self.images = 0

    def encode(self, images):
        self.calls += 1
        self.images += len(images)
        return np.stack([np.asarray(im.convert("RGB"), dtype=np.float32).mean(axis=(0, 1)) for im in images])


def _scores(result) -> dict:
    """Everything a result claims, without the provenance of the run that made it."""
    return {k: v for k, v in result.to_dict().items() if k != "provenance"}


def _hits(result) -> dict:
    return {name: (list(table["fine_hit"]), list(table["coarse_hit"])) for name, table in result.rankings.items()}


def test_one_run_judges_both_modes_as_two_single_mode_runs_would_with_no_extra_forward_pass(two_modes, tmp_path):
    data = two_modes
    both_model, strict_model, board_model = Counting(), Counting(), Counting()
    store, out = tmp_path / "store", tmp_path / "out"
    both = lookbench.evaluate(both_model, data=data, use_cache=False, quiet=True, results_dir=store, output_dir=out,
                              save_predictions=True)
    strict = lookbench.evaluate(strict_model, data=data, mode="strict", use_cache=False, quiet=True, save_predictions=True,
                                output_dir=tmp_path / "strict")
    board = lookbench.evaluate(board_model, data=data, mode="leaderboard", use_cache=False, quiet=True,
                               save_predictions=True, output_dir=tmp_path / "board")
    # one forward pass per distinct image, as a single-mode run does
    assert both_model.images == strict_model.images == board_model.images == 2 + 4 + 2
    assert both_model.calls == strict_model.calls
    # the modes disagree on this data (query 0's top-1 is the decoy), so equal scores are not a coincidence
    assert (both.overall["fine_recall@1"], both.modes["leaderboard"].overall["fine_recall@1"]) == (50.0, 100.0)
    assert list(both.modes) == ["strict", "leaderboard"] and both.modes["strict"] is both
    assert _scores(both) == _scores(strict)
    assert _scores(both.modes["leaderboard"]) == _scores(board)
    assert _hits(both) == _hits(strict) and _hits(both.modes["leaderboard"]) == _hits(board)
    assert both.provenance["mode"] == "strict" and both.modes["leaderboard"].provenance["mode"] == "leaderboard"
    # a single-mode run is its own only mode
    assert list(strict.modes) == ["strict"] and list(board.modes) == ["leaderboard"]

    # the store keeps one file per mode; --output: results.json (strict) and results-leaderboard.json
    assert sorted(p.name for p in store.rglob("*.json")) == ["leaderboard.json", "strict.json"]
    assert both.stored.name == "strict.json" and both.modes["leaderboard"].stored.name == "leaderboard.json"
    assert json.loads((out / "results.json").read_text())["provenance"]["mode"] == "strict"
    written = json.loads((out / "results-leaderboard.json").read_text())
    assert written["provenance"]["mode"] == "leaderboard"
    assert {k: v for k, v in written.items() if k != "provenance"} == _scores(board)
    assert not (tmp_path / "board" / "results-leaderboard.json").exists()  # one mode: results.json alone

    # both results are ranked, each in the section of its mode
    sections = leaderboard(results=store, reference=None).sections
    assert sorted(s.title.rsplit(" — ", 1)[1] for s in sections) == ["leaderboard mode, with distractors",
                                                                     "strict mode, with distractors"]
    for section in sections:
        mode = "leaderboard" if "leaderboard mode" in section.title else "strict"
        (row,) = section.rows
        assert row["model"] == "counting-mean-colour"
        assert row["overall fine R@1"] == pytest.approx(both.modes[mode].overall["fine_recall@1"])


def test_a_stored_run_is_reused_for_both_modes_only_when_both_are_stored(data, tmp_path, capsys):
    store, out = tmp_path / "store", tmp_path / "out"
    args = ["evaluate", "--data", str(data), "--model", "raw-pixels", "--results", str(store), "--quiet",
            "--cache-dir", str(tmp_path / "cache")]
    assert main(args + ["--mode", "leaderboard"]) == 0
    capsys.readouterr()
    assert main(args + ["--output", str(out)]) == 0  # strict is not stored yet: the run is made again, both stored
    printed = capsys.readouterr().out
    assert "saved in the results store" in printed and "strict.json" in printed and "leaderboard.json" in printed
    table = " ".join(printed.split())
    # the table is strict's; under it, leaderboard mode's overall Fine@1 beside what the published table holds
    assert "strict mode" in table and "leaderboard mode (category + main attribute, the published table's): overall Fine@1 " in table
    assert "no published row on this data (release_v2601 is on LookBench (srpone/look-bench v20251201), leaderboard mode)" in table
    assert main(args) == 0
    printed = capsys.readouterr().out
    printed = " ".join(printed.split())  # the footer is wrapped to the width: read it whole
    assert "stored results of an identical evaluation" in printed and "image(s) encoded" in printed
    # a later one-mode run into the same --output folder leaves no other run's file beside its own
    assert (out / "results-leaderboard.json").exists()
    assert main(args + ["--mode", "strict", "--output", str(out)]) == 0
    assert not (out / "results-leaderboard.json").exists()
    assert json.loads((out / "results.json").read_text())["provenance"]["mode"] == "strict"


def test_published_best_names_the_best_published_row_on_the_same_data_only():
    from lookbench.leaderboard.load import load_reference

    rows, _ = load_reference("release_v2601")
    subsets = {name: {"fine_recall": {"@1": 50.0}, "num_queries": scores["num_queries"]}
               for name, scores in rows[0].subsets.items()}
    result = {**subsets, "overall": {}, "provenance": {
        "dataset": {"name": "LookBench", "revision": "local-1", "key": "srpone/look-bench@v20251201",
                    "releases": ["v20251201"]},
        "model": {"name": "mine"}, "mode": "leaderboard", "distractors": True, "cutoff": None}}
    assert published_best(result) == "published best on this data (release_v2601): GR-Pro 67.4"
    # on one subset, the best row on that subset
    one = {"RealStreetLook": subsets["RealStreetLook"], "provenance": result["provenance"]}
    best = max(rows, key=lambda r: r.score("fine_recall", 1, "RealStreetLook"))
    assert published_best(one) == (f"published best on this data (release_v2601): {best.model} "
                                   f"{best.score('fine_recall', 1, 'RealStreetLook'):.1f}")
    for other in ({"key": "local-1"}, {"distractors": False}, {"mode": "strict"}, {"cutoff": "2025-01-01"}):
        changed = {**result, "provenance": {**result["provenance"], **{k: v for k, v in other.items() if k != "key"},
                                            "dataset": {**result["provenance"]["dataset"],
                                                        **({"key": other["key"]} if "key" in other else {})}}}
        assert published_best(changed).startswith("no published row on this data"), other


def test_each_setting_is_parsed_once_into_a_typed_value():
    options = check_options(cutoff="2025-01-01", queries="text", text_form="long", mode="leaderboard")
    assert options.modes == Modes(("leaderboard",)) and options.kind == QueryKind("text", "long")
    assert options.kind.label == "text-long" and options.model == "gr-lite-mini-text"
    assert options.cutoff.date.isoformat() == "2025-01-01T00:00:00+00:00" and str(options.cutoff) == "2025-01-01"
    assert Cutoff.of(options.cutoff) is options.cutoff  # a stage given the parsed value does not parse it again
    assert check_options().modes.names == ("strict", "leaderboard") and check_options().kind.label == "image"
    assert check_options(cutoff="model").cutoff_from_model and check_options(cutoff="v20250101").cutoff.release == "v20250101"
    for bad, message in (({"mode": "loose"}, "mode must be one of strict, leaderboard (or None: all of them); got 'loose'"),
                         ({"queries": "audio"}, "queries must be one of image, text; got 'audio'"),
                         ({"cutoff": "soon"}, "'soon' is not an ISO 8601 date")):
        with pytest.raises(EvaluationError, match=message.replace("(", r"\(").replace(")", r"\)")):
            check_options(**bad)
