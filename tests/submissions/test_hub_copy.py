"""A Hub copy of a registered model at its commit (issue 54 item 7): `acme/gr-lite-mini`, whose weights are the
package's GR-Lite-mini, in the test's Hub cache at two commits (`main` at the newer). Evaluated by id it is recorded as
`acme/gr-lite-mini` at the commit of the cached ref, by `@commit` at that commit, GR-Lite-mini kept as its alias; `submit`
needs no `--model-id` (a pull request on the loopback fake Hub) and `reproduce-submission` re-runs it from the cache."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lookbench.cli import main
from lookbench.encoders.entries import gr_lite_mini_folder

from tests.helpers.engine_data import write_folder
from tests.helpers.fake_results_hub import FakeResultsHub
from tests.helpers.hub_cache import put_snapshot
from tests.helpers.staged_hub import TOKEN, run_cli
from tests.helpers.submissions import files, lookbench, submission_folder

REPO = "acme/gr-lite-mini"
OLD = "a1d" + "0" * 37
HEAD = "ac3e" + "1" * 36  # what refs/main names


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The Hub cache (both commits, main at HEAD) and a tiny data folder."""
    from huggingface_hub import constants

    root = tmp_path_factory.mktemp("hubcopy")
    put_snapshot(root / "cache", REPO, OLD, gr_lite_mini_folder(), ref=None)
    put_snapshot(root / "cache", REPO, HEAD, gr_lite_mini_folder())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_CACHE", str(root / "cache"))  # the commands run in fresh processes
        patch.setattr(constants, "HF_HUB_CACHE", str(root / "cache"))
        yield write_folder(root / "data")


def _evaluated(model: str, data: Path, out: Path, capsys) -> tuple[dict, str]:
    assert main(["evaluate", "--model", model, "--data", str(data), "--output", str(out), "--save-predictions",
                 "--no-save", "--cache-dir", str(out.parent / "cache")]) == 0
    return json.loads((out / "results.json").read_text()), " ".join(capsys.readouterr().out.split())


@pytest.mark.slow
def test_a_hub_copy_by_id_is_recorded_at_the_cached_commit_submitted_without_model_id_and_reproduced(hub, tmp_path,
                                                                                                       capsys):
    from lookbench.leaderboard.load import load_store
    from space.board.facts import of_entry, registered

    result, printed = _evaluated(REPO, hub, tmp_path / "out", capsys)
    model = result["provenance"]["model"]
    assert (model["name"], model["model"], model["revision"], model["registered_as"]) == (
        f"{REPO}@{HEAD[:12]}", REPO, HEAD, "gr-lite-mini")
    assert "loaded_from" not in model
    assert model["training_datasets"] == {"lookbench-mini": ["train"], "fashion-mnist": ["train"]}  # the alias's
    assert (f"note: {REPO}@{HEAD[:12]} holds the registered model gr-lite-mini (the same weights fingerprint): "
            f"recorded as {REPO} at {HEAD}, gr-lite-mini kept as its alias") in printed

    with FakeResultsHub() as fake:  # no --model-id: the result names the Hub repo and commit
        proc = run_cli("submit", str(tmp_path / "out"), "--repo", "someone/results", "--allow-synthetic",
                       endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (pull,) = fake.pulls
    assert pull["title"].startswith(f"{REPO}@{HEAD[:12]}: strict on ")
    assert all(p.startswith(f"submissions/{REPO}/{HEAD}/") for p in pull["paths"])

    root = tmp_path / "repo"
    proc = lookbench("submit", tmp_path / "out", "--dry-run", "--out", root, "--allow-synthetic", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folder = submission_folder(root)
    assert sorted(pull["paths"]) == files(root)
    assert "(evaluated as acme/gr-lite-mini@ac3e11111111, a copy of the registered gr-lite-mini)" in (
        folder / "README.md").read_text()
    (entry,), _ = load_store(root / "submissions")  # the board: the Hub id, the registered model's facts
    assert entry.model == f"{REPO}@{HEAD[:12]}" and entry.extra["evaluated"] == "gr-lite-mini"
    assert entry.extra["submitted"] == REPO and of_entry(entry) == registered("gr-lite-mini")  # size, cutoff, open

    proc = lookbench("reproduce-submission", folder, "--dry-run", "--out", root, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert f"{REPO} at {HEAD} re-run as {REPO}@{HEAD} on cpu (fp32)" in said
    assert re.search(r"reproduced: top-1 agreement 100\.00% of \d+ queries", said), said
    (record,) = (root / "reproductions").rglob("reproduction.json")
    made = json.loads(record.read_text())
    assert (made["model"]["id"], made["model"]["commit"], made["reproduced"]) == (REPO, HEAD, True)
    rerun = json.loads((record.parent / "rerun" / "results.json").read_text())["provenance"]["model"]
    assert (rerun["model"], rerun["revision"], rerun["registered_as"]) == (REPO, HEAD, "gr-lite-mini")


@pytest.mark.slow
def test_a_hub_copy_at_a_commit_is_recorded_at_that_commit_and_submitted_without_model_id(hub, tmp_path, capsys):
    result, _ = _evaluated(f"{REPO}@{OLD}", hub, tmp_path / "out", capsys)
    model = result["provenance"]["model"]
    assert (model["name"], model["model"], model["revision"], model["registered_as"]) == (
        f"{REPO}@{OLD}", REPO, OLD, "gr-lite-mini")
    proc = lookbench("submit", tmp_path / "out", "--dry-run", "--out", tmp_path / "repo", "--allow-synthetic",
                     cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    submitted = json.loads((submission_folder(tmp_path / "repo") / "results.json").read_text())
    assert submitted["provenance"]["submission"] == {"model": REPO, "revision": OLD}
    assert submission_folder(tmp_path / "repo").relative_to(tmp_path / "repo").parts[:4] == (
        "submissions", "acme", "gr-lite-mini", OLD)
