"""Issue 53 item 2: no oracle on a sealed release. On a sealed LookBench-Mini, an adaptive attacker's hundreds of
differential submissions (rankings that differ in one query's top-1) get from the board exactly the same answers
whether the held half's labels are one set or another, never a per-query figure, and past the cap `pending: over the
cap`; a sealed result that drops or changes `sealed`, or claims scores or attribute errors, is refused naming no
number; the shown headline is one decimal; and once unsealed the held half ranks the rows. The submissions are
judged in-process by the board's judge (``judge_submission``), not through a served Space."""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lookbench.dataset_builder.labels import Labels
from lookbench.dataset_builder.seal import seal, unseal
from lookbench.dataset_builder.sealed import LABEL_FIELDS, LABELS_KEY, MAP_PREFIX, SPLIT_KEY, card_yaml
from lookbench.leaderboard.load import Verdict, judge_submission, load_store
from lookbench.results.halves import HELD, SHOWN, shown
from lookbench.results.provenance import UNSEALED
from lookbench.results.trust import FAILED, OVER_CAP, SCORED_SEALED
from tests.helpers.shared import mini_copy

REVISION = "5e1f0c2d9a7b3e4f6a8b0c1d2e3f4a5b6c7d8e9f"
CAP, NAMESPACES, PER_NAMESPACE = 3, 8, 25  # 200 differential submissions, 24 of them scored


class Pixels:
    """A user encoder (the API's custom-model path): 4x4 pixels, no model, no label."""

    name, revision = "pixels-4x4", "1"

    def encode(self, images):
        return np.stack([np.asarray(im.convert("RGB").resize((4, 4)), dtype=np.float32).ravel() for im in images])


def _relabelled(labels: Path, out: Path, key: str) -> Path:
    """A copy of the labels folder whose held-half queries' labels are rotated among themselves (the shown half's
    and every gallery row's as they were): labels B. A query's half is that of its public row id (the board scores
    the public rows), read from the labels' maps of sealed rows."""
    shutil.copytree(labels, out)
    row_ids = {(config, split, m["row"]): m["row_id"] for m_path in sorted(out.glob(f"{MAP_PREFIX}*.parquet"))
               for config, split, m in ((r["config"], r["split"], r) for r in pq.read_table(m_path).to_pylist())}
    for shard in sorted(out.glob("*/query-*.parquet")):
        table = pq.read_table(shard)
        config = shard.parent.name
        held = np.flatnonzero(~shown(key, [row_ids[(config, "query", r)] for r in table["row"].to_pylist()]))
        for name in LABEL_FIELDS:
            values = table[name].to_pylist()
            for at, source in zip(held, np.roll(held, 1)):
                values[at] = table[name][int(source)].as_py()
            index = table.schema.get_field_index(name)
            table = table.set_column(index, table.schema.field(index), pa.array(values, table.schema.field(index).type))
        pq.write_table(table, shard)
    return out


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    """A sealed LookBench-Mini, its labels (A) and labels B, and one sealed submission of the pixel encoder's
    rankings (``submit --dry-run`` as it writes one) in a results repo."""
    import lookbench
    from lookbench.submissions.submit import prepare, write

    root = tmp_path_factory.mktemp("sealed")
    data = root / "data"
    mini_copy(data)
    seal(data)
    labels = root / "data-labels"
    key = card_yaml(labels)[LABELS_KEY][SPLIT_KEY]
    run = root / "run"
    lookbench.evaluate(Pixels(), data=str(data), output_dir=run, save_predictions=True, quiet=True)
    repo = root / "repo"
    base = write(prepare(run / "results.json", model_id=f"attacker0/m0@{REVISION}", allow_synthetic=True), repo)
    return SimpleNamespace(data=data, labels=labels, other=_relabelled(labels, root / "labels-b", key), key=key,
                           base=base, repo=repo)


@pytest.fixture
def one_load(monkeypatch):
    """verify's data loaded once per (data, settings, labels): the judging is the board's, only the loading is not
    repeated for each of the attacker's submissions."""
    from lookbench.submissions import verify

    loaded, load = {}, verify._benchmark

    def cached(data, settings, text_form, labels):
        key = (str(data), repr(settings), text_form, str(labels))
        if key not in loaded:
            loaded[key] = load(data, settings, text_form, labels)
        return loaded[key]

    monkeypatch.setattr(verify, "_benchmark", cached)


