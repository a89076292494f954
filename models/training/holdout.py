"""The validation split of a training set: whole products held out and scored as a retrieval task.

Hyper-parameters (input size, width, depth, loss weights) are chosen here, never on a test release. A product
(one item id) is held out as a whole, so no view of a validation product is ever trained on; the choice depends
only on the item id, so it is the same for every run, scale and row order. Its views are scored like a LookBench
subset (docs/architecture.md §1): the first view of every held-out product that has several is a query; a product
with one view (a Fashion-MNIST photo) is a query for one product in `SINGLE_QUERY_SHARE`, chosen by item id; every
other held-out view is the gallery, ranked by cosine similarity and scored by the metric's `score_retrieval`.
With several training sets (`groups`), the scores are over all queries against the one gallery, and per set.
Distractors (a LookBench noise gallery, `--validation-distractors`) join the gallery as the benchmark's noise
joins every subset's: without them the split cannot see a model lose its category lead to thousands of soft
negatives, which is where a test release with a noise gallery takes it.
"""
from __future__ import annotations

import hashlib
import zlib

import datasets
import numpy as np
import torch

from lookbench.metric.fine_recall.bootstrap import score_retrieval

ANNOTATIONS = ["category", "main_attribute", "attributes", "outfit_id"]
REPORTED = ("fine_recall@1", "fine_recall@5", "fine_recall@10", "coarse_recall@1", "ndcg@5", "mrr@10")
SINGLE_QUERY_SHARE = 0.2  # the held-out one-view products that are queries (the rest are their gallery)


def is_held_out(item_id: str, fraction: float) -> bool:
    return zlib.crc32(item_id.encode()) < fraction * 2**32


def _single_view_query(item_id: str) -> bool:
    # not crc32 again: CRC is linear, so a second crc32 of the id would correlate with the held-out choice
    digest = hashlib.blake2b(item_id.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") < SINGLE_QUERY_SHARE * 2**32


def split_rows(ds: datasets.Dataset, fraction: float) -> tuple[list[int], list[int]]:
    """Row indices (training, validation) with whole products in the validation part."""
    if not 0 <= fraction < 1:
        raise ValueError(f"--validation-fraction must be in [0, 1), got {fraction}.")
    held = [is_held_out(item_id, fraction) for item_id in ds["item_id"]]
    return [i for i, h in enumerate(held) if not h], [i for i, h in enumerate(held) if h]


class RetrievalValidation:
    """Query / gallery rows of the held-out products, and their scores for a model."""

    def __init__(self, ds: datasets.Dataset, groups: list[str] | None = None, distractors: datasets.Dataset | None = None):
        """``groups``: the training set each row comes from (scored apart as well), when there are several;
        ``distractors``: rows appended to the gallery only (never queries, never trained on)."""
        seen: set[str] = set()
        counts: dict[str, int] = {}
        for item_id in ds["item_id"]:
            counts[item_id] = counts.get(item_id, 0) + 1
        self.queries, self.gallery = [], []
        for i, item_id in enumerate(ds["item_id"]):
            if (counts[item_id] > 1 and item_id not in seen) or (counts[item_id] == 1 and _single_view_query(item_id)):
                seen.add(item_id)
                self.queries.append(i)
            else:
                self.gallery.append(i)
        if not self.queries:
            raise ValueError(f"The validation split ({len(ds)} rows) has no product with two views to query.")
        self.distractors = 0 if distractors is None else len(distractors)
        if self.distractors:
            columns = ["image", "item_id", *ANNOTATIONS]
            differ = [c for c in columns if distractors.features.get(c) != ds.features.get(c)]
            if differ:
                raise ValueError(f"The distractors' columns {differ} are not the training set's (one LookBench record schema).")
            self.gallery += range(len(ds), len(ds) + self.distractors)
            ds = datasets.concatenate_datasets([part.select_columns(columns) for part in (ds, distractors)])
        self.ds = ds
        annotations = ds.select_columns(ANNOTATIONS)
        self.query_records = list(annotations.select(self.queries))
        self.gallery_records = annotations.select(self.gallery)
        self.query_groups = None if groups is None or len(set(groups)) < 2 else [groups[i] for i in self.queries]

    def __repr__(self) -> str:
        return (f"RetrievalValidation({len(self.queries)} queries, {len(self.gallery)} gallery rows"
                + (f", {self.distractors} of them distractors)" if self.distractors else ")"))

    @torch.no_grad()
    def embed(self, model, processor, rows: list[int], batch_size: int = 128) -> np.ndarray:
        images = self.ds.select_columns(["image"])
        out = []
        for start in range(0, len(rows), batch_size):
            batch = list(images.select(rows[start:start + batch_size])["image"])
            out.append(model(**processor(batch, return_tensors="pt")).image_embeds.float().numpy())
        return np.concatenate(out)

    def score(self, model, processor) -> dict[str, float]:
        """Strict Fine Recall, Coarse Recall, nDCG and MRR@10 (percent) of `model` (in eval mode) on this split."""
        return self.score_embeddings(self.embed(model, processor, self.queries), self.embed(model, processor, self.gallery))

    def score_embeddings(self, queries: np.ndarray, gallery: np.ndarray) -> dict[str, float]:
        """The same scores for unit-length embeddings of the query and gallery rows (e.g. the teacher's features)."""
        import faiss

        index = faiss.IndexFlatIP(gallery.shape[1])  # inner product of unit vectors = cosine
        index.add(np.ascontiguousarray(gallery, dtype=np.float32))
        _, ranked = index.search(np.ascontiguousarray(queries, dtype=np.float32), 20)
        scores = self._scores(ranked.tolist(), self.query_records)
        if self.query_groups:
            scores["groups"] = {
                name: self._scores(*zip(*[(r, q) for r, q, g in zip(ranked.tolist(), self.query_records, self.query_groups) if g == name]))
                for name in dict.fromkeys(self.query_groups)
            }
        return scores

    def _scores(self, ranked, query_records) -> dict[str, float]:
        scores = score_retrieval(list(ranked), list(query_records), self.gallery_records, mode="strict", n_resamples=0)
        return {key: round(float(scores[key]), 2) for key in REPORTED}
