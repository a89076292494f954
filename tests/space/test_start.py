"""A start of ``lookbench demo`` (issue 47 item 5): the address printed at once, also through a pipe and before the
first gallery's assets are ready, its page showing the start's progress and turning into the app by itself."""
from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from lookbench.space.waiting import PROGRESS, WaitingRoom

from tests.helpers.clients import free_port

CHROMIUM = Path("/usr/bin/chromium")


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_the_waiting_room_answers_every_page_with_the_stage_and_its_count():
    room = WaitingRoom("127.0.0.1", free_port())
    try:
        url = f"http://127.0.0.1:{room.port}"
        assert room.url == url
        assert json.loads(_get(url + PROGRESS)[1]) == {"note": "⏳ Starting: loading the libraries…"}
        room.says("Preparing LookBench-Mini")
        bar = room.bars("encode gr-lite-mini", quiet=False, unit="img")
        bar.reset(total=1759)
        bar.update(1200)
        status, page = _get(url + "/any/page?x=1")
        assert status == 200 and '<p id="preparing">⏳ Preparing LookBench-Mini: encode gr-lite-mini 1,200 of 1,759</p>' in page
        room.says("Loading the app")  # a stage without a count drops the last bar's
        assert json.loads(_get(url + PROGRESS)[1])["note"] == "⏳ Loading the app…"
    finally:
        room.close()
    with pytest.raises(urllib.error.URLError):  # the port is free for the app
        urllib.request.urlopen(url + PROGRESS, timeout=10)


@pytest.mark.slow
def test_slow_or_silent_connections_are_closed_and_never_pile_up(monkeypatch):
    """Each connection lasts at most IDLE_S, however it trickles bytes, and at most CONNECTIONS are served at once (one
    past them is closed at once); then the page answers again."""
    from lookbench.space import waiting

    monkeypatch.setattr(waiting, "IDLE_S", 3.0)
    monkeypatch.setattr(waiting, "CONNECTIONS", 2)
    room = WaitingRoom("127.0.0.1", free_port())
    try:
        address = ("127.0.0.1", room.port)
        silent, trickling = (socket.create_connection(address, timeout=30) for _ in range(2))
        started = time.monotonic()
        with silent, trickling:
            time.sleep(0.3)  # both taken by the room's threads
            with socket.create_connection(address, timeout=30) as third:
                assert third.recv(1) == b""  # past the cap: closed at once, while the two are still open
            silent.setblocking(False)
            with pytest.raises(BlockingIOError):
                silent.recv(1)
            silent.setblocking(True)
            for _ in range(100):  # a byte every 0.1 s: each read within the socket timeout, the request never whole
                try:
                    trickling.sendall(b"G")
                except OSError:
                    break
                time.sleep(0.1)
            assert silent.recv(1) == b"" and trickling.recv(1) == b""
            assert time.monotonic() - started < 9  # closed by the room's deadline, not by this test's 30 s
        assert _get(f"http://127.0.0.1:{room.port}/")[0] == 200
    finally:
        room.close()


