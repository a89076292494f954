"""The used-by calls, word for word, on a staged mirror in a fresh virtualenv that has only the public libraries
(docs/architecture.md §5, §6): cwd = HUB, offline, no lookbench installed — then the three Spaces as the Hub runs them:
the staged folder in ``<tmp>/home/user/app``, a fresh venv of the card's python_version with its requirements.txt
and the gradio of its sdk_version installed before the folder is there (the Hub mounts only requirements.txt),
``python app.py`` offline on loopback, one real query through gradio_client (the leaderboard Space also in a real
browser).

One venv for the three used-by calls; one for each Space's requirements.txt (the demo and the leaderboard Space have
the same file, so the same venv: tests/helpers/venvs.py)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from tests.helpers.hub_space import HubSpace
from tests.helpers.venvs import clean_env, pip_install, space_venv

pytestmark = pytest.mark.slow
PUBLIC = ["torch==2.13.0", "datasets", "evaluate", "transformers", "safetensors", "pillow"]


@pytest.fixture(scope="module")
def mirror(hub) -> Path:
    """The run's staged mirror (conftest's, with the demo's real-photo gallery of its 200 photos): only read here."""
    return hub


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Iterator[Path]:
    """A fresh venv with the public libraries only (torch from local disk, the rest from PyPI through pip's cache);
    removed after the module, so its 2 GB do not stay on disk for the rest of the run."""
    folder = tmp_path_factory.mktemp("venv") / "venv"
    subprocess.run(["python3.11", "-m", "venv", str(folder)], check=True)
    pip_install(folder / "bin/python", *PUBLIC, cwd=folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    """The offline variables of docs/architecture.md §6 (inherited from conftest), the project HF_HOME, a datasets
    cache of this module's own."""
    env = clean_env()
    env["HF_DATASETS_CACHE"] = str(tmp_path_factory.mktemp("datasets-cache"))
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "GRADIO_ANALYTICS_ENABLED", "HF_HUB_DISABLE_TELEMETRY"):
        assert name in env
    return env


