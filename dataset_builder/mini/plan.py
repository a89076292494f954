"""What LookBench-Mini generates: products, their views and outfits, releases, and the ground-truth rules.

Why a module of its own: every ground-truth promise of the package docstring (the noise partition, the
hard negatives, train/test disjointness, the release time stamps) is made here and nowhere else, so it can
be reviewed without reading any drawing code. A plan is a list of ``Task`` objects per config and split;
the same seed gives the same plan, and each task carries its own seed, so rendering order cannot change a
pixel (docs/architecture.md §4 is the format of the rows it yields).
"""
from __future__ import annotations

import datetime as dt
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lookbench.schema import NOISE, SUBSETS, SYNTHETIC, TEST_SUBSETS
from lookbench.dataset_builder.taxonomy import Taxonomy, load as load_taxonomy

TAXONOMY_PATH = Path(__file__).parent.parent / "mini_taxonomy.json"
MINI_TAXONOMY: Taxonomy = load_taxonomy(TAXONOMY_PATH)  # the file every Mini release ships (taxonomy.FILE_NAME)
TAXONOMY: dict[str, dict[str, list[str]]] = MINI_TAXONOMY.values()
MAIN_ATTRIBUTE = "color"

# Test releases (name -> snapshot date); rows are time-stamped up to 120 days before their snapshot. Named mini-v…, so
# that no synthetic release reads as a real LookBench snapshot (v20251201 is one).
RELEASES: dict[str, dt.datetime] = {
    "mini-v20240601": dt.datetime(2024, 6, 1, tzinfo=dt.timezone.utc),
    "mini-v20250101": dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc),
    "mini-v20251201": dt.datetime(2025, 12, 1, tzinfo=dt.timezone.utc),
}
RELEASE_WEIGHTS = (0.3, 0.3, 0.4)
TRAIN_RELEASE = ("mini-v20240101", dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))
CRAWL_WINDOW_S = 120 * 86400

# What a seed generates, versioned: bump it when the output of a seed changes (rows, names, pixels). The embedded
# LookBench-Mini is built once into a folder keyed by it, so a change never leaves an earlier build in use.
GENERATION = 3  # 2: every row's source is "synthetic" and releases are mini-v<YYYYMMDD>; 3: the queries in words (a text config)

# Default sizes at scale=1; ``scale`` multiplies every count.
STUDIO_QUERIES = 70
STREET_OUTFITS = 24
NOISE_ROWS = 500
TRAIN_ITEMS = 650

PREFIX = {"RealStudioFlat": "rsf", "AIGen-Studio": "ags", "RealStreetLook": "rsl", "AIGen-StreetLook": "asl", NOISE: "noi"}
TRAIN_PREFIX = "trn"
STREAMS = {"test": 0x7E57, "train": 0x7EA1}  # distinct seed streams for the test release and the training set

# How a figure is dressed: one base template plus accessories.
_TEMPLATES = (("tops", "trousers"), ("tops", "skirts"), ("dresses",), ("outerwear", "trousers"))
_EXTRAS = ("shoes", "bags", "hats")
# Chance that a gallery view of a test subset is a styled studio shot rather than a flat-lay.
_P_STUDIO_GALLERY = {"RealStudioFlat": 0.0, "AIGen-Studio": 0.5, "RealStreetLook": 0.4, "AIGen-StreetLook": 0.6}


@dataclass(frozen=True)
class Item:
    """One product: what the ground truth says, plus the product's own slight shade."""

    item_id: str
    category: str
    attrs: tuple[tuple[str, str], ...]
    shade: tuple[int, int, int]

    @property
    def a(self) -> dict[str, str]:
        return dict(self.attrs)


@dataclass(frozen=True)
class Task:
    """One picture to render and the rows it yields (their image paths are filled in when the file is written).

    ``kind`` says what the picture is: ``"view"``, a product photo of ``items[0]`` in ``style`` "flat" or
    "studio"; ``"outfit"``, a street look of every item in ``items``, each one a query crop (one row per
    item); ``"crop"``, a training street look of which only the crop of ``items[0]`` is kept (one row). For
    street looks ``style`` is the backdrop, "real" or "aigen". ``seed`` seeds the task's own generator.
    """

    kind: str
    items: tuple[Item, ...]
    style: str
    seed: int
    rows: tuple[dict, ...]


