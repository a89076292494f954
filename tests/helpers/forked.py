"""``python -m lookbench …`` for the tests that start one command again and again (``lookbench review``: about 40
starts a run), as a process forked from one that has already imported gradio and the review apps: a multiprocessing
forkserver with those modules preloaded, one per pytest worker.

The command still runs from its first line in a process of its own: its own pid, file locks, signals, exit status,
stdout and stderr (one pipe, as ``stderr=STDOUT``), the working folder and ``sys.path`` of a fresh ``python -m
lookbench`` there, and its atexit functions at a normal exit. What it skips is the import of gradio, about 4 s of CPU
that is the same for every start. Libraries read some environment variables when imported (huggingface_hub's
folders, gradio's settings), so a start whose environment differs from the run's first one in any variable that may
be read then (``_as_at_start``) runs ``python -m lookbench`` as it is.
"""
from __future__ import annotations

import atexit
import json
import multiprocessing
import os
import runpy
import subprocess
import sys

from tests.helpers.venvs import AT_START

PRELOAD = ["gradio", "lookbench.cli", "lookbench.space.review.app", "lookbench.space.review.adjudicate"]
_server: dict = {}  # "path": a fresh interpreter's sys.path[1:], once the forkserver is asked to start


class Forked:
    """The part of a ``subprocess.Popen`` the tests use, for a process the forkserver started."""

    def __init__(self, process: multiprocessing.Process, stdout):
        self._process, self.pid, self.stdout = process, process.pid, stdout

    def poll(self) -> int | None:
        return self._process.exitcode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self._process.exitcode is None:
            raise subprocess.TimeoutExpired(["lookbench"], timeout)
        return self._process.exitcode


def start(*argv, preloaded: bool = True) -> Forked | subprocess.Popen:
    """``python -m lookbench *argv`` from the tests' working folder, its stdout and stderr in ``.stdout`` (text);
    ``preloaded=False``, or an environment other than the server's: a plain subprocess."""
    argv = [str(a) for a in argv]
    if not preloaded or not _as_at_start():
        return subprocess.Popen([sys.executable, "-m", "lookbench", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    context = multiprocessing.get_context("forkserver")
    if not _server:
        context.set_forkserver_preload(PRELOAD)
        fresh = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path[1:]))"],
                               capture_output=True, text=True, check=True)
        _server["path"] = json.loads(fresh.stdout)
    read, write = context.Pipe(duplex=False)
    process = context.Process(target=_run, args=(argv, dict(os.environ), os.getcwd(), _server["path"], write), daemon=False)
    process.start()
    write.close()
    stdout = os.fdopen(os.dup(read.fileno()), encoding="utf-8")
    read.close()
    return Forked(process, stdout)


# Read only when a program runs, never when a module is imported: pytest's name of the current test, gradio's
# examples cache (read when it caches) and torch inductor's cache folder (read when it compiles); and what libraries
# set in the worker themselves when imported or run (pyarrow's allocator setting, the OpenMP duplicate-library switch
# of threadpoolctl and torch), which a fresh process's own imports set alike. lookbench reads its own settings
# (``LOOKBENCH_*``) when called.
RUNTIME_ONLY = ("PYTEST_CURRENT_TEST", "GRADIO_EXAMPLES_CACHE", "TORCHINDUCTOR_CACHE_DIR", "_RJEM_MALLOC_CONF",
                "KMP_DUPLICATE_LIB_OK")


def changed_since_start() -> set[str]:
    """The variables whose value differs from the run's first environment (``AT_START``)."""
    return {k for k in set(AT_START) | set(os.environ) if AT_START.get(k) != os.environ.get(k)}


def _as_at_start() -> bool:
    """Whether the environment is the run's first one but for ``RUNTIME_ONLY`` variables: then the preloaded modules
    read at import what a fresh process would, whenever the server started."""
    return all(k in RUNTIME_ONLY or k.startswith("LOOKBENCH_") for k in changed_since_start())


def _run(argv: list[str], env: dict, cwd: str, path: list[str], out) -> None:
    """In the forked process: what ``python -m lookbench *argv`` does from its start, then its exit."""
    os.environ.clear()
    os.environ.update(env)
    os.dup2(out.fileno(), 1)
    os.dup2(out.fileno(), 2)
    out.close()
    os.chdir(cwd)
    sys.path[:] = [cwd, *path]
    sys.argv = ["-m", *argv]
    code = 0
    try:
        runpy.run_module("lookbench", run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        code = _exit_status(exit.code)
    except BaseException:  # noqa: BLE001 — shown as the interpreter shows an uncaught exception
        sys.excepthook(*sys.exc_info())
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def _exit_status(code) -> int:
    """The exit status the interpreter gives ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1
