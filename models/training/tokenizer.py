"""GR-Lite-text's tokenizer: a word vocabulary trained here, with the `tokenizers` library, on the training texts.

Why words: the text queries are built from a closed set of category and attribute words (`text_queries`), so a
word-level vocabulary of a few hundred entries covers them exactly, with no sub-word ambiguity; a word never seen
in training (a user's own) is `[UNK]`, never dropped. Lower-cased, NFKC-normalised, split on whitespace and
punctuation ("v-neck" is three tokens), so "V-Neck" and "v-neck" read the same.
"""
from __future__ import annotations

from collections.abc import Iterable

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

PAD, UNK = "[PAD]", "[UNK]"  # ids 0 and 1: BERT's pad_token_id is 0 (configuration_gr_lite_text.TEXT_PRESET)
MAX_LENGTH = 64  # the text tower's positions


def train_tokenizer(texts: Iterable[str], min_frequency: int = 1) -> PreTrainedTokenizerFast:
    """A word-level tokenizer whose vocabulary is every word of `texts` seen at least `min_frequency` times."""
    tokenizer = Tokenizer(models.WordLevel(unk_token=UNK))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=[PAD, UNK], min_frequency=min_frequency, show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token=PAD, unk_token=UNK, model_max_length=MAX_LENGTH)
