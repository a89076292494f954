"""Cold and warm start of the staged demo Space, run as the Hub runs it (P11).

    python benchmarks/bench_space_cold.py [--hub HUB] [--photos IDX_DIR]

The demo Space of a staged mirror (``--hub``, else one staged here with ``lookbench stage``) is installed as the Hub
installs it: ``<tmp>/home/user/app`` still empty, a fresh venv of the card's python_version, ``pip install -r
requirements.txt gradio==<sdk_version>`` from the index (``torch==2.13.0`` resolves to this machine's local CPU
wheel), then the Space's files copied in. Then, offline, with an empty HOME (HF_HOME, matplotlib's and gradio's
caches all below it) and nothing else changed, ``python app.py`` serves on a loopback port: the seconds from the
launch to the first answered query (gradio_client, ``/search``, a benchmark query of the default gallery, one model)
are the cold start. The server is stopped and the same folder launched again with the same HOME: the warm start.
Prints both, their ratio, the real-photo gallery's first answer, and whether the log shows any asset being built.
Targets: cold <= 60 s and cold <= 1.5 x warm.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1"}
PHOTOS = "Fashion-MNIST real photos in LookBench's format"


def install(space: Path, root: Path) -> tuple[Path, str]:
    """The Space folder installed as the Hub does it; returns (app folder, venv python)."""
    from huggingface_hub import SpaceCard

    card = SpaceCard.load(space / "README.md").data
    app = root / "home" / "user" / "app"
    app.mkdir(parents=True)
    interpreter = shutil.which(f"python{card.python_version}")
    subprocess.run([interpreter, "-m", "venv", str(root / "venv")], check=True)
    python = str(root / "venv" / "bin" / "python")
    shutil.copyfile(space / "requirements.txt", root / "requirements.txt")  # the Hub's /tmp/requirements.txt
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([python, "-m", "pip", "install", "-q", "-r", str(root / "requirements.txt"), f"gradio=={card.sdk_version}"],
                   cwd=app, env=env, check=True)
    shutil.copytree(space, app, dirs_exist_ok=True)
    return app, python


def first_answer(app: Path, python: str, home: Path, log: Path) -> dict:
    """Launch ``python app.py``; the seconds to its first answered query, then to the real-photo gallery's."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "HF_HOME", "XDG_CACHE_HOME",
                                                            "MPLCONFIGDIR", "GRADIO_TEMP_DIR", "HF_DATASETS_CACHE")}
    env.update(OFFLINE, HOME=str(home), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               TMPDIR=str(home / "tmp"))
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    from gradio_client import Client

    with open(log, "w") as out:
        start = time.perf_counter()
        server = subprocess.Popen([python, "app.py"], cwd=app, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            while True:
                if server.poll() is not None:
                    raise SystemExit(f"app.py exited:\n{log.read_text()[-3000:]}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.2)
            listening = time.perf_counter() - start
            client = Client(f"http://127.0.0.1:{port}/", verbose=False, download_files=False)
            status = client.predict(None, "RealStudioFlat/1", "all", True, "gr-lite-mini", "none", 10, api_name="/search")[0]
            first = time.perf_counter() - start
            photos = client.predict(None, "RealStudioFlat/1", "all", True, "gr-lite-mini", "none", 10, PHOTOS,
                                    api_name="/search")[0]
            second = time.perf_counter() - start
        finally:
            server.terminate()
            server.wait(timeout=60)
    if status.startswith("⚠️") or photos.startswith("⚠️"):
        raise SystemExit(f"a query failed: {status} / {photos}")
    text = log.read_text()
    return {"listening": listening, "first": first, "photos": second, "built": "Preparing" in text,
            "not_served": [line for line in text.splitlines() if line.startswith("Not serving")]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hub", type=Path, help="a staged mirror (default: stage one here)")
    parser.add_argument("--photos", type=Path, help="Fashion-MNIST IDX folder for staging (default: the Debian package's)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (venv, HOME, logs)")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="lookbench-space-cold-"))
    try:
        hub = args.hub
        if hub is None:
            hub = root / "HUB"
            subprocess.run(["lookbench", "stage", "--out", str(hub), *(["--photos", str(args.photos)] if args.photos else [])],
                           check=True, env={**os.environ, **OFFLINE})
        space = hub / json.loads((hub / "repos.json").read_text())["namespace"] / "demo"
        size = sum(p.stat().st_size for p in space.rglob("*") if p.is_file())
        t = time.perf_counter()
        app, python = install(space, root)
        installed = time.perf_counter() - t
        home = root / "home-empty"
        cold = first_answer(app, python, home, root / "cold.log")
        warm = first_answer(app, python, home, root / "warm.log")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"Demo Space {space} ({size / 1e6:.1f} MB), installed as the Hub does in {installed:.0f} s (not counted)")
    for name, run in (("cold (empty HOME)", cold), ("warm (same HOME)", warm)):
        print(f"   {name:<18} port open {run['listening']:5.1f} s   first answer {run['first']:5.1f} s   "
              f"real-photo gallery's first answer {run['photos']:5.1f} s   assets built: {'yes' if run['built'] else 'no'}")
        for line in run["not_served"]:
            print(f"      {line}")
    print(f"P11 cold start = {cold['first']:.1f} s (target <= 60 s); cold / warm = {cold['first']:.1f} / "
          f"{warm['first']:.1f} = {cold['first'] / warm['first']:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
