"""`lookbench build --append RAW --out DIR` (issue 23): a new snapshot as new shards, the old ones untouched.

Releases are written by tests/helpers/raw_release.py; the appends run through the CLI, where a maintainer runs them.
"""
import hashlib
import shutil
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml

from lookbench import cli
from lookbench.files import folder_revision
from tests.helpers.raw_build import LATER
from tests.helpers.raw_release import write_release

CONFIGS = ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook", "noise")


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
    with pytest.raises(SystemExit):
        cli.main(["build", "--append", str(raw), "--source", "raw", "--out", str(tmp_path / "o")])
    assert "not allowed with argument" in capsys.readouterr().err
