"""GR-Lite-text's training pairs: both text forms of every row trained on, positives by (category, attribute set),
held-out products never trained on, and the frozen tower's image embeddings computed once and cached, a file of other
images or of another tower refused by name."""
from __future__ import annotations

import argparse

import datasets
import numpy as np
import pytest

from lookbench.dataset_builder.text_queries import FORMS, record_text
from lookbench.encoders.registry import load_encoder
from lookbench.training import holdout, training_texts
from lookbench.training.training_texts import TextPairs, cached_embeddings


def run_args(tmp_path, *data, repeat=None, fraction=0.0, max_rows=None) -> argparse.Namespace:
    return argparse.Namespace(data=[str(d) for d in data], data_repeat=repeat, split="train", output=str(tmp_path / "run"),
                              validation_fraction=fraction, max_rows=max_rows)


def test_every_row_gives_one_pair_per_form_and_one_class_per_attribute_set(tmp_path, train_folder, single_view_folder, tower_folder):
    encoder = load_encoder(str(tower_folder), device="cpu")
    pairs = TextPairs.load(run_args(tmp_path, train_folder, single_view_folder, repeat=[1, 2]), encoder)
    rows = datasets.concatenate_datasets([datasets.load_dataset(str(f), split="train") for f in (train_folder, single_view_folder)])
    records = rows.select_columns(["category", "attributes"]).to_list()
    assert len(pairs) == (96 + 2 * 48) * len(FORMS) and len(pairs.embeddings) == 96 + 48
    assert [s["rows"] for s in pairs.sets] == [s["of"] for s in pairs.sets] == [96, 48] and [s["repeat"] for s in pairs.sets] == [1, 2]
    assert pairs.texts == sorted({record_text(r, form) for r in records for form in FORMS})
    assert [s["texts"] for s in pairs.sets] == [12, 6]  # 6 (category, colour) sets × 2 forms; the dresses: 3 × 2
    for text, row in zip(pairs.sample_text[:4], pairs.sample_row[:4]):  # row 0's two forms, then row 1's
        assert pairs.texts[text] in {record_text(records[row], form) for form in FORMS}
    assert list(pairs.sample_row[:4]) == [0, 0, 1, 1]
    same_class = pairs.sample_class[:, None] == pairs.sample_class[None, :]
    same_set = np.array([[records[a]["category"] == records[b]["category"] and records[a]["attributes"] == records[b]["attributes"]
                          for b in pairs.sample_row] for a in pairs.sample_row])
    np.testing.assert_array_equal(same_class, same_set)
    assert np.bincount(pairs.sample_row)[96:].tolist() == [2 * len(FORMS)] * 48  # the second set twice an epoch
    np.testing.assert_allclose(pairs.embeddings[:8].numpy(), encoder.encode_batch([encoder.preprocess(im) for im in rows[:8]["image"]]),
                               atol=1e-6)
    assert pairs.training_cutoff == "2025-06-01" and pairs.validation is None


def test_held_out_products_are_never_trained_on_and_score_against_their_own_images(tmp_path, train_folder, tower_folder):
    encoder = load_encoder(str(tower_folder), device="cpu")
    pairs = TextPairs.load(run_args(tmp_path, train_folder, fraction=0.25), encoder)
    ds = datasets.load_dataset(str(train_folder), split="train")
    kept, held = holdout.split_rows(ds, 0.25)
    assert set(pairs.sample_row) == set(kept) and pairs.held_rows == held
    assert len(pairs.validation_texts("short")) == len(pairs.validation.queries)
    np.testing.assert_array_equal(pairs.validation_gallery().numpy(),
                                  pairs.embeddings[[held[i] for i in pairs.validation.gallery]].numpy())


def test_embeddings_are_computed_once_and_a_file_of_other_images_or_another_tower_is_refused(tmp_path, train_folder,
                                                                                          single_view_folder, tower_folder,
                                                                                          monkeypatch):
    encoder = load_encoder(str(tower_folder), device="cpu")
    ds = datasets.load_dataset(str(train_folder), split="train")
    path = tmp_path / "cache" / "set.safetensors"
    first = cached_embeddings(encoder, ds, path, "the set")

    def recompute(*args, **kwargs):
        raise AssertionError("the cached file was not used")

    monkeypatch.setattr(training_texts, "compute_embeddings", recompute)
    assert (cached_embeddings(encoder, ds, path, "the set") == first).all()
    other = datasets.load_dataset(str(single_view_folder), split="train")
    with pytest.raises(ValueError, match=f"{path} was computed from other images than the other set"):
        cached_embeddings(encoder, other, path, "the other set")
    encoder.fingerprint = "transformers:another-tower"
    with pytest.raises(ValueError, match=f"{path} holds embeddings of encoder .*, not of"):
        cached_embeddings(encoder, ds, path, "the set")


def test_max_rows_reads_a_large_sets_first_rows_only(tmp_path, train_folder, single_view_folder, tower_folder):
    encoder = load_encoder(str(tower_folder), device="cpu")
    pairs = TextPairs.load(run_args(tmp_path, train_folder, single_view_folder, max_rows=[0, 10]), encoder)
    assert [(s["rows"], s["of"]) for s in pairs.sets] == [(96, 96), (10, 48)] and len(pairs.embeddings) == 106
    assert len(pairs) == 106 * len(FORMS)
    rows = datasets.load_dataset(str(single_view_folder), split="train").select(range(10))
    np.testing.assert_allclose(pairs.embeddings[96:].numpy(), encoder.encode_batch([encoder.preprocess(im) for im in rows["image"]]),
                               atol=1e-6)
