"""Writing a build's dataset folder (dataset_builder/export.py): a failed rebuild leaves the previous folder as it was,
a folder no build wrote is refused, the release name is checked before anything is read, and the build is quiet unless
asked (issue 9)."""
from pathlib import Path

import pytest

from lookbench import cli

from tests.helpers.raw_release import DELETE, edit_rows
from tests.helpers.raw_build import build
from tests.helpers.messages import unwrapped


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_failed_rebuild_leaves_the_previous_folder_untouched_and_lists_every_subset(release, tmp_path, capsys):
    out, train = tmp_path / "data" / "lookbench", tmp_path / "data" / "train"
    assert build(release, out) == 0
    before = _snapshot(out)
    edit_rows(release, "AIGen-Studio", "gallery", {line: {"category": DELETE} for line in range(1, 11)})
    edit_rows(release, "noise", "gallery", {5: {"timestamp": "2999-01-01T00:00:00Z"}})
    assert build(release, out) == 2
    err = unwrapped(capsys.readouterr().err)
    assert "11 invalid row(s) (11 problem(s))" in err
    assert ("AIGen-Studio/gallery.jsonl: missing required field(s): category — 10 rows: lines 1 ('AIGe0'), 2 ('AIGe1'), "
            "3 ('AIGe2') and 7 more") in err
    assert "noise/gallery.jsonl line 5 (item_id='noise4'): timestamp 2999-01-01T00:00:00+00:00 is in the future" in err
    assert _snapshot(out) == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["lookbench"]  # no staging folder left behind
    (release / "train").mkdir()
    assert build(release, out, "--train-out", str(train)) == 2  # train/ has no train.jsonl: nothing is written
    assert "folder train/ has no train.jsonl" in capsys.readouterr().err
    assert _snapshot(out) == before and not train.exists()


def test_out_that_is_not_an_earlier_build_is_refused(release, tmp_path, capsys):
    out = tmp_path / "mine"
    (out / "notes").mkdir(parents=True)
    assert build(release, out) == 2
    assert "holds notes, which no build wrote; a build replaces the whole folder" in capsys.readouterr().err
    assert (out / "notes").is_dir()
    (tmp_path / "file").write_text("mine")
    assert build(release, tmp_path / "file") == 2
    assert f"--out {tmp_path / 'file'} is a file, not a dataset folder" in capsys.readouterr().err
    assert (tmp_path / "file").read_text() == "mine"


@pytest.mark.parametrize("name", ["yesterday", "v2025-12-01", "v20251341"])
def test_release_name_is_checked_before_anything_is_read(release, tmp_path, capsys, name):
    assert build(release, tmp_path / "out", "--release", name) == 2
    assert capsys.readouterr().err.startswith(f"lookbench build: error: Release {name!r} is not a snapshot name v<YYYYMMDD>")


def test_build_is_quiet_by_default_and_says_more_when_asked(release, tmp_path, capsys):
    base = ["build", "--source", "raw", "--input", str(release), "--subsets", "noise", "--out"]
    assert cli.main(base + [str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "validate: 100%" in err and "write   : 100%" in err
    assert "Generating" not in err and "Creating parquet" not in err
    assert cli.main(base + [str(tmp_path / "b"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert cli.main(base + [str(tmp_path / "c"), "--verbose"]) == 0
    err = capsys.readouterr().err
    assert "Generating gallery split" in err and "validate: 100%" in err
    assert cli.main(["subsets", "--data", str(tmp_path / "a"), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "noise" in captured.out



def test_a_build_while_another_run_writes_the_folder_is_refused_in_one_line_and_changes_nothing(release, tmp_path, capsys):
    """Issue 37: a build takes the lock of the folder it replaces."""
    from lookbench.files import folder_lock

    out = tmp_path / "data" / "lookbench"
    assert build(release, out) == 0
    before = _snapshot(out)
    with folder_lock(out):
        assert build(release, out, "--subsets", "RealStudioFlat") == 2
    assert capsys.readouterr().err.startswith(f"lookbench build: error: {out} is being written by another lookbench run (pid ")
    assert _snapshot(out) == before and sorted(p.name for p in out.parent.iterdir()) == ["lookbench"]


def test_the_staging_folders_a_killed_build_left_are_removed_by_the_next(release, tmp_path):
    """Issue 37: killed builds left hidden staging folders beside the folder, and no later run removed them."""
    out = tmp_path / "data" / "lookbench"
    assert build(release, out) == 0
    (out.parent / ".lookbench.building-abc123" / "lookbench" / "noise").mkdir(parents=True)
    (out.parent / ".lookbench.building-abc123" / "lookbench" / "noise" / "gallery.parquet").write_bytes(b"half a shard")
    (out.parent / ".lookbench.tmp-0a1b2c").write_text("half a card")
    assert build(release, out, "--subsets", "RealStudioFlat") == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["lookbench"]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["RealStudioFlat", "text"]
