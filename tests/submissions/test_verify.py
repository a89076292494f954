"""`lookbench verify` (issue 36 item 2): a submission is re-scored from its rankings against the data's own ground
truth; an honest one verifies, every tampered copy is not verified naming why, and bad input is one line read only
inside the submission, size-capped."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lookbench.submissions.verify import verify_submission
from tests.helpers.submissions import lookbench, submission_folder


def test_an_honest_submission_verifies(dry_run, tmp_path):
    proc = lookbench("verify", dry_run, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    verdict = " ".join(lines[next(i for i, line in enumerate(lines) if line.startswith("verified: all ")):])
    assert "agree with the rankings re-judged against the data" in verdict  # the last paragraph, wrapped to 100
    claimed = json.loads((submission_folder(dry_run) / "results.json").read_text())["overall"]["fine_recall"]["@1"]
    (row,) = [line for line in lines if line.split()[:2] == ["overall", "fine_recall@1"]]
    assert row.split()[2:] == [f"{claimed:.6f}", f"{claimed:.6f}", "agrees"]


def test_verify_submission_recomputes_every_claimed_score(dry_run):
    verification = verify_submission(dry_run)
    assert verification.verified and verification.reasons == []
    names = {name for name, _, _ in verification.scores}
    for name in ("RealStudioFlat fine_recall@1", "AIGen-Studio coarse_recall@20", "RealStreetLook ndcg@5",
                 "AIGen-StreetLook map@10", "overall mrr@20", "RealStreetLook outfit_fine_recall@1", "overall num_queries",
                 "overall mini-v20250101 fine_recall@1", "RealStudioFlat mini-v20240601 ndcg@5",
                 "RealStudioFlat gallery_size"):
        assert name in names
    assert any(" per_category " in name for name in names)
    assert all(claimed == pytest.approx(recomputed, abs=1e-6) for _, claimed, recomputed in verification.scores)


def test_a_result_with_its_rankings_beside_it_verifies_where_it_lies(honest):
    """No submission folder is needed: an --output folder's results.json (or a store file) is verified in place."""
    verification = verify_submission(honest)
    assert verification.verified and verification.result == str(honest)


