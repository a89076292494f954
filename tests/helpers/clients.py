"""The tests' HTTP clients of their loopback apps, all on one TLS context. gradio_client opens a new httpx client for
every call it makes, and httpx builds a TLS context for each (reading the CA bundle: 85 ms of CPU a call against 20
with one context, benchmarks/bench_loopback_client.py) though a loopback ``http://`` call never uses it; given one
context, httpx takes it as it is."""
from __future__ import annotations

import socket
import ssl
from functools import cache


def free_port() -> int:
    """A loopback port free right now, for a server a test starts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@cache
def tls() -> ssl.SSLContext:
    """The one context: the default one, so certificates are verified as without it."""
    return ssl.create_default_context()


def gradio(url: str, headers: dict | None = None, timeout: float | None = None):
    """A gradio_client ``Client`` of ``url``; ``timeout``: each request's, in seconds (httpx's 5 s by default)."""
    from gradio_client import Client

    return Client(url, verbose=False, headers=headers or {}, ssl_verify=tls(),
                  httpx_kwargs={} if timeout is None else {"timeout": timeout})
