"""tests/helpers/forked.py: a `lookbench` command forked from the preloaded server says and exits as `python -m
lookbench` does, in a process of its own, and an environment the preloaded modules could have read otherwise is
started as a plain subprocess."""
from __future__ import annotations

import os
import signal
import subprocess

import pytest

from tests.helpers import clients, forked
from tests.helpers.annotated_release import write_annotated


@pytest.fixture(autouse=True)
def first_environment(monkeypatch):
    """The run's first environment, whatever the tests before these left in the worker's."""
    for name in forked.changed_since_start() - {"PYTEST_CURRENT_TEST"}:
        if name in forked.AT_START:
            monkeypatch.setenv(name, forked.AT_START[name])
        else:
            monkeypatch.delenv(name)


def said(process) -> tuple[str, int]:
    return process.stdout.read(), process.wait(timeout=120)


def test_a_forked_command_says_and_exits_as_python_m_lookbench(tmp_path):
    missing = tmp_path / "no-such-release"
    plain = forked.start("review", missing, preloaded=False)
    child = forked.start("review", missing)
    assert isinstance(plain, subprocess.Popen) and isinstance(child, forked.Forked)
    assert child.pid not in (os.getpid(), plain.pid)
    text, status = said(child)
    assert (text, status) == said(plain)
    assert status == 2 and text == f"lookbench review: error: Raw release folder {missing} does not exist\n"


def test_a_forked_server_says_what_a_fresh_one_says_and_runs_until_a_signal_ends_it(tmp_path):
    """What a start prints before it serves — a warning of a library's import included — is the same."""
    raw = tmp_path / "raw"
    write_annotated(raw, n=2)
    shown = {}
    for preloaded in (False, True):
        port = clients.free_port()
        child = forked.start("review", raw, "--port", port, preloaded=preloaded)
        assert isinstance(child, forked.Forked) == preloaded
        lines = []
        for line in child.stdout:
            lines.append(line.replace(str(port), "PORT"))
            if line.strip() == f"Running on http://127.0.0.1:{port}":
                break
        shown[preloaded] = lines
        assert child.poll() is None
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == -signal.SIGTERM and child.poll() == -signal.SIGTERM
    assert shown[True] == shown[False] and shown[True][-1] == "Running on http://127.0.0.1:PORT\n"


@pytest.mark.parametrize("name, value, kind", [("LOOKBENCH_REVIEW_CLAIM_SECONDS", "5", forked.Forked),
                                               ("HF_HOME", "/elsewhere", subprocess.Popen)])
def test_only_a_variable_no_module_reads_at_import_may_differ_from_the_runs_first_environment(tmp_path, monkeypatch,
                                                                                             name, value, kind):
    monkeypatch.setenv(name, value)
    started = forked.start("review", tmp_path / "none")
    assert isinstance(started, kind) and said(started)[1] == 2
