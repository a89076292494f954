"""Loading the benchmark (lookbench.engine.data): `lookbench evaluate --data` on a snapshot in the published
srpone/look-bench layout (converted once by the builder), a cutoff keeping only the queries after it, and Hub
dataset ids: revisions that are refs, never paths, and the commit the cache resolved recorded."""
import pytest

import lookbench
from lookbench.cli import main
from tests.helpers.engine_data import write_folder
from tests.helpers.hub_cache import put_snapshot
from tests.helpers.raw_release import write_upstream


def test_evaluate_reads_the_published_layout(tmp_path):
    snapshot = write_upstream(tmp_path / "look-bench")
    result = lookbench.evaluate("raw-pixels", data=snapshot, distractors=False, cache_dir=tmp_path / "cache", quiet=True).to_dict()
    street = result["RealStreetLook"]
    assert street["num_queries"] == 6 and street["gallery_size"] == 4
    # red (tops, loose) and blue (trousers, full) queries have two true matches each; green tops has none
    assert street["fine_recall"]["@20"] == pytest.approx(100 * 4 / 6)
    assert street["coarse_recall"]["@20"] == pytest.approx(100.0)
    dataset = result["provenance"]["dataset"]
    assert dataset["releases"] == ["v20250101", "v20251201"] and "(published layout)" in str(dataset)
    # what the leaderboard compares by: the published snapshot it was converted from, and the card's name
    assert dataset["key"] == "srpone/look-bench@v20250101+v20251201" and dataset["name"] == "LookBench"
    again = lookbench.evaluate("raw-pixels", data=snapshot, distractors=False, cache_dir=tmp_path / "cache", quiet=True).to_dict()
    assert again["provenance"]["dataset"]["revision"] == dataset["revision"]  # converted once, same folder reused
    assert again["provenance"]["counts"]["forward_images"] == 0


def test_cutoff_keeps_only_later_queries(data, tmp_path):
    result = lookbench.evaluate("raw-pixels", data=data, cutoff="2025-01-02", cache_dir=tmp_path, quiet=True).to_dict()
    counts = result["provenance"]["dataset"]["counts"]
    # RealStudioFlat queries are stamped on Jan 1..4, AIGen-Studio on Jan 5..7: strictly after Jan 2 leaves 2 + 3.
    assert counts["RealStudioFlat"] == {"queries_total": 4, "queries": 2, "gallery": 7, "queries_after_model_cutoff": None}
    assert counts["AIGen-Studio"]["queries"] == 3
    assert result["RealStudioFlat"]["num_queries"] == 2 and result["overall"]["num_queries"] == 5
    assert result["provenance"]["cutoff"] == "2025-01-02"


# ------------------------------------------------------------------ Hub dataset ids (issue 37 items 3 and 7)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An empty hub cache and LookBench home of this test's own (huggingface_hub reads both at call time)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HOME", str(tmp_path / "home"))
    return tmp_path / "hub"


