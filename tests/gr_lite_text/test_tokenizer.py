"""GR-Lite-text's word tokenizer: its vocabulary is the training texts' words, case- and form-insensitive, an unseen word
is [UNK] (never dropped), and the saved folder reads back through AutoTokenizer with the same ids."""
from transformers import AutoTokenizer

from lookbench.dataset_builder.text_queries import FORMS, query_text
from lookbench.training.tokenizer import MAX_LENGTH, PAD, UNK, train_tokenizer

TOP = {"color": "red", "pattern": "stripes", "sleeve_length": "long", "neckline": "v-neck"}
TEXTS = [query_text("tops", TOP, form) for form in FORMS] + ["dark ankle boot"]


def test_vocabulary_is_the_training_words_with_pad_and_unk_first():
    tokenizer = train_tokenizer(TEXTS)
    vocab = tokenizer.get_vocab()
    assert vocab[PAD] == 0 and vocab[UNK] == 1 and tokenizer.pad_token_id == 0
    words = {"striped", "red", "long", "sleeved", "v", "-", "neck", "top", "an", "item", "in", "the", "category", "tops",
             "whose", "pattern", "is", "stripes", ",", "color", "sleeve", "length", "and", "neckline", ".", "dark", "ankle", "boot"}
    assert set(vocab) == words | {PAD, UNK}
    assert tokenizer.model_max_length == MAX_LENGTH


def test_case_and_unicode_forms_read_the_same_and_unknown_words_are_unk():
    tokenizer = train_tokenizer(TEXTS)
    ids = tokenizer(["striped red v-neck top", "Striped RED V-Neck Top", "striped ｒｅｄ top", "plaid red top"])["input_ids"]
    assert ids[0] == ids[1]
    assert ids[2] == tokenizer("striped red top")["input_ids"]  # NFKC: full-width letters are the ASCII word
    assert ids[3][0] == tokenizer.unk_token_id and ids[3][1:] == tokenizer("red top")["input_ids"]


def test_saved_tokenizer_reads_back_through_autotokenizer(tmp_path):
    tokenizer = train_tokenizer(TEXTS)
    tokenizer.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    batch = ["dark ankle boot", "striped red long-sleeved v-neck top", "something unseen"]
    assert again(batch, padding=True)["input_ids"] == tokenizer(batch, padding=True)["input_ids"]
    assert again(batch, padding=True)["input_ids"][0][-1] == 0  # padded with [PAD]
