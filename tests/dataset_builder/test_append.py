"""`lookbench build --append RAW --out DIR` (issue 23): a new snapshot as new shards, the old ones untouched.

Releases are written by tests/helpers/raw_release.py; the appends run through the CLI, where a maintainer runs them.
"""
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml

from lookbench import cli
from lookbench.files import folder_lock, folder_revision
from tests.helpers.raw_build import LATER
from tests.helpers.raw_release import write_release

CONFIGS = ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook", "noise")
ALIASES = ("real_studio_flat", "aigen_studio", "real_streetlook", "aigen_streetlook")


@pytest.fixture(scope="module")
def first_build(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("first")
    out = root / "built" / "lookbench"
    assert cli.main(["build", "--source", "raw", "--input", str(write_release(root / "raw")), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture
def built(first_build, tmp_path) -> Path:
    out = tmp_path / "data" / "lookbench"
    shutil.copytree(first_build, out)
    return out


def append(raw, out, *flags):
    return cli.main(["build", "--append", str(raw), "--out", str(out), "--quiet", *flags])


def sha256s(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def tree_hash(folder: Path) -> str:
    """Names and bytes of every file under ``folder`` (a staging folder left beside the data would change it too)."""
    digest = hashlib.sha256()
    for name, value in sha256s(folder).items():
        digest.update(f"{name}\0{value}\n".encode())
    return digest.hexdigest()


def card(out: Path) -> dict:
    return yaml.safe_load((out / "README.md").read_text().split("---\n")[1])


def test_append_adds_new_shards_and_keeps_every_old_one_byte_identical(built, tmp_path, capsys):
    before, revision = sha256s(built), folder_revision(built)
    raw = write_release(tmp_path / "raw2", stamps=LATER, tag="b", variant=20)
    assert append(raw, built, "--notes", "winter crawl | new shops") == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Appended v20260301 to {built}\n") and "releases: v20251201, v20260301" in out

    after = sha256s(built)
    old_shards = {name for name in before if name.endswith(".parquet")}
    assert {name: after[name] for name in old_shards} == {name: before[name] for name in old_shards}
    assert after["validation_report.json"] == before["validation_report.json"]
    new_shards = sorted(set(after) - set(before))
    assert new_shards == sorted([f"{c}/{s}-v20260301-00000-of-00001.parquet" for c in CONFIGS
                                 for s in (("gallery",) if c == "noise" else ("query", "gallery"))]
                                + [f"text/{a}-v20260301-00000-of-00001.parquet" for a in ALIASES]
                                + ["validation_report-v20260301.json"])
    assert after["README.md"] != before["README.md"] and folder_revision(built) != revision

    for config in CONFIGS:
        loaded = datasets.load_dataset(str(built), config)
        for split, ds in loaded.items():
            assert sorted(set(ds["release"])) == ["v20251201", "v20260301"]
            assert ds["release"].count("v20260301") == ds["release"].count("v20251201") > 0  # the same sizes, twice
    yaml_card = card(built)
    info = {i["config_name"]: {s["name"]: s["num_examples"] for s in i["splits"]} for i in yaml_card["dataset_info"]}
    assert info["RealStudioFlat"] == {"query": 12, "gallery": 20} and info["noise"] == {"gallery": 10}
    assert [(s["releases"], s["report"]) for s in yaml_card["lookbench_history"]] == [
        (["v20251201"], "validation_report.json"), (["v20260301"], "validation_report-v20260301.json")]
    text = (built / "README.md").read_text()
    assert "| `v20251201` | 2024-06-01 → 2025-12-01 | 6 / 10 | 6 / 10 | 6 / 6 | 6 / 6 | 5 | first build of this folder |" in text
    assert "| `v20260301` | 2026-01-10 → 2026-03-01 | 6 / 10 | 6 / 10 | 6 / 6 | 6 / 6 | 5 | winter crawl \\| new shops |" in text
    assert "**Releases in this folder:** v20251201, v20260301" in text
    assert sorted(p.name for p in built.parent.iterdir()) == ["lookbench"]  # no staging folder left behind


def test_the_text_queries_of_an_appended_release_follow_its_query_rows(built, tmp_path):
    """Row i of a text split is row i of the subset's query split, across the releases of the folder (issue 39)."""
    assert append(write_release(tmp_path / "raw2", stamps=LATER, tag="b", variant=20), built) == 0
    for config, alias in zip(CONFIGS, ALIASES):
        query = datasets.load_dataset(str(built), config, split="query")
        text = datasets.load_dataset(str(built), "text", split=alias)
        assert text["item_id"] == query["item_id"] and text["release"] == query["release"]
        assert sorted(set(text["release"])) == ["v20251201", "v20260301"] and set(text["template_version"]) == {1}
    info = {i["config_name"]: {s["name"]: s["num_examples"] for s in i["splits"]} for i in card(built)["dataset_info"]}
    assert info["text"] == {"real_studio_flat": 12, "aigen_studio": 12, "real_streetlook": 12, "aigen_streetlook": 12}


def test_a_folder_without_text_queries_is_refused_before_an_append(built, tmp_path, capsys):
    shutil.rmtree(built / "text")  # a folder an older version wrote
    before = tree_hash(built.parent)
    assert append(write_release(tmp_path / "raw2", stamps=LATER, tag="b", variant=20), built) == 2
    assert capsys.readouterr().err.strip() == (
        f"lookbench build: error: {built} has no text config (it was built before lookbench wrote the queries in words); "
        "rebuild the folder with this version before appending")
    assert tree_hash(built.parent) == before


def test_a_third_release_appends_after_the_second(built, tmp_path):
    assert append(write_release(tmp_path / "r2", stamps=LATER, tag="b", variant=20), built) == 0
    second = sha256s(built)
    later = ("2026-07-01T00:00:00Z", "2026-08-01T00:00:00Z", "2026-09-01T00:00:00Z")
    assert append(write_release(tmp_path / "r3", stamps=later, tag="c", variant=40), built, "--release", "v20260901") == 0
    assert all(sha256s(built)[name] == digest for name, digest in second.items() if name.endswith(".parquet"))
    query = datasets.load_dataset(str(built), "RealStreetLook", split="query")
    assert sorted(set(query["release"])) == ["v20251201", "v20260301", "v20260901"] and len(query) == 18


@pytest.mark.parametrize("case, expected", [
    ("older", "release v20250601 is not newer than v20251201, the newest release in"),
    ("same name", "release v20251201 already exists in"),
    ("older rows", "6 row(s) of AIGen-StreetLook/gallery are not newer than"),
    ("same item ids", "item id(s) of AIGen-StreetLook/gallery are already in"),
    ("same images", "image(s) of AIGen-StreetLook/gallery are already in"),
])
def test_an_older_or_duplicate_release_is_refused_and_the_folder_is_unchanged(built, tmp_path, capsys, case, expected):
    raws = {
        "older": lambda p: (write_release(p, stamps=("2025-02-01T00:00:00Z",) * 2 + ("2025-06-01T00:00:00Z",), tag="b",
                                          variant=20), []),
        "same name": lambda p: (write_release(p, stamps=LATER, tag="b", variant=20), ["--release", "v20251201"]),
        "older rows": lambda p: (write_release(p, stamps=("2025-03-01T00:00:00Z",) * 3, tag="b", variant=20),
                                 ["--release", "v20260301"]),
        "same item ids": lambda p: (write_release(p, stamps=LATER, variant=20), []),
        "same images": lambda p: (write_release(p, stamps=LATER, tag="b"), []),
    }
    raw, flags = raws[case](tmp_path / "raw2")
    before = tree_hash(built.parent)
    assert append(raw, built, *flags) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err
    assert tree_hash(built.parent) == before


def test_the_refusals_name_what_is_shared(built, tmp_path, capsys):
    assert append(write_release(tmp_path / "ids", stamps=LATER, variant=20), built) == 2
    assert "e.g. 'AIGe-look0-0' (AIGen-StreetLook/query of v20251201)" in capsys.readouterr().err
    assert append(write_release(tmp_path / "images", stamps=LATER, tag="b"), built) == 2
    err = capsys.readouterr().err
    assert "e.g. item 'AIGeb-look0-0' is AIGen-StreetLook/gallery item 'AIGe-look0-0' of v20251201 (sha256 " in err


def test_a_folder_of_another_schema_is_refused_and_left_as_it_was(built, tmp_path, capsys):
    raw = write_release(tmp_path / "raw2", stamps=LATER, tag="b", variant=20)
    shard = built / "noise" / "gallery-00000-of-00001.parquet"
    pq.write_table(pq.read_table(shard).drop_columns(["outfit_id"]), shard)  # a folder an older version wrote
    before = tree_hash(built.parent)
    assert append(raw, built) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"lookbench build: error: {shard}: its columns disagree with the shards this version writes (no outfit_id); "
                   "rebuild the folder with this version before appending")
    assert tree_hash(built.parent) == before

    readme = built / "README.md"
    readme.write_text(readme.read_text().replace("dtype: timestamp[s, tz=UTC]", "dtype: timestamp[ms, tz=UTC]", 1))
    before = tree_hash(built.parent)
    assert append(raw, built) == 2
    err = capsys.readouterr().err.strip()
    assert "the dataset_info of AIGen-StreetLook disagrees with the LookBench schema (timestamp is " in err
    assert len(err.splitlines()) == 1 and tree_hash(built.parent) == before


def test_append_needs_a_built_folder_and_no_build_flags(tmp_path, capsys):
    raw = write_release(tmp_path / "raw", stamps=LATER)
    assert append(raw, tmp_path / "nothing") == 2
    assert "is not a folder written by `lookbench build`" in capsys.readouterr().err
    assert not (tmp_path / "nothing").exists()
    assert append(raw, tmp_path / "nothing", "--input", str(raw)) == 2
    assert capsys.readouterr().err.strip() == "lookbench build: error: --append RAW is the raw release to add; it takes no --input"
    assert cli.main(["build", "--append", str(raw), "--source", "raw", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == "lookbench build: error: --append RAW is the raw release to add; it takes no --source"
    assert cli.main(["build", "--source", "mini", "--append", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == ("lookbench build: error: --append alone appends the raw release --input: "
                                               "give --source raw --input RAW --append")
    assert cli.main(["build", "--out", str(tmp_path / "o")]) == 2
    assert "give --source (a new build) or --append RAW" in capsys.readouterr().err


def releases_in(out: Path) -> set[str]:
    """The releases the card's history names, checked against the shards present (an append adds both)."""
    named = {r for step in card(out)["lookbench_history"] for r in step["releases"]}
    appended = {p.name.split("-")[1] for p in out.glob("*/*-v*-*.parquet")}
    assert appended == named - {"v20251201"}
    return named


def test_an_append_while_another_run_writes_the_folder_is_refused_in_one_line_and_changes_nothing(built, tmp_path, capsys):
    """Issue 37: with no lock, two appends both swapped their folder in and both said so; the first was lost."""
    raw = write_release(tmp_path / "raw2", stamps=LATER, tag="b", variant=20)
    before = tree_hash(built)
    with folder_lock(built):  # another run, writing this folder now
        assert append(raw, built) == 2
        err = capsys.readouterr().err
        assert sorted(p.name for p in built.parent.iterdir()) == [".lookbench.lock", "lookbench"]
    assert err == (f"lookbench build: error: {built} is being written by another lookbench run (pid {os.getpid()}, lock "
                   f"file {built.parent / '.lookbench.lock'}); wait for it to finish\n")
    assert tree_hash(built) == before and sorted(p.name for p in built.parent.iterdir()) == ["lookbench"]


def test_two_appends_started_together_never_both_succeed_while_one_release_is_lost(built, tmp_path):
    """Two real processes: each release is in the folder, or its run was refused in one line."""
    later = ("2026-07-01T00:00:00Z", "2026-08-01T00:00:00Z", "2026-09-01T00:00:00Z")
    raws = {"v20260301": write_release(tmp_path / "r2", stamps=LATER, tag="b", variant=20),
            "v20260901": write_release(tmp_path / "r3", stamps=later, tag="c", variant=40)}
    runs = {name: subprocess.Popen([sys.executable, "-m", "lookbench", "build", "--append", str(raw), "--out", str(built),
                                    "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for name, raw in raws.items()}
    ended = {name: (run.wait(timeout=900), run.communicate()[1]) for name, run in runs.items()}
    present = releases_in(built)
    for name, (code, err) in ended.items():
        assert (code, name in present) in ((0, True), (2, False)), (name, code, err)
        assert code == 0 or len(err.strip().splitlines()) == 1, err
    assert 0 in [code for code, _ in ended.values()]
    assert sorted(p.name for p in built.parent.iterdir()) == ["lookbench"]


def test_the_staging_folder_of_a_killed_append_is_removed_by_the_next(built, tmp_path):
    """Issue 37: a killed build left its hidden staging folder beside DIR, and no later run removed it."""
    left = built.parent / ".lookbench.appending-abc123"
    (left / "lookbench" / "noise").mkdir(parents=True)
    (left / "lookbench" / "noise" / "gallery-v20260301-00000-of-00001.parquet").write_bytes(b"half a shard")
    (built.parent / ".lookbench.tmp-abc123").write_text("half a card")
    assert append(write_release(tmp_path / "raw2", stamps=LATER, tag="b", variant=20), built) == 0
    assert sorted(p.name for p in built.parent.iterdir()) == ["lookbench"]
    assert releases_in(built) == {"v20251201", "v20260301"}


def test_an_append_killed_between_the_two_renames_of_a_swap_loses_no_release(built, tmp_path):
    """On a file system without RENAME_EXCHANGE the swap is two renames; killed between them, an append leaves DIR
    missing and the old folder as ``<staging>/<name>.previous``. The next run puts it back before reading DIR."""
    staging = built.parent / ".lookbench.appending-abc123"
    (staging / "lookbench").mkdir(parents=True)
    built.rename(staging / "lookbench.previous")
    assert append(write_release(tmp_path / "raw2", stamps=LATER, tag="b", variant=20), built) == 0
    assert sorted(p.name for p in built.parent.iterdir()) == ["lookbench"]
    assert releases_in(built) == {"v20251201", "v20260301"}
