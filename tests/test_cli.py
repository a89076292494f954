"""The CLI: input errors and library failures reach the user as one line, never a traceback; a re-run answered from
the results store says so."""
import json

import pytest

from lookbench import cli


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
    counts = first.split("results.json). ")[1].split(" saved in the results store")[0]  # "2 self-match(es) … 1.8 s"
    assert f"stored result of {stored['provenance']['evaluated_at']}: {counts} stored result of an identical" in again
