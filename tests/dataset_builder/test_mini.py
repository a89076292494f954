"""LookBench-Mini generator: schema of the raw release, ground truth, street looks, releases, determinism, train/test disjointness."""
import datetime as dt
import hashlib
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lookbench.dataset_builder import mini
from lookbench.dataset_builder.taxonomy import load as load_taxonomy
from lookbench.schema import NOISE, SUBSETS, TEST_SUBSETS

SCALE = 0.25
STREET = [s for s in TEST_SUBSETS if SUBSETS[s].multi_item]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pixels(path: Path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


def _combo(row) -> tuple:
    return row["category"], tuple(sorted(row["attributes"].items()))


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("mini")
    test_summary = mini.generate_raw_release(root, scale=SCALE, seed=0, split="test")
    train_summary = mini.generate_raw_release(root, scale=SCALE, seed=0, split="train")
    data = {
        (config, split): _rows(root / config / f"{split}.jsonl")
        for config, splits in (test_summary | train_summary).items()
        for split in splits
    }
    return root, test_summary, train_summary, data


def test_taxonomy_is_rich_and_written_as_json(tmp_path):
    assert len(mini.TAXONOMY) >= 8
    for category, attrs in mini.TAXONOMY.items():
        assert category == category.lower()
        assert len(attrs) >= 3, category
        assert "color" in attrs and all(len(values) >= 2 for values in attrs.values()), category
    for category, attrs in mini.TAXONOMY.items():  # both sides of the query/noise partition exist everywhere
        sides = {mini._is_noise_combo(category, combo)
                 for combo in itertools.product(*[[(n, v) for v in values] for n, values in attrs.items()])}
        assert sides == {True, False}, category
    path = mini.write_taxonomy(tmp_path / "sub" / "taxonomy.json")
    assert load_taxonomy(path) == mini.MINI_TAXONOMY and load_taxonomy(path).values() == mini.TAXONOMY
    assert {c.main_attribute for c in mini.MINI_TAXONOMY.categories.values()} == {mini.MAIN_ATTRIBUTE}


def test_every_attribute_value_is_visible_in_the_pixels():
    """Changing any single attribute of a product changes at least ~50 pixels of its 128-px render."""
    for category, attrs in mini.TAXONOMY.items():
        base = {name: values[0] for name, values in attrs.items()}
        for name, values in attrs.items():
            renders = []
            for value in values:
                item = mini.Item("x", category, tuple((base | {name: value}).items()), (0, 0, 0))
                renders.append(np.asarray(mini.render_garment(item), np.int16))
            for (i, a), (j, b) in itertools.combinations(enumerate(renders), 2):
                changed = int((np.abs(a - b).max(axis=2) > 40).sum())
                assert changed >= 200, f"{category}.{name}: {values[i]!r} vs {values[j]!r} differ in only {changed} px"


def test_summary_counts_match_the_files_and_the_default_sizes(release):
    root, test_summary, train_summary, data = release
    assert set(test_summary) == set(TEST_SUBSETS) | {NOISE}
    assert test_summary[NOISE] == {"gallery": len(data[NOISE, "gallery"])} and len(data[NOISE, "gallery"]) == 125
    for subset in TEST_SUBSETS:
        assert test_summary[subset] == {split: len(data[subset, split]) for split in ("query", "gallery")}
        queries, gallery = test_summary[subset]["query"], test_summary[subset]["gallery"]
        assert 12 <= queries <= 26, (subset, queries)
        assert 2 * queries <= gallery <= 5 * queries, (subset, gallery)
    assert train_summary == {"train": {"train": len(data["train", "train"])}}
    assert 325 <= train_summary["train"]["train"] <= 650


def test_every_row_follows_the_raw_release_schema(release):
    root, _, _, data = release
    test_releases = {name: when for name, when in mini.RELEASES.items()}
    for (config, split), rows in data.items():
        for n, row in enumerate(rows):
            where = f"{config}/{split} row {n} ({row.get('item_id')})"
            street = config in STREET and split == "query"
            expected = {"item_id", "image", "category", "main_attribute", "attributes", "timestamp", "release", "source"}
            assert set(row) == expected | ({"bbox", "outfit_id", "raw_image"} if street else set()), where
            assert isinstance(row["item_id"], str) and row["item_id"], where
            assert set(row["attributes"]) == set(mini.TAXONOMY[row["category"]]), where
            assert all(v in mini.TAXONOMY[row["category"]][k] for k, v in row["attributes"].items()), where
            assert row["main_attribute"] == row["attributes"]["color"], where
            assert row["timestamp"].endswith("Z"), where
            stamp = dt.datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00"))
            snapshot = mini.TRAIN_RELEASE[1] if config == "train" else test_releases[row["release"]]
            assert snapshot - dt.timedelta(days=121) < stamp < snapshot, where
            assert row["source"] == "synthetic" and row["release"].startswith("mini-v"), where  # never passes for real data
            if config == "train":
                assert row["release"] == mini.TRAIN_RELEASE[0], where
            image = root / config / row["image"]
            with Image.open(image) as im:
                assert im.format == "PNG" and im.mode == "RGB", where
                if not street and config != "train":
                    assert im.size == (mini.ITEM_PX, mini.ITEM_PX), where


def test_street_looks_group_two_to_four_occluding_items_with_exact_crops(release):
    root, _, _, data = release
    for subset in STREET:
        outfits = {}
        for row in data[subset, "query"]:
            outfits.setdefault(row["outfit_id"], []).append(row)
        assert len(outfits) >= 5
        overlapping = 0
        for outfit_id, rows in outfits.items():
            assert 2 <= len(rows) <= 4, outfit_id
            assert len({r["raw_image"] for r in rows}) == 1 and len({r["release"] for r in rows}) == 1, outfit_id
            assert len({r["category"] for r in rows}) == len(rows), outfit_id
            raw = _pixels(root / subset / rows[0]["raw_image"])
            assert raw.shape == (mini.RAW_PX, mini.RAW_PX, 3)
            for r in rows:
                x0, y0, x1, y1 = r["bbox"]
                assert 0 <= x0 < x1 <= raw.shape[1] and 0 <= y0 < y1 <= raw.shape[0], (outfit_id, r["bbox"])
                assert np.array_equal(_pixels(root / subset / r["image"]), raw[y0:y1, x0:x1]), (outfit_id, r["item_id"])
            boxes = [r["bbox"] for r in rows]
            overlapping += any(min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])
                               for a, b in itertools.combinations(boxes, 2))
        assert overlapping >= len(outfits) * 0.8, f"{subset}: only {overlapping}/{len(outfits)} outfits overlap"


