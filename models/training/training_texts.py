"""What a GR-Lite-text training run reads: (text, image) pairs of training sets, and the frozen tower's image embeddings.

Every training row gives one pair per text form (`text_queries.FORMS`): the words of its category and attribute set,
and its image. The image tower is frozen (LiT), so its embedding of every training image is computed once, by the
same encoder the benchmark evaluates with, and kept in one safetensors file per set in the run folder, with the sha256
of every row's image bytes and the encoder's weight fingerprint, so a file never serves embeddings of other images or
of another tower. Two rows are positives of each other when their (category, attribute set) is the same
(`training_data.class_key`): the same text then describes both images, whichever form it takes.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np
import pyarrow.compute as pc
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from tqdm.auto import tqdm

from lookbench.dataset_builder.text_queries import FORMS, record_text
from lookbench.files import replacing
from lookbench.training import holdout
from lookbench.training.training_data import class_key, image_hashes, load_train_split, per_set


def compute_embeddings(encoder, ds: datasets.Dataset, batch_size: int = 64) -> np.ndarray:
    """(rows × d) float32: the encoder's embedding of every row's image, in row order, as the benchmark computes it."""
    images = ds.select_columns(["image"])
    out = []
    for start in tqdm(range(0, len(ds), batch_size), desc=f"{encoder.name} embeddings"):
        out.append(encoder.encode_batch([encoder.preprocess(image) for image in images[start:start + batch_size]["image"]]))
    return np.concatenate(out).astype(np.float32)


def cached_embeddings(encoder, ds: datasets.Dataset, path: Path, what: str) -> torch.Tensor:
    """The encoder's embeddings of `ds`'s images from `path`, computed and written there first if it does not exist.

    A file written for other images or by another encoder is refused, naming the file: it is never recomputed over.
    """
    hashes = image_hashes(ds)
    if not path.exists():
        features = compute_embeddings(encoder, ds)
        path.parent.mkdir(parents=True, exist_ok=True)
        metadata = {"encoder": encoder.fingerprint, "rows": str(len(ds)), "source": what}
        with replacing(path) as staged:
            save_file({"embeddings": torch.from_numpy(features), "image_sha256": torch.from_numpy(hashes)}, str(staged),
                      metadata=metadata)
    with safe_open(str(path), framework="pt") as f:
        metadata = f.metadata() or {}
        if metadata.get("encoder") != encoder.fingerprint:
            raise ValueError(f"{path} holds embeddings of encoder {metadata.get('encoder')}, not of {encoder.name} "
                             f"({encoder.fingerprint}); remove it to recompute.")
        embeddings, stored = f.get_tensor("embeddings"), f.get_tensor("image_sha256").numpy()
    if stored.shape != hashes.shape or (stored != hashes).any():
        raise ValueError(f"{path} was computed from other images than {what} ({len(stored)} stored, {len(ds)} rows); "
                         "remove it to recompute.")
    return embeddings


@dataclass
class TextPairs:
    """The pairs trained on: per sample its text (an index into `texts`), its image row, and its positives' class."""

    texts: list[str]  # every distinct text of the rows trained on, sorted (the tokenizer's training corpus)
    sample_text: np.ndarray
    sample_row: np.ndarray
    sample_class: np.ndarray
    embeddings: torch.Tensor  # (rows × d) the frozen tower's embeddings of every row of every set, held-out rows too
    sets: list[dict]  # per --data folder: rows read (of its rows), rows trained on, repeats, distinct texts (the card's facts)
    training_cutoff: str | None  # the date of the newest row read: the card declares it
    validation: holdout.RetrievalValidation | None = None
    held_rows: list[int] | None = None  # the validation split's rows, in `embeddings`' numbering

    @classmethod
    def load(cls, args: argparse.Namespace, encoder) -> "TextPairs":
        """Every --data folder's rows (held-out products apart), their texts and cached embeddings, in order."""
        parts = [load_train_split(data, None, args.split) for data in args.data]  # every folder read before any embedding
        available = [len(part) for part in parts]
        if args.max_rows:  # a large set's first rows only: each row costs one forward pass of the image tower
            parts = [part.select(range(min(limit, len(part)))) if limit else part
                     for part, limit in zip(parts, per_set(args.max_rows, len(parts)))]
        embeddings, groups, trained, held_rows, sets = [], [], [], [], []
        for index, (data, part, repeat) in enumerate(zip(args.data, parts, args.data_repeat or [1] * len(args.data))):
            what = f"--data {data} split {args.split}"
            path = Path(args.output) / "image_embeddings" / f"{index}-{Path(data).name}.safetensors"
            embeddings.append(cached_embeddings(encoder, part, path, what))
            kept, held = holdout.split_rows(part, args.validation_fraction) if args.validation_fraction else (range(len(part)), [])
            if args.validation_fraction and not held:
                raise ValueError(f"--validation-fraction {args.validation_fraction} holds out no product of {what}.")
            offset = len(groups)
            trained.append(([offset + i for i in kept], repeat))
            held_rows += [offset + i for i in held]
            groups += [data] * len(part)
        full = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
        records = full.select_columns(["category", "attributes"]).to_list()
        row_texts = [[record_text(r, form) for form in FORMS] for r in records]
        classes: dict[str, int] = {}
        row_class = [classes.setdefault(class_key(r["category"], r["attributes"] or []), len(classes)) for r in records]
        texts = sorted({t for rows, _ in trained for i in rows for t in row_texts[i]})
        index_of = {t: i for i, t in enumerate(texts)}
        sample_text, sample_row, sample_class = [], [], []
        for data, part, total, (rows, repeat) in zip(args.data, parts, available, trained):
            sets.append({"data": data, "rows": len(part), "of": total, "trained_rows": len(rows), "repeat": repeat,
                         "texts": len({t for i in rows for t in row_texts[i]})})
            for i in rows * repeat:
                sample_text += [index_of[t] for t in row_texts[i]]
                sample_row += [i] * len(FORMS)
                sample_class += [row_class[i]] * len(FORMS)
        newest = pc.max(full.data.column("timestamp")) if "timestamp" in full.column_names else None
        cutoff = newest.as_py().date().isoformat() if newest is not None and newest.is_valid else None
        validation = holdout.RetrievalValidation(full.select(held_rows), [groups[i] for i in held_rows]) if held_rows else None
        sample_text, sample_row, sample_class = (np.array(v, dtype=np.int64) for v in (sample_text, sample_row, sample_class))
        return cls(texts, sample_text, sample_row, sample_class, torch.cat(embeddings), sets, cutoff, validation, held_rows)

    def __len__(self) -> int:
        return len(self.sample_text)

    def validation_texts(self, form: str) -> list[str]:
        """The held-out queries' texts in `form` (made from their records: a word may be one never trained on)."""
        return [record_text(r, form) for r in self.validation.query_records]

    def validation_gallery(self) -> torch.Tensor:
        """The frozen tower's embeddings of the held-out gallery rows."""
        return self.embeddings[[self.held_rows[i] for i in self.validation.gallery]]