def test_a_data_revision_that_is_a_path_is_refused_and_nothing_is_loaded_or_stored(hub, tmp_path, capsys):
    """huggingface_hub reads ``refs/<revision>`` as a file: ``@/abs/file`` made it read a file outside the cache
    naming another folder, which was then evaluated under this id with that folder's basename as its revision."""
    put_snapshot(hub, "someone/tiny-look", "d" * 40, write_folder(tmp_path / "data"), repo_type="dataset")
    other = write_folder(tmp_path / "other" / "lookbench")
    ref = tmp_path / "evil" / "ref"
    ref.parent.mkdir()
    ref.write_text(str(other))
    store = tmp_path / "store"
    capsys.readouterr()
    assert main(["evaluate", "--model", "raw-pixels", "--data", f"someone/tiny-look@{ref}", "--quiet",
                 "--results", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "starts with '/'" in err and "a branch, a tag or a commit sha" in err
    assert not store.exists() or not any(store.rglob("*"))
    assert not (tmp_path / "home" / "lookbench" / "datasets").exists()  # no datasets cache was filled


def test_a_hub_dataset_records_the_commit_the_cache_resolved(hub, tmp_path):
    """Unpinned, the id's ``main`` is resolved (here in the cache, offline) and its commit recorded, never None."""
    commit = "c" * 40
    put_snapshot(hub, "someone/tiny-look", commit, write_folder(tmp_path / "data"), repo_type="dataset")
    dataset = lookbench.evaluate("raw-pixels", data="someone/tiny-look", quiet=True, use_cache=False,
                                 results_dir=tmp_path / "store").to_dict()["provenance"]["dataset"]
    assert (dataset["revision"], dataset["commit"]) == (commit, commit)


def test_a_relative_folder_that_does_not_exist_is_named_as_neither_folder_nor_hub_dataset(hub, tmp_path, monkeypatch, capsys):
    """Issue 37 item 7: ``--data data/lookbench`` before the build was taken for a Hub id and failed inside datasets."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["evaluate", "--model", "raw-pixels", "--data", "data/lookbench", "--quiet", "--no-save"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "data/lookbench: no such folder, and not a reachable Hub dataset id" in err


def test_text_queries_must_follow_the_query_rows(tmp_path):
    """Issue 39 item 2: row i of a text split is query i; a split in another order, or a row without words, is one
    line naming the row, never a query scored with another's words."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lookbench.engine.data import load_benchmark
    from lookbench.errors import EvaluationError

    data = write_folder(tmp_path / "lookbench", texts=True)
    loaded = load_benchmark(data, ["RealStudioFlat"], distractors=False, text_form="long")
    query = loaded.subsets["RealStudioFlat"]["query"]
    assert query["query_text"][0] == "An item in the category top whose colour is red and sleeve is long."
    shard = data / "text" / "real_studio_flat-00000-of-00001.parquet"
    table = pq.read_table(shard)
    pq.write_table(table.take(pa.array([3, 2, 1, 0])), shard)
    with pytest.raises(EvaluationError, match=r"text/real_studio_flat of .* does not follow RealStudioFlat/query row by "
                                              r"row: row 1 is item 'p3', the query is item 'p0'"):
        load_benchmark(data, ["RealStudioFlat"], distractors=False, text_form="short")
    blank = table.set_column(table.schema.get_field_index("text_short"), "text_short", pa.array(["a", " ", "c", "d"]))
    pq.write_table(blank, shard)
    with pytest.raises(EvaluationError, match=r"text/real_studio_flat of .*: row 2 \(item 'p1'\) has no text_short"):
        load_benchmark(data, ["RealStudioFlat"], distractors=False, text_form="short")


def test_a_missing_or_short_text_split_of_a_build_is_one_line_naming_the_folder_and_split(tmp_path, capsys):
    """Round 4: a built folder whose text shard was deleted or cut short (its card still counting the rows) gave
    datasets' raw ``SplitInfo`` repr; now one line names the folder, the split and what is missing."""
    import pyarrow.parquet as pq

    from lookbench.engine.data import load_benchmark
    from lookbench.errors import EvaluationError
    from tests.helpers.raw_build import build
    from tests.helpers.raw_release import write_release

    data = tmp_path / "lookbench"
    assert build(write_release(tmp_path / "raw"), data) == 0
    shard = next((data / "text").glob("real_studio_flat-*.parquet"))
    table = pq.read_table(shard)
    pq.write_table(table.slice(0, 4), shard)

    def refusal() -> str:
        with pytest.raises(EvaluationError) as err:
            load_benchmark(data, ["RealStudioFlat"], distractors=False, text_form="short")
        assert "SplitInfo" not in str(err.value) and "\n" not in str(err.value)
        return str(err.value)

    assert refusal() == (f"{data}: the split real_studio_flat of the text config has 4 rows, its card says 6 (a data "
                         "file was cut short or replaced); build or download the folder again")
    shard.unlink()
    message = refusal()
    assert message == (f"{data}: the split real_studio_flat of the text config has no data file, its card says 6 rows "
                       "(a data file was deleted); build or download the folder again")
    assert main(["evaluate", "--data", str(data), "--queries", "text", "--model", "category-text", "--no-save"]) == 2
    assert capsys.readouterr().err.endswith(f"\nlookbench evaluate: error: {message}\n")
    image_shard = next((data / "RealStudioFlat").glob("query-*.parquet"))  # an image split: the same one line
    pq.write_table(pq.read_table(image_shard).slice(0, 5), image_shard)
    with pytest.raises(EvaluationError, match=r"lookbench: the split query of the RealStudioFlat config has 5 rows, its "
                                              r"card says 6 \(a data file was cut short or replaced\)"):
        load_benchmark(data, ["RealStudioFlat"], distractors=False)
