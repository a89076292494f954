"""The leaderboard as text (terminal table, Markdown, CSV, strict JSON) and as the Space's DataFrame, every name from a
results file escaped."""
from __future__ import annotations

import json
import re

import pytest

from lookbench.leaderboard.ranking import leaderboard

from tests.helpers.leaderboard import FOUR, result, run_cli


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_every_format_carries_the_published_rows(fmt):
    text = leaderboard(metric="coarse", k=5, subset="real_streetlook").render(fmt)
    assert "GR-Pro" in text and "RealStreetLook coarse R@5" in text


def test_every_format_carries_the_group_and_the_interval():
    board = leaderboard(metric="fine", k=1)
    assert "group" in board.render("table").splitlines()[1]
    assert "| group |" in board.render("markdown") and ",group," in board.render("csv").splitlines()[0]
    rows = json.loads(board.render("json"))[0]["rows"]
    assert rows[0]["group"] == 1 and rows[0]["ci95"] == pytest.approx([65.46, 69.25], abs=0.01)


def test_the_frame_is_what_the_space_shows():
    frame = leaderboard(metric="fine", k=1).sections[0].frame()  # two decimals, as published
    assert frame.loc[frame["model"] == "GR-Pro", "overall fine R@1"].item() == 67.38
    assert "group" in frame.columns


