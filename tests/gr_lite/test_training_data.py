"""training_data: ArcFace classes and attribute targets from the annotations, several training sets with their
per-set flags, repeated rows augmented apart, and the checks on what a run reads."""
from __future__ import annotations

import datasets
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lookbench.models.gr_lite import GrLiteConfig, processor_for
from lookbench.training.holdout import SINGLE_QUERY_SHARE
from lookbench.training.train_gr_lite import build_learner, parse_args
from lookbench.training.training_data import (
    Augment, TrainData, TrainImages, build_labels, class_key, image_hashes, save_teacher_features,
)
from tests.helpers.gr_lite import COLOURS


def test_class_key_is_category_plus_attribute_set():
    a = [{"name": "colour", "value": "red"}, {"name": "fit", "value": "slim"}]
    assert class_key("top", a) == class_key("top", a[::-1]) == "top|colour=red;fit=slim"
    assert class_key("top", a) != class_key("skirt", a) != class_key("top", a[:1])


def test_build_labels_gives_arcface_classes_and_per_attribute_targets():
    rows = {
        "image": [None] * 3,
        "category": ["tops", "shoes", "tops"],
        "attributes": [
            [{"name": "color", "value": "red"}, {"name": "sleeve", "value": "long"}],
            [{"name": "color", "value": "blue"}],
            [{"name": "sleeve", "value": "long"}, {"name": "color", "value": "red"}],
        ],
    }
    labels, classes, facets, vocab = build_labels(datasets.Dataset.from_dict(rows))
    assert classes == ["shoes|color=blue", "tops|color=red;sleeve=long"] and labels == [1, 0, 1]
    assert vocab == {"category": ["shoes", "tops"], "color": ["blue", "red"], "sleeve": ["long"]}
    assert facets.tolist() == [[1, 1, 0], [0, 0, -100], [1, 1, 0]]


def test_arcface_classes_per_training_set(tmp_path, train_folder, single_view_folder):
    rows = {"image": [None] * 3, "category": ["tops", "tops", "shoes"],
            "attributes": [[{"name": "color", "value": "red"}], [{"name": "color", "value": "blue"}], [{"name": "color", "value": "red"}]]}
    labels, classes, facets, _ = build_labels(datasets.Dataset.from_dict(rows), by_category=[True, True, False])
    assert classes == ["shoes|color=red", "tops|"] and labels == [1, 1, 0]
    assert facets.tolist() == [[1, 1], [1, 0], [0, 1]]  # the colour head still tells the two tops apart

    common = ["--data", str(train_folder), str(single_view_folder), "--output", "o"]
    full = TrainData.load(parse_args(common))
    coarse = TrainData.load(parse_args([*common, "--arcface-classes", "attributes", "category"]))
    assert sorted(c for c in full.classes if c.startswith("dress")) == [f"dress|colour={c};fit=regular" for c in sorted(COLOURS)]
    assert [c for c in coarse.classes if c.startswith("dress")] == ["dress|"]
    assert [c for c in coarse.classes if not c.startswith("dress")] == [c for c in full.classes if not c.startswith("dress")]
    dress = np.array(coarse.ds["category"]) == "dress"
    assert {coarse.classes[i] for i in np.array(coarse.labels)[dress]} == {"dress|"}
    assert coarse.vocab == full.vocab and (coarse.facet_labels == full.facet_labels).all()
    everything = TrainData.load(parse_args([*common, "--arcface-classes", "category"]))
    assert everything.classes == ["dress|", "skirt|", "top|"]
    for bad in (["--arcface-classes", "category", "category", "category"], ["--arcface-classes", "colour"]):
        with pytest.raises(SystemExit):
            parse_args([*common, *bad])


def test_training_reads_several_sets_and_validates_each(train_folder, single_view_folder):
    args = parse_args(["--data", str(train_folder), str(single_view_folder), "--output", "o", "--validation-fraction", "0.5"])
    data = TrainData.load(args)
    validation = data.validation
    assert len(data.ds) + len(validation.ds) == 96 + 48
    assert {c.split("|")[0] for c in data.classes} == {"top", "skirt", "dress"} and "dress" in data.vocab["category"]
    groups = dict(zip(validation.queries, validation.query_groups))
    solo = [i for i, g in groups.items() if g == str(single_view_folder)]
    held_solo = sum(1 for i in validation.ds["item_id"] if i.startswith("solo-"))
    # a one-view product cannot query its own other view: a share of them are queries, the rest their gallery
    assert 0 < len(solo) < held_solo and len(solo) <= 3 * SINGLE_QUERY_SHARE * held_solo + 1
    assert {validation.ds[i]["category"] for i in solo} == {"dress"}
    rng = np.random.default_rng(0)
    embeds = rng.normal(size=(len(validation.ds), 8)).astype(np.float32)
    embeds /= np.linalg.norm(embeds, axis=1, keepdims=True)
    scores = validation.score_embeddings(embeds[validation.queries], embeds[validation.gallery])
    assert set(scores["groups"]) == {str(train_folder), str(single_view_folder)}
    n = {name: sum(1 for g in validation.query_groups if g == name) for name in scores["groups"]}
    for key in ("fine_recall@1", "coarse_recall@1"):  # the overall score is the query-weighted mean of the sets'
        weighted = sum(scores["groups"][name][key] * n[name] for name in n) / len(validation.queries)
        assert scores[key] == pytest.approx(weighted, abs=0.02)
    with pytest.raises(SystemExit):
        parse_args(["--data", "a", "b", "--output", "o", "--teacher-features", "t.safetensors", "--distill-weight", "1"])