def test_a_dropped_connection_is_one_log_line_without_a_traceback(caplog, capfd):
    """Issue 53: each connection a visitor dropped mid-request printed socketserver's traceback. Now one log line
    names who dropped and why, on one line; the room answers the next visitor."""
    import logging
    import struct

    caplog.set_level(logging.INFO, logger="lookbench.space")
    room = WaitingRoom("127.0.0.1", free_port())
    try:
        capfd.readouterr()
        with socket.create_connection(("127.0.0.1", room.port), timeout=30) as dropped:
            dropped.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Half: ")  # the request's headers never end
            time.sleep(0.3)  # the room is reading them
            dropped.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # closed with a reset
            port = dropped.getsockname()[1]
        deadline = time.monotonic() + 30
        while not [r for r in caplog.records if r.name == "lookbench.space"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _get(f"http://127.0.0.1:{room.port}/")[0] == 200
    finally:
        room.close()
    lines = [r for r in caplog.records if r.name == "lookbench.space"]
    assert len(lines) == 1 and lines[0].exc_info is None, [r.getMessage() for r in lines]
    assert lines[0].getMessage() == (f"waiting room: connection from 127.0.0.1:{port} dropped: ConnectionResetError: "
                                     "[Errno 104] Connection reset by peer")
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err


def test_a_port_in_use_is_one_line_naming_it_and_without_a_port_the_next_free_one_is_taken(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=rf"^cannot listen on 127\.0\.0\.1 port {port}: "):
            WaitingRoom("127.0.0.1", port)
        monkeypatch.setenv("GRADIO_SERVER_PORT", str(port))  # gradio's variable, read as gradio does
        room = WaitingRoom("127.0.0.1")
        try:
            assert room.port > port
        finally:
            room.close()


@pytest.mark.slow
def test_a_cold_start_prints_its_address_first_through_a_pipe_then_serves_one_model_then_both(tmp_path):
    """Assets not yet built: the address is the first line, before the preparation's; the app takes the port once
    the first model's assets are ready, and the second model joins later."""
    port = free_port()
    assets = tmp_path / "assets"
    server = subprocess.Popen([sys.executable, "-m", "lookbench", "demo", "--port", str(port), "--assets", str(assets)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ})
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in server.stdout], daemon=True).start()
    try:
        said = [lines.get(timeout=120)]
        assert said == [f"Running on http://127.0.0.1:{port}\n"]
        both = "Ready: LookBench-Mini (synthetic) with gr-lite-mini, efficientnet-lite0\n"
        while said[-1] != both:
            said.append(lines.get(timeout=900))
        # the first model's assets first, the app serves them, then the second model's join
        once = "; this happens once per data revision and model.\n"
        assert [line for line in said if line.startswith(("Preparing", "Ready"))] == [
            f"Preparing the Space's assets in {assets / 'mini'} (no assets yet){once}",
            "Ready: LookBench-Mini (synthetic) with gr-lite-mini\n",
            f"Preparing the Space's assets in {assets / 'mini'} (no assets of efficientnet-lite0){once}", both], said
        manifest = json.loads((assets / "mini" / "manifest.json").read_text())
        assert sorted(manifest["models"]) == ["efficientnet-lite0", "gr-lite-mini"]
        assert _get(f"http://127.0.0.1:{port}{PROGRESS}")[0] == 404  # the app, not the waiting room, answers now
        status, page = _get(f"http://127.0.0.1:{port}/")
        assert status == 200 and "gradio_config" in page
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists() and os.environ.get("CI") != "true",  # in CI (.ci/run installs it) it must run
                    reason="Debian's chromium (/usr/bin/chromium) is not installed; .ci/run installs it")
def test_browser_the_page_shows_the_progress_then_turns_into_the_app_by_itself(tmp_path):
    import gradio as gr
    from playwright.sync_api import expect, sync_playwright

    room = WaitingRoom("127.0.0.1", free_port())
    room.says("Preparing LookBench-Mini")
    bar = room.bars("encode gr-lite-mini", quiet=False, unit="img")
    bar.reset(total=1759)
    bar.update(10)
    with gr.Blocks() as app:
        gr.Markdown("The app itself", elem_id="the-app")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(120_000)
            expect.set_options(timeout=120_000)
            page.goto(f"http://127.0.0.1:{room.port}/")
            expect(page.locator("#preparing")).to_have_text("⏳ Preparing LookBench-Mini: encode gr-lite-mini 10 of 1,759")
            bar.update(990)  # the page polls: the count moves on without a reload
            expect(page.locator("#preparing")).to_have_text("⏳ Preparing LookBench-Mini: encode gr-lite-mini 1,000 of 1,759")
            room.close()
            app.launch(server_name="127.0.0.1", server_port=room.port, prevent_thread_lock=True, quiet=True)
            expect(page.locator("#the-app")).to_contain_text("The app itself")  # reloaded into the app
        finally:
            browser.close()
            app.close()


@pytest.mark.slow
def test_a_model_prepared_after_the_start_joins_the_choices_of_every_visitor(tmp_path):
    """The first model's assets served at once, the second's added to the same gallery later: the page's poll offers
    it (keeping the visitor's choices) and it searches; before, asking for it is a message naming the choices."""
    from lookbench.encoders.registry import load_encoder
    from lookbench.space.app import SpaceApp
    from lookbench.space.assets import DEFAULT_MODELS, open_assets, served_at_once
    from lookbench.space.retrieval import QueryError

    folder = tmp_path / "mini"
    encoders = {name: load_encoder(name) for name in DEFAULT_MODELS}
    assert served_at_once(None, folder, DEFAULT_MODELS, encoders) == ("gr-lite-mini",)  # nothing built yet
    first = open_assets(None, folder, ("gr-lite-mini",), encoders={"gr-lite-mini": encoders["gr-lite-mini"]}, quiet=True)
    app = SpaceApp([first], encoders=encoders)
    mini = "LookBench-Mini (synthetic)"
    assert app.models == ["gr-lite-mini"] and app.pair == ("gr-lite-mini", "none")
    with pytest.raises(QueryError, match="^Unknown second model 'efficientnet-lite0'; choose one of gr-lite-mini, none$"):
        app.chosen("gr-lite-mini", "efficientnet-lite0")
    assert served_at_once(None, folder, DEFAULT_MODELS, encoders) == ("gr-lite-mini",)  # still not fresh for both

    assert app.add(open_assets(None, folder, DEFAULT_MODELS, encoders=encoders, quiet=True)) == mini
    assert list(app.galleries) == [mini] and app.models == ["gr-lite-mini", "efficientnet-lite0"]
    assert served_at_once(None, folder, DEFAULT_MODELS, encoders) == DEFAULT_MODELS
    gallery, _, _, model, second = app.poll(mini, "gr-lite-mini", "none")
    assert model["choices"] == ["gr-lite-mini", "efficientnet-lite0"] and model["value"] == "gr-lite-mini"
    # side by side once the second model is ready (issue 56), unless the visitor chose "none" themselves
    assert second["choices"] == ["none", "gr-lite-mini", "efficientnet-lite0"] and second["value"] == "efficientnet-lite0"
    assert app.poll(mini, "gr-lite-mini", "none", chosen=True)[4]["value"] == "none"
    status = app.search(None, "RealStudioFlat/1", "all", False, "gr-lite-mini", "efficientnet-lite0", 4, mini)[0]
    assert status.startswith("RealStudioFlat/1: top 4 of LookBench-Mini (synthetic)"), status