def _copy(base: Path, root: Path, namespace: str, number: int) -> Path:
    """``base`` submitted again as ``namespace``/m<number> at its own commit, at the folder that names them."""
    parts = base.relative_to(base.parents[4]).parts  # <owner>/<name>/<commit>/<data>/<settings>
    commit = f"{number + 1:040x}"
    folder = root.joinpath("submissions", namespace, f"m{number}", commit, *parts[3:])
    shutil.copytree(base, folder)
    result = json.loads((folder / "results.json").read_text())
    result["provenance"]["submission"] = {"model": f"{namespace}/m{number}", "revision": commit}
    (folder / "results.json").write_text(json.dumps(result, indent=2))
    return folder


def _flip_top1(folder: Path, subset: str, query: int) -> None:
    """Rank 1 and rank 2 of one query of one subset swap places: the rankings differ in that query's top-1 only."""
    path = folder / "results.predictions" / f"{subset}.parquet"
    table = pq.read_table(path)
    q, rank = table["query"].to_numpy(), table["rank"].to_numpy()
    mine = q == query
    swapped = np.where(mine & (rank == 1), 2, np.where(mine & (rank == 2), 1, rank))
    pq.write_table(table.set_column(table.schema.get_field_index("rank"), "rank", pa.array(swapped)), path)


