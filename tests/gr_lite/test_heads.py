"""heads: the distillation losses and their per-row weights, and the category head's extra weight in the learner."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from lookbench.training.heads import Distillation
from lookbench.training.train_gr_lite import build_learner, parse_args
from lookbench.training.training_data import TrainData


def test_distillation_losses():
    torch.manual_seed(0)
    teacher = F.normalize(torch.randn(6, 16), dim=-1)
    ones = torch.ones(6)
    similarity = Distillation(16, 16, "similarity")
    assert similarity.projection is None and not list(similarity.parameters())
    assert similarity(teacher * 3, teacher, ones)[0].item() < 1e-10  # same neighbourhoods, whatever the embedding's norm
    student = torch.randn(6, 16)
    plain, weighted = similarity(student, teacher, 100 * ones)
    assert plain.item() > 0.01
    torch.testing.assert_close(weighted, 100 * plain)  # one weight for every row: the weighted mean is a multiple
    errors = (F.normalize(student, dim=-1) @ F.normalize(student, dim=-1).T - teacher @ teacher.T) ** 2
    # rows 0-2 of a set weighted 4, rows 3-5 of one weighted 0: only the 6 ordered pairs among 0-2 count, of 30
    plain, weighted = similarity(student, teacher, torch.tensor([4.0, 4, 4, 0, 0, 0]))
    torch.testing.assert_close(weighted, 4 * (errors[:3, :3].sum() - errors[:3, :3].diagonal().sum()) / 30)
    torch.testing.assert_close(plain, (errors.sum() - errors.diagonal().sum()) / 30)
    # weights 9 and 1: a pair across the two sets weighs 3, the geometric mean
    _, mixed = similarity(student, teacher, torch.tensor([9.0, 9, 9, 1, 1, 1]))
    off = ~torch.eye(6, dtype=torch.bool)
    pair_weights = torch.tensor([[9.0] * 3 + [3.0] * 3] * 3 + [[3.0] * 3 + [1.0] * 3] * 3)
    torch.testing.assert_close(mixed, (pair_weights * errors)[off].mean())
    cosine = Distillation(8, 16, "cosine")
    student = torch.randn(6, 8)
    errors = 1 - F.cosine_similarity(F.normalize(student, dim=-1) @ cosine.projection.weight.T, teacher, dim=-1)
    plain, weighted = cosine(student, teacher, torch.tensor([2.0, 2, 2, 0, 0, 0]))
    torch.testing.assert_close(plain, errors.mean())
    torch.testing.assert_close(weighted, 2 * errors[:3].sum() / 6)


def test_category_weight_adds_the_category_heads_loss_once_more(train_folder):
    args = ["--data", str(train_folder), "--output", "o", "--width", "64", "--depth", "1", "--image-size", "32", "--attribute-weight", "2"]
    data = TrainData.load(parse_args(args))
    assert list(data.vocab) == ["category", "colour", "fit"]
    torch.manual_seed(0)
    plain = build_learner(parse_args(args), data)
    torch.manual_seed(0)
    weighted = build_learner(parse_args([*args, "--category-weight", "3"]), data)
    plain.eval(), weighted.eval()  # the same weights, and no dropout in either forward pass
    batch = dict(pixel_values=torch.randn(4, 3, 32, 32), labels=torch.tensor(data.labels[:4]),
                 facet_labels=torch.from_numpy(data.facet_labels[:4]))
    before, after = plain(**batch), weighted(**batch)
    assert "category" not in before
    heads = plain.attribute_heads(plain.model(pixel_values=batch["pixel_values"]).image_embeds, batch["facet_labels"])
    torch.testing.assert_close(after["category"], heads[0])  # the category head's own cross-entropy
    torch.testing.assert_close(after["attributes"], heads.mean())
    torch.testing.assert_close(after["loss"], before["loss"] + 3 * heads[0])
    for bad in (["--attribute-weight", "0", "--category-weight", "1"], ["--category-weight", "-1"]):
        with pytest.raises(SystemExit):
            parse_args(["--data", "d", "--output", "o", *bad])
