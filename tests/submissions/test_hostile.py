"""Hostile users, round 4 (issue 44): a forged or oversized submission is never verified, never shown as a row it did
not earn, and never costs more than its bounds — whatever it claims."""
from __future__ import annotations

import json
import shutil
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lookbench.submissions.verify import verify_submission
from tests.helpers.submissions import MODEL_ID, lookbench


def _edit(folder, change):
    data = json.loads((folder / "results.json").read_text())
    change(data)
    (folder / "results.json").write_text(json.dumps(data))


def _relabel_as_published(data):
    """The Mini result dressed as the published snapshot, as the hostile user did."""
    dataset = data["provenance"]["dataset"]
    dataset.update(key="srpone/look-bench@v20251201", name="LookBench", releases=["v20251201"])


def _parquet(folder, subset):
    return folder / "results.predictions" / f"{subset}.parquet"


# ------------------------------------------------------------------------------------ verify binds what places a row

@pytest.mark.parametrize("change, field", [
    (_relabel_as_published, "provenance.dataset.name is 'LookBench'; the data judged gives 'LookBench-Mini"),
    (lambda d: d["provenance"]["dataset"].update(key="srpone/look-bench@v20251201"), "provenance.dataset.key is "),
    (lambda d: d["provenance"]["dataset"].update(releases=["v20251201"]), "provenance.dataset.releases is "),
    (lambda d: d["provenance"]["dataset"].update(commit="0" * 40), "provenance.dataset.commit is "),
], ids=["published-name", "key", "releases", "commit"])
def test_a_relabelled_dataset_is_not_verified_naming_the_field(copy, change, field):
    _edit(copy, change)
    verification = verify_submission(copy)
    assert not verification.verified and verification.placement is None
    assert any(r.startswith(field) for r in verification.reasons), verification.reasons


def test_an_image_result_relabelled_as_text_queries_is_not_verified(copy):
    _edit(copy, lambda d: d["provenance"].update(queries="text-short"))
    verification = verify_submission(copy)
    assert not verification.verified
    assert any("holds no query_text; the result's queries are text" in r or r.startswith("provenance.text_queries")
               for r in verification.reasons), verification.reasons


def test_an_honest_submission_is_placed_by_what_verify_recomputed(dry_run):
    verification = verify_submission(dry_run)
    assert verification.verified
    p = verification.placement
    assert p["name"].startswith("LookBench-Mini") and p["synthetic"] is True
    assert all(r.startswith("mini-v") for r in p["releases"]) and p["queries"] == "image"
    assert (p["mode"], p["distractors"], p["cutoff"], p["k"]) == ("strict", True, None, [1, 5, 10, 20])
    assert len(verification.key) == 64


