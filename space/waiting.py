"""The waiting room: ``lookbench demo`` listens on its address at once, before torch, gradio or any asset is loaded,
and serves a page saying what is being prepared (stage and count) until the app takes the same address over.

docs/architecture.md §5. A first start renders and encodes LookBench-Mini (minutes); a visitor who opens the printed
address meanwhile sees the progress, and the page reloads itself into the app as soon as the app answers. Standard
library only, so the address is printed before the heavy imports.
"""
from __future__ import annotations

import html
import json
import logging
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lookbench.errors import one_line
from lookbench.progress import stage_bar, stage_note  # standard library only until a bar is made

log = logging.getLogger("lookbench.space")

PROGRESS = "/lookbench-progress"  # the waiting room's JSON; the app answers it 404, which makes the page reload
PORTS = 100  # as gradio: without a port, GRADIO_SERVER_PORT or 7860, else the next free of a hundred
POLL_MS = 1000
IDLE_S = 10.0  # seconds a visitor's connection may last: slow or idle ones never pile up threads
CONNECTIONS = 32  # visitors served at once

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>LookBench</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: sans-serif; max-width: 46em; margin: 3em auto; padding: 0 1em">
<h1>LookBench</h1><p id="preparing">{note}</p>
<p>This page opens the demo by itself as soon as it is ready.</p>
<script>
async function poll() {{
  try {{
    const answer = await fetch("{progress}", {{cache: "no-store"}});
    if (!answer.ok) {{ location.reload(); return; }}
    document.getElementById("preparing").textContent = (await answer.json()).note;
  }} catch (err) {{}}  /* between the waiting room and the app nothing listens for a moment */
  setTimeout(poll, {poll});
}}
setTimeout(poll, {poll});
</script></body></html>
"""


class _Server(ThreadingHTTPServer):
    """At most ``CONNECTIONS`` visitors served at once; a connection past them is closed at once."""

    daemon_threads = True

    def __init__(self, *args):
        self.slots = threading.BoundedSemaphore(CONNECTIONS)
        super().__init__(*args)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address):
        """A visitor's connection dropped mid-request (reset, closed while the page was sent): one log line naming who
        and why, not socketserver's traceback on stderr per connection."""
        err = sys.exc_info()[1]
        who = ":".join(map(str, client_address[:2])) if isinstance(client_address, tuple) else str(client_address)
        log.warning("waiting room: connection from %s dropped: %s: %s", who, type(err).__name__, one_line(err, 200))


class WaitingRoom:
    """A loopback (or ``host``) HTTP server on the app's future port that answers every page with the progress of
    the start; ``bars`` makes the stage bars it reports (``lookbench.progress.stage_bar``'s signature)."""

    def __init__(self, host: str | None = None, port: int | None = None):
        self.host = host or os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1"
        first = port or int(os.environ.get("GRADIO_SERVER_PORT") or 7860)
        self.stage, self.bar = "Starting: loading the libraries", None
        room = self

        class Handler(BaseHTTPRequestHandler):
            timeout = IDLE_S

            def setup(self):
                super().setup()
                # One request per connection (HTTP/1.0), whole within IDLE_S: a byte now and then keeps no thread.
                self.deadline = threading.Timer(IDLE_S, self._cut)
                self.deadline.daemon = True
                self.deadline.start()

            def _cut(self):
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            def finish(self):
                self.deadline.cancel()
                super().finish()

            def do_GET(self):  # noqa: N802 (http.server's name)
                if self.path.split("?")[0] == PROGRESS:
                    body, kind = json.dumps({"note": room.note()}).encode(), "application/json"
                else:
                    note = html.escape(room.note())
                    body = PAGE.format(note=note, progress=PROGRESS, poll=POLL_MS).encode()
                    kind = "text/html; charset=utf-8"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:  # the visitor left
                    pass

            def log_message(self, *args):  # the console keeps the start's own lines
                pass

        tried = [first] if port else range(first, first + PORTS)
        for candidate in tried:
            try:
                self.server = _Server((self.host, candidate), Handler)
                break
            except OSError as err:
                reason = err
        else:
            raise OSError(f"cannot listen on {self.host} port {tried[0]}" + (f"–{tried[-1]}" if len(tried) > 1 else "")
                          + f": {reason.strerror or reason}")
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, name="waiting room", daemon=True).start()

    @property
    def url(self) -> str:
        """The address as gradio prints it (a wildcard host is reached on localhost)."""
        shown = "localhost" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{shown}:{self.port}"

    def announce(self) -> "WaitingRoom":
        print(f"Running on {self.url}", flush=True)
        return self

    def says(self, stage: str) -> None:
        """The start's current stage (a sentence), with no count."""
        self.stage, self.bar = stage, None

    def bars(self, desc: str, **options):
        """A stage bar whose count the page shows."""
        self.bar = bar = stage_bar(desc, **options)
        return bar

    def note(self) -> str:
        return stage_note(self.stage, self.bar) + ("…" if self.bar is None else "")

    def close(self) -> None:
        """Stop answering and free the port for the app."""
        self.server.shutdown()
        self.server.server_close()