def _attack(sealed, root: Path) -> list[Path]:
    """NAMESPACES x PER_NAMESPACE submissions, each the honest rankings with one query's top-1 changed, the queries
    taken in turn across the subsets (so across both halves)."""
    subsets = sorted(p.stem for p in (sealed.base / "results.predictions").glob("*.parquet"))
    folders = []
    for n in range(NAMESPACES * PER_NAMESPACE):
        folder = _copy(sealed.base, root, f"attacker{n % NAMESPACES}", n)
        _flip_top1(folder, subsets[n % len(subsets)], n // len(subsets) % 40 + 1)
        folders.append(folder)
    return folders


def _settled(board, timeout_s: float = 900) -> str:
    """Wait until the board's worker has judged (or capped) every submission of its copy; its status. Asked once a
    second: each answer after a new verdict reads the whole copy again (200 submissions), work taken from the judge."""
    import time

    deadline = time.monotonic() + timeout_s
    while "judged in the background" in (status := board.status()):
        assert time.monotonic() < deadline, status
        time.sleep(1)
    return status


def _everything(board) -> dict:
    """All the board shows: its status line, its submissions table, and for every metric, K and scope (per release,
    trusted only) the API answer and the page's tables as HTML."""
    from lookbench.schema import TEST_SUBSETS
    from lookbench.settings import METRICS
    from lookbench.space.views import KS, OVERALL
    from lookbench.space.views import board_html

    views = [(m, k, s, False, False) for m in METRICS for k in KS for s in (OVERALL, *TEST_SUBSETS)]
    views += [(m, k, OVERALL, True, False) for m in METRICS for k in KS] + [("fine", 1, OVERALL, False, True)]
    out = {"status": board.status(), "submissions": board.submissions()}
    for metric, k, subset, by_release, trusted in views:
        answer = board.api_board(metric, k, subset, by_release, trusted=trusted)
        out[f"{metric} {k} {subset} {by_release} {trusted}"] = {
            "api": answer, "page": [board_html(s) for s in board.board(metric, k, subset, by_release, trusted=trusted).sections]}
    return out


@pytest.mark.slow
def test_an_adaptive_attacker_learns_nothing_of_the_held_half_and_is_stopped_by_the_cap(sealed, tmp_path, one_load):
    from lookbench.space.board.app import Board
    from lookbench.space.board.repo import Verdicts

    repo = tmp_path / "repo"
    _attack(sealed, repo)
    shown_to, kept = {}, {}
    for name, labels in (("A", sealed.labels), ("B", sealed.other)):
        board = Board(folder=repo, verdicts=Verdicts(tmp_path / f"verdicts-{name}.json"), allowed=frozenset(), cap=CAP,
                      judge=lambda folder, key, labels=labels: judge_submission(folder, labels=str(labels)))
        board.refresh()
        _settled(board)
        shown_to[name], kept[name] = _everything(board), {v.key: v for v in board.verdicts.all()}

    # the labels do differ where it matters: the held half's scores are not the same, the shown half's are
    assert kept["A"].keys() == kept["B"].keys() and len(kept["A"]) == NAMESPACES * CAP
    assert all(kept["A"][k].halves[SHOWN] == kept["B"][k].halves[SHOWN] for k in kept["A"])
    assert any(kept["A"][k].halves[HELD] != kept["B"][k].halves[HELD] for k in kept["A"])
    assert any(kept["A"][k].scores != kept["B"][k].scores for k in kept["A"])
    # ... and nothing the board shows tells them apart
    assert shown_to["A"] == shown_to["B"]

    everything = shown_to["A"]
    verified = {folder: text for _, folder, text in everything["submissions"]}
    assert len(verified) == NAMESPACES * PER_NAMESPACE
    for n in range(NAMESPACES):
        mine = sorted(text for folder, text in verified.items() if folder.split("/")[1] == f"attacker{n}")
        assert mine == [OVER_CAP] * (PER_NAMESPACE - CAP) + [SCORED_SEALED] * CAP, n
    assert f"{NAMESPACES * (PER_NAMESPACE - CAP)} {OVER_CAP}" in everything["status"]

    # no per-query (or per-subset, per-release, per-attribute) figure; every sealed score one decimal
    text = json.dumps(everything)
    # every submission ranks the base's queries (a copy with one top-1 changed): their ids are the base's
    queries = {q for p in (sealed.base / "results.predictions").glob("*.parquet")
               for q in pq.read_table(p, columns=["query_item_id"])[0].to_pylist()}
    assert queries and not [q for q in queries if q in text]
    assert not re.search(r"per_query|per_category|per_release|attribute_errors|query \d+ \(", text)
    views = {name: view for name, view in everything.items() if isinstance(view, dict)}
    for name, view in views.items():
        rows = [r for s in view["api"]["sections"] for r in s["rows"] if r["verified"] == SCORED_SEALED]
        assert len(rows) == NAMESPACES * CAP, name
        for row in rows:
            score = next(v for c, v in row.items() if "R@" in c or "nDCG@" in c)
            if " overall " in name:  # the headline, one decimal; nothing per subset or per release beside it
                assert score is not None and round(score, 1) == score, row
                assert not [c for c, v in row.items() if c.startswith(("Real", "AIGen", "mini-v")) and v is not None], row
            else:
                assert score is None, row
        # and the page writes a sealed row's score with its one decimal, as the API gives it
        sealed_rows = [r for table, _ in view["page"] for r in re.findall(r"<tr>(.*?)</tr>", table) if SCORED_SEALED in r]
        assert sealed_rows and all(not re.search(r"<td class='num'>\d+\.\d\d</td>", r) for r in sealed_rows), name


def _tampered(sealed, tmp_path, edit) -> Path:
    folder = tmp_path / "submission"
    shutil.copytree(sealed.base, folder)
    result = json.loads((folder / "results.json").read_text())
    edit(result)
    (folder / "results.json").write_text(json.dumps(result))
    return folder


def _drop_sealed(result):  # and claim per-query outcomes, as a public result would: judged as public, an oracle
    del result["provenance"]["dataset"]["sealed"]
    block = next(b for n, b in result.items() if n not in ("overall", "provenance"))
    block["per_query"] = {"item_id": ["x"], "fine": {"@1": [True]}}


def _fewer_sealed(result):
    result["provenance"]["dataset"]["sealed"]["releases"] = result["provenance"]["dataset"]["sealed"]["releases"][:1]


def _claims_scores(result):
    result["overall"]["fine_recall"] = {"@1": 55.5}


def _claims_attribute_errors(result):
    block = next(b for n, b in result.items() if n not in ("overall", "provenance"))
    block["attribute_errors"] = {"colour": {"rate": 0.25, "n": 4}}


@pytest.mark.slow
@pytest.mark.parametrize("edit, said", [
    (_drop_sealed, "provenance.dataset.sealed is None; the data judged is a sealed release"),
    (_fewer_sealed, "provenance.dataset.sealed is {'releases': ['mini-v"),
    (_claims_scores, "a run on a sealed release claims overall fine_recall: a sealed submission sends rankings only"),
    (_claims_attribute_errors, "attribute_errors: a sealed submission sends rankings only"),
], ids=["drops-sealed", "fewer-sealed", "claims-scores", "claims-attribute-errors"])
def test_a_sealed_result_that_drops_sealed_or_claims_scores_is_refused_with_no_number(sealed, tmp_path, edit, said):
    from lookbench.submissions.verify import verify_submission

    folder = _tampered(sealed, tmp_path, edit)
    verification = verify_submission(folder, labels=str(sealed.labels))
    assert not verification.verified and verification.scored is None and verification.halves is None
    (reason,) = verification.reasons
    assert said in reason, reason
    verdict = judge_submission(folder, labels=str(sealed.labels))
    assert verdict.text.startswith(FAILED) and verdict.scores is None
    for line in (reason, verdict.text):
        assert not re.search(r"\d\.\d|query \d|recomputed|the rankings give", line), line


@pytest.mark.slow
def test_the_honest_sealed_submission_scores_both_halves_and_shows_one_decimal(sealed):
    verdict = judge_submission(sealed.base, labels=str(sealed.labels))
    assert verdict.text == SCORED_SEALED and verdict.scored_while_sealed
    half, held, whole = verdict.halves[SHOWN], verdict.halves[HELD], verdict.scores["overall"]
    assert half["num_queries"] + held["num_queries"] == whole["num_queries"] and min(half["num_queries"], held["num_queries"]) > 0
    assert all(round(v, 1) == v for m, at in half.items() if isinstance(at, dict) for v in at.values())
    assert verdict.headline == half
    n, m = half["num_queries"], held["num_queries"]  # the whole is the two halves, query-weighted
    both = (half["fine_recall"]["@1"] * n + held["fine_recall"]["@1"] * m) / (n + m)
    assert abs(both - whole["fine_recall"]["@1"]) <= 0.05 * n / (n + m) + 1e-9
    assert len(json.dumps(verdict.to_json())) < 4096 and Verdict.from_json(verdict.to_json()) == verdict


@pytest.mark.slow
def test_unsealed_the_key_is_public_and_the_held_half_ranks_the_sealed_rows(sealed, tmp_path):
    from lookbench.leaderboard.ranking import leaderboard
    from lookbench.submissions.verify import verify_submission

    # unsealed, the key is in the public card, and anyone recomputes the board's halves
    public = tmp_path / "unsealed"
    shutil.copytree(sealed.data, public)
    unseal(public, sealed.labels)
    assert Labels.read(public, ["mini-v20240601"]).split_key == sealed.key
    board = judge_submission(sealed.base, labels=str(sealed.labels))
    assert verify_submission(sealed.base, labels=str(public)).halves == board.halves

    # the rows: shown half while sealed, held half once unsealed
    repo = tmp_path / "repo"
    first, second = (_copy(sealed.base, repo, "someone", n) for n in (1, 2))
    halves = {first: ({"fine_recall": {"@1": 10.0}}, {"fine_recall": {"@1": 90.0}}),
              second: ({"fine_recall": {"@1": 20.0}}, {"fine_recall": {"@1": 5.0}})}
    for labels in ("withheld", UNSEALED):
        def verify(folder, key, labels=labels):
            shown_half, held_half = halves[folder]
            both = {SHOWN: {**board.halves[SHOWN], **shown_half}, HELD: {**board.halves[HELD], **held_half}}
            return replace(board, key=key, placement={**board.placement, "labels": labels}, halves=both)

        ranked = leaderboard(reference=None, metric="fine", k=1, loaded=load_store(repo / "submissions", verify))
        (section,) = ranked.sections
        order = [(r["model"].split("@")[0], r["overall fine R@1"]) for r in section.rows]
        assert order == ([("someone/m2", 20.0), ("someone/m1", 10.0)] if labels == "withheld" else
                         [("someone/m1", 90.0), ("someone/m2", 5.0)]), labels


def test_the_cap_is_read_from_the_boards_card(tmp_path):
    from lookbench.space.board.judging import DEFAULT_CAP, sealed_cap

    card = tmp_path / "README.md"
    assert sealed_cap(card) == DEFAULT_CAP == 5  # no card
    for value, cap in (("2", 2), ("0", 0), ("-1", 5), ("many", 5), ("true", 5)):
        card.write_text(f"---\ntitle: board\nlookbench_sealed_cap: {value}\n---\n# board\n")
        assert sealed_cap(card) == cap, value
    shipped = Path(__file__).resolve().parents[2] / "space" / "board" / "README.md"
    assert sealed_cap(shipped) == 5
