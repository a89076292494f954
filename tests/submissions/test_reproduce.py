"""`lookbench reproduce-submission` (issue 45 item 2) and the trust it gives a row (item 3): a registered model (a tiny
DINOv2 in the test's Hub cache at the entry's pinned commit) submitted honestly is re-run at that commit and shows
`reproduced`; rankings made from the labels (the `category-text` oracle) submitted as that model are `consistent` and
refused naming the agreement figures; edited rankings are not reproduced; the board recomputes every record itself and
honours one only for the submission's current key, signed by a key its card lists (issue 53 item 3), and consistent
with the submission: a copied or self-contradicting record never counts, signed or not. The Hugging Face Job:
test_jobs.py."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.hub_cache import cache_family, put_snapshot, tiny_dinov2, with_processor
from tests.helpers.signing import new_signer, sign_again
from tests.helpers.submissions import files, lookbench, submission_folder

SUBSETS = ["AIGen-Studio", "RealStudioFlat"]
ORACLE_MODEL = "someone/labels-model"
ORACLE_COMMIT = "c0ffee" + "0" * 34


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """A Hub cache holding dinov2-vitl's tiny stand-in at its pinned commit and the model the oracle's submitter
    names; the pinned commit."""
    from huggingface_hub import constants

    root = tmp_path_factory.mktemp("hub")
    commit = cache_family(root / "cache", "dinov2-vitl", root / "work")
    put_snapshot(root / "cache", ORACLE_MODEL, ORACLE_COMMIT, with_processor(tiny_dinov2(root / "work" / "named"), 56))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_CACHE", str(root / "cache"))  # the commands run in fresh processes
        patch.setattr(constants, "HF_HUB_CACHE", str(root / "cache"))
        yield commit


def _evaluated(model: str, out: Path) -> Path:
    import lookbench as lb

    lb.evaluate(model, subsets=SUBSETS, distractors=False, output_dir=out, save_predictions=True, quiet=True)
    return out / "results.json"


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    """The maintainer's key pair and a leaderboard card listing its public key."""
    return new_signer(tmp_path_factory.mktemp("maintainer"))


@pytest.fixture(scope="module")
def repo(hub, signer, tmp_path_factory):
    """A results repo with the honest submission of dinov2-vitl and the oracle's rankings submitted as
    someone/labels-model, each reproduced and signed (--dry-run --out into the same repo); the two commands' outputs."""
    root = tmp_path_factory.mktemp("results") / "repo"
    honest = _evaluated("dinov2-vitl", tmp_path_factory.mktemp("honest") / "out")
    oracle = _evaluated("category-text", tmp_path_factory.mktemp("oracle") / "out")
    for result, model_id in ((honest, []), (oracle, ["--model-id", f"{ORACLE_MODEL}@{ORACLE_COMMIT}"])):
        proc = lookbench("submit", result, "--dry-run", "--out", root, "--allow-synthetic", *model_id, cwd=root.parent)
        assert proc.returncode == 0, proc.stderr
    runs = {}
    for name, owner in (("honest", "facebook"), ("oracle", "someone")):
        runs[name] = lookbench("reproduce-submission", submission_folder(root / "submissions" / owner), "--dry-run",
                               "--out", root, "--sign", signer.pem, cwd=root.parent)
    return root, runs


def _record(root: Path, owner: str) -> Path:
    (found,) = (root / "reproductions" / owner).rglob("reproduction.json")
    return found.parent


def _judged(root: Path, keys: dict) -> tuple[dict[str, str], list[str]]:
    """Each row's trust, and the skipped lines (records ignored, and why)."""
    from lookbench.leaderboard.load import load_store

    entries, skipped = load_store(root / "submissions", keys=keys)
    return {e.model.split("@")[0]: e.verified for e in entries}, skipped


def _trust(root: Path, keys: dict) -> dict[str, str]:
    trust, skipped = _judged(root, keys)
    assert skipped == []
    return trust