def test_releases_span_2024_to_2026_so_a_cutoff_changes_the_benchmark(release):
    _, _, _, data = release
    for subset in TEST_SUBSETS:
        queries = data[subset, "query"]
        assert len({r["release"] for r in queries}) >= 3, subset
        after = [r for r in queries if r["timestamp"] > "2025-01-01"]
        assert 0 < len(after) < len(queries), subset
        assert all("2024" <= r["timestamp"] < "2026" for r in queries + data[subset, "gallery"]), subset


def test_each_query_has_a_true_match_in_another_view_and_hard_negatives(release):
    root, _, _, data = release
    for subset in TEST_SUBSETS:
        gallery = data[subset, "gallery"]
        gallery_hashes = {_sha(root / subset / g["image"]) for g in gallery}
        for q in data[subset, "query"]:
            matches = [g for g in gallery if _combo(g) == _combo(q)]
            assert any(g["item_id"] == q["item_id"] and g["release"] == q["release"] for g in matches), (subset, q["item_id"])
            assert _sha(root / subset / q["image"]) not in gallery_hashes, (subset, q["item_id"])
            differing = [sum(g["attributes"][k] != v for k, v in q["attributes"].items())
                         for g in gallery if g["category"] == q["category"] and _combo(g) != _combo(q)]
            assert any(1 <= d <= 2 for d in differing), (subset, q["item_id"])
        assert len(gallery_hashes) == len(gallery), subset


def test_noise_is_soft_negatives_over_all_categories(release):
    _, _, _, data = release
    query_combos = {_combo(q) for s in TEST_SUBSETS for q in data[s, "query"]}
    noise = data[NOISE, "gallery"]
    assert {r["category"] for r in noise} == set(mini.TAXONOMY)
    assert not {_combo(r) for r in noise} & query_combos
    assert len({r["release"] for r in noise}) == 3


def test_training_set_is_disjoint_from_every_test_config(release):
    root, _, _, data = release
    train = data["train", "train"]
    test_rows = [(c, r) for (c, s), rows in data.items() if c != "train" for r in rows]
    assert not {r["item_id"] for r in train} & {r["item_id"] for _, r in test_rows}
    train_files = [root / "train" / r["image"] for r in train]
    test_files = [root / c / r["image"] for c, r in test_rows]
    test_files += [root / c / r["raw_image"] for c, r in test_rows if "raw_image" in r]
    assert not {_sha(p) for p in train_files} & {_sha(p) for p in test_files}
    pixel_hashes = lambda files: {hashlib.sha256(_pixels(p).tobytes()).hexdigest() for p in files}  # noqa: E731
    assert not pixel_hashes(train_files) & pixel_hashes(test_files)
    views = {}
    for r in train:
        views.setdefault(r["item_id"], []).append(r)
    assert all(2 <= len(v) <= 4 and len({_combo(r) for r in v}) == 1 for v in views.values())
    assert max(r["timestamp"] for r in train) < min(r["timestamp"] for _, r in test_rows)


def test_same_seed_is_byte_identical_whatever_the_workers_and_another_seed_differs(tmp_path):
    one = mini.generate_raw_release(tmp_path / "a", scale=0.06, seed=0, workers=1)
    two = mini.generate_raw_release(tmp_path / "b", scale=0.06, seed=0, workers=2)
    assert one == two
    tree_a, tree_b = _tree(tmp_path / "a"), _tree(tmp_path / "b")
    assert len(tree_a) > 80 and tree_a == tree_b
    mini.generate_raw_release(tmp_path / "c", scale=0.06, seed=1)
    tree_c = _tree(tmp_path / "c")
    assert tree_c["RealStreetLook/query.jsonl"] != tree_a["RealStreetLook/query.jsonl"]
    assert tree_a["taxonomy.json"] == tree_c["taxonomy.json"]  # one taxonomy whatever the seed
    shared = set(tree_a) & set(tree_c) - {"taxonomy.json"}
    assert sum(tree_a[p] == tree_c[p] for p in shared) == 0


def test_bad_arguments_and_a_used_folder_are_refused(tmp_path):
    with pytest.raises(ValueError, match="split must be 'test' or 'train', got 'val'"):
        mini.generate_raw_release(tmp_path, split="val")
    with pytest.raises(ValueError, match="scale must be a positive number"):
        mini.generate_raw_release(tmp_path, scale=0)
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        mini.generate_raw_release(tmp_path, seed=-1)
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "old.txt").write_text("x")
    with pytest.raises(FileExistsError, match="train already exists and is not empty"):
        mini.generate_raw_release(tmp_path, scale=0.01, split="train")
