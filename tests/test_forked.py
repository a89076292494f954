"""tests/helpers/forked.py: a `lookbench` command forked from the preloaded server says and exits as `python -m
lookbench` does, in a process of its own, and an environment the preloaded modules could have read otherwise is
started as a plain subprocess."""
from __future__ import annotations

import os
import signal
import socket
import subprocess

import pytest

from tests.helpers import forked
from tests.helpers.annotated_release import write_annotated


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


def test_a_forked_server_runs_until_a_signal_ends_it(tmp_path):
    raw = tmp_path / "raw"
    write_annotated(raw, n=2)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = forked.start("review", raw, "--port", port)
    assert isinstance(child, forked.Forked)
    assert any(line.strip() == f"Running on http://127.0.0.1:{port}" for line in child.stdout)
    assert child.poll() is None
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=60) == -signal.SIGTERM and child.poll() == -signal.SIGTERM


@pytest.mark.parametrize("name, value, kind", [("LOOKBENCH_REVIEW_CLAIM_SECONDS", "5", forked.Forked),
                                               ("HF_HOME", "/elsewhere", subprocess.Popen)])
def test_only_a_variable_no_module_reads_at_import_may_differ_from_the_runs_first_environment(tmp_path, monkeypatch,
                                                                                             name, value, kind):
    monkeypatch.setenv(name, value)
    started = forked.start("review", tmp_path / "none")
    assert isinstance(started, kind) and said(started)[1] == 2