def _is_noise_combo(category: str, attrs) -> bool:
    """A fixed quarter of all attribute sets is reserved for ``noise``, so soft negatives never match a query."""
    key = category + "|" + "|".join(f"{n}={v}" for n, v in attrs)
    return zlib.crc32(key.encode()) % 4 == 0


def outfit_categories(rng: np.random.Generator, n: int, must: str | None = None) -> list[str]:
    """2–4 categories that dress one figure (one template plus accessories), optionally containing ``must``."""
    templates = [t for t in _TEMPLATES if must is None or must in t or must in _EXTRAS]
    base = list(templates[rng.integers(len(templates))])
    extras = [c for c in _EXTRAS if c not in base]
    if must in _EXTRAS:
        base.append(must)
        extras.remove(must)
    k = max(0, min(n - len(base), len(extras)))
    base += [extras[i] for i in sorted(rng.choice(len(extras), size=k, replace=False))]
    return base


class _Ids:
    """Product ids of one stream: ``<prefix>-<serial>``; distinct prefixes keep streams disjoint."""

    def __init__(self, prefix: str):
        self.prefix, self.n = prefix, 0

    def __call__(self) -> str:
        self.n += 1
        return f"{self.prefix}-{self.n:06d}"


def _random_attrs(rng, category: str):
    return tuple((name, values[int(rng.integers(len(values)))]) for name, values in TAXONOMY[category].items())


def _new_item(rng, ids, category: str, attrs=None, *, pool: str | None = None) -> Item:
    """A new product; ``pool`` = "query" or "noise" restricts its attribute set to that side of the partition."""
    while attrs is None:
        attrs = _random_attrs(rng, category)
        if pool is not None and _is_noise_combo(category, attrs) != (pool == "noise"):
            attrs = None
    return Item(ids() if ids else "", category, attrs, tuple(int(v) for v in rng.integers(-8, 9, 3)))


def _random_category(rng) -> str:
    return list(TAXONOMY)[int(rng.integers(len(TAXONOMY)))]


def _hard_negative(rng, ids, item: Item) -> Item:
    """Same category, one or two attributes changed: looks close, is not a match."""
    attrs = dict(item.attrs)
    names = list(attrs)
    for i in rng.choice(len(names), size=1 if rng.uniform() < 0.6 else 2, replace=False):
        values = [v for v in TAXONOMY[item.category][names[i]] if v != attrs[names[i]]]
        attrs[names[i]] = values[int(rng.integers(len(values)))]
    return _new_item(rng, ids, item.category, tuple(attrs.items()))


def _row(item: Item, rng, release: str, snapshot: dt.datetime) -> dict:
    """A docs/architecture.md §4 record without its image path (filled in when the file name is known); its source
    is ``synthetic`` whichever subset it stands in for."""
    stamp = snapshot - dt.timedelta(seconds=int(rng.integers(3600, CRAWL_WINDOW_S)))
    return {
        "item_id": item.item_id, "image": None, "category": item.category, "main_attribute": item.a[MAIN_ATTRIBUTE],
        "attributes": dict(item.attrs), "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"), "release": release,
        "source": SYNTHETIC,
    }


def _view(rng, item: Item, style: str, release: str, snapshot: dt.datetime) -> Task:
    """A test product photo (its seed is drawn before its row: the order of draws fixes the files)."""
    return Task("view", (item,), style, int(rng.integers(2**63)), (_row(item, rng, release, snapshot),))


def _count(base: int, scale: float) -> int:
    return max(1, round(base * scale))


def _pick_release(rng) -> tuple[str, dt.datetime]:
    name = list(RELEASES)[int(rng.choice(len(RELEASES), p=RELEASE_WEIGHTS))]
    return name, RELEASES[name]


