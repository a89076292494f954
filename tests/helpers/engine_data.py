"""Tiny LookBench folders in the exact `lookbench build` layout, for the engine and encoder tests.

Each item is a 24x24 PNG: a base colour per product plus a fixed per-image texture, so the raw-pixel encoder
retrieves the gallery shot of the same product first. Queries share annotations with their gallery match.
"""
from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import datasets
import numpy as np
import yaml
from PIL import Image

from lookbench.schema import FEATURES


def png(colour, seed: int, size: int = 24) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = np.clip(np.array(colour, dtype=np.float32) + rng.normal(0, 12, (size, size, 3)), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def record(image: bytes, item_id: str, category: str, main: str, attrs: dict, day: int, outfit=None) -> dict:
    return {
        "image": {"bytes": image, "path": None},
        "item_id": item_id,
        "category": category,
        "main_attribute": main,
        "attributes": [{"name": k, "value": v} for k, v in attrs.items()],
        "bbox": None,
        "outfit_id": outfit,
        "timestamp": dt.datetime(2025, 1, day, tzinfo=dt.timezone.utc),
        "release": "v20250101",
        "source": "real",
        "raw_image": None,
    }


PRODUCTS = [  # (colour, category, main attribute, attributes)
    ((200, 30, 30), "top", "red", {"colour": "red", "sleeve": "long"}),
    ((30, 200, 30), "top", "green", {"colour": "green", "sleeve": "short"}),
    ((30, 30, 200), "dress", "blue", {"colour": "blue", "length": "midi"}),
    ((220, 220, 40), "skirt", "yellow", {"colour": "yellow", "length": "mini"}),
    ((40, 220, 220), "dress", "cyan", {"colour": "cyan", "length": "maxi"}),
    ((220, 40, 220), "bag", "magenta", {"colour": "magenta"}),
]


def tiny_release() -> dict:
    """config -> split -> rows. Shapes the tests rely on:

    - RealStudioFlat: 4 queries (days 1..4), gallery of the 6 products; query 0's image is also in its gallery
      (a self-match) and in the noise gallery (dedup across configs).
    - AIGen-Studio: 3 queries (days 5..7), gallery of 3 products.
    - noise: 4 distractors (one is the byte copy above).
    """
    flat_q = [record(png(PRODUCTS[i][0], 100 + i), f"p{i}", *PRODUCTS[i][1:], day=1 + i) for i in range(4)]
    flat_g = [record(png(PRODUCTS[i][0], 200 + i), f"p{i}", *PRODUCTS[i][1:], day=1) for i in range(6)]
    flat_g.append(dict(flat_q[0], item_id="p0-copy"))
    studio_q = [record(png(PRODUCTS[i][0], 300 + i), f"s{i}", *PRODUCTS[i][1:], day=5 + i) for i in range(3)]
    studio_g = [record(png(PRODUCTS[i][0], 400 + i), f"s{i}", *PRODUCTS[i][1:], day=1) for i in range(3)]
    noise = [record(png((120, 120, 120), 500 + i), f"n{i}", "top", "grey", {"colour": "grey"}, day=1) for i in range(3)]
    noise.append(dict(flat_q[0], item_id="n-copy"))
    return {
        "RealStudioFlat": {"query": flat_q, "gallery": flat_g},
        "AIGen-Studio": {"query": studio_q, "gallery": studio_g},
        "noise": {"gallery": noise},
    }


# The distinct images of tiny_release(): 11 + 6 subset images + 4 noise, minus the two byte copies of RealStudioFlat query 0
UNIQUE_IMAGES = 19


def scores(result: dict) -> dict:
    """A result dict without its provenance: what two runs of one evaluation must agree on."""
    return {k: v for k, v in result.items() if k != "provenance"}


def write_folder(out: Path, release: dict | None = None, texts: bool = False) -> Path:
    """DIR/<Config>/<split>-00000-of-00001.parquet + README.md with YAML `configs:`, like `lookbench build`; with
    ``texts`` also the text config of the queries' words, as the builder writes it (text_queries.text_split)."""
    from lookbench.dataset_builder.text_queries import TEXT_CONFIG, text_split
    from lookbench.schema import SUBSETS

    release = release or tiny_release()
    out.mkdir(parents=True, exist_ok=True)
    configs, text_files = [], []
    for config, splits in release.items():
        files = []
        for split, rows in splits.items():
            (out / config).mkdir(exist_ok=True)
            columns = {name: [r[name] for r in rows] for name in FEATURES}
            dataset = datasets.Dataset.from_dict(columns, features=FEATURES)
            dataset.to_parquet(str(out / config / f"{split}-00000-of-00001.parquet"))
            files.append({"split": split, "path": f"{config}/{split}-*"})
            if texts and split == "query":
                alias = SUBSETS[config].alias
                (out / TEXT_CONFIG).mkdir(exist_ok=True)
                text_split(dataset).to_parquet(str(out / TEXT_CONFIG / f"{alias}-00000-of-00001.parquet"))
                text_files.append({"split": alias, "path": f"{TEXT_CONFIG}/{alias}-*"})
        configs.append({"config_name": config, "data_files": files})
    if text_files:
        configs.append({"config_name": TEXT_CONFIG, "data_files": text_files})
    (out / "README.md").write_text("---\n" + yaml.safe_dump({"configs": configs}, sort_keys=False) + "---\n# tiny LookBench\n")
    return out


class CountingEncoder:
    """A user-style encoder object (the API's custom-model path) that counts its forward passes."""

    name = "counting-colour"
    revision = "1"

    def __init__(self, fail_after: int | None = None):
        self.images = 0
        self.calls = 0
        self.fail_after = fail_after

    def encode(self, images):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            import os
            import signal

            os.kill(os.getpid(), signal.SIGKILL)  # a real kill: nothing gets to clean up
        self.images += len(images)
        return np.stack([np.asarray(im.resize((4, 4)), dtype=np.float32).ravel() for im in images])


def graded_release() -> dict:
    """A release the colour encoders do *not* saturate: scores well inside (0, 100).

    Two subsets of 9 products each (6 queried); for half the queries the gallery holds a near-duplicate of the
    query image (same texture, shifted colour) with a different colour attribute, which outranks the true match;
    the noise gallery holds near-duplicates of other queries (some of another category) that interleave with the
    subset galleries, and one byte copy of a query (a self-match across configs).
    """
    rng = np.random.default_rng(7)
    categories, colours, sleeves = ("top", "dress", "skirt"), ("red", "green", "blue", "black"), ("long", "short")
    base = rng.integers(40, 215, (18, 3))

    def product(i: int, seed: int, shift: int = 0, colour: str | None = None, category: str | None = None, day=1):
        attrs = {"colour": colour or colours[i % 4], "sleeve": sleeves[(i // 3) % 2]}
        cat = category or categories[i % 3]
        return record(png(base[i] + shift, seed), f"p{i}", cat, attrs["colour"], attrs, day=day)

    release = {}
    for s, name in enumerate(("RealStudioFlat", "AIGen-Studio")):
        ids = range(9 * s, 9 * s + 9)
        queries = [product(i, 1000 + i, day=2) for i in ids][:6]
        gallery = [product(i, 2000 + i) for i in ids]
        for i in list(ids)[:6:2]:  # near-duplicates of queries 0, 2, 4: same texture, another colour attribute
            gallery.append(dict(product(i, 1000 + i, shift=6, colour=colours[(i + 1) % 4]), item_id=f"dup{i}"))
        release[name] = {"query": queries, "gallery": gallery}
    noise = [dict(product(i, 1000 + i, shift=-9, category=categories[(i + 1) % 3]), item_id=f"n{i}") for i in (1, 10, 12)]
    noise += [dict(product(i, 3000 + i, shift=20), item_id=f"n-far{i}") for i in range(0, 18, 4)]
    noise.append(dict(release["AIGen-Studio"]["query"][1], item_id="n-copy"))
    release["noise"] = {"gallery": noise}
    return release


class ShadeReader:
    """A two-tower toy: an image is its mean colour, a text its length (text queries over the tiny releases)."""

    name, revision = "shade-reader", "1"

    def encode(self, images):
        return np.stack([np.asarray(im, dtype=np.float32).reshape(-1, 3).mean(axis=0) for im in images])

    def encode_text(self, texts):
        return np.stack([[len(t), 1.0, 2.0] for t in texts]).astype(np.float32)