@pytest.mark.slow
def test_submit_reads_the_data_not_the_editable_name(honest, tmp_path):
    """A Mini result relabelled as the published snapshot is refused by submit without --allow-synthetic: it does not
    verify, and even its data's rows say synthetic."""
    run = tmp_path / "run"
    shutil.copytree(honest.parent, run)
    _edit(run, _relabel_as_published)
    proc = lookbench("submit", run / "results.json", "--dry-run", "--out", tmp_path / "out", "--model-id", MODEL_ID,
                     cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "does not verify" in proc.stderr and "provenance.dataset.name is 'LookBench'" in proc.stderr
    honest_run = tmp_path / "honest"
    shutil.copytree(honest.parent, honest_run)
    proc = lookbench("submit", honest_run / "results.json", "--dry-run", "--out", tmp_path / "out", "--model-id",
                     MODEL_ID, cwd=tmp_path)
    assert proc.returncode == 2 and "a synthetic stand-in (its rows say so)" in proc.stderr


# -------------------------------------------------------------------------------- one submission, one result, hashed

def test_a_second_json_beside_the_result_is_refused(copy):
    (copy / "extra.json").write_text(json.dumps({"provenance": {}}))
    with pytest.raises(ValueError, match=r"^'extra.json' is a second JSON beside results.json"):
        verify_submission(copy)


def test_a_json_above_the_one_submission_is_refused(copy, tmp_path):
    parent = tmp_path / "parent"
    shutil.copytree(copy, parent / "a" / "b")
    (parent / "stray.json").write_text("{}")
    with pytest.raises(ValueError, match=r"^'stray.json' lies above the submission 'a/b'"):
        verify_submission(parent)


def test_a_stale_writing_folder_beside_the_submission_is_ignored(copy, tmp_path):
    """What a killed write leaves (``.<name>.writing-<hex>``) is neither a second submission nor a file of this one."""
    parent = tmp_path / "parent"
    shutil.copytree(copy, parent / "strict")
    shutil.copytree(copy, parent / ".strict.writing-0a1b2c3d4e5f")
    shutil.copytree(copy / "results.predictions", parent / "strict" / ".results.predictions.writing-0a1b2c3d4e5f")
    assert verify_submission(parent).verified


def test_the_key_is_of_every_byte_not_of_sizes_or_times(copy):
    """A same-size edit with the modification time put back changes the key."""
    import os

    from lookbench.results.folder import snapshot

    path = copy / "results.json"
    before, stat = snapshot(copy)[0], path.stat()
    text = path.read_text()
    at = text.index('"@1": ') + 6
    path.write_text(text[:at] + ("1" if text[at] != "1" else "2") + text[at + 1:])
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and snapshot(copy)[0] != before


# ------------------------------------------------------------------------------------------------------ bounded work

def test_a_ranking_deeper_than_the_deepest_k_is_refused_in_one_line(copy):
    path = _parquet(copy, "AIGen-Studio")
    table = pq.read_table(path)
    first = table.filter(pc.equal(table["query"], 1))
    deeper = first.set_column(first.schema.get_field_index("rank"), "rank", pa.array(first["rank"].to_numpy() + 20))
    others = np.setdiff1d(np.arange(10_000), first["gallery_index"].to_numpy())[:first.num_rows]  # no row twice
    deeper = deeper.set_column(deeper.schema.get_field_index("gallery_index"), "gallery_index", pa.array(others))
    rest = table.filter(pc.not_equal(table["query"], 2))
    pq.write_table(pa.concat_tables([rest, deeper]), path)
    verification = verify_submission(copy)
    assert not verification.verified
    assert any("ranks 40 items in results.predictions/AIGen-Studio.parquet; the result reports K up to 20" in r
               for r in verification.reasons), verification.reasons


def test_a_file_of_more_rows_than_queries_times_k_is_never_decoded(copy):
    """4M rows of distinct out-of-range query numbers (hours of scanning before): refused from the footer."""
    rows = 1 << 22
    numbers = np.arange(10_000, 10_000 + rows)
    pq.write_table(pa.table({"query": numbers, "query_item_id": pa.array(["x"] * rows).dictionary_encode(),
                             "rank": np.ones(rows, dtype=np.int64), "gallery_index": np.zeros(rows, dtype=np.int64),
                             "item_id": pa.array(["y"] * rows).dictionary_encode()}), _parquet(copy, "AIGen-Studio"))
    with pytest.raises(ValueError, match=r"holds 4194304 rows; its result allows at most 1400"):
        verify_submission(copy)


def _understate_footer(path, column="item_id"):
    """Rewrite the footer's total_uncompressed_size of ``column`` as a small number in the same number of bytes (an
    over-long varint), so the footer claims kilobytes for pages that decode to much more."""
    data = bytearray(path.read_bytes())
    meta = pq.ParquetFile(path).metadata
    chunk = next(meta.row_group(0).column(c) for c in range(meta.num_columns)
                 if meta.row_group(0).column(c).path_in_schema == column)
    value = chunk.total_uncompressed_size

    def varint(n, width=None):
        out = []
        while True:
            out.append(n & 0x7F)
            n >>= 7
            if not n and (width is None or len(out) >= width):
                break
        return bytes([b | 0x80 for b in out[:-1]] + [out[-1]])

    real = varint(value << 1)  # zigzag of a positive i64
    footer_start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = data.index(real, footer_start)
    data[at:at + len(real)] = varint(1000 << 1, len(real))
    path.write_bytes(bytes(data))
    assert pq.ParquetFile(path).metadata.row_group(0).column(
        [meta.row_group(0).column(c).path_in_schema for c in range(meta.num_columns)].index(column)
    ).total_uncompressed_size == 1000


@pytest.mark.slow
def test_a_footer_that_understates_what_its_pages_decode_to_is_refused(copy):
    """A 300 MB item id compressed to kilobytes, the footer claiming 1,000 bytes: refused by the pages' own sizes,
    before anything is decoded; the reason does not echo the id."""
    path = _parquet(copy, "AIGen-Studio")
    table = pq.read_table(path)
    rows = table.num_rows
    item = pa.array(["x" * (300 * 1024 * 1024)] + [""] * (rows - 1))
    pq.write_table(table.set_column(table.schema.get_field_index("item_id"), "item_id", item), path,
                   compression="zstd")
    assert path.stat().st_size < 100_000
    _understate_footer(path)
    with pytest.raises(ValueError, match=r"^results.predictions/AIGen-Studio.parquet decodes to \d+ bytes; a ranking's "
                                         r"columns hold at most 268435456$"):
        verify_submission(copy)


def test_a_huge_item_id_is_refused_without_echoing_it(copy):
    path = _parquet(copy, "AIGen-Studio")
    table = pq.read_table(path)
    item = table["item_id"].to_pylist()
    item[0] = "z" * (70 * 1024 * 1024)
    pq.write_table(table.set_column(table.schema.get_field_index("item_id"), "item_id", pa.array(item)), path)
    with pytest.raises(ValueError) as err:
        verify_submission(copy)
    assert len(str(err.value)) < 200 and "longer than 1024 characters" in str(err.value)


def test_a_ranking_of_wrong_gallery_rows_builds_a_few_messages(copy):
    """Every row's gallery index wrong (one message per row before): a few reasons and a count, a short verdict."""
    path = _parquet(copy, "AIGen-Studio")
    table = pq.read_table(path)
    wrong = pa.array((table["gallery_index"].to_numpy() + 1) % 50)
    pq.write_table(table.set_column(table.schema.get_field_index("gallery_index"), "gallery_index", wrong), path)
    verification = verify_submission(copy)
    assert not verification.verified and len(verification.reasons) <= 11
    assert verification.reasons[-1].startswith("AIGen-Studio: and ") and " more problem(s) in " in verification.reasons[-1]


def test_the_matrix_check_is_sorting_based(tmp_path):
    """A million rows of distinct out-of-range query numbers are named in a bounded number of messages, quickly (a
    per-unknown-query scan took hours at four million)."""
    from lookbench.results.rankings import Ranking
    from lookbench.submissions.verify import _matrix

    rows = 1_000_000
    ranking = Ranking(np.arange(100, 100 + rows), np.array(["q"] * rows, dtype=object), np.ones(rows, dtype=np.int64),
                      np.zeros(rows, dtype=np.int64), np.array(["g"] * rows, dtype=object))
    started = time.process_time()
    problems, matrix = _matrix(ranking, ["a", "b"], ["g"], "AIGen-Studio", "f.parquet", False, rows)
    assert matrix is None and len(problems) <= 11
    assert time.process_time() - started < 60  # a bound, not a benchmark: the quadratic scan needs hours


# -------------------------------------------------------------------------------------------------- known data only

def test_the_board_never_loads_data_it_does_not_know(copy):
    from lookbench.leaderboard.load import judge_submission
    from lookbench.results.provenance import UnknownData, named_data

    with pytest.raises(UnknownData, match="unknown data 'someone/huge-dataset'"):
        named_data({"data": "someone/huge-dataset@" + "0" * 40, "commit": "0" * 40}, allowed={"lookbench/lookbench"})
    with pytest.raises(UnknownData, match="the board judges only its own dataset repos"):
        named_data({"data": str(copy)}, allowed={"lookbench/lookbench"})
    _edit(copy, lambda d: d["provenance"]["dataset"].update(data="someone/huge-dataset", commit="0" * 40))
    verdict = judge_submission(copy, allowed={"lookbench/lookbench"})
    assert verdict.text.startswith("not checked: unknown data 'someone/huge-dataset'") and verdict.key


def test_a_stored_verdict_is_at_most_4_kb(copy):
    from lookbench.leaderboard.load import MAX_VERDICT_BYTES, Verdict

    verdict = Verdict("no: " + "x" * 100_000, "k" * 64)
    assert len(json.dumps(verdict.to_json())) <= MAX_VERDICT_BYTES
    assert Verdict.from_json(verdict.to_json()).text.endswith("…")
    big = Verdict("consistent", "k" * 64, {"data": "d" * 10_000})
    assert Verdict.from_json(big.to_json()).status == "not checked"


def test_a_row_never_carries_a_model_its_folder_does_not_name(dry_run, tmp_path):
    """In a results repo the submission's folder (what the pull request added) names the model: a result claiming
    another submitter's model is not shown as verified and is labelled by its folder."""
    from lookbench.leaderboard.load import load_store

    repo = tmp_path / "repo"
    shutil.copytree(dry_run, repo)
    (result,) = repo.rglob("results.json")
    _edit(result.parent, lambda d: d["provenance"]["submission"].update(model="famous/model"))
    (entry,), skipped = load_store(repo)
    assert skipped == [] and entry.model == "lookbench/gr-lite-mini@5e1f0c2d9a7b"
    assert entry.verified.startswith("no: provenance.submission names famous/model@5e1f0c2d9a7b3e4f6a8b0c1d2e3f4a5b6c7d8e9f;"
                                     " its folder is lookbench/gr-lite-mini/5e1f0c2d9a7b")