def test_a_folder_holding_two_submissions_is_one_line_asking_for_one(dry_run, tmp_path):
    for name in ("a", "b"):
        shutil.copytree(submission_folder(dry_run), tmp_path / "both" / name)
    proc = lookbench("verify", tmp_path / "both", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == (f"lookbench verify: error: {tmp_path / 'both'} holds 2 submission(s) (results.json): a, b; "
                           "name one submission folder\n")


def test_verify_as_json(dry_run, tmp_path):
    proc = lookbench("verify", dry_run, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verified"] is True and report["reasons"] == []
    assert len(report["scores"]) > 200 and all(s["agrees"] for s in report["scores"])


def _parquet(folder, subset):
    return folder / "results.predictions" / f"{subset}.parquet"


def _edit_score(folder):
    data = json.loads((folder / "results.json").read_text())
    data["overall"]["fine_recall"]["@1"] += 1.0
    (folder / "results.json").write_text(json.dumps(data))


def _swap_top1(folder):
    """In the first query whose rank 1 is a fine hit and rank 2 is not, the two swap places."""
    path = _parquet(folder, "RealStudioFlat")
    table = pq.read_table(path)
    query, rank, hit = (table[c].to_numpy() for c in ("query", "rank", "fine_hit"))
    q = next(q for q in np.unique(query) if hit[(query == q) & (rank == 1)][0] and not hit[(query == q) & (rank == 2)][0])
    swapped = np.where((query == q) & (rank == 1), 2, np.where((query == q) & (rank == 2), 1, rank))
    pq.write_table(table.set_column(table.schema.get_field_index("rank"), "rank", pa.array(swapped)), path)


def _drop_query(folder):
    path = _parquet(folder, "AIGen-Studio")
    table = pq.read_table(path)
    pq.write_table(table.filter(pc.not_equal(table["query"], 5)), path)


def _duplicate_query(folder):
    """Query 5's rows given twice in place of query 6's: as many rows as an honest ranking."""
    path = _parquet(folder, "AIGen-Studio")
    table = pq.read_table(path)
    pq.write_table(pa.concat_tables([table.filter(pc.not_equal(table["query"], 6)),
                                     table.filter(pc.equal(table["query"], 5))]), path)


def _foreign_item(folder):
    path = _parquet(folder, "RealStreetLook")
    table = pq.read_table(path)
    item = table["item_id"].to_pylist()
    item[3] = "not-a-gallery-item"
    pq.write_table(table.set_column(table.schema.get_field_index("item_id"), "item_id", pa.array(item)), path)


def _renamed_item(folder):
    """Rank 1 of query 1 names another gallery item than the row it ranks (rank 2's item, which is in the gallery);
    returns the reason expected."""
    path = _parquet(folder, "RealStreetLook")
    table = pq.read_table(path)
    item = table["item_id"].to_pylist()
    item[0] = item[1]
    pq.write_table(table.set_column(table.schema.get_field_index("item_id"), "item_id", pa.array(item)), path)
    return [f"RealStreetLook: item_id {item[1]!r} (query 1, rank 1) is not gallery row {table['gallery_index'][0]} of "]


def _other_revision(folder):
    data = json.loads((folder / "results.json").read_text())
    data["provenance"]["dataset"]["revision"] = "local-0123456789abcdef"
    (folder / "results.json").write_text(json.dumps(data))


def _claims_sealed(folder):
    """The result says its data is a sealed release; the data it names is public."""
    data = json.loads((folder / "results.json").read_text())
    data["provenance"]["dataset"]["sealed"] = {}
    (folder / "results.json").write_text(json.dumps(data))


@pytest.mark.parametrize("tamper, reasons", [
    (_edit_score, ["overall fine_recall@1 claimed "]),
    (_swap_top1, ["RealStudioFlat fine_recall@1 claimed ", "RealStudioFlat per_query.first_fine_rank: query "]),
    (_drop_query, ["AIGen-Studio: query 5 (ags-000005) has no ranking in results.predictions/AIGen-Studio.parquet"]),
    (_duplicate_query, ["AIGen-Studio: query 5 (ags-000005) appears more than once in "
                        "results.predictions/AIGen-Studio.parquet (rank 1 is given 2 times)"]),
    (_foreign_item, ["RealStreetLook: item_id 'not-a-gallery-item' (query 1, rank 4) is in neither the RealStreetLook "
                     "gallery nor the noise gallery"]),
    (_renamed_item, []),
    (_other_revision, ["provenance.dataset.revision is 'local-0123456789abcdef'; the data judged gives 'local-"]),
    (_claims_sealed, ["provenance.dataset says LookBench-Mini (embedded) is sealed; the data it names is not"]),
], ids=["score-edited", "top1-swapped", "dropped-query", "duplicated-query", "foreign-item", "renamed-item",
        "other-revision", "claims-sealed"])
def test_a_tampered_submission_is_not_verified_naming_why(copy, tamper, reasons):
    expected = reasons + (tamper(copy) or [])
    verification = verify_submission(copy)
    assert not verification.verified
    for reason in expected:
        assert any(r.startswith(reason) for r in verification.reasons), verification.reasons
    differing = [name for name, claimed, recomputed in verification.scores if claimed != pytest.approx(recomputed, abs=1e-6)]
    assert all(f"{name} claimed" in " ".join(verification.reasons) for name in differing[:10])  # the first ten named
    assert len(verification.reasons) <= 21


def test_outcomes_swapped_between_two_queries_are_named_though_every_score_agrees(copy):
    """Two queries' outcomes traded in the JSON leave every mean as it was, but not the paired tests that read them."""
    data = json.loads((copy / "results.json").read_text())
    outcomes = data["RealStudioFlat"]["per_query"]
    ndcg = outcomes["ndcg"]["@5"]
    i, j = next((i, j) for i in range(len(ndcg)) for j in range(i) if ndcg[i] != ndcg[j]
                and outcomes["release"][i] == outcomes["release"][j])
    for column in [outcomes["first_fine_rank"], outcomes["first_coarse_rank"], *outcomes["ndcg"].values(),
                   *outcomes["ap"].values()]:
        column[i], column[j] = column[j], column[i]
    (copy / "results.json").write_text(json.dumps(data))
    verification = verify_submission(copy)
    assert not verification.verified
    assert all(claimed == pytest.approx(recomputed, abs=1e-6) for _, claimed, recomputed in verification.scores)
    assert f"RealStudioFlat per_query.ndcg.@5: query {j + 1} ({outcomes['item_id'][j]}) is {ndcg[j]!r} in the result, " \
           f"the rankings give {ndcg[i]!r}" in verification.reasons


def test_a_tampered_submission_exits_1_naming_each_differing_score(copy, tmp_path):
    _edit_score(copy)
    proc = lookbench("verify", copy, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert any(line.startswith("not verified: 1 of ") for line in proc.stdout.splitlines()[-2:])  # wrapped to 100
    assert "overall fine_recall@1 claimed" in proc.stdout
    (row,) = [line for line in proc.stdout.splitlines() if line.split()[:2] == ["overall", "fine_recall@1"]]
    assert row.split()[-1] == "DIFFERS"


# ----------------------------------------------------------------------------------------- bad input: exit 2, one line

# The child reports its peak RSS as VmHWM: ru_maxrss survives exec, so it would count the forked pytest worker.
MAXRSS = """import re, sys
from pathlib import Path
from lookbench.cli import main
code = main(sys.argv[1:])
print("maxrss_kb", re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1), file=sys.stderr)
sys.exit(code)
"""


def verify_measured(path, tmp_path) -> tuple[int, str, int]:
    """``lookbench verify PATH`` in a fresh process: exit code, its one-line error, and its peak RSS in bytes."""
    proc = subprocess.run([sys.executable, "-c", MAXRSS, "verify", str(path)], cwd=tmp_path, env=dict(os.environ),
                          capture_output=True, text=True, timeout=600)
    *lines, rss = proc.stderr.splitlines()
    return proc.returncode, "\n".join(lines), int(rss.split()[1]) * 1024


def _huge_json(folder):
    with open(folder / "results.json", "r+b") as handle:
        handle.truncate(8 * 1024**3)  # sparse: 8 GiB that take no disk


def _nested_json(folder):
    (folder / "results.json").write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)


def _huge_parquet(folder):
    with open(_parquet(folder, "RealStudioFlat"), "r+b") as handle:
        handle.truncate(8 * 1024**3)


def _many_rows(folder):
    """A ranking of 2**24 rows that is small on disk (one repeated row): decoding it would take gigabytes."""
    row = pq.read_table(_parquet(folder, "RealStudioFlat")).slice(0, 1)
    block = row.take(np.zeros(1 << 20, dtype=np.int64))
    with pq.ParquetWriter(_parquet(folder, "RealStudioFlat"), block.schema) as writer:
        for _ in range(16):
            writer.write_table(block)


def _outside_link(folder):
    path = _parquet(folder, "RealStudioFlat")
    outside = folder.parent / "elsewhere.parquet"
    shutil.move(path, outside)
    path.symlink_to(outside)


def _foreign_subset(folder):
    data = json.loads((folder / "results.json").read_text())
    data["../../outside"] = data.pop("RealStudioFlat")
    (folder / "results.json").write_text(json.dumps(data))


@pytest.mark.parametrize("tamper, message", [
    (_huge_json, "results.json is larger than the 16777216-byte limit of one file"),
    (_nested_json, "not valid JSON: nested deeper than 32 levels"),
    (_huge_parquet, "results.predictions/RealStudioFlat.parquet is larger than the 268435456-byte limit of one file"),
    (_many_rows, "results.predictions/RealStudioFlat.parquet holds 16777216 rows; its result allows at most 1400 (its "
                 "queries times the deepest K it reports)"),
    (_outside_link, "'results.predictions/RealStudioFlat.parquet' is a link; a submission holds its own files only"),
    (_foreign_subset, "results.json: '../../outside' is not a LookBench subset (RealStudioFlat, AIGen-Studio, "
                      "RealStreetLook, AIGen-StreetLook)"),
], ids=["huge-json", "nested-json", "huge-parquet", "many-rows", "link-outside", "foreign-subset"])
@pytest.mark.slow
def test_bad_input_is_one_line_exit_2_read_only_inside_and_never_whole(copy, tmp_path, tamper, message):
    tamper(copy)
    code, error, rss = verify_measured(copy, tmp_path)
    assert code == 2
    assert error.startswith("lookbench verify: error: ") and "\n" not in error and message in error, error
    assert rss < 1024**3  # far below what reading any of these files whole would take


def test_bad_input_is_named_before_any_data_is_loaded(copy, tmp_path):
    """A ranking file that cannot be read is bad input (exit 2) whatever the data: it is checked before the data is
    loaded and compared, so a result for other data does not hide it behind 'not verified'."""
    _other_revision(copy)
    _huge_parquet(copy)
    proc = lookbench("verify", copy, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr == ("lookbench verify: error: results.predictions/RealStudioFlat.parquet is larger "
                           "than the 268435456-byte limit of one file\n")


def test_data_that_is_not_here_is_one_line_and_data_names_where_it_is(copy, tmp_path):
    """The data a result names may be a folder on the submitter's machine: verify says so (the submission is not at
    fault: an EvaluationError, which the leaderboard shows as not checked), and --data gives the same data here."""
    from lookbench.engine.data import resolve_data
    from lookbench.errors import EvaluationError

    data = json.loads((copy / "results.json").read_text())
    data["provenance"]["dataset"]["data"] = str(tmp_path / "gone")
    (copy / "results.json").write_text(json.dumps(data))
    with pytest.raises(EvaluationError, match=r"^the result's data '.*/gone' is neither the embedded LookBench-Mini, .* "
                                              r"nor a folder here: give --data$"):
        verify_submission(copy)
    proc = lookbench("verify", copy, "--data", resolve_data(None).path, "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert json.loads(proc.stdout)["data"].startswith(f"{resolve_data(None).path} (revision local-")