def run(venv: Path, mirror: Path, env: dict, code: str) -> dict:
    """``code`` in the venv's python with cwd = HUB; its last stdout line is JSON."""
    proc = subprocess.run([str(venv / "bin/python"), "-c", code], cwd=mirror, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


NOT_INSTALLED = """
import importlib.metadata
try:
    importlib.metadata.distribution("lookbench")
    raise SystemExit("lookbench is installed in this venv")
except importlib.metadata.PackageNotFoundError:
    pass
"""


def test_1_load_dataset_lookbench_word_for_word(venv, mirror, env):
    import datasets

    out = run(venv, mirror, env, NOT_INSTALLED + """
import json
from datasets import load_dataset
ds = load_dataset("lookbench", "RealStreetLook")
q = ds["query"][0]
print(json.dumps({"splits": {s: ds[s].num_rows for s in ds}, "features": {k: str(v) for k, v in ds["query"].features.items()},
                  "image": list(q["image"].size), "timestamp": q["timestamp"].isoformat(), "attributes": q["attributes"],
                  "has_raw_image": q["raw_image"] is not None}))
""")
    source = datasets.load_dataset(str(mirror / "lookbench"), "RealStreetLook")
    assert out["splits"] == {"query": source["query"].num_rows, "gallery": source["gallery"].num_rows}
    assert out["features"]["timestamp"] == "Value('timestamp[s, tz=UTC]')" and "Image" in out["features"]["image"]
    first = source["query"][0]
    assert out["image"] == list(first["image"].size) and out["attributes"] == first["attributes"] and out["attributes"]
    assert out["timestamp"] == first["timestamp"].isoformat() and out["has_raw_image"]  # a street look: its outfit photo


GALLERY = [
    {"category": "top", "main_attribute": "crew neck", "attributes": [{"name": "neckline", "value": "crew"}, {"name": "sleeve", "value": "long"}]},
    {"category": "top", "main_attribute": "v-neck", "attributes": [{"name": "neckline", "value": "v"}, {"name": "sleeve", "value": "long"}]},
    {"category": "dress", "main_attribute": "midi", "attributes": [{"name": "length", "value": "midi"}, {"name": "pattern", "value": "floral"}]},
    {"category": "dress", "main_attribute": "midi", "attributes": [{"name": "length", "value": "midi"}, {"name": "pattern", "value": "solid"}]},
]
REFERENCES = [dict(GALLERY[0], outfit_id="look-1"), dict(GALLERY[2], outfit_id="look-1")]
PREDICTIONS = [[1, 0, 2], [3, 2, 0]]
METRIC = NOT_INSTALLED + f"""
import json, evaluate
gallery, references, predictions = json.loads({json.dumps([GALLERY, REFERENCES, PREDICTIONS])!r})
metric = evaluate.load("lookbench/fine_recall")
print(json.dumps({{mode: metric.compute(predictions=predictions, references=references, gallery=gallery, k=[1, 2], mode=mode)
                  for mode in ("strict", "leaderboard")}}))
"""


def test_2_evaluate_load_lookbench_fine_recall_word_for_word(venv, mirror, env):
    out = run(venv, mirror, env, METRIC)
    strict, board = out["strict"], out["leaderboard"]
    # Both queries' first result has the category but not every attribute; the exact item comes second.
    assert strict["fine_recall@1"] == 0.0 and strict["fine_recall@2"] == 100.0
    assert strict["coarse_recall@1"] == 100.0 and strict["mrr@2"] == 50.0
    assert strict["outfit_fine_recall@1"] == 0.0 and strict["outfit_fine_recall@2"] == 100.0
    # Leaderboard mode only asks for the main attribute: query 2's first result (a solid midi dress) is a hit.
    assert board["fine_recall@1"] == 50.0 and board["fine_recall@2"] == 100.0


EMBED = NOT_INSTALLED + """
import json, numpy as np, torch
from PIL import Image
from transformers import AutoImageProcessor, AutoModel, pipeline
images = [Image.open(p) for p in {images!r}]
model = AutoModel.from_pretrained("lookbench/gr-lite-mini", trust_remote_code=True).eval()
processor = AutoImageProcessor.from_pretrained("lookbench/gr-lite-mini", trust_remote_code=True)
with torch.no_grad():
    embeds = model(**processor(images, return_tensors="pt")).image_embeds.numpy()
extractor = pipeline("image-feature-extraction", model="lookbench/gr-lite-mini", trust_remote_code=True)
piped = np.concatenate([np.asarray(extractor(image)).reshape(1, -1) for image in images])
print(json.dumps({{"model": type(model).__module__, "embeds": embeds.tolist(), "pipeline": piped.tolist()}}))
"""


def test_3_automodel_from_pretrained_lookbench_gr_lite_mini_word_for_word(venv, mirror, env, tmp_path):
    import datasets

    from lookbench.encoders.registry import load_encoder

    gallery = datasets.load_dataset(str(mirror / "lookbench"), "RealStudioFlat", split="gallery")
    paths = []
    for i in range(4):
        paths.append(str(tmp_path / f"gallery-{i}.png"))
        gallery[i]["image"].convert("RGB").save(paths[-1])
    out = run(venv, mirror, env, EMBED.format(images=paths))
    assert out["model"].startswith("transformers_modules.") and out["model"].endswith(".modeling_gr_lite")
    encoder = load_encoder("gr-lite-mini")  # the installed package's own encoder of the same weights
    from PIL import Image

    expected = encoder.encode_batch([encoder.preprocess(Image.open(p)) for p in paths])
    np.testing.assert_allclose(np.array(out["embeds"]), expected, atol=1e-6)
    np.testing.assert_allclose(np.array(out["pipeline"]), expected, atol=1e-6)


@pytest.fixture
def hub_space(tmp_path, tmp_path_factory, env):
    """``hub_space(folder)``: the staged Space ``folder`` as the Hub runs it (``HubSpace``), in this test's tmp_path."""
    return lambda folder: HubSpace(folder, tmp_path, env, space_venv(tmp_path_factory, folder))


def test_4_the_metric_space_runs_as_the_hub_runs_it(mirror, hub_space):
    space = hub_space(mirror / "lookbench" / "fine_recall")
    with space.serve(deadline_s=300) as client:
        scores = client.predict(json.dumps(PREDICTIONS), json.dumps(REFERENCES), json.dumps(GALLERY), "1, 2", "strict",
                                api_name="/score")
    # The example of test 2: both first results lack an attribute; the exact items come second.
    assert scores["fine_recall@1"] == 0.0 and scores["fine_recall@2"] == 100.0 and scores["mrr@2"] == 50.0
    assert scores["outfit_fine_recall@2"] == 100.0 and scores["coarse_recall@1"] == 100.0


def test_5_the_demo_space_runs_as_the_hub_runs_it(mirror, hub_space):
    space = hub_space(mirror / "lookbench" / "demo")
    # What the Space imports is its own folder's lookbench, not an installed one; its torch is the CPU build.
    facts = json.loads(space.check(NOT_INSTALLED + """
import json, os, sys, lookbench, torch
print(json.dumps({"lookbench": lookbench.__file__, "cwd": os.getcwd(), "path": sys.path[:3], "cuda": torch.version.cuda,
                  "torch": torch.__version__}))
"""))
    # The same file, however its path is spelled: the kernel's name for the working folder (getcwd, which Python's
    # '' entry of sys.path stands for) is not always the name the test built it under.
    assert os.path.samefile(facts["lookbench"], space.app / "lookbench" / "__init__.py"), facts
    assert facts["cuda"] is None and facts["torch"].startswith("2.13.0"), facts
    with space.serve(deadline_s=2400) as client:  # the first start renders LookBench-Mini and prepares the assets
        image, query_id, seed, status = client.predict("RealStudioFlat", 3, "", api_name="/random")
        assert query_id.startswith("RealStudioFlat/")
        status, _, annotation, outfit, panel, *_ = client.predict(None, query_id, "RealStudioFlat", True, "gr-lite-mini",
                                                                  "none", 5, api_name="/search")
    assert "top 5" in status
    tiles = re.findall(r"<figure class='tile' data-mark='(\w+)'.*?<span>#(\d+) · ", panel)
    assert [int(rank) for _, rank in tiles] == [1, 2, 3, 4, 5]
    assert all(mark in ("fine", "coarse", "miss") for mark, _ in tiles)  # a benchmark query: marked by the metric


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists() and os.environ.get("CI") != "true",
                    reason="Debian's chromium (/usr/bin/chromium) is not installed; .ci/run installs it")
