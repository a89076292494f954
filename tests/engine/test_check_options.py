"""`lookbench evaluate` checks its options before any model is loaded, reports what it skipped, and is quiet
about the libraries underneath unless asked."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lookbench.cli import main

from tests.helpers.engine_data import tiny_release, write_folder

# A model that cannot be loaded: every check below must fail first, with its own message.
NO_MODEL = "no-such-model"


def evaluate_error(capsys, *argv) -> str:
    assert main(["evaluate", "--model", NO_MODEL, "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Unknown model" not in err, err
    return err


def test_bad_options_fail_before_the_model_is_loaded(data, tmp_path, capsys):
    afile = tmp_path / "results.json"
    afile.write_text("{}")
    d = ["--data", str(data)]
    assert f"output folder {afile} exists and is not a folder" in evaluate_error(capsys, *d, "--output", str(afile))
    assert f"cannot be created: {afile} is not a writable folder" in evaluate_error(
        capsys, *d, "--output", str(afile / "out"))
    assert f"cache folder {afile} exists and is not a folder" in evaluate_error(capsys, *d, "--cache-dir", str(afile))
    assert "'yesterday' is not an ISO 8601 date" in evaluate_error(capsys, *d, "--cutoff", "yesterday")
    assert "workers must be an integer of at least 1, got 0" in evaluate_error(capsys, *d, "--workers", "0")
    assert "batch_size must be an integer of at least 1, got -2" in evaluate_error(capsys, *d, "--batch-size", "-2")
    assert "no such folder, and not a Hub dataset id" in evaluate_error(capsys, "--data", str(tmp_path / "missing" / "x"))


def test_a_cutoff_that_leaves_no_query_fails_right_after_loading(data, capsys):
    err = evaluate_error(capsys, "--data", str(data), "--cutoff", "2030-01-01")
    assert "RealStudioFlat: no query left to evaluate after cutoff 2030-01-01" in err


def test_skipped_images_are_counted_in_the_table_and_named_without_buffer_reprs(tmp_path, capsys):
    release = tiny_release()
    release["AIGen-Studio"]["gallery"][1] = dict(release["AIGen-Studio"]["gallery"][1], image={"bytes": b"not an image", "path": None})
    folder = write_folder(tmp_path / "bad", release)
    args = ["evaluate", "--data", str(folder), "--model", "raw-pixels", "--cache-dir", str(tmp_path / "c"), "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "AIGen-Studio/gallery row 2 (item s1): UnidentifiedImageError: cannot identify image file the image (12 bytes)" in err
    assert "BytesIO" not in err
    assert main(args + ["--skip-invalid"]) == 0
    assert "1 unreadable image(s) skipped" in " ".join(capsys.readouterr().out.split())  # the footer wraps at the terminal width


LIBRARY_BARS = ("Generating", "Creating parquet", "Flattening the indices", "Loading dataset shards", "Loading weights")


def run_cli(data, tmp_path, *flags) -> str:
    """stderr of a first run in a fresh process with empty caches (where the libraries print the most)."""
    home = tmp_path / f"hf{len(flags)}{'-'.join(flags)}"
    env = dict(os.environ, HF_HOME=str(home))
    proc = subprocess.run([sys.executable, "-m", "lookbench", "evaluate", "--data", str(data), "--model", "gr-lite-mini",
                           "--no-cache", *flags], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stderr


@pytest.mark.slow
def test_quiet_by_default_verbose_shows_the_libraries_and_quiet_shows_nothing(data, tmp_path):
    default = run_cli(data, tmp_path)
    for stage in ("load", "hash", "encode gr-lite-mini", "search + score"):
        assert f"{stage}: 100%" in default
    assert not [bar for bar in LIBRARY_BARS if bar in default], default
    verbose = run_cli(data, tmp_path, "--verbose")
    assert "Generating" in verbose and "Loading weights" in verbose
    assert run_cli(data, tmp_path, "--quiet") == ""
