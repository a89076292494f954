"""GR-Lite test builders: a tiny config, scripts run in a fresh process, and small LookBench-schema training sets of
drawn garments whose class is visible, so a few training steps on CPU learn something measurable."""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import datasets
from PIL import Image, ImageDraw

from lookbench.models.gr_lite import GrLiteConfig
from lookbench.schema import FEATURES

GR_LITE_DIR = Path(__file__).resolve().parents[2] / "models" / "gr_lite"
CODE_FILES = ("configuration_gr_lite.py", "modeling_gr_lite.py", "image_processing_gr_lite.py")
# a script still running after this has hung (e.g. a deadlocked launch): a guard, never a speed budget. A training
# run of the distillation test costs under a minute of CPU, yet took over 600 s of wall time on a busy machine
HANG_GUARD_SECONDS = 3 * 60 * 60


def tiny_config(**overrides) -> GrLiteConfig:
    """gr-lite-mini at 64 px with 2 layers: the real architecture, cheap enough for unit tests."""
    vision = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_register_tokens=4)
    return GrLiteConfig.from_preset("gr-lite-mini", vision_config=vision, image_size=64, **overrides)


def clean_env() -> dict:
    """The test's offline environment for subprocesses, without PYTHONPATH (lookbench comes from the install)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def run_script(cmd: list[str], cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """`cmd` in a fresh process with the clean environment (plus `env`), its output captured."""
    return subprocess.run(cmd, cwd=cwd, env={**clean_env(), **(env or {})}, capture_output=True, text=True,
                          timeout=HANG_GUARD_SECONDS)


# prepended to a script run by run_python: the process cannot import lookbench (what remote code loading must not need)
BLOCK_LOOKBENCH = """
import sys
class _BlockLookbench:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "lookbench":
            raise ImportError("lookbench is deliberately unavailable in this process")
sys.meta_path.insert(0, _BlockLookbench())
try:
    import lookbench
    raise SystemExit("lookbench should not be importable here")
except ImportError:
    pass
"""


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    proc = run_script([sys.executable, "-c", code], cwd)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


COLOURS = {"red": (200, 30, 30), "blue": (30, 60, 200), "green": (30, 160, 60)}


def garment(category: str, colour: str, rng: random.Random, size: int = 80) -> Image.Image:
    """A flat-lay drawing whose class is visible: a T-shirt or a skirt silhouette in one colour."""
    image = Image.new("RGB", (size, size), (235, 235, 230))
    draw = ImageDraw.Draw(image)
    fill = tuple(max(0, min(255, c + rng.randint(-20, 20))) for c in COLOURS[colour])
    j = lambda: rng.randint(-5, 5)  # noqa: E731
    if category == "top":
        draw.rectangle([17 + j(), 20 + j(), 63 + j(), 67 + j()], fill=fill)
        draw.rectangle([6 + j(), 20 + j(), 18, 42 + j()], fill=fill)
        draw.rectangle([62, 20 + j(), 74 + j(), 42 + j()], fill=fill)
    else:
        draw.polygon([(33 + j(), 12 + j()), (47 + j(), 12 + j()), (71 + j(), 70 + j()), (9 + j(), 70 + j())], fill=fill)
    return image


def write_train_set(folder: Path) -> Path:
    """A LookBench-schema train split of 6 classes × 16 images (two views per product), in a folder
    `load_dataset(DIR, split="train")` reads."""
    rng = random.Random(0)
    rows = {name: [] for name in FEATURES}
    for category in ("top", "skirt"):
        for colour in COLOURS:
            for i in range(16):
                rows["image"].append(garment(category, colour, rng))
                rows["item_id"].append(f"{category}-{colour}-{i // 2}")
                rows["category"].append(category)
                rows["main_attribute"].append(colour)
                rows["attributes"].append([{"name": "colour", "value": colour}, {"name": "fit", "value": "regular"}])
                rows["bbox"].append(None)
                rows["outfit_id"].append(None)
                rows["timestamp"].append(dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc))
                rows["release"].append("test")
                rows["source"].append("aigen")
                rows["raw_image"].append(None)
    datasets.Dataset.from_dict(rows, features=FEATURES).to_parquet(str(folder / "train-00000-of-00001.parquet"))
    return folder


def write_single_view_set(folder: Path, train_set: Path) -> Path:
    """A second training set of one-view products (as Fashion-MNIST's photos are), in another category."""
    ds = datasets.load_dataset(str(train_set), split="train").select(range(0, 96, 2))
    ds = ds.map(lambda row, i: {"item_id": f"solo-{i}", "category": "dress"}, with_indices=True)
    ds.to_parquet(str(folder / "train-00000-of-00001.parquet"))
    return folder


def write_noise_gallery(folder: Path, train_set: Path) -> Path:
    """A build folder with a `noise` config only: 12 dresses, as `lookbench build --subsets noise` writes one."""
    ds = datasets.load_dataset(str(train_set), split="train").select(range(0, 96, 8))
    ds = ds.map(lambda row, i: {"item_id": f"noise-{i}", "category": "dress"}, with_indices=True)
    (folder / "noise").mkdir()
    ds.to_parquet(str(folder / "noise" / "gallery-00000-of-00001.parquet"))
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: noise\n  data_files:\n  - split: gallery\n    path: noise/gallery-*.parquet\n---\n")
    return folder


TRAIN_ARGS = ["--image-size", "64", "--batch-size", "16", "--lr", "1e-3", "--warmup-steps", "4", "--log-every", "4"]


def train(cwd: Path, data: Path, out: Path, *extra: str, launcher: list[str] | None = None, env: dict | None = None) -> list[dict]:
    """Run `python -m lookbench.training.train_gr_lite` (or `launcher -m …`) to its end; its log lines."""
    cmd = (launcher or [sys.executable]) + ["-m", "lookbench.training.train_gr_lite", "--data", str(data),
                                           "--output", str(out), *TRAIN_ARGS, *extra]
    proc = run_script(cmd, cwd, env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
