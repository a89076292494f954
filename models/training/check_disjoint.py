"""Check that a training set shares no product and no image with test releases (docs/architecture.md §1).

A model evaluated on images it was trained on measures memory, not retrieval. This reads every config and
split of each test folder written by `lookbench build` and compares item ids and the sha256 of the stored
image bytes (`image` and `raw_image`) with the training set's; it prints one line per test folder and exits
non-zero on any overlap. Any build folder is a test release, the real-photo one too (`lookbench build --source
fashion-mnist`: its t10k photos against the train split the `--train-out` folder holds).

    python -m lookbench.training.check_disjoint --train TRAIN_DIR [TRAIN_DIR ...] --test TEST_DIR [TEST_DIR ...]
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import datasets

from lookbench.errors import report_errors


def fingerprints(ds: datasets.Dataset) -> tuple[set[str], set[str]]:
    """The item ids and the sha256 of every stored image (image and, where present, raw_image) of a split."""
    columns = [c for c in ("image", "raw_image") if c in ds.column_names]
    raw = ds.select_columns(["item_id", *columns])
    for column in columns:
        raw = raw.cast_column(column, datasets.Image(decode=False))
    ids, hashes = set(), set()
    for row in raw:
        ids.add(row["item_id"])
        hashes.update(hashlib.sha256(row[c]["bytes"]).hexdigest() for c in columns if row[c] is not None)
    return ids, hashes


def folder_fingerprints(folder: Path) -> tuple[set[str], set[str], int]:
    """Item ids, image hashes and row count over every config and split of a `lookbench build` folder."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} does not exist (expected a folder written by `lookbench build`).")
    ids, hashes, rows = set(), set(), 0
    configs = datasets.get_dataset_config_names(str(folder))
    for config in configs:
        for ds in datasets.load_dataset(str(folder), config).values():
            more_ids, more_hashes = fingerprints(ds)
            ids |= more_ids
            hashes |= more_hashes
            rows += len(ds)
    return ids, hashes, rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train", type=Path, nargs="+", required=True,
                   help="the training set folder(s) (`lookbench build ... --train-out`), e.g. Mini train and Fashion-MNIST train")
    p.add_argument("--test", type=Path, nargs="+", required=True, help="test release folders (`lookbench build ... --out`)")
    args = p.parse_args(argv)
    train_ids, train_hashes = set(), set()
    for train in args.train:
        ids, hashes, rows = folder_fingerprints(train)
        train_ids |= ids
        train_hashes |= hashes
        print(f"train {train}: {rows} rows, {len(ids)} item ids, {len(hashes)} distinct images")
    overlaps = 0
    for test in args.test:
        ids, hashes, rows = folder_fingerprints(test)
        shared_ids, shared_images = train_ids & ids, train_hashes & hashes
        overlaps += len(shared_ids) + len(shared_images)
        print(f"test {test}: {rows} rows, {len(ids)} item ids, {len(hashes)} distinct images; "
              f"shared with train: {len(shared_ids)} item ids, {len(shared_images)} images"
              + (f" (e.g. {sorted(shared_ids)[:3]})" if shared_ids else ""))
    return 1 if overlaps else 0


if __name__ == "__main__":
    sys.exit(report_errors("check_disjoint", main))