def _shipped(folder: Path) -> dict:
    """A gallery's files as the demo Space ships them (``assets/<gallery>/…``)."""
    return {f"assets/{folder.name}/{p.relative_to(folder).as_posix()}": p.read_bytes()
            for p in folder.rglob("*") if p.is_file()}


def _prepare(assets: Path, fake, tmp_path, pinned: str) -> subprocess.CompletedProcess:
    """``lookbench demo --prepare`` with a Hub that answers (the loopback fake) and an empty Hub cache."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=fake.url, HF_HUB_CACHE=str(tmp_path / "hub"), LOOKBENCH_DEMO_SPACE=f"lookbench/demo@{pinned}",
               HF_HUB_DISABLE_XET="1", COLUMNS="1000")  # each message on one line (terminal.say wraps at the width)
    return subprocess.run([sys.executable, "-m", "lookbench", "demo", "--prepare", "--assets", str(assets)],
                          capture_output=True, text=True, timeout=900, env=env)


@pytest.mark.slow
def test_a_first_start_downloads_the_spaces_prepared_gallery_at_its_pinned_revision_and_checks_it(tmp_path,
                                                                                                   tmp_path_factory):
    """With a Hub that answers, the Mini's assets come from the demo Space's ``assets/mini`` at the pinned commit
    (nothing built); a shipped file whose sha256 differs from the manifest is never used: one line, then built."""
    from lookbench.paths import space_assets_dir
    from lookbench.space.assets import EMBEDDED
    from tests.helpers.fake_hub import FakeHub
    from tests.helpers.staged_hub import shared_photos

    shared_photos(tmp_path_factory)  # the run's prepared galleries, as `lookbench stage` ships them
    files = _shipped(space_assets_dir() / EMBEDDED)
    pinned = "c0ffee" + "0" * 34
    with FakeHub() as fake:
        fake.served["space/lookbench/demo"] = {"revision": pinned, "files": {**files, "app.py": b"# the Space's app\n"}}
        done = _prepare(tmp_path / "assets", fake, tmp_path, pinned)
        assert done.returncode == 0, done.stderr[-2000:]
        mini = tmp_path / "assets" / EMBEDDED
        assert done.stdout.splitlines() == [
            f"Downloaded the assets of mini from the Space lookbench/demo@{pinned} into {mini}",
            f"assets: {mini} (LookBench-Mini (synthetic))"], done.stdout
        assert _shipped(mini) == files  # byte for byte, manifest included
        asked = {r["path"].split("?")[0] for r in fake.requests if r["path"] != "/"}  # "/": is a Hub there
        fetched = {path for path in asked if "/resolve/" in path}
        assert asked == {f"/api/spaces/lookbench/demo/tree/{pinned}", *fetched}
        assert fetched == {f"/spaces/lookbench/demo/resolve/{pinned}/{path}" for path in files}  # not app.py

        damaged = dict(files)
        index = f"assets/{EMBEDDED}/gr-lite-mini/index.faiss.gz"
        damaged[index] = damaged[index][:-1] + bytes([damaged[index][-1] ^ 1])
        fake.served["space/lookbench/demo"] = {"revision": "f" * 40, "files": damaged}
        again = _prepare(tmp_path / "again", fake, tmp_path, "f" * 40)
        assert again.returncode == 0, again.stderr[-2000:]
        lines = again.stdout.splitlines()
        assert lines[0] == (f"Not using the assets of mini in the Space lookbench/demo@{'f' * 40}: "
                            "gr-lite-mini/index.faiss.gz is damaged (its sha256 differs from manifest.json's)"), lines
        assert lines[1].startswith(f"Preparing the Space's assets in {tmp_path / 'again' / EMBEDDED} (no assets yet)")
