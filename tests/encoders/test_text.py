"""Text towers (lookbench.encoders.text): the preprocessing each family's harness applies, and which folders read."""
from lookbench.encoders.text import TextTower


def test_the_cleanings_are_the_harnesses():
    assert TextTower(64).prepare("Striped Red V-Neck top") == "Striped Red V-Neck top"
    assert TextTower(64, clean="lower").prepare("Striped Red V-Neck top") == "striped red v-neck top"
    # open_clip's "canonicalize": lower-cased, punctuation removed, whitespace collapsed
    assert TextTower(64, clean="canonicalize").prepare("A  t-shirt/top,  dark_grey.") == "a tshirttop dark grey"
    assert TextTower(77, template="a photo of {}").prepare("red top") == "a photo of red top"
    assert TextTower(64, "longest", attention_mask=False).key == (
        "tokenizer, max_length 64, padding longest, clean none, template '{}', attention mask not passed")
