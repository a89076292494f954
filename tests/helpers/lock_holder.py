"""Another process holding ``lookbench.files.folder_lock`` on a path, as a concurrent lookbench run would."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HOLD = """
    import sys
    from pathlib import Path
    from lookbench.files import folder_lock
    with folder_lock(Path(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.read()  # until the test closes our stdin
"""


def python(code: str, *args, stdin=None) -> subprocess.Popen:
    """``code`` run by a new Python process (with the checkout on its path), its stdout a pipe."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stdin=stdin)


def hold(target: Path) -> subprocess.Popen:
    """A process holding the lock of ``target`` until its stdin is closed (``release``)."""
    process = python(HOLD, target, stdin=subprocess.PIPE)
    assert process.stdout.readline() == "held\n"
    return process


def release(process: subprocess.Popen) -> None:
    process.stdin.close()
    process.wait(timeout=60)
