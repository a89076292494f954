"""LookBench-Mini: a deterministic procedural generator of fashion images with known ground truth.

Why: the benchmark, its metric, the trained GR-Lite-mini and the Space need real images whose category and
full attribute set are known exactly, with no third-party photo and no network. ``plan`` decides what is
generated (products, views, outfits, releases), ``render`` draws garment silhouettes with PIL (a T-shirt
whose sleeves follow ``sleeve_length``, trousers whose legs follow ``leg_length`` and ``fit`` ...) filled
with the annotated colour and pattern, and ``write`` saves a raw release folder in the format of
docs/architecture.md §4 that the LookBench builder reads like any crawl.

Ground-truth rules (documented once, here; ``plan`` implements them):
- an *item* (one ``item_id``) is one product: a category plus a full attribute set from ``TAXONOMY``, plus a
  small per-product shade offset. Every attribute changes the pixels of the canonical render.
- ``main_attribute`` is always the item's ``color`` value: colour is the one attribute every category
  carries and the most salient one at thumbnail size (leaderboard mode = same category and colour).
- every query has at least one gallery row of the same item (same category and full attribute set) drawn
  as a *different view* (scale, rotation, flip, background, lighting), never the identical image, plus
  same-category hard negatives that differ in one or two attributes. The query, its true matches and its
  hard negatives share one release.
- ``noise`` holds soft negatives: any category, attribute sets from a fixed quarter of the attribute space
  that no test query may draw from (``_is_noise_combo``), so they never match a query, at any scale.
- the training set (``split="train"``) uses the item-id prefix ``trn-`` (test prefixes: ``rsf-``, ``ags-``,
  ``rsl-``, ``asl-``, ``noi-``), so no item id is shared, and its own seed stream: every image is drawn
  from its own continuous view parameters (offset, scale, angle, background, light), so no image repeats
  across the two streams (the tests check content hashes). Its rows are time-stamped in release
  ``mini-v20240101``, before every test release, so a model trained on it is evaluated only on later data.
- every row's ``source`` is ``synthetic`` and every release is named ``mini-v<YYYYMMDD>`` (test releases
  ``mini-v20240601``, ``mini-v20250101``, ``mini-v20251201``): rendered images never pass for real ones, and no
  synthetic release for a real LookBench snapshot.
- sizes at ``scale=1``: about 70 queries and 250 gallery rows per test subset, 500 noise rows, ~1900 training
  images; ``scale`` multiplies every count (a subset's corpus, gallery + noise, is about 750·scale rows).
"""
from lookbench.dataset_builder.mini.plan import (
    MAIN_ATTRIBUTE,
    MINI_TAXONOMY,
    RELEASES,
    TAXONOMY,
    TAXONOMY_PATH,
    TRAIN_RELEASE,
    Item,
    Task,
    _is_noise_combo,
    outfit_categories,
    plan_test,
    plan_train,
)
from lookbench.dataset_builder.mini.garments import ITEM_PX, RAW_PX, render_garment
from lookbench.dataset_builder.mini.render import render_outfit, render_view
from lookbench.dataset_builder.mini.write import generate_raw_release, write_taxonomy

__all__ = [
    "MAIN_ATTRIBUTE", "MINI_TAXONOMY", "RELEASES", "TAXONOMY", "TAXONOMY_PATH", "TRAIN_RELEASE", "Item", "Task", "outfit_categories",
    "plan_test", "plan_train", "ITEM_PX", "RAW_PX", "render_garment", "render_outfit", "render_view",
    "generate_raw_release", "write_taxonomy",
]
