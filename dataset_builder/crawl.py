"""A crawl folder made from data whose labels are known, with the labels kept aside: what `lookbench annotate` is
measured and tested on.

Why: a proposer's accuracy means something only against the truth, and a fresh crawl has none. LookBench-Mini
(every attribute exact) and Fashion-MNIST (real photos: the class, and the shade read from the pixels) give the
truth; this module writes their images and item fields as a crawl (docs/architecture.md §4, "Crawl folder") and
the labels into a separate truth file outside the crawl, so nothing that reads the crawl can see them::

    <out>/crawl/items.jsonl       one object per image: image, item_id, timestamp, subset, split, and optionally
                                  bbox, outfit_id, raw_image (the street photo a bbox points into), title,
                                  description, shop_category
    <out>/crawl/images/...
    <out>/truth.jsonl             per crawl image: image, category, main_attribute, attributes (name -> value)
    <out>/taxonomy.json           the source's taxonomy (dataset_builder/taxonomy.py)

Mini items get a shop-style ``title`` ("red top": the category and the main attribute in words, as shops name a
product) so the ``metadata`` proposer has text to read; Fashion-MNIST has no text, as its photos came.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from lookbench.errors import report_errors
from lookbench.files import folder_lock, replace_folder
from lookbench.schema import SUBSETS

from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE

CRAWL = "crawl"
ITEMS = "items.jsonl"
MAX_TEXT = 4096  # characters of any one text field of an item (docs/publishing.md): annotate skips a longer one
TRUTH = "truth.jsonl"
SOURCES = ("mini", "fashion-mnist")
LABELS = ("category", "main_attribute", "attributes")


def _jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as file:
        for row in rows:
            file.write(json.dumps(row, ensure_ascii=False) + "\n")


def _mini(staged: Path, scale: float, seed: int, limit: int | None):
    """(items, truth, taxonomy) of a LookBench-Mini test release rendered into ``staged``."""
    from lookbench.dataset_builder.mini import MINI_TAXONOMY, generate_raw_release
    from lookbench.dataset_builder.text_queries import query_text

    raw = staged / "raw"
    generate_raw_release(raw, scale=scale, seed=seed, split="test")
    items, truth = [], []
    for config, subset in SUBSETS.items():
        for split in subset.splits:
            rows = [json.loads(line) for line in (raw / config / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]
            for row in rows[:limit]:
                image = _move(raw / config / row["image"], staged / CRAWL, f"images/{config}/{row['image'].removeprefix('images/')}")
                item = {"image": image, "item_id": row["item_id"], "timestamp": row["timestamp"], "subset": config,
                        "split": split, "title": query_text(row["category"], {"color": row["main_attribute"]})}
                for key in ("bbox", "outfit_id"):
                    if row.get(key) is not None:
                        item[key] = row[key]
                if row.get("raw_image"):
                    item["raw_image"] = _move(raw / config / row["raw_image"], staged / CRAWL,
                                              f"images/{config}/{row['raw_image'].removeprefix('images/')}")
                items.append(item)
                truth.append({"image": image, **{key: row[key] for key in LABELS}})
    shutil.rmtree(raw)
    return items, truth, MINI_TAXONOMY


def _move(source: Path, crawl: Path, relative: str) -> str:
    target = crawl / relative
    if not target.exists():  # a street photo is shared by the crops of one look
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return relative


def _fashion_mnist(staged: Path, input_path, limit: int | None):
    """(items, truth, taxonomy) of Fashion-MNIST's t10k release (the first ``limit`` rows of each split)."""
    from lookbench.dataset_builder.fashion_mnist import CONFIG, TAXONOMY, FashionMnistSource

    source = FashionMnistSource(input_path)
    items, truth = [], []
    for split in SUBSETS[CONFIG].splits:
        for n, row in enumerate(source.iter_rows(CONFIG, split)):
            if limit is not None and n >= limit:
                break
            image = f"images/{CONFIG}/{split}/{row['item_id']}.png"
            (staged / CRAWL / image).parent.mkdir(parents=True, exist_ok=True)
            (staged / CRAWL / image).write_bytes(row["image"]["bytes"])
            items.append({"image": image, "item_id": row["item_id"], "timestamp": row["timestamp"].strftime("%Y-%m-%dT%H:%M:%SZ"),
                          "subset": CONFIG, "split": split})
            truth.append({"image": image, "category": row["category"], "main_attribute": row["main_attribute"],
                          "attributes": {a["name"]: a["value"] for a in row["attributes"]}})
    return items, truth, TAXONOMY


def write_crawl(source: str, out, *, scale: float = 0.3, seed: int = 0, limit: int | None = None, input_path=None) -> Path:
    """Write ``out/crawl`` (images + items.jsonl), ``out/truth.jsonl`` and ``out/taxonomy.json`` from ``source``
    (``mini``: a LookBench-Mini test release at ``scale``/``seed``; ``fashion-mnist``: its t10k release, from
    ``input_path`` or the Debian package). ``limit``: at most that many rows per subset split. Written beside ``out``
    and swapped in whole (``replace_folder``), under ``out``'s lock. Returns ``out``."""
    if source not in SOURCES:
        raise ValueError(f"crawl source {source!r}: expected {' or '.join(SOURCES)}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and (not out.is_dir() or any(p.name not in (CRAWL, TRUTH, TAXONOMY_FILE) for p in out.iterdir())):
        raise ValueError(f"{out} holds files no crawl writer wrote; give a new or empty folder")
    from lookbench.dataset_builder.export import staging_folder

    with folder_lock(out), staging_folder(out, "crawl") as staging:
        staged = staging / out.name
        (staged / CRAWL).mkdir(parents=True)
        if source == "mini":
            items, truth, taxonomy = _mini(staged, scale, seed, limit)
        else:
            items, truth, taxonomy = _fashion_mnist(staged, input_path, limit)
        _jsonl(staged / CRAWL / ITEMS, items)
        _jsonl(staged / TRUTH, truth)
        taxonomy.write(staged / TAXONOMY_FILE)
        replace_folder(staged, out)
    return out


def read_truth(path) -> dict[str, dict]:
    """image (the crawl's path) -> its labels, from a truth file."""
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["image"]: row for row in rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lookbench.dataset_builder.crawl", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", choices=SOURCES, required=True)
    parser.add_argument("--out", type=Path, required=True, help="folder for crawl/, truth.jsonl and taxonomy.json")
    parser.add_argument("--scale", type=float, default=0.3, help="LookBench-Mini size (1: ~1,500 images)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, help="at most this many rows per subset split")
    parser.add_argument("--input", type=Path, help="Fashion-MNIST's IDX folder (default: the Debian package's)")
    args = parser.parse_args(argv)

    def run():
        out = write_crawl(args.source, args.out, scale=args.scale, seed=args.seed, limit=args.limit, input_path=args.input)
        print(f"Wrote {out / CRAWL} ({sum(1 for _ in open(out / CRAWL / ITEMS))} items); labels kept aside in {out / TRUTH}")

    return report_errors("crawl", run)


if __name__ == "__main__":
    raise SystemExit(main())
