"""holdout: whole products held out, their first views as queries, scored by the metric, distractors in the gallery."""
from __future__ import annotations

import datasets
import numpy as np
import pytest

from lookbench.training.holdout import RetrievalValidation, split_rows
from lookbench.training.train_gr_lite import parse_args
from lookbench.training.training_data import TrainData
from tests.helpers.gr_lite import COLOURS


def test_validation_split_holds_out_whole_products_and_queries_their_first_view(train_folder):
    ds = datasets.load_dataset(str(train_folder), split="train")
    train_rows, validation_rows = split_rows(ds, 0.25)
    assert sorted(train_rows + validation_rows) == list(range(96)) and 8 <= len(validation_rows) <= 40
    ids = ds["item_id"]
    assert not {ids[i] for i in train_rows} & {ids[i] for i in validation_rows}
    assert split_rows(ds.select(range(95, -1, -1)), 0.25)[1] == sorted(95 - i for i in validation_rows)  # order-free
    validation = RetrievalValidation(ds.select(validation_rows))
    held = [ids[i] for i in validation_rows]
    assert [held[i] for i in validation.queries] == list(dict.fromkeys(held))  # the first view of every product
    assert sorted(validation.queries + validation.gallery) == list(range(len(held)))
    with pytest.raises(ValueError, match=r"must be in \[0, 1\)"):
        split_rows(ds, 1.0)


def test_validation_scores_embeddings_with_the_metric(train_folder):
    ds = datasets.load_dataset(str(train_folder), split="train")
    validation = RetrievalValidation(ds.select(split_rows(ds, 0.25)[1]))
    held = validation.ds
    # a one-hot direction per product: every query's nearest gallery row is its other view
    product = {item_id: i for i, item_id in enumerate(dict.fromkeys(held["item_id"]))}
    onehot = np.eye(len(product), dtype=np.float32)[[product[i] for i in held["item_id"]]]
    perfect = validation.score_embeddings(onehot[validation.queries], onehot[validation.gallery])
    assert perfect["fine_recall@1"] == perfect["coarse_recall@1"] == perfect["mrr@10"] == 100.0
    # colour only: tops and skirts of a colour tie, so some top hits have the wrong category
    colour = {c: i for i, c in enumerate(COLOURS)}
    by_colour = np.eye(3, dtype=np.float32)[[colour[m] for m in held["main_attribute"]]]
    blurred = validation.score_embeddings(by_colour[validation.queries], by_colour[validation.gallery])
    assert 0 < blurred["fine_recall@1"] < 100.0


def test_validation_distractors_join_the_gallery_and_take_rank_one_from_a_model_that_lets_them(train_folder, distractor_folder):
    common = ["--data", str(train_folder), "--output", "o", "--validation-fraction", "0.25"]
    plain = TrainData.load(parse_args(common)).validation
    validation = TrainData.load(parse_args(common + ["--validation-distractors", str(distractor_folder)])).validation
    held = len(plain.ds)
    assert validation.queries == plain.queries and validation.distractors == 12
    assert validation.gallery == plain.gallery + list(range(held, held + 12))  # gallery only, never a query
    assert validation.ds["category"][held:] == ["dress"] * 12 and "12 of them distractors" in repr(validation)
    # one direction per held-out product, the gallery views a little off it; distractor j sits exactly on the
    # direction of query j's product, so it outranks the true view and (another category) is a coarse miss
    product = {item_id: i for i, item_id in enumerate(dict.fromkeys(validation.ds["item_id"][:held]))}
    dims = len(product) + 1
    embeds = np.zeros((held + 12, dims), dtype=np.float32)
    for i, item_id in enumerate(validation.ds["item_id"][:held]):
        embeds[i, product[item_id]], embeds[i, -1] = 1.0, 0.0 if i in validation.queries else 0.5
    targeted = validation.queries[:5]
    for j, q in enumerate(targeted):
        embeds[held + j] = embeds[q]
    embeds[held + len(targeted):, -1] = 1.0  # the other distractors are far from every product
    embeds /= np.linalg.norm(embeds, axis=1, keepdims=True)
    scores = validation.score_embeddings(embeds[validation.queries], embeds[validation.gallery])
    assert plain.score_embeddings(embeds[plain.queries], embeds[plain.gallery])["coarse_recall@1"] == 100.0
    assert scores["coarse_recall@1"] == round(100 * (1 - len(targeted) / len(validation.queries)), 2)
