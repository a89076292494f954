"""Evaluating while a release is sealed (issue 54 item 8): on a folder holding a public release and a sealed one
(`build --append --seal`), one run scores the public release exactly as an evaluate of the public part alone and
writes only rankings of the sealed one (its `sealed/` subfolder), saying so in one line; no score of the sealed release
is printed or stored. The public result verifies as any public run; the sealed rankings are submitted as today."""
from __future__ import annotations

import json
import shutil

import pytest

from lookbench import cli
from lookbench.submissions.verify import SEALED, SEALED_BLOCK

from tests.helpers.raw_build import LATER
from tests.helpers.raw_release import write_release
from tests.helpers.submissions import MODEL_ID

SEALED_RELEASE = "v20260301"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """(the public release alone, the same release with a sealed one appended)."""
    root = tmp_path_factory.mktemp("sealed-part")
    public = root / "public" / "lookbench"
    assert cli.main(["build", "--source", "raw", "--input", str(write_release(root / "raw")), "--out", str(public),
                     "--quiet"]) == 0
    data = root / "data" / "lookbench"
    shutil.copytree(public, data)
    later = write_release(root / "raw2", stamps=LATER, tag="b", variant=20)
    assert cli.main(["build", "--append", str(later), "--out", str(data), "--seal", "--labels-out",
                     str(root / "labels"), "--quiet"]) == 0
    return public, data


def _evaluate(data, out, capsys) -> str:
    assert cli.main(["evaluate", "--data", str(data), "--output", str(out), "--save-predictions", "--no-save",
                     "--cache-dir", str(out.parent / "cache")]) == 0
    return capsys.readouterr().out


def _scores(path) -> dict:
    return {k: v for k, v in json.loads(path.read_text()).items() if k != "provenance"}


def test_the_public_release_is_scored_as_alone_and_the_sealed_one_only_ranked(folders, tmp_path, capsys):
    from lookbench.submissions.submit import prepare, write
    from lookbench.submissions.verify import verify_submission

    public, data = folders
    printed = _evaluate(data, tmp_path / "out", capsys)
    _evaluate(public, tmp_path / "alone", capsys)
    out = tmp_path / "out"
    for name in ("results.json", "results-leaderboard.json"):  # every score, interval and outcome of both modes
        assert _scores(out / name) == _scores(tmp_path / "alone" / name)
    dataset = json.loads((out / "results.json").read_text())["provenance"]["dataset"]
    assert (dataset["releases"], dataset["releases_left_out"], "sealed" not in dataset) == (
        ["v20251201"], [SEALED_RELEASE], True)
    assert dataset["noise_gallery"] == json.loads((tmp_path / "alone" / "results.json").read_text())[
        "provenance"]["dataset"]["noise_gallery"]
    flat = " ".join(printed.split())
    assert (f"note: scored the public releases v20251201; ranked only the sealed {SEALED_RELEASE} (no score; its "
            f"rankings: {out / 'sealed'})") in flat

    # the sealed release: rankings and counts, no score anywhere in the folder or the output
    ranked = json.loads((out / "sealed" / "results.json").read_text())
    assert ranked["provenance"]["dataset"]["sealed"]["releases"] == [SEALED_RELEASE]
    assert all(set(block) <= SEALED_BLOCK for name, block in ranked.items() if name != "provenance")
    assert {p.name for p in (out / "sealed" / "results.predictions").glob("*.parquet")} == {
        "AIGen-Studio.parquet", "AIGen-StreetLook.parquet", "RealStreetLook.parquet", "RealStudioFlat.parquet"}
    for path in out.glob("results*.json"):
        assert SEALED_RELEASE not in json.dumps(_scores(path)), path
    assert [line for line in printed.splitlines() if SEALED_RELEASE in line] == [
        line for line in printed.splitlines() if line.startswith("note: scored the public")]

    # read where results are read: the board's table has the public rows (both modes), the sealed run is named
    from lookbench.leaderboard.load import load_store

    entries, skipped = load_store(out)
    assert sorted((e.group.mode, e.group.label.split(",")[0]) for e in entries) == [
        ("leaderboard", "LookBench v20251201"), ("strict", "LookBench v20251201")]
    assert skipped == ["sealed/results.json: a run on a sealed release (rankings, no score): `lookbench submit` sends it "
                       "to be scored"]
    assert cli.main(["explain", str(out), "--report", str(tmp_path / "report.html")]) == 0

    # verify and submit: the public result verifies as any public run; the sealed rankings wait for the board
    scored = write(prepare(out / "results.json", model_id=MODEL_ID, allow_synthetic=True), tmp_path / "repo")
    assert verify_submission(scored).verified
    sealed = write(prepare(out / "sealed" / "results.json", model_id=MODEL_ID, allow_synthetic=True), tmp_path / "repo")
    assert verify_submission(sealed).reasons == [SEALED]
