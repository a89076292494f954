"""A stored result's home (lookbench.results: folder, rankings, provenance): the one digest keeps every key and id it
replaced byte for byte, the one walk stops at its bound, the one loop bounds every ranking by its result, and a
typed provenance never rewrites what it reads."""
from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lookbench._version import __version__
from lookbench.files import hash_files
from lookbench.results.folder import (ResultFolder, TooManyFolders, files_digest, results_below, snapshot,
                                      submission_files, walk)
from lookbench.results.provenance import Provenance
from lookbench.results.result import EvaluationResult


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _ranking(path, rows: int) -> bytes:
    table = pa.table({"query": [1] * rows, "query_item_id": ["q"] * rows, "rank": list(range(1, rows + 1)),
                      "gallery_index": list(range(rows)), "item_id": [f"g{i}" for i in range(rows)]})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path.read_bytes()


def test_the_submission_key_is_the_digest_of_every_file_salted_with_the_version(tmp_path):
    files = {"results.json": b'{"provenance": {}}', "README.md": b"# card\n",
             "results.predictions/RealStudioFlat.parquet": b"not even parquet: hashed, never parsed"}
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    lines = "".join(f"{name}\0{_sha(content)}\n" for name, content in sorted(files.items()))
    key, result = snapshot(tmp_path)
    assert key == _sha(f"lookbench {__version__}\n{lines}".encode()) and result == files["results.json"]
    assert submission_files(tmp_path) == sorted(files)


def test_a_pull_requests_id_and_the_weights_hash_keep_their_values(tmp_path, monkeypatch):
    import lookbench.files

    files = {"submissions/a/results.json": b"{}", "submissions/a/README.md": b"card"}
    assert files_digest(files) == _sha("".join(f"{n}\0{_sha(c)}\n" for n, c in sorted(files.items())).encode())
    monkeypatch.setattr(lookbench.files, "weight_hashes_file", lambda: tmp_path / "memo.json")
    for folder, content in (("b", b"second"), ("a", b"first")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "model.bin").write_bytes(content)
    paths = [tmp_path / "b" / "model.bin", tmp_path / "a" / "model.bin"]  # the same name twice, ordered by path
    assert hash_files(paths) == _sha(f"model.bin\0{_sha(b'first')}model.bin\0{_sha(b'second')}".encode())


def test_the_one_walk_stops_before_a_folder_past_its_bound(tmp_path):
    for name in ("a", "b", ".a.writing-0a1b2c", "c.predictions"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text("{}")
        (tmp_path / name / "results.predictions").mkdir()
    walked = [top.relative_to(tmp_path).as_posix() for top, _, _ in walk(tmp_path, limit=7)]
    assert walked == [".", "a", "a/results.predictions", "b", "b/results.predictions", "c.predictions",
                      "c.predictions/results.predictions"]  # sorted; what a killed write left is never entered
    with pytest.raises(TooManyFolders, match=r"holds more than 6 folders; say which$"):
        list(walk(tmp_path, limit=6, hint="; say which"))
    assert results_below(tmp_path, 2) == (["a/results.json"], True)  # a stale write's folder is no result
    assert results_below(tmp_path, 3) == (["a/results.json", "b/results.json"], False)


def test_every_ranking_is_bounded_by_its_results_queries_and_deepest_k(tmp_path):
    _ranking(tmp_path / "results.predictions" / "RealStudioFlat.parquet", 3)
    blocks = {"RealStudioFlat": {"num_queries": 1, "fine_recall": {"@2": 50.0}}}
    stored = ResultFolder(tmp_path)
    with pytest.raises(ValueError, match=r"^results.predictions/RealStudioFlat.parquet holds 3 rows; its result allows "
                                         r"at most 2 \(its queries times the deepest K it reports\)$"):
        list(stored.rankings(blocks, blocks))
    blocks["RealStudioFlat"]["num_queries"] = 2
    ((subset, relative, data, ranking),) = stored.rankings(blocks, blocks)
    assert (subset, relative) == ("RealStudioFlat", "results.predictions/RealStudioFlat.parquet")
    assert data == (tmp_path / relative).read_bytes() and ranking.item_id.tolist() == ["g0", "g1", "g2"]
    with pytest.raises(ValueError, match="column query_category is missing"):  # not a judged run's saved ranking
        list(stored.rankings(blocks, blocks, saved=True))


def test_a_provenance_is_read_and_never_rewritten(tmp_path):
    from tests.helpers.results import synthetic

    raw = synthetic(1, {"RealStudioFlat": 4})
    result = EvaluationResult.from_dict(json.loads(json.dumps(raw)))
    provenance = result.meta
    assert provenance.raw is result.provenance is result.to_dict()["provenance"]
    assert provenance.mode == "strict" and provenance.model.name == "model-1" and provenance.dataset.revision == "local-x"
    assert json.dumps(result.to_dict()["provenance"], indent=2) == json.dumps(raw["provenance"], indent=2)
    sent = provenance.submitted_as("owner/model", "a" * 40)
    assert "submission" not in result.provenance and sent["submission"] == {"model": "owner/model", "revision": "a" * 40}
    assert Provenance(sent).submission.model == "owner/model" and list(sent)[:-1] == list(result.provenance)


@pytest.mark.parametrize("edit, message", [
    (lambda p: p.pop("model"), "provenance.dataset and provenance.model must be mappings"),
    (lambda p: p.update(distractors="yes"), "provenance.distractors is not true or false"),
    (lambda p: p["dataset"].update(releases="v20250101"), "provenance.dataset.releases is not a list of strings"),
    (lambda p: p.update(mode=3), "provenance.mode is int, not a string"),
])
def test_a_leaderboard_row_names_its_bad_field(edit, message):
    from tests.helpers.results import synthetic

    provenance = synthetic(1, {"RealStudioFlat": 4})["provenance"]
    provenance["dataset"]["name"] = "LookBench"
    assert Provenance(provenance).measured().key == "local-x"
    edit(provenance)
    with pytest.raises(ValueError, match=f"^{message}$"):
        Provenance(provenance).measured()
