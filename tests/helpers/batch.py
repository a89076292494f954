"""Several ``lookbench`` commands in one fresh process, one after the other, each with its own stdout and stderr (as
docs/captures.py runs its commands): a test that checks the output of many commands pays for one start of torch,
datasets and faiss instead of one per command, and still runs apart from the test's own process and its state."""
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