def test_the_cli_prints_the_published_table_and_the_store(tmp_path, capsys, own_results_store):
    from lookbench.cli import main

    (own_results_store / "r.json").write_text(json.dumps(result("gr-lite-mini", FOUR)))
    assert main(["leaderboard", "--k", "5", "--metric", "coarse"]) == 0
    out = capsys.readouterr().out
    assert "overall coarse R@5" in out and "GR-Pro" in out and "gr-lite-mini" in out and "local results store" in out
    assert main(["leaderboard", "--reference", "none", "--format", "csv", "--plot", str(tmp_path / "b.png")]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == ("section,rank,model,group,overall fine R@1,ci95,RealStudioFlat,AIGen-Studio,"
                                            "RealStreetLook,AIGen-StreetLook,queries,ci_method,verified")
    assert "GR-Pro" not in captured.out and (tmp_path / "b.png").stat().st_size > 1000 and "plot:" in captured.err
    assert main(["leaderboard", "--subset", "RealStret"]) == 2
    assert "Unknown LookBench subset" in capsys.readouterr().err


def test_names_are_escaped_for_the_terminal_markdown_and_csv(tmp_path, capsys, monkeypatch):
    """Case 6: a model name with terminal escapes (clear screen, window title) or with | and a newline."""
    import csv
    import io

    monkeypatch.setenv("COLUMNS", "250")  # wide enough for every column: the row is one line
    store = tmp_path / "results"
    store.mkdir()
    hostile = {"esc": "evil\x1b[2J\x1b]0;pwned\x07", "pipe": "a|b\nc"}
    for key, name in hostile.items():
        (store / f"{key}.json").write_text(json.dumps(result(name, FOUR)))
    for fmt in ("table", "markdown", "csv"):
        code, out, err = run_cli(capsys, "--results", str(store), "--reference", "none", "--format", fmt)
        assert code == 0 and err == ""
        assert "\x1b" not in out and "\x07" not in out
        shown = re.sub(r"\\(.)", r"\1", out) if fmt == "markdown" else out  # Markdown's own escapes undone
        assert "evil\\x1b[2J\\x1b]0;pwned\\x07" in shown
        if fmt == "table":
            rows = [line for line in out.splitlines() if "a|b" in line]
            assert len(rows) == 1 and rows[0].rstrip().endswith("2345  Wilson (approximate)  not checked")  # one row, the newline shown as \n
        if fmt == "markdown":
            row = next(line for line in out.splitlines() if "a\\|b" in line)
            cells = [c for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
            assert len(cells) == len(out.splitlines()[2].strip().strip("|").split("|"))  # as many cells as the header
        if fmt == "csv":
            rows = list(csv.reader(io.StringIO(out)))
            assert len(rows) == 3 and {r[2] for r in rows[1:]} == {"a|b\\nc", "evil\\x1b[2J\\x1b]0;pwned\\x07"}


def test_leaderboard_into_a_closed_pipe_ends_quietly(tmp_path):
    """Case 8: `lookbench leaderboard | head -1` ended with a Broken pipe error."""
    import subprocess
    import sys

    proc = subprocess.run(f"{sys.executable} -m lookbench leaderboard --format markdown | head -1", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("### LookBench") and proc.stderr == ""


VERIFIED = {"someone/raw-pixels@aaaaaaaaaaaa": "consistent", "raw-pixels": "not checked",
            "edited/raw-pixels@aaaaaaaaaaaa": "no: RealStudioFlat fine_recall@1 claimed 99.000000, recomputed 100.000000"}


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_every_format_carries_the_verified_column_and_the_blocks(submissions, capsys, fmt, monkeypatch):
    """Issue 36 item 3: yes / not checked / no: <reason> in every format, each standing its own block; the table and
    Markdown end with the note that says what each means and how the blocks are ranked."""
    import csv
    import io

    from lookbench.results.trust import VERIFIED_NOTE

    monkeypatch.setenv("COLUMNS", "400")  # every column shown, each row one line (narrow: tests/test_widths.py)
    code, out, err = run_cli(capsys, "--results", str(submissions), "--reference", "none", "--format", fmt)
    assert code == 0 and err == ""
    if fmt == "json":
        sections = json.loads(out)
        shown = {r["model"]: (s["title"], r["rank"], r["verified"]) for s in sections for r in s["rows"]}
    elif fmt == "csv":
        rows = [r for r in csv.DictReader(io.StringIO(out)) if r["model"] != "model"]  # each section has its header
        shown = {r["model"]: (r["section"], int(r["rank"]) if r["rank"] else None, r["verified"]) for r in rows}
    else:
        assert " ".join(out.split()).endswith(" ".join(VERIFIED_NOTE.split()))  # the table's is wrapped
        lines = [line for line in out.splitlines() if "raw-pixels" in line]
        if fmt == "markdown":
            cells = [[c.strip().replace("\\", "") for c in line.strip("|").split("|")] for line in lines]
            shown = {c[1]: (None, int(c[0]) if c[0] != "-" else None, c[-1]) for c in cells}
            assert "| verified |" in out
        else:  # the verified column is the last, right-aligned: what follows the last double space
            shown = {line.split()[1]: (None, int(line.split()[0]) if line.split()[0] != "-" else None,
                                       line[line.rindex("  ") + 2:]) for line in lines}
    for model, verified in VERIFIED.items():
        assert shown[model][1:] == ((None if verified.startswith("no: ") else 1), verified), (model, shown[model])
    if fmt in ("json", "csv"):
        assert shown["raw-pixels"][0].endswith(" — not checked (ranked among themselves, below the verified and "
                                               "published rows)")
        assert shown["edited/raw-pixels@aaaaaaaaaaaa"][0].endswith(" — not verified (a check failed: unranked)")


def test_the_terminal_table_shows_each_sections_top_rows_and_a_count(capsys, own_results_store):
    """Issue 56 item 3: `lookbench leaderboard` printed 60+ lines before the number a user wants; each table now
    shows its top rows and how many more `--all` shows (files' formats keep every row)."""
    from lookbench.leaderboard.render import TOP, Section, shown

    for i in range(TOP + 2):
        (own_results_store / f"r{i}.json").write_text(json.dumps(result(f"model-{i}", {"RealStudioFlat": (90.0 - i, 100)})))
    code, out, _ = run_cli(capsys)
    assert code == 0
    published, local = out.split("\n\n")[:2]
    ranked = [line.split()[1] for line in published.splitlines() if re.match(r"\s+\d+\s", line)]
    assert ranked == ["GR-Pro", "Tianmu-MERE", "GR-Lite", "Marqo-fashionCLIP", "Marqo-fashionSigLIP"]
    assert f"{TOP} of 16 rows shown; --all shows the other 11." in " ".join(published.split())
    assert [line.split()[1] for line in local.splitlines() if re.match(r"\s+\d+\s", line)] == [f"model-{i}" for i in range(TOP)]
    assert f"{TOP} of {TOP + 2} rows shown; --all shows the other 2." in " ".join(local.split())
    code, every, _ = run_cli(capsys, "--all")
    assert "InternViT-6B" in every and f"model-{TOP + 1}" in every and "rows shown" not in every
    code, markdown, _ = run_cli(capsys, "--format", "markdown")
    assert "InternViT-6B" in markdown and f"model-{TOP + 1}" in markdown  # a file's text keeps every row
    # beside published rows, a user's own run stays in view however it ranks
    rows = [{"model": f"p{i}", "verified": "published"} for i in range(10)] + [{"model": "mine", "verified": "not checked"}]
    section = Section("t", "s", ["model", "verified"], rows)
    assert [r["model"] for r in shown(section, 3)] == ["p0", "p1", "p2", "mine"]
    assert shown(section, None) == rows
