"""`lookbench review` driven as people drive it: the real command in a process of its own (tests/helpers/forked.py),
pages through gradio_client, and the form filled as a reviewer who knows the answer would fill it."""
from __future__ import annotations

import re
import signal
import threading

import pytest

from tests.helpers import clients, forked
from tests.helpers.annotated_release import TAXONOMY

class Served:
    """``lookbench review RAW`` in a process of its own, on a free loopback port it announces (``Running on
    http://…``); ``preloaded=False``: started by ``python -m lookbench`` itself."""

    def __init__(self, raw, *args, preloaded: bool = True):
        self.raw = raw
        port = clients.free_port()
        self.process = forked.start("review", raw, "--port", port, *args, preloaded=preloaded)
        self.output = []
        for line in self.process.stdout:
            self.output.append(line)
            if match := re.match(r"Running on (http://127\.0\.0\.1:\d+)$", line.strip()):
                self.url = match.group(1)
                break
        else:
            raise AssertionError("no 'Running on' line:\n" + "".join(self.output))
        self.link = None  # with --reviewer: the maintainer's own link, printed next
        if "--reviewer" in args:
            self.output.append(line := self.process.stdout.readline())
            self.link = re.search(r"(http://\S+\?token=\S+)", line).group(1)
        threading.Thread(target=lambda: self.output.extend(self.process.stdout), daemon=True).start()

    def client(self, token: str | None = None):
        """A reviewer's API client: ``token`` (an invitation's, or the ``--reviewer`` link's when not given) sent with
        every call, as the page sends it in its query string."""
        from lookbench.space.review.identity import TOKEN_HEADER

        token = token or (self.link.split("token=")[1] if self.link else None)
        headers = {TOKEN_HEADER: token} if token else {}
        return clients.gradio(self.url, headers, timeout=300)  # httpx's 5 s is short on a loaded machine

    def invited(self, name: str):
        """A client for ``name``, invited now (as ``lookbench review RAW --invite NAME`` does)."""
        from lookbench.space.review.identity import invite

        return self.client(invite(self.raw, name))

    def stop(self, sig=signal.SIGTERM):
        if self.process.poll() is None:
            self.process.send_signal(sig)
        self.process.wait(timeout=60)


@pytest.fixture
def serve():
    started = []

    def start(raw, *args, **options):
        started.append(Served(raw, *args, **options))
        return started[-1]

    yield start
    for served in started:
        served.stop(signal.SIGKILL)


def shown_key(view) -> str | None:
    """The item key the page shows (its header), None when the reviewer is done."""
    match = re.match(r"### (\S+/\S+/\S+)\n", view[0])
    return match.group(1) if match else None


def answer(labels: dict, taxonomy=TAXONOMY) -> list:
    """The form as a reviewer who knows ``labels`` fills it: the category, then each attribute in the taxonomy's order
    (one the labels lack is "not applicable"), the unused fields empty."""
    names = list(taxonomy.categories[labels["category"]].attributes)
    values = [labels["attributes"].get(name, taxonomy.not_applicable) for name in names]
    slots = max(len(c.attributes) for c in taxonomy.categories.values())
    return [labels["category"], *values, *[None] * (slots - len(values))]


def review_all(client, truth: dict, acknowledged: list, taxonomy=TAXONOMY) -> None:
    """Review every item the page gives the client's reviewer, each with its truth; ``acknowledged``: the keys the
    page took."""
    view = client.predict(api_name="/begin")
    while (key := shown_key(view)) is not None:
        form = answer(truth[key], taxonomy)
        if view[4]["value"] != form[0]:
            client.predict(*form, api_name="/category")  # as the page does when the category is changed
        view = client.predict(*form, api_name="/accept")
        acknowledged.append(key)




def reviewing_at_once(served, truth: dict, names, taxonomy=TAXONOMY) -> dict[str, list]:
    """Each of ``names`` reviewing on its own page at the same time, until the page has nothing left for them; the keys
    each page acknowledged. A reviewer's failure fails the caller, with its error."""
    acknowledged, errors = {name: [] for name in names}, []
    clients = {name: served.invited(name) for name in names}

    def work(name):
        try:
            review_all(clients[name], truth, acknowledged[name], taxonomy)
        except Exception as err:  # noqa: BLE001 — reported below, whatever it is
            errors.append(f"{name}: {err!r}")

    workers = [threading.Thread(target=work, args=(name,)) for name in names]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    return acknowledged