def test_6_the_leaderboard_space_runs_as_the_hub_runs_it(mirror, hub_space, tmp_path):
    """The board serves at once and judges the results repo's submissions in the background — here the copy an
    earlier download left in its HF_HOME, which snapshot_download returns offline — and shows the honest one verified,
    the tampered ones not (labelled by their folders)."""
    from tests.helpers.board import (EDITED_RANKING, EDITED_SCORE, HONEST, browser_reads_the_board, honest_result,
                                     results_repo)

    space = hub_space(mirror / "lookbench" / "leaderboard")
    # A user's run and its three submissions (the tampered two edited), made with this lookbench — the Space's is a
    # copy of the same source, and the Mini it rebuilds is the same — written where the board downloads the results
    # repo to.
    copy = tmp_path / "hf_home" / "lookbench" / "board" / "results" / "lookbench--results"
    results_repo(honest_result(tmp_path / "run"), copy)
    with space.serve(deadline_s=900) as client:
        deadline = time.monotonic() + 900  # it serves at once and judges in the background: wait for the verdicts
        while "pending" in (board := client.predict("fine", 1, "overall", False, False, "any size", "",
                                                    api_name="/leaderboard"))["status"]:
            assert time.monotonic() < deadline, space.log_path.read_text()[-3000:]
            time.sleep(1)
        rows = browser_reads_the_board(client.src, tmp_path)
    log = space.log_path.read_text()
    assert board["status"].startswith("Results from the dataset repo lookbench/results: 3 submission(s)"), board["status"]
    verified = {s["model"]: s["verified"] for s in board["submissions"]}
    assert verified[HONEST] == "consistent", log[-3000:]
    by_folder = {"/".join(s["folder"].split("/")[1:3]): s["verified"] for s in board["submissions"]}  # by folder
    assert by_folder["someone/edited-score"].startswith("no: overall fine_recall@1 claimed ")
    assert by_folder["someone/edited-ranking"].startswith("no: RealStudioFlat fine_recall@1 claimed ")
    ranked = [s for s in board["sections"] if any(r["model"] == HONEST for r in s["rows"])][0]
    assert ranked["rows"][0]["rank"] == 1 and ranked["rows"][0]["verified"] == "consistent" and ranked["rows"][0]["ci95"]
    assert board["sections"][0]["rows"][0]["model"] == "GR-Pro"  # the published table beside them
    # a real browser sees the verified row ranked, and the tampered ones not verified
    assert rows[HONEST].startswith(f"1 {HONEST} consistent 1 ")
    assert all(rows[label].startswith(label) and " no: " in rows[label] for label in (EDITED_SCORE, EDITED_RANKING))
