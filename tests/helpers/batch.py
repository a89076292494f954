"""Several ``lookbench`` commands (or ``python -m`` scripts) in one fresh process, one after the other, each with its
own stdout and stderr (as docs/captures.py runs its commands): a test that checks the output of many commands pays for
one start of torch, datasets and faiss instead of one per command, and still runs apart from the test's own process
and its state."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DRIVER = """
import contextlib, io, json, sys
from lookbench.cli import main
done = []
for argv in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
    done.append({"argv": argv, "returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
with open(sys.argv[1], "w") as file:
    json.dump(done, file)
"""


@dataclass(frozen=True)
class Ran:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run_all(argvs, env: dict | None = None, timeout: float = 1800) -> tuple[list[Ran], subprocess.CompletedProcess]:
    """``lookbench *argv`` for each of ``argvs``, in order, in one new process with ``env`` (default: this one's);
    stdout and stderr are not a terminal, as with a pipe. Also the process itself: what reached its real stdout and
    stderr past the commands' own (a library writing to the file descriptors)."""
    with tempfile.TemporaryDirectory() as tmp:
        found = Path(tmp) / "ran.json"
        proc = subprocess.run([sys.executable, "-c", DRIVER, str(found)], input=json.dumps([list(a) for a in argvs]),
                              text=True, capture_output=True, env=os.environ if env is None else env, timeout=timeout)
        assert proc.returncode == 0, proc.stderr[-3000:]
        ran = json.loads(found.read_text())
    return [Ran(tuple(r["argv"]), r["returncode"], r["stdout"], r["stderr"]) for r in ran], proc


MODULES = """
import json, os, runpy, sys, tempfile, traceback
found, done = sys.argv[1], []
for run in json.load(sys.stdin):
    os.chdir(run["cwd"])
    sys.argv = [run["module"], *run["argv"]]
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            runpy.run_module(run["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
            if not isinstance(exit.code, (int, type(None))):
                print(exit.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        text = []
        for f in (out, err):
            f.seek(0)
            text.append(f.read().decode(errors="replace"))
    done.append({"argv": run["argv"], "returncode": code, "stdout": text[0], "stderr": text[1]})
with open(found, "w") as file:
    json.dump(done, file)
"""


@dataclass(frozen=True)
class Script:
    """``python -m module *argv`` run in ``cwd``."""

    module: str
    argv: tuple[str, ...]
    cwd: Path


def run_scripts(scripts: list[Script], env: dict, timeout: float = 3 * 60 * 60) -> list[Ran]:
    """Each of ``scripts`` as ``python -m`` runs it (``runpy``, as ``__main__``), one after the other in one new
    process with ``env``. Its stdout and stderr are caught at the file descriptors, so what a library writes past
    ``sys.stderr`` (a logging handler, C code) is in the script's own output, as it would be alone; an uncaught
    exception is printed and exits 1, as Python does."""
    with tempfile.TemporaryDirectory() as tmp:
        found = Path(tmp) / "ran.json"
        sys_argv = [sys.executable, "-c", MODULES, str(found)]
        proc = subprocess.run(sys_argv, input=json.dumps([{"module": s.module, "argv": list(s.argv), "cwd": str(s.cwd)}
                                                          for s in scripts]),
                              text=True, capture_output=True, env=env, timeout=timeout)
        assert proc.returncode == 0, proc.stderr[-3000:]
        ran = json.loads(found.read_text())
    return [Ran(tuple(r["argv"]), r["returncode"], r["stdout"], r["stderr"]) for r in ran]
