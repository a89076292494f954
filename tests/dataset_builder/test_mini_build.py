"""LookBench-Mini through the real builder: the embedded default, its releases and its disjoint training set."""
import hashlib
import json

import datasets
import pytest

from lookbench.dataset_builder import build_release, default_mini_dir, ensure_default_mini
from lookbench.dataset_builder.mini.plan import GENERATION


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    root = tmp_path_factory.mktemp("mini")
    summary = build_release("mini", root / "lookbench", scale=0.25, seed=3, train_out=root / "train")
    return root, summary


def _digests(folder, config, split):
    ds = datasets.load_dataset(str(folder), config, split=split).cast_column("image", datasets.Image(decode=False))
    return ds["item_id"], {hashlib.sha256(r["bytes"]).hexdigest() for r in ds["image"]}


def test_mini_builds_all_configs_with_three_releases(mini):
    root, summary = mini
    assert list(summary.rows) == ["RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook", "noise"]
    assert all(splits.get("query", 1) > 0 and splits["gallery"] > 0 for splits in summary.rows.values())
    assert summary.releases == ["mini-v20240601", "mini-v20250101", "mini-v20251201"]
    assert summary.report.problems == [] and summary.report.warnings == []
    street = datasets.load_dataset(str(root / "lookbench"), "RealStreetLook", split="query")
    assert all(o for o in street["outfit_id"]) and all(len(b) == 4 for b in street["bbox"])
    sizes = {}
    for outfit in street["outfit_id"]:
        sizes[outfit] = sizes.get(outfit, 0) + 1
    assert set(sizes.values()) <= {1, 2, 3, 4} and max(sizes.values()) >= 2
    card = (root / "lookbench" / "README.md").read_text()
    assert "pretty_name: LookBench-Mini (synthetic)" in card and "lookbench build --source mini --scale 0.25 --seed 3" in card


def test_a_mini_build_ships_its_queries_in_words_row_by_row(mini):
    """Issue 39 item 1: the text config, one split per subset alias, row i the words of query row i."""
    from lookbench.dataset_builder.text_queries import record_text

    root, summary = mini
    for config, alias in (("RealStudioFlat", "real_studio_flat"), ("AIGen-Studio", "aigen_studio"),
                          ("RealStreetLook", "real_streetlook"), ("AIGen-StreetLook", "aigen_streetlook")):
        query = datasets.load_dataset(str(root / "lookbench"), config, split="query")
        text = datasets.load_dataset(str(root / "lookbench"), "text", split=alias)
        assert text["item_id"] == query["item_id"] and text["timestamp"] == query["timestamp"]
        assert text["text_short"] == [record_text(r, "short") for r in query.select_columns(["category", "attributes"])]
        assert text["text_long"][0].startswith(f"An item in the category {query[0]['category']} whose ")
    card = (root / "lookbench" / "README.md").read_text()
    first = datasets.load_dataset(str(root / "lookbench"), "text", split="real_streetlook")[0]
    assert f"| `RealStreetLook` | `real_streetlook` | `{first['item_id']}` | {first['text_short']} | {first['text_long']} |" in card
    assert "(`lookbench.dataset_builder.text_queries`, template version 1)" in card


def test_a_mini_build_says_synthetic_in_its_rows_releases_and_card(mini):
    """Rendered images never pass for real ones: every row's source, every release name, the card's tags, opening
    lines and subset table."""
    from huggingface_hub import DatasetCard

    root, summary = mini
    for config, splits in summary.rows.items():
        for split in splits:
            ds = datasets.load_dataset(str(root / "lookbench"), config, split=split)
            assert ds.unique("source") == ["synthetic"], (config, split)
            assert all(r.startswith("mini-v") for r in ds.unique("release")), (config, split)
    train = datasets.load_dataset(str(root / "train"), split="train")
    assert train.unique("source") == ["synthetic"] and train.unique("release") == ["mini-v20240101"]
    card = DatasetCard.load(root / "lookbench" / "README.md")
    assert "synthetic" in card.data.tags and card.data.pretty_name == "LookBench-Mini (synthetic)"
    title, opening = card.text.strip().split("\n\n")[:2]
    assert title == "# LookBench-Mini (synthetic)" and opening.startswith("**Synthetic data.**"), opening
    table = [line for line in card.text.split("## Release history")[0].splitlines() if line.startswith("| `")]
    assert len(table) == 5 and all("| synthetic, " in row and "| Synthetic stand-in for " in row for row in table), table
    assert "| Synthetic stand-in for real flat-lay product photos" in table[0]
    assert "synthetic" in DatasetCard.load(root / "train" / "README.md").data.tags


def test_training_set_is_disjoint_from_every_test_config(mini):
    root, summary = mini
    train = datasets.load_dataset(str(root / "train"), split="train")
    assert len(train) == summary.train_rows > 100
    train_ids, train_hashes = _digests(root / "train", "default", "train")
    for config, splits in summary.rows.items():
        for split in splits:
            ids, hashes = _digests(root / "lookbench", config, split)
            assert not set(ids) & set(train_ids), (config, split)
            assert not hashes & train_hashes, (config, split)
    assert json.loads((root / "train" / "validation_report.json").read_text())["num_skipped"] == 0


@pytest.mark.slow
def test_ensure_default_mini_builds_once_under_hf_home(tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HOME", str(tmp_path / "hf"))
    target = default_mini_dir()
    assert target == tmp_path / "hf" / "lookbench" / f"mini-{__import__('lookbench').__version__}-g{GENERATION}" / "lookbench"
    (target.parent / ".lookbench.building-0123456789ab" / "lookbench").mkdir(parents=True)  # a killed first build's
    assert ensure_default_mini() == target and (target / "RealStreetLook").is_dir()
    stamp = (target / "README.md").stat().st_mtime_ns
    assert ensure_default_mini() == target and (target / "README.md").stat().st_mtime_ns == stamp
    assert [p.name for p in target.parent.iterdir()] == ["lookbench"]  # no staging folder left behind


def test_noise_scale_grows_only_the_distractors(tmp_path):
    from lookbench.dataset_builder.mini import generate_raw_release

    base = generate_raw_release(tmp_path / "a", scale=0.05, seed=1, workers=1)
    grown = generate_raw_release(tmp_path / "b", scale=0.05, seed=1, workers=1, noise_scale=4)
    assert grown["noise"]["gallery"] == 4 * base["noise"]["gallery"]
    for config in ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook"):
        for split in ("query", "gallery"):
            assert (tmp_path / "a" / config / f"{split}.jsonl").read_bytes() == (tmp_path / "b" / config / f"{split}.jsonl").read_bytes()
    with pytest.raises(ValueError, match="noise_scale must be a positive number, got 0"):
        generate_raw_release(tmp_path / "c", scale=0.05, noise_scale=0)
