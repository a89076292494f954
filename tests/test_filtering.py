"""Cutoffs by release name (lookbench.filtering, issue 23): `--cutoff <release>` keeps the queries of later releases,
the gallery whole; on a folder that holds two snapshots because the second was appended with `lookbench build --append`."""
from __future__ import annotations

from pathlib import Path

import datasets
import pytest

import lookbench
from lookbench import cli

from tests.helpers.raw_build import build_two_releases


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory) -> Path:
    return build_two_releases(tmp_path_factory.mktemp("releases"))


def test_cutoff_by_release_name_keeps_the_queries_of_later_releases(two_releases, tmp_path):
    subset = datasets.load_dataset(str(two_releases), "RealStudioFlat")
    recent = lookbench.filter_after(subset, "v20251201")
    assert set(recent["query"]["release"]) == {"v20260301"} and len(recent["query"]) == 6
    assert len(recent["gallery"]) == len(subset["gallery"]) == 20  # the gallery stays whole
    assert len(lookbench.filter_after(subset, "v20260301")["query"]) == 0
    assert len(lookbench.filter_after(subset["query"], "v20250101")) == 12
    # A release name is not a date: v20251201 keeps no query of v20251201, though a date of 2025-11-30 would.
    assert len(lookbench.filter_after(subset["query"], "2025-11-30")) == 6 + 2

    result = lookbench.evaluate("raw-pixels", data=two_releases, cutoff="v20251201", results_dir=tmp_path, quiet=True,
                                use_cache=False)
    counts = result.provenance["dataset"]["counts"]
    assert {s: (c["queries"], c["queries_total"]) for s, c in counts.items()} == {
        s: (6, 12) for s in ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook")}
    assert result.provenance["cutoff"] == "v20251201" and result.stored.name == "strict-after-v20251201.json"
    again = lookbench.evaluate("raw-pixels", data=two_releases, cutoff="v20251201", results_dir=tmp_path, quiet=True,
                               use_cache=False)
    assert again.reused  # the release name is the identity's cutoff, spelt one way


def test_a_cutoff_that_is_neither_a_date_nor_a_release_is_one_line(two_releases, capsys):
    assert cli.main(["evaluate", "--data", str(two_releases), "--cutoff", "v20251341", "--no-save", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "lookbench evaluate: error: Release 'v20251341' is not a snapshot name v<YYYYMMDD>: 20251341 is no date"
    assert cli.main(["evaluate", "--data", str(two_releases), "--cutoff", "soon", "--no-save", "--quiet"]) == 2
    assert "'soon' is not an ISO 8601 date, e.g. 2025-06-01 or 2025-06-01T12:00:00+02:00, nor a release name, e.g. v20250101" in (
        capsys.readouterr().err)


def test_a_release_cutoff_names_a_release_of_the_data_s_own_kind(two_releases, capsys):
    # LookBench-Mini's releases are mini-v…: a real release's name is refused there, naming the spelling that works
    mini = datasets.Dataset.from_dict({"release": ["mini-v20240601", "mini-v20250101", "mini-v20251201"]})
    with pytest.raises(ValueError) as refused:
        lookbench.filter_after(mini, "v20250101")
    assert str(refused.value) == (
        "Cutoff 'v20250101' names a release of another kind than this data's: its queries are of LookBench-Mini "
        "(synthetic) releases mini-v<YYYYMMDD> (mini-v20240601, mini-v20250101, mini-v20251201); give a release of "
        "this data, e.g. mini-v20250101, or a date")
    assert lookbench.filter_after(mini, "mini-v20250101")["release"] == ["mini-v20251201"]
    # and the reverse, through `lookbench evaluate`: one line naming the data and the subset
    assert cli.main(["evaluate", "--data", str(two_releases), "--cutoff", "mini-v20251201", "--no-save", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ": RealStudioFlat: Cutoff 'mini-v20251201' names a release of another kind than " \
        "this data's: its queries are of real releases v<YYYYMMDD> (v20251201, v20260301); give a release of this " \
        "data, e.g. v20251201, or a date" in err
