"""A sealed release's whole cycle on LookBench-Mini against the loopback fake Hub (docs/publishing.md): built sealed,
staged and pushed (the labels as a private repo that answers 401 without a token), evaluated (rankings, no score),
submitted, scored by the leaderboard board as `scored (sealed)`, unsealed and pushed again, and verified locally to
the board's numbers; and no file the public side can read carries a label."""
from __future__ import annotations

import json
import re
from pathlib import Path

import huggingface_hub
import pyarrow.parquet as pq
import pytest

from lookbench.cli import main
from lookbench.dataset_builder.sealed import LABEL_FIELDS, SEALED_KEY, card_yaml
from lookbench.results.trust import SCORED_SEALED
from lookbench.upload_scripts.stage import stage
from tests.helpers.board import judged
from tests.helpers.fake_hub import FakeHub
from tests.helpers.hub_cache import put_snapshot
from tests.helpers.shared import sealed_mini
from tests.helpers.staged_hub import TOKEN, run_cli

NS = "acme"
MODEL_REVISION = "5e1f0c2d9a7b3e4f6a8b0c1d2e3f4a5b6c7d8e9f"
NEWEST = "mini-v20251201"


def _download(hub: FakeHub, repo: str, cache: Path, tmp: Path, ref: str) -> str:
    """What the fake Hub holds of ``repo`` (the last commit's files) laid into the hub cache as huggingface_hub's
    download writes it, ``ref`` (a branch or tag) naming that commit; the commit."""
    oid = next(c["oid"] for c in reversed(hub.commit_log) if c["repo"] == f"dataset/{repo}")
    folder = tmp / f"download-{repo.replace('/', '--')}-{oid}"
    for path, content in hub.contents[f"dataset/{repo}"].items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(content)
    put_snapshot(cache, repo, oid, folder, repo_type="dataset", ref=ref)
    return oid


def _labels(folder: Path) -> dict[str, set[str]]:
    """Every label value of a labels folder, by kind: categories, main attributes, attribute values, and the
    sentences of the text config."""
    found = {"category": set(), "main_attribute": set(), "attribute": set(), "text": set()}
    for shard in sorted(folder.glob("*/*.parquet")):
        table = pq.read_table(shard).to_pydict()
        if shard.parent.name == "text":
            found["text"].update(table["text_short"] + table["text_long"])
            continue
        found["category"].update(v for v in table["category"] if v)
        found["main_attribute"].update(v for v in table["main_attribute"] if v)
        found["attribute"].update(a["value"] for attrs in table["attributes"] if attrs for a in attrs)
    return found


