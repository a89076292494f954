"""The leaderboard's zero-shot column and filter (issue 56 item 1): a registered model's declaration against the data's
sources, else the result's own record, a submission's marked "(claimed)"; `--zero-shot` and the boards' checkboxes
keep only the zero-shot rows, ranks unchanged."""
from __future__ import annotations

import csv
import io
import json

from lookbench.leaderboard.load import entry_from_result
from lookbench.leaderboard.ranking import leaderboard
from lookbench.leaderboard.render import ZERO_SHOT_COLUMN
from lookbench.results.provenance import ZeroShot
from lookbench.schema import MINI_DATA
from tests.helpers.leaderboard import FOUR, result, run_cli


def on_mini(model: str, claim: ZeroShot | None = None, submitted: str | None = None) -> dict:
    out = result(model, FOUR, name="LookBench-Mini (synthetic)")
    out["provenance"]["dataset"]["sources"] = [MINI_DATA]
    out["provenance"].update(claim.to_json() if claim else {})
    if submitted:
        out["provenance"]["submission"] = {"model": submitted, "revision": "a" * 40}
    return out


def store_of(tmp_path, results: dict):
    store = tmp_path / "results"
    store.mkdir()
    for name, data in results.items():
        (store / f"{name}.json").write_text(json.dumps(data))
    return store


def test_the_column_says_no_for_gr_lite_mini_on_the_mini_yes_for_efficientnet_unknown_otherwise(tmp_path, capsys):
    store = store_of(tmp_path, {"a": on_mini("gr-lite-mini"), "b": on_mini("efficientnet-lite0"),
                                "c": on_mini("someone-elses-model")})
    section = leaderboard(results=store, reference="none").sections[0]
    shown = {r["model"]: r[ZERO_SHOT_COLUMN] for r in section.rows}
    assert shown == {"gr-lite-mini": "no", "efficientnet-lite0": "yes", "someone-elses-model": "unknown"}
    assert ZERO_SHOT_COLUMN in section.columns
    code, out, _ = run_cli(capsys, "--reference", "none", "--results", str(store), "--format", "csv")
    assert code == 0 and ",zero-shot," in out.splitlines()[0]
    code, out, _ = run_cli(capsys, "--reference", "none", "--results", str(store), "--zero-shot", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["model"] for r in rows] == ["efficientnet-lite0"]
    rank = next(r["rank"] for r in section.rows if r["model"] == "efficientnet-lite0")
    assert rows[0]["rank"] == str(rank) and rows[0][ZERO_SHOT_COLUMN] == "yes"  # the full table's rank


def test_the_published_table_marks_the_models_the_registry_declares(capsys):
    published = leaderboard(reference="release_v2601").sections[0]
    shown = {r["model"]: r[ZERO_SHOT_COLUMN] for r in published.rows}
    assert shown["CLIP-B/32"] == shown["DINOv3-ViT-L"] == shown["SigLIP2-B/16"] == "yes"
    assert shown["GR-Pro"] == shown["GR-Lite"] == "unknown"
    kept = leaderboard(reference="release_v2601").zero_shot().sections[0]
    assert {r["model"] for r in kept.rows} == {m for m, v in shown.items() if v == "yes"}
    code, out, _ = run_cli(capsys, "--zero-shot", "--trusted")  # no published row is reproduced or scored sealed
    assert code == 0 and "CLIP-B/32" not in out


def test_a_submission_shows_its_own_claim_as_claimed_unless_the_registry_decides(tmp_path):
    claim = ZeroShot(True, "trained on my-crawl; evaluated on lookbench-mini")
    theirs = entry_from_result(on_mini("their-model", claim, submitted="them/their-model"), "x")
    assert theirs.extra["zero_shot"] == "yes (claimed)"
    lying = entry_from_result(on_mini("gr-lite-mini", claim, submitted="them/gr-lite-mini"), "x")
    assert lying.extra["zero_shot"] == "no"  # the registry's declaration, not the file's
    stored = entry_from_result(on_mini("their-model", claim), "x")  # one's own store: the record as it is
    assert stored.extra["zero_shot"] == "yes"
    old = entry_from_result(result("their-model", FOUR), "x")
    assert old.extra["zero_shot"] == "unknown"


def test_a_section_where_nothing_is_declared_has_no_zero_shot_column(tmp_path):
    store = store_of(tmp_path, {"a": result("gr-lite-mini", FOUR)})  # no data sources recorded
    section = leaderboard(results=store, reference="none").sections[0]
    assert ZERO_SHOT_COLUMN not in section.columns and ZERO_SHOT_COLUMN not in section.rows[0]
    assert leaderboard(results=store, reference="none").zero_shot().sections == []
