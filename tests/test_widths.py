"""Issue 46 item 4: every command's output fits the terminal (``COLUMNS``; 100 when stdout is not a terminal), and
an interval is written as its bounds, never as a ``±`` that would cross 0 or 100 (lookbench/terminal.py)."""
from __future__ import annotations

import json
import os

import pytest
from rich.cells import cell_len

from lookbench import terminal
from lookbench.dataset_builder import default_mini_dir
from tests.helpers.batch import Ran, run_all
from tests.helpers.leaderboard import FOUR, result

LONG_NAME = "someone-with-a-long-handle/" + "a-very-long-model-name-" * 5 + "v2@0123456789ab"


def environment(columns: int | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return env if columns is None else {**env, "COLUMNS": str(columns)}


def lookbench(*argvs, columns: int | None) -> dict[tuple, Ran]:
    """Each ``lookbench *argv`` of ``argvs`` by its argv (``tests.helpers.batch``: one process for them all, stdout and
    stderr pipes); no library bar in any stderr, and each one's stderr and the process's own no wider than the
    terminal either."""
    ran, proc = run_all(argvs, env=environment(columns), timeout=900)
    for stderr in [one.stderr for one in ran] + [proc.stderr, proc.stdout]:
        assert "Generating" not in stderr and "split" not in stderr, stderr  # no library bars
        if stderr.strip():
            widest = max(stderr.splitlines(), key=cell_len)
            assert cell_len(widest) <= (columns or terminal.DEFAULT_WIDTH), widest
    return {one.argv: one for one in ran}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two evaluations on the Mini (raw-pixels with its rankings saved, and the random floor), in one store beside
    the published table, plus a hand-written result of a model with a 150-character name."""
    root = tmp_path_factory.mktemp("widths")
    store = root / "store"
    outputs = {model: root / model for model in ("raw-pixels", "random")}
    ran = lookbench(*(("evaluate", "--model", model, "--results", str(store), "--output", str(outputs[model]), "--quiet",
                       "--no-cache", *(["--save-predictions"] if model == "raw-pixels" else [])) for model in outputs),
                    columns=80)
    assert all(one.returncode == 0 for one in ran.values()), [one.stderr for one in ran.values()]
    (store / "long.json").write_text(json.dumps(result(LONG_NAME, FOUR)))
    return store, outputs


def commands(store, outputs):
    raw, rnd = str(outputs["raw-pixels"]), str(outputs["random"])
    return [("evaluate", "--model", "raw-pixels", "--results", str(store), "--quiet"),  # answered from the store
            ("models",), ("models", "clip-b32"), ("subsets",),
            ("leaderboard", "--results", str(store)), ("leaderboard", "--results", str(store), "--by-release"),
            ("compare", raw, rnd), ("compare", raw, rnd, "--metric", "ndcg", "--k", "5"),
            ("explain", raw, "--subset", "RealStreetLook", "--query", "1", "--top", "10"),
            ("verify", raw),
            ("reproduce", "--models", "raw-pixels", "--data", str(default_mini_dir()), "--results", str(store))]


@pytest.mark.slow
@pytest.mark.parametrize("columns", [60, 80, 100, None])
def test_no_command_prints_a_line_wider_than_the_terminal(runs, columns):
    store, outputs = runs
    width = columns or terminal.DEFAULT_WIDTH  # stdout is a pipe: 100
    ran = lookbench(*commands(store, outputs), columns=columns)
    for argv, one in ran.items():
        if argv[0] == "reproduce":  # raw-pixels is no published model: listed, not run
            assert "raw-pixels" in one.stdout
        else:
            assert one.returncode == 0, (argv, one.stderr)
        assert one.stdout.strip(), argv
        widest = max(one.stdout.splitlines(), key=cell_len)
        assert cell_len(widest) <= width, (argv, widest)
        assert "±" not in one.stdout, argv
    board = ran[("leaderboard", "--results", str(store))].stdout
    handle = "someone-with-a-long-handle/" if columns != 60 else "someone-with"  # at 60 its cell is narrower
    assert handle in board and "Left out to fit" in board  # folded, not cut; drops named
    if columns == 80:  # the evaluate table keeps Fine@1 and the queries, and says what it left out
        table = ran[("evaluate", "--model", "raw-pixels", "--results", str(store), "--quiet")].stdout
        header = table.splitlines()[2].split()
        assert header[:2] == ["subset", "Fine@1"] and header[-1] == "queries" and "MAP@10" not in header
        assert "Left out to fit 80 columns (COLUMNS): nDCG@10, Outfit@1, Coarse@10, MAP@10" in " ".join(table.split())


@pytest.mark.parametrize("value, bounds, digits, signed, shown", [
    (100.0, (92.9, 100.0), 1, False, "100.0 [92.9, 100.0]"),  # would have been 100.0 ±3.6: past 100
    (1.3, (0.23, 7.0), 1, False, "1.3 [0.2, 7.0]"),  # near 0: would have been 1.3 ±3.4, below 0
    (13.3, (3.7, 37.9), 1, False, "13.3 [3.7, 37.9]"),  # asymmetric
    (100.0, (100.0, 100.0), 1, False, "100.0 [100.0, 100.0]"),  # zero width
    (0.0, (0.0, 0.0), 2, False, "0.00 [0.00, 0.00]"),
    (1.4, (-5.7, 8.6), 1, True, "+1.4 [-5.7, +8.6]"),  # a difference crosses 0 and says so with signs
    (86.88, None, 2, False, "86.88"),
    (None, (1.0, 2.0), 1, False, "-"),
])
def test_a_score_is_written_with_its_bounds(value, bounds, digits, signed, shown):
    assert terminal.score(value, bounds, digits, signed) == shown
    if bounds is not None and value is not None and not signed:
        assert terminal.bounds(bounds, digits) == shown.split(" ", 1)[1]


def test_a_table_leaves_columns_out_in_the_stated_order_then_folds():
    columns = [terminal.Column("name", "left"), "a", "b", "c"]
    rows = [["x" * 30, "1" * 20, "2" * 20, "3" * 20]]
    wide = terminal.table(columns, rows, at=200)
    assert wide[0].split() == ["name", "a", "b", "c"] and len(wide) == 3  # header, rule, row
    narrow = terminal.table(columns, rows, drop_order=["c", "b"], at=60)
    assert narrow[0].split() == ["name", "a"] and narrow[-1] == "Left out to fit 60 columns (COLUMNS): c, b."
    folded = terminal.table(columns, rows, at=40, title="t " * 40, footnotes=["f " * 40])
    assert max(map(cell_len, folded)) <= 40 and "".join(folded).count("1") == 20  # nothing cut
    with pytest.raises(ValueError, match="drop_order names columns the table does not have: d"):
        terminal.table(columns, rows, drop_order=["d"])


def test_cells_and_notes_cannot_move_the_cursor():
    lines = terminal.table(["name"], [["evil\x1b[2J"]], title="t\x1b]0;x\x07", footnotes=["n\r"], at=80)
    assert not any(c in "".join(lines) for c in "\x1b\x07\r") and "evil\\x1b[2J" in "".join(lines)


def test_plain_lines_are_wrapped_to_the_width_and_keep_their_indent(capsys, monkeypatch):
    """`say`: how stage, push, seal, submit, audit, annotate, export and the review app print their plans and paths."""
    monkeypatch.setenv("COLUMNS", "40")
    path = "/a/very/long/path/" + "x" * 60 + "/results.json"
    terminal.say(f"wrote 3 files to {path} (nothing sent)", "  dataset  lookbench/lookbench  " + path, "short line")
    lines = capsys.readouterr().out.splitlines()
    assert max(cell_len(line) for line in lines) <= 40
    assert lines[0].startswith("wrote 3 files to") and lines[-1] == "short line"
    second = next(i for i, line in enumerate(lines) if line.startswith("  dataset"))
    assert all(line.startswith("    ") for line in lines[second + 1:-1])  # its own indent, two spaces past it
    assert "".join(line.strip() for line in lines[:second]).replace(" ", "") == f"wrote3filesto{path}(nothingsent)"


@pytest.mark.slow
def test_the_default_evaluate_fits_one_screen_and_details_add_the_rest(runs):
    """Issue 56 item 3: the quickstart printed 55 lines; at 100 columns it fits 30 with a line to spare (for one more
    line of the headline), and says how to see what it left out."""
    store, _ = runs
    argv = ("evaluate", "--model", "raw-pixels", "--results", str(store), "--quiet")
    ran = lookbench(argv, (*argv, "--details"), columns=100)
    short, full = ran[argv].stdout, ran[(*argv, "--details")].stdout
    assert ran[argv].returncode == 0 and ran[(*argv, "--details")].returncode == 0
    assert len(short.splitlines()) <= 29, short
    said = " ".join(short.split())
    assert "Per release" not in short and "Attribute errors at top-1" not in short
    assert "more: --details adds the scores per release, the attribute errors and how each interval is drawn" in said
    assert ("explain: lookbench explain RESULT (the strict.json above) shows its attribute errors; with --subset and "
            "--query a query's results, with --report the worst queries as HTML") in said  # its rankings are saved
    assert "stored results of an identical evaluation" in said
    assert "Per release" in full and "Attribute errors at top-1" in full and "more: --details" not in full
    assert full.splitlines()[:12] == short.splitlines()[:12]  # the same table first


def errors(outputs) -> list[tuple[str, ...]]:
    """Commands that fail with a long message: a cutoff of the wrong kind (320 characters at COLUMNS=80 before), an
    unknown subset, an unknown K, a query of a result without saved rankings, an unknown model, a bad choice
    (argparse's usage error)."""
    return [("evaluate", "--model", "raw-pixels", "--cutoff", "v20250101", "--no-save", "--quiet"),
            ("leaderboard", "--subset", "RealStret"), ("leaderboard", "--k", "3"),
            ("explain", str(outputs["random"]), "--subset", "RealStreetLook", "--query", "1"),
            ("reproduce", "--models", "no-such-model"), ("evaluate", "--mode", "no-such-mode")]


@pytest.mark.slow
def test_an_error_is_one_message_wrapped_to_the_terminal(runs):
    """Issue 56 item 3: error lines of 147 and 320 characters ran past an 80-column terminal; an error is still one
    message (its continuation indented), only wrapped."""
    _, outputs = runs
    wides, _ = run_all(errors(outputs), env=environment(1000))
    narrows, _ = run_all(errors(outputs), env=environment(60))
    for argv, wide, narrow in zip(errors(outputs), wides, narrows):
        assert wide.returncode == narrow.returncode == 2, (argv, wide.stderr)
        message = [line for line in wide.stderr.splitlines() if not line.startswith(("usage:", " "))]
        assert len(message) == 1 and message[0].startswith(f"lookbench {argv[0]}: error: ") and len(message[0]) > 60, \
            (argv, wide.stderr)
        lines = narrow.stderr.splitlines()
        assert max(map(cell_len, lines)) <= 60, (argv, narrow.stderr)
        start = next(i for i, line in enumerate(lines) if line.startswith(f"lookbench {argv[0]}: error:"))
        assert all(line.startswith("  ") for line in lines[start + 1:]), narrow.stderr
        assert "".join("".join(lines[start:]).split()) == "".join(message[0].split()), (argv, narrow.stderr)  # all of it
