"""The results store: where results go, an identical evaluation answered from it with zero forward passes,
safe path segments, atomic writes, --cutoff model from declared training cutoffs, and filter_after meaning what
the engine's cutoff means."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import numpy as np
import pytest

import lookbench
from lookbench.results import store
from lookbench.results.rankings import predictions_folder
from lookbench.cli import main
from lookbench.encoders.base import TransformersEncoder
from lookbench.engine import EvaluationError
from lookbench.metric.fine_recall.bootstrap import score_retrieval
from lookbench.encoders.entries import REGISTRY, gr_lite_mini_folder
from lookbench.encoders.registry import load_encoder

from tests.helpers.engine_data import CountingEncoder, graded_release, write_folder


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("tiny") / "lookbench")


def run(encoder, data, results_dir, **kwargs):
    # use_cache=False: a second run's zero forward passes can only come from the results store
    return lookbench.evaluate(encoder, data=data, results_dir=results_dir, use_cache=False, quiet=True, **kwargs)


def test_layout_and_an_identical_evaluation_is_not_recomputed(data, tmp_path):
    first = CountingEncoder()
    result = run(first, data, tmp_path)
    revision = result.provenance["dataset"]["revision"]
    assert result.stored == tmp_path / "counting-colour" / "1" / f"v20250101-{revision}" / "strict.json"
    assert first.images == 19 and not result.reused
    assert json.loads(result.stored.read_text()) == result.to_dict()

    again = CountingEncoder()
    reused = run(again, data, tmp_path)
    assert again.calls == 0 and again.images == 0  # no forward pass at all
    assert reused.reused and reused.stored == result.stored and reused.to_dict() == result.to_dict()

    forced = CountingEncoder()
    assert not run(forced, data, tmp_path, overwrite=True).reused and forced.images == 19

    # The default run judged and stored both modes: a leaderboard-mode run is answered from the store.
    assert result.modes["leaderboard"].stored == result.stored.with_name("leaderboard.json")
    board = CountingEncoder()
    assert run(board, data, tmp_path, mode="leaderboard").reused and board.images == 0

    # Any setting that changes the scores is another file, and is evaluated.
    for kwargs, name in ((dict(cutoff="2025-01-02", mode="strict"), "strict-after-2025-01-02.json"),
                         (dict(distractors=False, mode="strict"), "strict-no-distractors.json"),
                         (dict(index="hnsw", mode="strict"), "strict-hnsw.json"),
                         (dict(subsets=["real_studio_flat"], mode="strict"), "strict-RealStudioFlat.json")):
        other = CountingEncoder()
        assert run(other, data, tmp_path, **kwargs).stored.name == name and other.images > 0, kwargs
    assert sorted(p.name for p in result.stored.parent.glob("*.json")) == sorted(
        ["strict.json", "leaderboard.json", "strict-after-2025-01-02.json", "strict-no-distractors.json", "strict-hnsw.json",
         "strict-RealStudioFlat.json"])


def test_the_cli_saves_reuses_and_overwrites(data, tmp_path, capsys, own_results_store, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # store paths on one line; tests/test_widths.py checks the narrow terminal
    args = ["evaluate", "--data", str(data), "--model", "raw-pixels", "--quiet", "--no-cache"]
    assert main(args) == 0
    out = capsys.readouterr().out
    saved = next(own_results_store.rglob("strict.json"))  # the default store ($HF_HOME/lookbench/results)
    assert f"saved in the results store: {saved}" in out
    assert saved.relative_to(own_results_store).parts[:2] == ("raw-pixels", "v1")
    assert main(args) == 0
    board = saved.with_name("leaderboard.json")  # both modes, from one run
    assert f"stored results of an identical evaluation: {saved}, {board} (not recomputed" in capsys.readouterr().out
    assert main(args + ["--overwrite"]) == 0
    assert "saved in the results store" in capsys.readouterr().out
    assert main(args + ["--no-save"]) == 0
    assert "results store" not in capsys.readouterr().out and len(list(own_results_store.rglob("*.json"))) == 2
    assert main(args + ["--no-save", "--results", str(tmp_path / "elsewhere")]) == 2
    assert "--results names a store to save in and --no-save" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere").exists()
    assert main(args + ["--no-save", "--save-predictions"]) == 2
    assert "(--save-predictions) needs a place to write them" in capsys.readouterr().err


def test_a_model_without_revision_is_never_reused_and_says_so(data, tmp_path):
    class Anonymous(CountingEncoder):
        revision = None

    for _ in range(2):
        enc = Anonymous()
        result = run(enc, data, tmp_path)
        assert enc.images == 19 and not result.reused
        assert "declares no revision or fingerprint, so its identity is unknown" in result.notes[0]
    assert result.stored.parent.parent.name == "unversioned"


@pytest.mark.parametrize("name", ["../x", "a/b", "/abs/path", "..", "owner/name@rev"])
def test_model_names_never_leave_the_store_or_make_folders(data, tmp_path, name):
    class Named(CountingEncoder):
        pass

    Named.name = name
    root = tmp_path / "store"
    path = run(Named(), data, root).stored
    assert path.is_file() and path.resolve().is_relative_to(root.resolve())
    assert len(path.relative_to(root).parts) == 4  # model / revision / data / file: nothing more
    assert sorted(p.name for p in root.iterdir()) == [store.safe_segment(name)]
    assert store.safe_segment(name) not in (".", "..") and "/" not in store.safe_segment(name)


def test_different_data_content_of_one_release_never_shares_a_file(data, tmp_path):
    graded = write_folder(tmp_path / "graded", graded_release())  # also release v20250101
    a, b = run(CountingEncoder(), data, tmp_path / "s"), run(CountingEncoder(), graded, tmp_path / "s")
    assert a.stored.parent != b.stored.parent and a.stored.parent.name.startswith("v20250101-local-")
    assert a.stored.is_file() and b.stored.is_file()


def test_a_failed_write_leaves_the_stored_result_intact(tmp_path, monkeypatch):
    path = store.write_atomic(tmp_path / "m" / "strict.json", '{"old": 1}')

    def broken(fd):
        raise OSError("disk full")

    monkeypatch.setattr(store.os, "fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        store.write_atomic(path, '{"new": 2}')
    assert path.read_text() == '{"old": 1}' and [p.name for p in path.parent.iterdir()] == ["strict.json"]


def test_a_stored_result_from_other_settings_or_garbage_is_recomputed(data, tmp_path):
    first = run(CountingEncoder(), data, tmp_path)
    first.stored.write_text("{broken")
    enc = CountingEncoder()
    assert not run(enc, data, tmp_path).reused and enc.images == 19
    assert json.loads(first.stored.read_text())["provenance"]["mode"] == "strict"  # replaced by a valid result


def test_identity_file_name_and_provenance_come_from_one_settings_object(data, tmp_path):
    result = run(CountingEncoder(), data, tmp_path, cutoff="2025-01-02", distractors=False, subsets=["real_studio_flat"])
    settings = store.Settings.of(result.provenance)
    assert settings == store.Settings("strict", False, "2025-01-02", ("RealStudioFlat",), True, "flat", "fp32")
    assert result.stored.name == settings.stem() + ".json" == "strict-after-2025-01-02-no-distractors-RealStudioFlat.json"
    assert store.Identity.of(result.provenance).settings == settings
    # the cutoff is compared in UTC, kept as given
    assert store.Settings(cutoff="2025-01-02T00:00:00Z") == store.Settings(cutoff="2025-01-02")
    assert store.Settings(cutoff="2025-01-02T00:00:00Z").cutoff == "2025-01-02T00:00:00Z"


def test_a_provenance_key_missing_from_a_current_result_fails_instead_of_turning_reuse_off(data, tmp_path):
    result = run(CountingEncoder(), data, tmp_path)
    stored = json.loads(result.stored.read_text())
    identity = store.Identity.of(stored["provenance"])
    del stored["provenance"]["precision"]
    result.stored.write_text(json.dumps(stored))
    with pytest.raises(KeyError, match="precision"):
        store.find_identical(result.stored, identity)
    stored["provenance"]["result_format"] = store.RESULT_FORMAT - 1  # an older layout is recomputed, not misread
    result.stored.write_text(json.dumps(stored))
    assert store.find_identical(result.stored, identity) is None


def test_cutoff_model_uses_the_declared_date(data, tmp_path):
    with pytest.raises(EvaluationError, match="model raw-pixels declares no training cutoff"):
        lookbench.evaluate("raw-pixels", data=data, cutoff="model", quiet=True)

    class Dated(CountingEncoder):
        training_cutoff = "2025-01-02"

    result = lookbench.evaluate(Dated(), data=data, cutoff="model", quiet=True, use_cache=False).to_dict()
    p = result["provenance"]
    assert p["cutoff"] == "2025-01-02" and p["model"]["training_cutoff"] == "2025-01-02"
    # RealStudioFlat queries are on Jan 1..4, AIGen-Studio on Jan 5..7
    assert result["RealStudioFlat"]["num_queries"] == 2 and result["AIGen-Studio"]["num_queries"] == 3
    full = lookbench.evaluate(Dated(), data=data, quiet=True, use_cache=False).to_dict()
    assert full["provenance"]["cutoff"] is None and full["RealStudioFlat"]["num_queries"] == 4
    assert {s: c["queries_after_model_cutoff"] for s, c in full["provenance"]["dataset"]["counts"].items()} == {
        "RealStudioFlat": 2, "AIGen-Studio": 3}


def test_a_model_card_declares_the_cutoff(data, tmp_path, capsys):
    folder = tmp_path / "my-model"
    shutil.copytree(gr_lite_mini_folder(), folder)
    card = (folder / "README.md").read_text()
    assert "training_cutoff: 2023-12-31" in card  # gr-lite-mini's card is where the registry reads it from
    assert REGISTRY["gr-lite-mini"].training_cutoff == "2023-12-31"
    assert load_encoder("gr-lite-mini").training_cutoff == "2023-12-31"
    (folder / "README.md").write_text(card.replace("training_cutoff: 2023-12-31", "training_cutoff: 2025-01-03"))
    assert TransformersEncoder(str(folder)).training_cutoff == "2025-01-03"
    assert main(["evaluate", "--data", str(data), "--model", str(folder), "--cutoff", "model", "--quiet", "--no-save"]) == 0
    assert "AIGen-Studio" in capsys.readouterr().out

    (folder / "README.md").write_text(card.replace("training_cutoff: 2023-12-31\n", ""))
    assert main(["evaluate", "--data", str(data), "--model", str(folder), "--cutoff", "model", "--quiet"]) == 2
    assert f"model {folder} declares no training cutoff" in capsys.readouterr().err
    (folder / "README.md").write_text(card.replace("training_cutoff: 2023-12-31", "training_cutoff: soon"))
    with pytest.raises(ValueError, match="README.md: training_cutoff 'soon' is not an ISO 8601 date"):
        TransformersEncoder(str(folder))


def test_filter_after_and_the_engine_cutoff_give_the_same_queries_and_scores(data):
    cutoff = "2025-01-02"
    engine = lookbench.evaluate("raw-pixels", data=data, cutoff=cutoff, distractors=False, quiet=True, use_cache=False)
    encoder = load_encoder("raw-pixels")
    for subset in ("RealStudioFlat", "AIGen-Studio"):
        recent = lookbench.filter_after(datasets.load_dataset(str(data), subset), cutoff)
        assert len(recent["gallery"]) == len(datasets.load_dataset(str(data), subset)["gallery"])  # gallery whole
        assert len(recent["query"]) == engine.provenance["dataset"]["counts"][subset]["queries"]

        def embed(split):
            x = encoder.encode_batch([encoder.preprocess(im) for im in recent[split]["image"]])
            return x / np.linalg.norm(x, axis=1, keepdims=True)

        ranking = np.argsort(-(embed("query") @ embed("gallery").T), axis=1, kind="stable")
        scores = score_retrieval(ranking, recent["query"], recent["gallery"], n_resamples=0)
        assert {k: v for k, v in engine.subsets[subset].items() if k in scores} == scores


# -- hostile stores (issue 19 case 7, case 8) ------------------------------------------------------------------


@pytest.fixture
def read_only(tmp_path):
    """A folder nobody may write to: mode 0555, or for root (whom mode bits do not stop) the immutable flag."""
    import os
    import subprocess

    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
    yield folder
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o755)


def test_a_read_only_results_store_fails_before_any_work(data, read_only):
    """Case 7: --results on a read-only folder failed only after the whole evaluation."""
    encoder = CountingEncoder()
    with pytest.raises(EvaluationError, match=f"results store {read_only} cannot be written"):
        run(encoder, data, read_only)
    assert encoder.calls == 0
    with pytest.raises(EvaluationError, match=f"results store {read_only / 'sub'} cannot be written: {read_only} is not a writable"):
        run(encoder, data, read_only / "sub")
    assert encoder.calls == 0


def test_damaged_saved_rankings_are_never_reused_and_output_is_whole(data, tmp_path):
    """Case 7: a truncated stored predictions Parquet was reused; a deleted predictions folder made --output fail
    with a half-written output."""
    first = run(CountingEncoder(), data, tmp_path / "s", save_predictions=True)
    parquet = predictions_folder(first.stored) / "RealStudioFlat.parquet"
    parquet.write_bytes(parquet.read_bytes()[:200])  # truncated
    again = CountingEncoder()
    result = run(again, data, tmp_path / "s", save_predictions=True)
    assert not result.reused and again.images == 19
    assert any("RealStudioFlat.parquet cannot be read as a saved ranking" in note and "evaluated again" in note
               for note in result.notes), result.notes
    import pyarrow.parquet as pq

    assert pq.read_table(parquet).num_rows > 0  # replaced by a whole one
    shutil.rmtree(predictions_folder(first.stored))  # deleted; then --output without --save-predictions
    out = tmp_path / "out"
    third = CountingEncoder()
    result = run(third, data, tmp_path / "s", output_dir=out)
    assert not result.reused and third.images == 19
    assert json.loads((out / "results.json").read_text())["provenance"]["saved_predictions"] == []
    assert sorted(p.name for p in out.iterdir()) == ["attribute_errors_r1.png", "fine_vs_coarse_r1.png",
                                                     "per_category_fine_r1.png", "results-leaderboard.json", "results.json"]


def test_a_deeply_nested_stored_result_is_replaced(data, tmp_path):
    """Case 7: a deeply nested stored JSON crashed evaluate instead of being replaced."""
    first = run(CountingEncoder(), data, tmp_path)
    first.stored.write_text("[" * 100_000 + "]" * 100_000)
    enc = CountingEncoder()
    assert not run(enc, data, tmp_path).reused and enc.images == 19
    assert json.loads(first.stored.read_text())["provenance"]["mode"] == "strict"


def _truncate(path):
    path.write_bytes(path.read_bytes()[:300])


def _drop_rank(path):
    import pyarrow.parquet as pq

    pq.write_table(pq.read_table(path).drop_columns(["rank"]), path)


def _query_as_text(path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    pq.write_table(table.set_column(0, "query", pa.array(["one"] * table.num_rows)), path)


@pytest.mark.parametrize("damage, words", [(_truncate, "cannot be read as a saved ranking"),
                                           (_drop_rank, "column rank is missing"),
                                           (_query_as_text, "column query is string, not an integer")])
def test_explain_on_a_tampered_parquet_is_one_line_naming_the_file_and_column(data, tmp_path, capsys, damage, words):
    """Case 7: explain on a tampered Parquet gave errors that did not name the file; one dumped the Arrow table."""
    result = run(CountingEncoder(), data, tmp_path, save_predictions=True)
    parquet = predictions_folder(result.stored) / "RealStudioFlat.parquet"
    damage(parquet)
    assert main(["explain", str(result.stored), "--subset", "RealStudioFlat", "--query", "1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(parquet) in err and words in err, err


def test_results_follow_the_umask(data, tmp_path):
    """Case 8: result files were written 0600 (mkstemp's mode), so a shared store was unreadable to a team."""
    import os

    old = os.umask(0o022)
    try:
        result = run(CountingEncoder(), data, tmp_path, save_predictions=True)
    finally:
        os.umask(old)
    assert result.stored.stat().st_mode & 0o777 == 0o644
    folder = predictions_folder(result.stored)
    assert folder.stat().st_mode & 0o777 == 0o755 and (folder / "RealStudioFlat.parquet").stat().st_mode & 0o777 == 0o644


def test_two_writers_of_one_result_take_turns(tmp_path):
    """Issue 37: the store's writes hold the result's lock; a second writer waits (writes are small) for the first."""
    import threading

    from lookbench.results.result import EvaluationResult
    from tests.helpers.lock_holder import hold, release
    from tests.helpers.results import synthetic

    path = tmp_path / "store" / "model" / "rev" / "v20250101-local-x" / "strict.json"
    path.parent.mkdir(parents=True)
    result = EvaluationResult.from_dict(synthetic(3, {"RealStudioFlat": 5}))
    holder = hold(path)
    written = threading.Event()
    thread = threading.Thread(target=lambda: (result.write_json(path), written.set()))
    thread.start()
    try:
        assert not written.wait(1) and not path.exists()  # waiting for the other run
    finally:
        release(holder)
    assert written.wait(60)
    thread.join()
    assert json.loads(path.read_text())["RealStudioFlat"]["num_queries"] == 5
    assert sorted(p.name for p in path.parent.iterdir()) == ["strict.json"]


def test_what_a_killed_write_left_beside_a_result_is_removed_by_the_next(data, tmp_path):
    """Issue 37: a run killed while writing left its temporary file and rankings folder beside the result."""
    first = run(CountingEncoder(), data, tmp_path, save_predictions=True, mode="strict")
    rankings = predictions_folder(first.stored)
    (first.stored.with_name(f".{first.stored.name}.tmp-abc123")).write_text('{"half": ')
    (rankings.with_name(f".{rankings.name}.writing-abc123")).mkdir()
    (rankings.with_name(f".{rankings.name}.writing-abc123") / "RealStudioFlat.parquet").write_bytes(b"half")
    first.stored.write_text("{broken")  # so the next run writes the result again
    run(CountingEncoder(), data, tmp_path, save_predictions=True, mode="strict")
    assert sorted(p.name for p in first.stored.parent.iterdir()) == [first.stored.name, rankings.name]


def test_a_stored_result_edited_to_claim_another_score_is_recomputed_not_served(data, capsys, own_results_store):
    """Issue 37: a store file edited to claim 250 was served as the identical evaluation's result."""
    args = ["evaluate", "--data", str(data), "--model", "raw-pixels", "--quiet", "--no-cache"]
    assert main(args) == 0
    saved = next(own_results_store.rglob("strict.json"))
    honest = json.loads(saved.read_text())
    edited = json.loads(saved.read_text())
    edited["overall"]["fine_recall"]["@1"] = 250.0
    saved.write_text(json.dumps(edited))
    capsys.readouterr()
    assert main(args) == 0
    assert "saved in the results store" in capsys.readouterr().out
    assert json.loads(saved.read_text())["overall"]["fine_recall"] == honest["overall"]["fine_recall"]


def test_the_query_kind_is_in_the_file_name_and_a_result_without_it_had_image_queries():
    """Issue 39 item 2: a text-query result never shares a file with the image-query one of the same settings."""
    assert store.Settings().stem() == "strict"
    assert store.Settings(queries="text-long", cutoff="v20250101").stem() == "strict-text-long-after-v20250101"
    written = store.Settings(queries="text-short").provenance()
    assert written["queries"] == "text-short" and store.Settings.of(written) == store.Settings(queries="text-short")
    older = {k: v for k, v in store.Settings().provenance().items() if k != "queries"}  # written before text queries
    assert store.Settings.of(older).queries == "image"