@pytest.mark.slow
def test_an_honest_registered_model_submission_is_reproduced_and_its_record_is_bound_to_its_key(hub, repo):
    from lookbench.results.folder import snapshot

    root, runs = repo
    proc = runs["honest"]
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^reproduced: top-1 agreement 100\.00% of \d+ queries \(needs 98%\), top-10 overlap 100\.00%, "
                     r"(\d+) of \1 claimed scores inside the re-run's 95% interval$", proc.stdout, re.M), proc.stdout
    submission = submission_folder(root / "submissions" / "facebook")
    record = _record(root, "facebook")
    assert record.relative_to(root / "reproductions") == submission.relative_to(root / "submissions") / "cpu-fp32"
    assert files(record) == ["README.md", "reproduction.json", "rerun/results.json",
                             *(f"rerun/results.predictions/{s}.parquet" for s in SUBSETS), "signature.json"]
    made = json.loads((record / "reproduction.json").read_text())
    assert made["submission_key"] == snapshot(submission)[0]
    assert made["model"] == {**made["model"], "id": "facebook/dinov2-large", "commit": hub, "loaded_as": "dinov2-vitl"}
    assert (made["device"], made["precision"], made["reproduced"]) == ("cpu", "fp32", True)
    assert made["versions"]["torch"] and made["versions"]["transformers"] and made["versions"]["lookbench"]
    assert made["agreement"]["overall"]["top1"] == 100.0 and made["agreement"]["overall"]["top10"] == 100.0
    rerun = json.loads((record / "rerun" / "results.json").read_text())
    assert rerun["provenance"]["model"]["revision"] == hub
    assert rerun["provenance"]["counts"]["cache_hits"] == 0  # the model ran: no stored embedding was read


@pytest.mark.slow
def test_an_oracle_submission_is_consistent_never_reproduced_and_refused_naming_the_figures(repo, signer):
    root, runs = repo
    proc = runs["oracle"]
    assert proc.returncode == 1, proc.stderr
    (line,) = [l for l in proc.stdout.splitlines() if l.startswith("not reproduced: ")]
    top1 = float(re.match(r"not reproduced: top-1 agreement ([\d.]+)% of \d+ queries \(needs 98%\), top-10 overlap "
                          r"[\d.]+%, \d+ of \d+ claimed scores inside the re-run's 95% interval", line)[1])
    assert top1 < 98
    assert re.search(r"^- top-1 agreement [\d.]+% \(\d+ of \d+ queries\) is below 98%$", proc.stdout, re.M)
    assert "outside the re-run's 95% interval" in proc.stdout  # the labels score far above the model
    made = json.loads((_record(root, "someone") / "reproduction.json").read_text())
    assert made["reproduced"] is False and made["agreement"]["overall"]["top1"] == pytest.approx(top1, abs=0.01)
    trust = _trust(root, signer.keys)  # signed, and honest: it says it did not reproduce, and nothing is ignored
    assert trust == {"facebook/dinov2-large": "reproduced", ORACLE_MODEL: "consistent"}


@pytest.mark.slow
def test_the_board_recomputes_a_record_and_never_takes_its_typed_figures(repo, signer, tmp_path):
    """A record copied onto the oracle's submission, bound to its key and claiming 100% agreement, is judged again from
    both rankings: the oracle stays consistent. The honest row's record stops counting once its files change."""
    from lookbench.results.folder import snapshot

    root = tmp_path / "repo"
    shutil.copytree(repo[0], root)
    oracle = submission_folder(root / "submissions" / "someone")
    forged = _record(root, "someone").parent / "forged"
    shutil.copytree(_record(root, "facebook"), forged)
    made = json.loads((forged / "reproduction.json").read_text())
    made["submission_key"] = snapshot(oracle)[0]
    (forged / "reproduction.json").write_text(json.dumps(made))
    assert made["reproduced"] is True and made["agreement"]["overall"]["top1"] == 100.0
    honest = submission_folder(root / "submissions" / "facebook")
    with open(honest / "README.md", "a") as readme:  # still consistent, but no longer the files the record re-ran
        readme.write("\nedited after the reproduction\n")
    trust, skipped = _judged(root, signer.keys)
    assert trust == {"facebook/dinov2-large": "consistent", ORACLE_MODEL: "consistent"}
    assert [line.partition(": reproduction record ignored: ")[2] for line in skipped] == [
        "its signature does not match its files and this submission (changed since it was signed)"]
    sign_again(forged, signer)  # signed as it is: the board still recomputes it from both rankings
    assert _judged(root, signer.keys)[0][ORACLE_MODEL] == "consistent"


@pytest.mark.slow
def test_a_record_of_more_files_than_are_hashed_never_counts(repo, signer, tmp_path):
    """A check is kept by the digest of every file of its record: a record padded past MAX_RECORD_FILES (names that
    sort before its own files) has bytes no digest would cover, so it is not read at all."""
    from lookbench.submissions.reproduction import MAX_RECORD_FILES

    root = tmp_path / "repo"
    shutil.copytree(repo[0], root)
    assert _judged(root, signer.keys)[0]["facebook/dinov2-large"] == "reproduced"
    for i in range(MAX_RECORD_FILES):
        (_record(root, "facebook") / f"a{i:02d}").write_text("padding")
    trust, skipped = _judged(root, signer.keys)
    assert trust["facebook/dinov2-large"] == "consistent"
    assert f"{_record(root, 'facebook').relative_to(root).as_posix()}: reproduction record ignored: its files cannot " \
           f"all be read (at most {MAX_RECORD_FILES}, each within its limit)" in skipped


