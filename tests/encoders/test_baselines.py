"""The text track's baselines (lookbench.encoders.baselines, issue 39 item 5): the random floor and the category oracle."""
import numpy as np
import pytest
from PIL import Image

from lookbench.encoders.base import EncoderError
from lookbench.encoders.registry import load_encoder


def test_the_oracle_scores_a_for_its_category_and_exactly_zero_for_any_other():
    oracle = load_encoder("category-text")
    keys = [bytes([i]) * 16 for i in range(6)]
    gallery = oracle.encode_gallery(["tops", "shoes", "tops", "bags", "tops", "shoes"], keys)
    queries = oracle.encode_queries(["tops", "hats"])
    scores = queries @ gallery.T
    assert np.allclose(np.linalg.norm(gallery, axis=1), 1.0) and np.allclose(np.linalg.norm(queries, axis=1), 1.0)
    assert np.all(scores[0, [1, 3, 5]] == 0) and np.all((scores[0, [0, 2, 4]] >= 0.5) & (scores[0, [0, 2, 4]] < 1))
    assert len(set(scores[0, [0, 2, 4]].tolist())) == 3  # a strict order among its category, fixed by each image
    assert np.all(scores[1] == 0)  # a category no gallery row has: nothing first
    assert np.array_equal(load_encoder("category-text").encode_gallery(["tops"], keys[:1]), gallery[:1])
    with pytest.raises(EncoderError, match="is an oracle: it reads categories, never words"):
        oracle.encode_text(["a red top"])


def test_the_oracle_refuses_more_categories_than_it_has_axes():
    oracle = load_encoder("category-text")
    with pytest.raises(EncoderError, match="has room for 255 categories; the data has more"):
        oracle.encode_queries([f"c{i}" for i in range(256)])


def test_random_is_a_fixed_vector_per_content():
    random = load_encoder("random")
    red, blue = Image.new("RGB", (8, 8), "red"), Image.new("RGB", (8, 8), "blue")
    images = random.encode_batch([random.preprocess(im) for im in (red, blue, red)])
    assert images.shape == (3, 64) and np.array_equal(images[0], images[2]) and not np.allclose(images[0], images[1])
    texts = random.encode_text(["a red top", "a red top", "a blue top"])
    assert np.array_equal(texts[0], texts[1]) and not np.allclose(texts[0], texts[2])
    assert random.text_tower and random.fingerprint == "random:v1"
