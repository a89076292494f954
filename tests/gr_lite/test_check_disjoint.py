"""check_disjoint: item ids and images a test folder shares with the training set, counted."""
from __future__ import annotations

import datasets

from lookbench.training.check_disjoint import main as check_main


def test_check_disjoint_counts_shared_item_ids_and_images(tmp_path, train_folder, capsys):
    ds = datasets.load_dataset(str(train_folder), split="train")
    overlapping, disjoint = tmp_path / "overlapping", tmp_path / "disjoint"
    overlapping.mkdir(), disjoint.mkdir()
    ds.select([0, 1, 40]).to_parquet(str(overlapping / "test-00000-of-00001.parquet"))  # ids top-red-0 (2 rows), top-green-4
    fresh = ds.select(range(3)).map(lambda row: {"item_id": "x-" + row["item_id"], "image": row["image"].rotate(90)})
    fresh.to_parquet(str(disjoint / "test-00000-of-00001.parquet"))
    assert check_main(["--train", str(train_folder), "--test", str(disjoint)]) == 0
    assert "shared with train: 0 item ids, 0 images" in capsys.readouterr().out
    assert check_main(["--train", str(train_folder), "--test", str(disjoint), str(overlapping)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"train {train_folder}: 96 rows, 48 item ids, 96 distinct images")
    assert out[2].endswith("3 rows, 2 item ids, 3 distinct images; shared with train: 2 item ids, 3 images (e.g. ['top-green-4', 'top-red-0'])")
