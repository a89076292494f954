"""The CLI's one error path: input errors and library failures reach the user as one line, never a traceback."""
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