def _honest_copy(repo, tmp_path) -> tuple[Path, Path, Path]:
    """A copy of the repo: its root, the honest submission's folder and its (signed, agreeing) record."""
    root = tmp_path / "repo"
    shutil.copytree(repo[0], root)
    return root, submission_folder(root / "submissions" / "facebook"), _record(root, "facebook")


def _ignored(root: Path, keys: dict, record: Path) -> str:
    """The honest row's trust must be consistent; the one line saying why its record was ignored."""
    trust, skipped = _judged(root, keys)
    assert trust["facebook/dinov2-large"] == "consistent", skipped
    lines = [line for line in skipped if line.startswith(f"{record.relative_to(root).as_posix()}: ")]
    assert len(lines) <= 1, lines
    return lines[0].partition(": reproduction record ignored: ")[2] if lines else ""


@pytest.mark.slow
def test_a_copied_record_never_counts_even_signed(repo, signer, tmp_path):
    """A record whose rerun/ is the submission's own files agrees 100% with it: it is refused as a copy, signed or
    not; so is one whose re-run was stripped of the submission's name but is otherwise the submission's result."""
    root, submission, record = _honest_copy(repo, tmp_path)
    assert _trust(root, signer.keys)["facebook/dinov2-large"] == "reproduced"  # before: the signed honest record
    shutil.rmtree(record / "rerun")
    shutil.copytree(submission, record / "rerun", ignore=shutil.ignore_patterns("README.md"))
    assert _ignored(root, signer.keys, record).startswith("its signature does not match its files")
    sign_again(record, signer)
    assert _ignored(root, signer.keys, record) == ("its re-run is the submission's own result (a copy of its files, "
                                                   "not a re-run)")
    result = json.loads((record / "rerun" / "results.json").read_text())
    del result["provenance"]["submission"]
    (record / "rerun" / "results.json").write_text(json.dumps(result))
    sign_again(record, signer)
    assert _ignored(root, signer.keys, record) == ("its re-run is the submission's own result (a copy of its files, "
                                                   "not a re-run)")


def _other_commit(made, rerun):
    rerun["provenance"]["model"]["revision"] = "f" * 40


def _other_data(made, rerun):
    rerun["provenance"]["dataset"]["revision"] = "local-0000000000000000"


def _other_settings(made, rerun):
    rerun["provenance"]["cutoff"] = "2020-01-01"


def _says_not_reproduced(made, rerun):
    made["reproduced"] = False


def _names_another_model(made, rerun):
    made["model"]["id"] = "someone/other-model"


@pytest.mark.slow
@pytest.mark.parametrize("edit, reason", [
    (_says_not_reproduced, ""),  # its signer's word: not reproduced, nothing to say
    (_names_another_model, "its reproduction.json names the model 'someone/other-model' at "),
    (_other_commit, "its re-run ran "),
    (_other_data, "its re-run ran on other data than the submission's"),
    (_other_settings, "its re-run ran with other settings than the submission's"),
])
def test_a_self_contradicting_record_never_counts_even_signed(repo, signer, tmp_path, edit, reason):
    """The honest record, its rankings untouched (they agree), edited to say it did not reproduce or to name another
    model, or with a re-run that names another commit, data or settings, then signed: never reproduced."""
    root, _, record = _honest_copy(repo, tmp_path)
    made, rerun = (json.loads((record / name).read_text()) for name in ("reproduction.json", "rerun/results.json"))
    edit(made, rerun)
    (record / "reproduction.json").write_text(json.dumps(made))
    (record / "rerun" / "results.json").write_text(json.dumps(rerun))
    sign_again(record, signer)
    why = _ignored(root, signer.keys, record)
    assert why.startswith(reason) and not re.search(r"\d+\.\d+%", why), why