def plan_test(seed: int, scale: float, noise_scale: float = 1.0) -> dict[str, dict[str, list[Task]]]:
    """Every task of the five test configs, in file order: {subset: {split: [task, ...]}}.

    Each subset and the noise draw from their own seed stream, so ``noise_scale`` grows the distractors
    without changing a subset.
    """
    plan = {name: _test_subset(np.random.default_rng([seed, STREAMS["test"], si]), name, scale)
            for si, name in enumerate(TEST_SUBSETS)}
    rng = np.random.default_rng([seed, STREAMS["test"], len(TEST_SUBSETS)])
    ids, noise = _Ids(PREFIX[NOISE]), []
    for _ in range(_count(NOISE_ROWS, scale * noise_scale)):
        release, snapshot = _pick_release(rng)
        item = _new_item(rng, ids, _random_category(rng), pool="noise")
        style = "studio" if rng.uniform() < 0.4 else "flat"
        noise.append(_view(rng, item, style, release, snapshot))
    plan[NOISE] = {"gallery": noise}
    return plan


def _test_subset(rng, name: str, scale: float) -> dict[str, list[Task]]:
    """A subset's queries, then per query item 1–2 other views of it and 1–3 hard negatives, shuffled."""
    ids = _Ids(PREFIX[name])
    queries = (_street_queries if SUBSETS[name].multi_item else _studio_queries)(rng, ids, name, scale)
    gallery = []
    for task in queries:
        for item, row in zip(task.items, task.rows):
            release = row["release"]
            views = [item] * int(rng.integers(1, 3)) + [_hard_negative(rng, ids, item) for _ in range(int(rng.integers(1, 4)))]
            for it in views:
                style = "studio" if rng.uniform() < _P_STUDIO_GALLERY[name] else "flat"
                gallery.append(_view(rng, it, style, release, RELEASES[release]))
    return {"query": queries, "gallery": [gallery[i] for i in rng.permutation(len(gallery))]}


def _studio_queries(rng, ids: _Ids, name: str, scale: float) -> list[Task]:
    style = "flat" if name == "RealStudioFlat" else "studio"
    tasks = []
    for _ in range(_count(STUDIO_QUERIES, scale)):
        release, snapshot = _pick_release(rng)
        item = _new_item(rng, ids, _random_category(rng), pool="query")
        tasks.append(_view(rng, item, style, release, snapshot))
    return tasks


def _street_queries(rng, ids: _Ids, name: str, scale: float) -> list[Task]:
    """Outfits of 2–4 query items; every item is one query row (a crop of the outfit photo)."""
    backdrop, tasks = SUBSETS[name].source, []  # the street drawn as the subset's kind: a photo's or an AI image's
    for o in range(_count(STREET_OUTFITS, scale)):
        release, snapshot = _pick_release(rng)
        cats = outfit_categories(rng, int(rng.choice([2, 3, 4], p=[0.3, 0.4, 0.3])))
        items = tuple(_new_item(rng, ids, c, pool="query") for c in cats)
        outfit = {"outfit_id": f"{PREFIX[name]}-o{o + 1:05d}"}
        rows = tuple(_row(it, rng, release, snapshot) | outfit for it in items)
        tasks.append(Task("outfit", items, backdrop, int(rng.integers(2**63)), rows))
    return tasks


def plan_train(seed: int, scale: float) -> dict[str, dict[str, list[Task]]]:
    """Training products (prefix ``trn-``, own seed stream), each shown in 2–4 views: flat, studio or street crop."""
    rng = np.random.default_rng([seed, STREAMS["train"], 0])
    ids, tasks = _Ids(TRAIN_PREFIX), []
    release, snapshot = TRAIN_RELEASE
    for _ in range(_count(TRAIN_ITEMS, scale)):
        item = _new_item(rng, ids, _random_category(rng))
        for _ in range(int(rng.integers(2, 5))):
            style = ("flat", "studio", "street")[int(rng.choice(3, p=[0.35, 0.35, 0.3]))]
            row = _row(item, rng, release, snapshot)
            if style == "street":
                cats = outfit_categories(rng, int(rng.integers(2, 4)), must=item.category)
                others = tuple(_new_item(rng, None, c) for c in cats if c != item.category)
                backdrop = "aigen" if rng.uniform() < 0.5 else "real"
                tasks.append(Task("crop", (item,) + others, backdrop, int(rng.integers(2**63)), (row,)))
            else:
                tasks.append(Task("view", (item,), style, int(rng.integers(2**63)), (row,)))
    return {"train": {"train": tasks}}
