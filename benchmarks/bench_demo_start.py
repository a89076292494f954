"""Cold and warm start of ``lookbench demo --real-photos`` (issue 47 item 5), measured in the browser.

    python benchmarks/bench_demo_start.py [--home DIR] [--photos-limit S]

``lookbench demo --real-photos`` runs offline with an empty ``HF_HOME`` (``--home``, else a new temporary folder)
and its output a pipe; from its launch: the seconds until it prints ``Running on http://…`` (the address), until
Debian's chromium (Playwright) has the page open (the waiting room's, while the first gallery is prepared), until it
has pressed **Random query** in the app the page turned into and sees the first result tile (the first answer), and until it prints that the real-photo gallery, prepared in the background, joined the choices (waited
for at most ``--photos-limit`` seconds: else its progress line on the page then). The same command is launched again
with the same ``HF_HOME``: the warm start. Prints each figure as it is measured, then the ratio of the first answers.
Target: the cold first answer within 90 s.
"""
from __future__ import annotations

import argparse
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1"}
CHROMIUM = "/usr/bin/chromium"


def start(home: Path, limit: float, photos_limit: float, label: str) -> dict:
    """One launch: seconds to the address line, to the first answer in the browser, to the real photos' readiness."""
    from playwright.sync_api import expect, sync_playwright

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, **OFFLINE, "HF_HOME": str(home), "MPLCONFIGDIR": str(home / "mpl")}
    began = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "lookbench", "demo", "--real-photos", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put((time.perf_counter() - began, line)) for line in server.stdout],
                     daemon=True).start()
    seen, out = [], {}
    try:
        def until_within(prefix: str, seconds: float) -> float:
            deadline = time.perf_counter() + seconds
            while True:
                for at, line in seen:
                    if line.startswith(prefix):
                        return at
                seen.append(lines.get(timeout=max(0.1, deadline - time.perf_counter())))

        def until(prefix: str) -> float:
            return until_within(prefix, limit)

        out["address"] = until("Running on http://")
        print(f"{label}: address after {out['address']:.1f} s", flush=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(limit * 1000)
            page.goto(f"http://127.0.0.1:{port}/")  # the waiting room's page until the app takes the port over
            out["page"] = time.perf_counter() - began
            page.locator("#random").click()  # waits for the app: the page reloads itself into it
            expect(page.locator("#results-a .tile").first).to_be_visible(timeout=limit * 1000)
            out["first answer"] = time.perf_counter() - began
            print(f"{label}: page open after {out['page']:.1f} s", flush=True)
            print(f"{label}: first answer in the browser after {out['first answer']:.1f} s", flush=True)
            try:
                out["real photos ready"] = until_within("Ready: Fashion-MNIST real photos in LookBench's format", photos_limit)
                print(f"{label}: real photos ready after {out['real photos ready']:.1f} s", flush=True)
            except queue.Empty:
                note = page.locator("#preparing").inner_text()
                print(f"{label}: real photos not ready after {time.perf_counter() - began:.0f} s: {note}", flush=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, help="an empty folder for HF_HOME (default: a new temporary one)")
    parser.add_argument("--limit", type=float, default=3600, help="seconds to wait for any one step")
    parser.add_argument("--warm-only", action="store_true",
                        help="only the warm start, in a home an earlier run left (after a change of the code)")
    parser.add_argument("--photos-limit", type=float, default=3600,
                        help="seconds to wait for the real-photo gallery after the first answer")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="lookbench-demo-home-"))
    if args.warm_only:
        start(home, args.limit, args.photos_limit, "warm")
        return
    if any(home.iterdir()):
        raise SystemExit(f"{home} is not empty: the cold start needs an empty HF_HOME")
    load = os.getloadavg()[0]
    print(f"lookbench demo --real-photos, HF_HOME {home} (load average at the start {load:.1f}, {os.cpu_count()} cores)",
          flush=True)
    cold = start(home, args.limit, args.photos_limit, "cold")
    warm = start(home, args.limit, args.photos_limit, "warm")
    ratio = cold["first answer"] / warm["first answer"]
    verdict = "met" if cold["first answer"] <= 90 else "NOT met"
    print(f"first answer in the browser: cold {cold['first answer']:.1f} s (target <= 90 s: {verdict}); "
          f"cold / warm = {ratio:.2f}")


if __name__ == "__main__":
    main()
