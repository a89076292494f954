"""The CLI: input errors and library failures reach the user as one line, never a traceback; a re-run answered from
the results store says so; without a reachable Hub nothing waits on it; every command reading a result takes the
--output folder too."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lookbench import cli
from lookbench.cli import main

from tests.helpers.clients import free_port


def test_library_failure_is_one_line_and_debug_shows_the_traceback(monkeypatch, capsys):
    def boom(args):
        raise RuntimeError("faiss said:\n  something broke")

    root = cli.parser()
    monkeypatch.setattr(cli, "parser", lambda: root)
    root._subparsers._group_actions[0].choices["subsets"].set_defaults(run=boom)
    assert cli.main(["subsets"]) == 2
    assert capsys.readouterr().err == "lookbench subsets: error: RuntimeError: faiss said: something broke\n"
    monkeypatch.setenv("LOOKBENCH_DEBUG", "1")
    with pytest.raises(RuntimeError, match="something broke"):
        cli.main(["subsets"])


def test_a_rerun_answered_from_the_store_says_it_is_a_stored_result(tmp_path, capsys):
    """The counts and seconds of a reused result are the stored run's: the table must not show them as just done."""
    from tests.helpers.engine_data import write_folder

    args = ["evaluate", "--data", str(write_folder(tmp_path / "tiny")), "--model", "raw-pixels", "--quiet", "--no-cache",
            "--results", str(tmp_path / "store")]
    assert cli.main(args) == 0
    first = " ".join(capsys.readouterr().out.split())  # the footer wraps at the terminal width
    assert "stored result of" not in first and "image(s) encoded" in first
    assert cli.main(args) == 0
    again = " ".join(capsys.readouterr().out.split())
    stored = json.loads(next((tmp_path / "store").rglob("strict.json")).read_text())
    counts = first.split("in results.json. ")[1].split(" saved in the results store")[0]  # "2 self-match(es) … 1.8 s"
    assert f"stored result of {stored['provenance']['evaluated_at']}: {counts} stored results of an identical" in again


# ------------------------------------------------------------------------------ errors a newcomer hit (issue 37 item 7)


def no_hub_env(tmp_path) -> dict:
    """Not in offline mode, with the Hub endpoint on a loopback port nothing listens on (bound, then closed)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE", "HF_ENDPOINT", "PYTHONPATH")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HOME=str(tmp_path / "home"))
    return env


def lookbench_cli(args, env, cwd) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "lookbench", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    return proc, time.monotonic() - started


def test_without_a_reachable_hub_models_says_so_and_evaluate_refuses_at_once(tmp_path):
    """`lookbench models` called the Hub models available, and `evaluate --model clip-b32` then retried for 25 s."""
    from tests.helpers.engine_data import write_folder

    env = no_hub_env(tmp_path)
    proc, _ = lookbench_cli(["models", "--format", "json"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert rows["clip-b32"]["available"] is False
    assert rows["clip-b32"]["needs"] == ("not in the cache and no Hub reachable: hf download openai/clip-vit-base-patch32 "
                                         "--revision 3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268")
    assert rows["raw-pixels"]["available"] is True  # what needs no Hub stays available
    data = write_folder(tmp_path / "data")
    proc, seconds = lookbench_cli(["evaluate", "--model", "clip-b32", "--data", str(data), "--no-save", "--quiet"], env,
                                  tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "'clip-b32' cannot run here: not in the cache and no Hub reachable" in proc.stderr
    assert proc.stderr.strip().endswith("hf download openai/clip-vit-base-patch32 --revision "
                                        "3d74acf9a28c67741b2f4f2ea7635f0aaf6f0268")
    assert seconds < 20
    assert not (tmp_path / "home" / "lookbench" / "datasets").exists()  # refused before the data was loaded


def test_a_relative_data_folder_that_does_not_exist_is_one_line_without_a_hub(tmp_path):
    """`--data data/lookbench` before the build was taken for a Hub id and ended in a bare ConnectError."""
    proc, seconds = lookbench_cli(["evaluate", "--model", "raw-pixels", "--data", "data/lookbench", "--no-save", "--quiet"],
                                  no_hub_env(tmp_path), tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("lookbench evaluate: error: data/lookbench: no such folder, and not a reachable Hub "
                                  "dataset id")
    assert seconds < 20


@pytest.fixture(scope="module")
def output_folder(tmp_path_factory):
    """A result written by `evaluate --output` with its rankings (results.json + results.predictions/), no store."""
    import lookbench
    from tests.helpers.engine_data import write_folder

    root = tmp_path_factory.mktemp("output")
    lookbench.evaluate("raw-pixels", data=write_folder(root / "data"), output_dir=root / "out", save_predictions=True,
                       quiet=True, use_cache=False)
    return root / "out"


def test_explain_accepts_the_output_folder_compare_accepts(output_folder, capsys):
    assert main(["explain", str(output_folder), "--subset", "RealStudioFlat", "--query", "1", "--top", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    rule = next(i for i, line in enumerate(out) if line.startswith("─"))
    assert out[0].startswith("RealStudioFlat query 1 of 4 (item ") and [line.split()[0] for line in out[rule + 1:]] == ["1", "2"]
    assert main(["compare", str(output_folder), str(output_folder)]) == 0  # what compare took all along


def test_export_mteb_accepts_the_output_folder_compare_accepts(output_folder, tmp_path, capsys):
    assert main(["export", "mteb", str(output_folder), "--out", str(tmp_path / "mteb")]) == 0
    written = Path(capsys.readouterr().out.strip())
    assert written.parent == tmp_path / "mteb" and json.loads(written.read_text())["dataset_revision"] == json.loads(
        (output_folder / "results.json").read_text())["provenance"]["dataset"]["revision"]
