"""A staged Space folder installed and started as the Hub does it (``HubSpace``), for the tests that run a Space
(tests/hub/test_acceptance.py, tests/hub/test_review_space_runs.py)."""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from tests.helpers import clients


class HubSpace:
    """A staged Space folder installed and started as the Hub does it: the venv of its requirements.txt, card's
    python_version and sdk_version (``space_venv``), the folder's files in ``<tmp>/home/user/app``, then ``python
    app.py`` there with a fresh HF_HOME, offline, on loopback."""

    def __init__(self, folder: Path, tmp: Path, env: dict, venv: Path):
        self.app = tmp / "home" / "user" / "app"
        self.python = str(venv / "bin" / "python")
        shutil.copytree(folder, self.app)
        self.env = {**env, "HF_HOME": str(tmp / "hf_home"), "GRADIO_SERVER_NAME": "127.0.0.1"}
        self.env.pop("HF_DATASETS_CACHE", None)
        self.log_path = tmp / "space.log"

    def check(self, code: str) -> str:
        """``code`` in the Space's venv, from its app folder; its stdout."""
        proc = subprocess.run([self.python, "-c", code], cwd=self.app, env=self.env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout.strip()

    def serve(self, deadline_s: float):
        """Start ``python app.py`` and return a gradio_client ``Client`` once the app answers its config request;
        stop it on exit. Every wait is for an event — the app's first answer (or its exit), a request's answer, the
        server's exit — bounded by a generous deadline, never by a fixed short timeout: on a busy machine (load 5 on
        two cores) an answer gradio_client's default 5 s would have cut off is still on its way. While it runs ``url``
        is where it answers; once stopped, ``returncode`` how it ended."""
        from contextlib import contextmanager

        @contextmanager
        def running():
            port = clients.free_port()
            url = self.url = f"http://127.0.0.1:{port}/"
            with open(self.log_path, "w") as log:
                server = subprocess.Popen([self.python, "app.py"], cwd=self.app, stdout=log, stderr=subprocess.STDOUT,
                                          env={**self.env, "GRADIO_SERVER_PORT": str(port), "PYTHONUNBUFFERED": "1"})
                try:
                    _wait_until_ready(server, url, time.monotonic() + deadline_s, self.log_path)
                    yield clients.gradio(url, timeout=REQUEST_TIMEOUT_S)
                finally:
                    server.terminate()
                    try:
                        server.wait(timeout=STOP_TIMEOUT_S)
                    except subprocess.TimeoutExpired:  # never left running, whatever it was doing
                        server.kill()
                        server.wait()
                    self.returncode = server.returncode

        return running()


REQUEST_TIMEOUT_S = 600  # one request to a Space: its answer, however slowly a loaded machine computes it
STOP_TIMEOUT_S = 120  # a terminated Space's exit, before it is killed


def _wait_until_ready(server: subprocess.Popen, url: str, deadline: float, log: Path) -> None:
    """Until the app at ``url`` answers its config request (what gradio_client asks first), failing with its log
    when it exits or ``deadline`` passes; each try waits for its answer as long as the deadline allows."""
    import httpx

    while True:
        assert server.poll() is None, f"the Space exited ({server.returncode}):\n" + log.read_text()[-4000:]
        left = deadline - time.monotonic()
        assert left > 0, "the Space did not answer before the deadline:\n" + log.read_text()[-4000:]
        try:
            if httpx.get(f"{url}config", timeout=min(left, REQUEST_TIMEOUT_S), verify=clients.tls()).status_code == 200:
                return
        except httpx.TransportError:  # not listening yet, or the answer took longer than the time left
            pass
        time.sleep(1)