def test_data_repeat_weights_a_set_within_each_epoch(train_folder, single_view_folder):
    common = ["--data", str(train_folder), str(single_view_folder), "--output", "o", "--validation-fraction", "0.5"]
    plain = TrainData.load(parse_args(common))
    data = TrainData.load(parse_args(common + ["--data-repeat", "3", "1"]))
    assert len(data.ds) == len(plain.ds) and data.classes == plain.classes  # the same rows, visited more often
    first = sum(1 for i in data.ds["item_id"] if not i.startswith("solo-"))
    assert len(data.epoch_rows) == 3 * first + (len(data.ds) - first)
    counts = np.bincount(data.epoch_rows, minlength=len(data.ds))
    assert set(counts[:first]) == {3} and set(counts[first:]) == {1}
    assert np.array_equal(plain.epoch_rows, np.arange(len(plain.ds)))
    images = TrainImages(data, processor_for(GrLiteConfig(image_size=32)), Augment(), seed=0)
    assert len(images) == len(data.epoch_rows)
    copies = [i for i, row in enumerate(data.epoch_rows) if row == 0]
    a, b = (images[i] for i in copies[:2])
    assert a["labels"] == b["labels"] and not torch.equal(a["pixel_values"], b["pixel_values"])  # augmented apart


def test_validation_distractors_are_checked(tmp_path, train_folder, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--data", str(train_folder), "--output", "o", "--validation-distractors", str(tmp_path)])
    assert "--validation-distractors needs --validation-fraction > 0" in capsys.readouterr().err
    common = ["--data", str(train_folder), "--output", "o", "--validation-fraction", "0.25", "--validation-distractors"]
    with pytest.raises(FileNotFoundError, match="--validation-distractors .*missing does not exist"):
        TrainData.load(parse_args(common + [str(tmp_path / "missing")]))
    with pytest.raises(ValueError, match=f"--validation-distractors {train_folder} has no 'noise' config"):
        TrainData.load(parse_args(common + [str(train_folder)]))


def test_distill_weight_per_training_set(tmp_path, train_folder, single_view_folder):
    files = []
    for folder in (train_folder, single_view_folder):
        ds = datasets.load_dataset(str(folder), split="train")
        features = F.normalize(torch.randn(len(ds), 8), dim=-1).numpy()
        files.append(tmp_path / f"{folder.name}.safetensors")
        save_teacher_features(files[-1], features, image_hashes(ds), str(folder))
    common = ["--data", str(train_folder), str(single_view_folder), "--output", "o", "--validation-fraction", "0.5",
              "--teacher-features", *map(str, files), "--width", "64", "--depth", "1", "--image-size", "32"]
    data = TrainData.load(parse_args([*common, "--distill-weight", "100", "10"]))
    photo = np.array([i.startswith("solo-") for i in data.ds["item_id"]])
    assert 0 < photo.sum() < len(photo) and len(data.distill_weights) == len(data.ds)  # the held-out rows are not in it
    assert set(data.distill_weights[photo].tolist()) == {10.0} and set(data.distill_weights[~photo].tolist()) == {100.0}
    one = TrainData.load(parse_args([*common, "--distill-weight", "100"]))
    assert set(one.distill_weights.tolist()) == {100.0}
    images = TrainImages(data, processor_for(GrLiteConfig(image_size=32)), Augment(), seed=0)
    batch = torch.utils.data.default_collate([images[int(i)] for i in (*np.flatnonzero(photo)[:2], *np.flatnonzero(~photo)[:2])])
    assert batch["distill_weight"].tolist() == [10.0, 10.0, 100.0, 100.0] and batch["teacher"].shape == (4, 8)
    learner = build_learner(parse_args([*common, "--distill-weight", "100", "10"]), data).eval()
    terms = learner(**batch)  # the loss adds the weighted distillation; the log keeps the plain one
    _, weighted = learner.distillation(learner.model(pixel_values=batch["pixel_values"]).image_embeds, batch["teacher"], batch["distill_weight"])
    torch.testing.assert_close(terms["loss"], terms["arcface"] + terms["attributes"] + weighted)
    assert weighted.item() > 10 * terms["distill"].item()
    for bad in (["--distill-weight", "1", "2", "3"], ["--distill-weight", "100", "-1"], ["--distill-weight", "0", "0"]):
        with pytest.raises(SystemExit):
            parse_args([*common, *bad])