def _strings(path: Path) -> list[str]:
    """Every string a public reader gets from ``path``: each cell of a Parquet file, else the file's text."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        out = []
        for column in table.column_names:
            if column == "image" or column == "raw_image":
                continue
            out += [json.dumps(v, default=str) if not isinstance(v, str) else v for v in table[column].to_pylist() if v is not None]
        return out
    return [path.read_text(encoding="utf-8")]


def _leaks(paths: list[Path], labels: dict[str, set[str]], vocabulary: set[str] = frozenset()) -> list[str]:
    """Each (file, label) where a label value appears as a whole word (a sentence as a whole) in what it holds. In
    prose (a card, a JSON file) a value that is also a word of the build's own record (``vocabulary``: its source,
    command and release names, e.g. a "mini" skirt beside `--source mini`) is left out of the word scan; Parquet
    cells are scanned for every value."""
    words = {v for kind in ("category", "main_attribute", "attribute") for v in labels[kind]}

    def pattern(values):
        return re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, values), key=len, reverse=True)) + r")(?![\w-])")

    cells, prose = pattern(words), pattern(words - set(vocabulary))
    found = []
    for path in paths:
        scan = cells if path.suffix == ".parquet" else prose
        for text in _strings(path):
            hit = scan.search(text)
            if hit:
                found.append(f"{path}: {hit[0]!r} in {text[max(0, hit.start() - 40):hit.end() + 40]!r}")
            found += [f"{path}: query text {s[:40]!r}" for s in labels["text"] if s in text]
    return found


@pytest.mark.slow
def test_a_sealed_release_from_build_to_board_scored_row_to_unsealed_and_verified(tmp_path, tmp_path_factory, photos,
                                                                                    monkeypatch):
    from lookbench.results.result import SealedRun
    from lookbench.space.board.app import Board
    from lookbench.space.board.repo import Verdicts
    from lookbench.submissions.submit import prepare, write
    from lookbench.submissions.verify import verify_submission

    import lookbench

    cache = tmp_path / "hub-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))  # the board's judging child reads it
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    # build sealed (`lookbench build --source mini --seal`, run once for the tests that need it)
    data, labels = sealed_mini(tmp_path_factory, tmp_path)
    sealed = card_yaml(data)[SEALED_KEY]
    assert sealed == {"releases": ["mini-v20240601", "mini-v20250101", NEWEST], "until": "2027-06-01",
                      "labels": "lookbench/lookbench-labels"}
    truth = _labels(labels)
    assert all(truth.values()) and len(truth["category"]) > 3

    # stage and push: the labels a private repo, the public part as usual
    mirror = tmp_path / "HUB"
    staging = stage(mirror, data=data, namespace=NS, photos=photos, labels=labels)
    private = {r.repo_id: r.private for r in staging.repos}
    assert private[f"{NS}/lookbench"] is False and private[f"{NS}/lookbench-labels"] is True
    board_card = huggingface_hub.SpaceCard.load(mirror / NS / "leaderboard" / "README.md").data.to_dict()
    assert f"{NS}/lookbench-labels@{NEWEST}" in board_card["lookbench_data"]
    with FakeHub() as hub:
        pushed = run_cli("push", "--hub", str(mirror), "--namespace", NS, endpoint=hub.url, token=TOKEN, cwd=tmp_path)
        assert pushed.returncode == 0, pushed.stderr
        made = {f"{c.get('type') or 'model'}/{c['organization']}/{c['name']}": c.get("visibility") for c in hub.created}
        assert made[f"dataset/{NS}/lookbench-labels"] == "private" and made[f"dataset/{NS}/lookbench"] != "private"
        public = hub.contents[f"dataset/{NS}/lookbench"]
        assert not [p for p in public if p.startswith(("text/", "lookbench-labels/")) or "validation_report" in p]
        assert f"dataset/{NS}/lookbench-labels@{NEWEST}" in hub.tags
        # the Hub keeps the labels from anyone without the token (asked of the loopback fake only)
        with monkeypatch.context() as online:
            online.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
            with pytest.raises(huggingface_hub.errors.HfHubHTTPError) as refused:
                huggingface_hub.HfApi(endpoint=hub.url, token=False).repo_info(f"{NS}/lookbench-labels",
                                                                               repo_type="dataset")
            assert refused.value.response.status_code == 401
            assert huggingface_hub.HfApi(endpoint=hub.url, token=TOKEN).repo_info(
                f"{NS}/lookbench-labels", repo_type="dataset").private is True
        sealed_commit = _download(hub, f"{NS}/lookbench", cache, tmp_path, "main")
        _download(hub, f"{NS}/lookbench-labels", cache, tmp_path, NEWEST)

    # evaluate: rankings, no score
    out = tmp_path / "run"
    run = lookbench.evaluate("gr-lite-mini", data=f"{NS}/lookbench@{sealed_commit}", output_dir=out, quiet=True)
    assert isinstance(run, SealedRun) and "lookbench submit" in run.table()
    result = json.loads((out / "results.json").read_text())
    for name, block in result.items():
        if name != "provenance":
            assert set(block) <= {"num_queries", "gallery_size", "self_matches_removed"}, name
    rankings = sorted((out / "results.predictions").glob("*.parquet"))
    assert len(rankings) == 4
    assert set(pq.read_schema(rankings[0]).names) == {"query", "query_item_id", "rank", "gallery_index", "item_id", "score"}

    # submit: the rankings, no claimed score
    submissions = tmp_path / "results-repo"
    submission = write(prepare(out / "results.json", model_id=f"lookbench/gr-lite-mini@{MODEL_REVISION}",
                               allow_synthetic=True), submissions)
    assert "scored by the leaderboard" in (submission / "README.md").read_text()
    assert verify_submission(submission).reasons == [
        "sealed: scored by the leaderboard (the release's labels are withheld until it is unsealed)"]

    # no file the public side can read carries a label
    public_files = [p for p in (mirror / "lookbench").rglob("*") if p.is_file() and "lookbench-labels" not in p.parts
                    and p.relative_to(mirror / "lookbench").parts[0] not in ("acme",)]
    public_files += [p for p in out.rglob("*") if p.is_file()] + [p for p in submission.rglob("*") if p.is_file()]
    # The taxonomy is the answer space, not an answer: every allowed value of every category, tied to no row (it is
    # what a proposer or a submitter's model must choose among). It names no item, so it can pair no row with a label.
    taxonomy = mirror / "lookbench" / "taxonomy.json"
    items = {row["item_id"] for shard in (mirror / "lookbench").glob("*/*.parquet")
             for row in pq.read_table(shard, columns=["item_id"]).to_pylist()}
    assert taxonomy.is_file() and not any(item in taxonomy.read_text() for item in items)
    public_files.remove(taxonomy)
    assert any(p.suffix == ".parquet" for p in public_files) and any(p.name == "README.md" for p in public_files)
    history = card_yaml(data)["lookbench_history"]
    vocabulary = {w for step in history for text in [step["command"], step["source"], *step["releases"]]
                  for w in re.findall(r"[\w-]+", text)}
    exempt = vocabulary & {v for kind in ("category", "main_attribute", "attribute") for v in truth[kind]}
    assert len(exempt) <= 2, exempt  # a coincidence of words, not a way round the scan
    # where this machine keeps the checkout and the test's files is a word of no label (a clone under /check/ is not
    # a leak of the pattern "check"): the paths a result records are scanned without those words
    here = {w for folder in (Path(lookbench.__file__).resolve().parents[1], tmp_path) for w in re.findall(r"[\w-]+", str(folder))}
    assert _leaks(public_files, truth, vocabulary | here) == []
    for shard in (mirror / "lookbench").glob("*/*.parquet"):
        table = pq.read_table(shard, columns=list(LABEL_FIELDS))
        assert all(table[f].null_count == len(table) for f in LABEL_FIELDS), shard
    assert _leaks([labels / "RealStudioFlat" / "query-00000-of-00001.parquet"], truth)  # the scan does find labels

    # the board: without the token it says so and keeps the sealed row pending
    allowed = {f"{NS}/lookbench", f"{NS}/lookbench-labels@{NEWEST}"}
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
    blind = Board(folder=submissions, verdicts=Verdicts(tmp_path / "blind.json"), allowed=allowed)
    status = blind.refresh()
    assert "No read token (HF_TOKEN, a Space secret) for the sealed labels: sealed submissions stay pending." in status
    assert [s["verified"] for s in blind.api_board("fine", 1, "overall")["submissions"]] == ["pending"]

    # ... and with it, scores the rankings against the pinned labels and shows the row as scored (sealed)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    board = Board(folder=submissions, verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=allowed)
    board.refresh()
    assert judged(board).endswith(f"verified: 1 {SCORED_SEALED}.")
    answer = board.api_board("fine", 1, "overall")
    (row,) = [r for s in answer["sections"] for r in s["rows"] if r["verified"] == SCORED_SEALED]
    assert row["model"].startswith("lookbench/gr-lite-mini@") and row["rank"] >= 1
    (kept,) = [s.verdict for s in board.loaded().submissions]
    scored = kept.scores
    assert kept.text == SCORED_SEALED and 0 < scored["overall"]["fine_recall"]["@1"] <= 100
    assert scored["overall"]["num_queries"] == sum(b["num_queries"] for n, b in result.items() if n not in ("overall", "provenance"))

    # unseal: the labels published into the public dataset as a new tagged revision
    assert main(["unseal", str(data), "--labels", str(labels)]) == 0
    assert SEALED_KEY not in card_yaml(data) and (data / "text").is_dir()
    again = tmp_path / "HUB2"
    stage(again, data=data, namespace=NS, photos=photos)
    with FakeHub() as hub:
        pushed = run_cli("push", "--hub", str(again), "--namespace", NS, endpoint=hub.url, token=TOKEN, cwd=tmp_path)
        assert pushed.returncode == 0, pushed.stderr
        assert f"dataset/{NS}/lookbench@{NEWEST}-unsealed" in hub.tags
        assert any(p.startswith("text/") for p in hub.contents[f"dataset/{NS}/lookbench"])
        _download(hub, f"{NS}/lookbench", cache, tmp_path, "main")

    # every submission of the sealed era verifies locally, to the scores the board published while it was sealed
    monkeypatch.delenv("HF_TOKEN")
    local = verify_submission(submission)
    assert local.verified and local.scored == scored
    assert main(["verify", str(submission)]) == 0

    # the board, restarted after the unsealing, re-checks what it published while sealed against the public labels
    import time

    from lookbench.results.provenance import UNSEALED

    restarted = Board(folder=submissions, verdicts=Verdicts(tmp_path / "verdicts.json"), allowed=allowed)
    restarted.refresh()
    deadline = time.monotonic() + 900
    while (restarted.verdicts.get(kept.key).placement or {}).get("labels") != UNSEALED:
        assert time.monotonic() < deadline, restarted.verdicts.get(kept.key)
        time.sleep(0.2)
    rechecked = restarted.verdicts.get(kept.key)
    assert rechecked.text == SCORED_SEALED and rechecked.scores == scored