@pytest.mark.slow
def test_an_unsigned_or_foreign_signed_record_is_ignored_saying_why(repo, signer, tmp_path):
    """The honest record is reproduced only by the card's key: without its signature, signed by another key, or
    read with a card that lists none, it is ignored with the reason (and no figure)."""
    root, _, record = _honest_copy(repo, tmp_path)
    assert _ignored(root, {}, record) == ("signed by a key the leaderboard's card does not list (reproduction_keys)")
    sign_again(record, new_signer(tmp_path / "stranger"))
    assert _ignored(root, signer.keys, record) == ("signed by a key the leaderboard's card does not list "
                                                   "(reproduction_keys)")
    (record / "signature.json").unlink()
    assert _ignored(root, signer.keys, record).startswith("not signed (no readable signature.json")
    sign_again(record, signer)
    assert _trust(root, signer.keys)["facebook/dinov2-large"] == "reproduced"


@pytest.mark.slow
def test_edited_rankings_are_not_reproduced_naming_the_figures(hub, repo, signer, tmp_path):
    """The honest submission with every query's first two items swapped in one subset (its claims left as they were):
    the board says no, and the re-run refuses it naming the agreement."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "repo"
    shutil.copytree(repo[0] / "submissions" / "facebook", root / "submissions" / "facebook")
    folder = submission_folder(root)
    path = folder / "results.predictions" / "RealStudioFlat.parquet"
    table = pq.read_table(path)
    rank = table["rank"].to_numpy()
    pq.write_table(table.set_column(table.schema.get_field_index("rank"), "rank",
                                    pa.array(np.where(rank == 1, 2, np.where(rank == 2, 1, rank)))), path)
    proc = lookbench("reproduce-submission", folder, "--dry-run", "--out", root, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"^RealStudioFlat +\d+ +0\.00% +100\.00%$", proc.stdout, re.M), proc.stdout
    assert re.search(r"^AIGen-Studio +\d+ +100\.00% +100\.00%$", proc.stdout, re.M), proc.stdout
    assert re.search(r"^not reproduced: top-1 agreement [\d.]+% of \d+ queries \(needs 98%\)", proc.stdout, re.M)
    (trust,) = _trust(root, signer.keys).values()
    assert trust.startswith("no: RealStudioFlat")


@pytest.mark.slow
def test_the_trusted_filter_keeps_reproduced_rows_with_their_full_table_rank(repo, signer, tmp_path):
    root, _ = repo
    proc = lookbench("leaderboard", "--results", root, "--reference", "none", "--trusted", "--format", "json",
                     "--card", signer.card, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = [row for section in json.loads(proc.stdout) for row in section["rows"]]
    assert [(r["model"].split("@")[0], r["verified"]) for r in rows] == [("facebook/dinov2-large", "reproduced")]
    full = lookbench("leaderboard", "--results", root, "--reference", "none", "--format", "json", "--card", signer.card,
                     cwd=tmp_path)
    ranks = {r["model"]: r["rank"] for s in json.loads(full.stdout) for r in s["rows"]}
    assert rows[0]["rank"] == ranks[rows[0]["model"]] and len(ranks) == 2
    table = lookbench("leaderboard", "--results", root, "--reference", "none", cwd=tmp_path).stdout
    for value in ("reproduced", "scored (sealed)", "consistent", "pending", "not checked", "no: <reason>"):
        assert f"\n- {value}: " in table  # the legend under the table, one line each


@pytest.mark.slow
def test_the_board_shows_the_reproduced_and_the_consistent_row_truthfully(repo, signer, tmp_path):
    """The leaderboard Space over the repo, each submission judged in its child process as the Hub runs it: the honest
    row reproduced, the oracle's consistent, in the rows, the submissions table, the status line and the filter."""
    from lookbench.space.board.app import Board
    from lookbench.space.board.repo import Verdicts
    from tests.helpers.board import judged

    board = Board(folder=repo[0], verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=frozenset(), keys=signer.keys)
    board.refresh()
    status = judged(board)
    assert status.endswith("2 submission(s) — verified: 1 reproduced, 1 consistent.")
    answer = board.api_board("fine", 1, "overall")
    rows = {r["model"].split("@")[0]: r for s in answer["sections"] for r in s["rows"]}
    assert rows["facebook/dinov2-large"]["verified"] == "reproduced" and rows["facebook/dinov2-large"]["rank"]
    assert rows[ORACLE_MODEL]["verified"] == "consistent"
    assert sorted((s["model"].split("@")[0], s["verified"]) for s in answer["submissions"]) == [
        ("facebook/dinov2-large", "reproduced"), (ORACLE_MODEL, "consistent")]
    trusted = board.api_board("fine", 1, "overall", trusted=True)
    assert [(r["model"].split("@")[0], r["verified"], r["rank"]) for s in trusted["sections"] for r in s["rows"]] == [
        ("facebook/dinov2-large", "reproduced", rows["facebook/dinov2-large"]["rank"])]
