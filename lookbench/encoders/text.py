"""Text towers (issue 39, text queries): how a model folder's tokenizer and ``get_text_features`` read a text.

A registered entry declares its ``TextTower`` — the text preprocessing its own harness uses (tokenizer length and
padding, lower-casing, a prompt template if any, whether the attention mask is passed); any other folder gets one
read from its config when it has a ``text_config`` and a tokenizer. ``TextReader`` runs it: the folder's own
tokenizer (``AutoTokenizer``, loaded on first use), then the model's ``get_text_features``.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lookbench.errors import one_line
from lookbench.files import hash_files

# The files a model folder's tokenizer is read from (those present identify its text tower).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.json", "merges.txt", "vocab.txt", "spiece.model", "tokenizer.model")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


@dataclass(frozen=True)
class TextTower:
    """How a text tower reads: the folder's tokenizer, ``max_length`` tokens, padded to that length
    (``max_length``) or to the longest text of a batch (``longest``); ``clean`` ``none``, ``lower`` (lower-cased) or
    ``canonicalize`` (open_clip's: lower-cased, punctuation removed, whitespace collapsed); ``template`` around the
    text; whether the tokenizer's attention mask is passed (a tower trained without one gets none)."""

    max_length: int
    padding: str = "max_length"
    clean: str = "none"
    template: str = "{}"
    attention_mask: bool = True

    def prepare(self, text: str) -> str:
        if self.clean in ("lower", "canonicalize"):
            text = text.lower()
        if self.clean == "canonicalize":
            text = " ".join(text.replace("_", " ").translate(_PUNCTUATION).split())
        return self.template.format(text)

    @property
    def key(self) -> str:
        """The preprocessing in one line (a result's provenance names it)."""
        return (f"tokenizer, max_length {self.max_length}, padding {self.padding}, clean {self.clean}, "
                f"template {self.template!r}, attention mask {'passed' if self.attention_mask else 'not passed'}")


def tokenizer_files(folder: Path) -> list[Path]:
    return [folder / name for name in TOKENIZER_FILES if (folder / name).is_file()]


def text_tower_of(folder: Path, config, declared: TextTower | None, registered: bool) -> TextTower | None:
    """A folder's text tower: ``declared`` by its registry entry, else (an unregistered folder) one read from its
    config when it has a ``text_config``: its positions as the length, padded to them for SigLIP (as it was
    trained), to the longest text otherwise. None when the folder has no tokenizer."""
    if not tokenizer_files(folder):
        return None
    if registered:
        return declared
    text_config = getattr(config, "text_config", None)
    length = getattr(text_config, "max_position_embeddings", None)
    if text_config is None or not isinstance(length, int):
        return None
    return TextTower(length, "max_length" if str(config.model_type).startswith("siglip") else "longest")


class TextReader:
    """A folder's ``TextTower`` at work: its tokenizer, then ``get_text_features``; ``ValueError`` names the folder
    when the tokenizer cannot load."""

    def __init__(self, folder: Path, tower: TextTower, trust_remote_code: bool = False):
        self.folder, self.tower, self.trust_remote_code = folder, tower, trust_remote_code
        self.fingerprint = hash_files(tokenizer_files(folder))
        self._tokenizer = None

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(self.folder, trust_remote_code=self.trust_remote_code)
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
                raise ValueError(f"cannot load the tokenizer in {self.folder}: {one_line(err)}") from err
        return self._tokenizer

    def reading(self, text: str) -> tuple[list[str], list[str]]:
        """The words of ``text`` (runs of letters and digits) this tower reads and those it ignores: a word none of
        whose tokens the vocabulary knows (all the unknown token), or whose tokens lie past the ``max_length`` it
        reads, reaches the model as nothing. A word-level vocabulary ignores most words; a byte-level one none."""
        prepared = self.tower.prepare(text)
        batch = self.tokenizer(prepared, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        room = self.tower.max_length - self.tokenizer.num_special_tokens_to_add()
        words = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\w+", prepared)]
        known = set()
        for position, (token, (start, end)) in enumerate(zip(batch["input_ids"], batch["offset_mapping"])):
            if token != self.tokenizer.unk_token_id and position < room:
                known.update(i for i, (a, b, _) in enumerate(words) if a < end and start < b)
        read, ignored = {}, {}
        for i, (_, _, word) in enumerate(words):
            (read if i in known else ignored)[word] = None
        return list(read), [w for w in ignored if w not in read]

    def encode(self, module, texts: list[str], device: str, bf16: bool) -> np.ndarray:
        import torch

        batch = self.tokenizer([self.tower.prepare(t) for t in texts], padding=self.tower.padding,
                               max_length=self.tower.max_length, truncation=True, return_tensors="pt")
        inputs = {"input_ids": batch["input_ids"].to(device)}
        if self.tower.attention_mask and "attention_mask" in batch:
            inputs["attention_mask"] = batch["attention_mask"].to(device)
        with torch.inference_mode(), torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16,
                                                    enabled=bf16):
            out = module.get_text_features(**inputs)
        out = out if hasattr(out, "shape") else out.pooler_output
        return out.float().cpu().numpy()
