"""The reference harness P5 compares against: what peer retrieval harnesses do.

Per subset: iterate the rows (images decoded and preprocessed one by one in the main thread), encode query,
gallery and the noise gallery again for every subset, search with faiss, and score Fine Recall@K with a Python
loop. It uses the same encoder object (weights and preprocessing) as the engine, so only the harness differs.
This is a timing reference, not a scorer: `lookbench evaluate` scores with the fine_recall metric module.
"""
from __future__ import annotations

import datasets
import faiss
import numpy as np

KS = (1, 5, 10, 20)


def _embed(encoder, ds, batch_size):
    out, batch = [], []
    for row in ds:  # decodes each image in the main thread
        batch.append(encoder.preprocess(row["image"]))
        if len(batch) == batch_size:
            out.append(encoder.encode_batch(batch))
            batch = []
    if batch:
        out.append(encoder.encode_batch(batch))
    x = np.concatenate(out).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _attrs(record):
    return {(a["name"], a["value"]) for a in record["attributes"]}


def naive_evaluate(encoder, data_dir, subsets, batch_size=32) -> dict:
    """Strict Fine Recall@K per subset (percent), the peer way; returns {subset: {K: recall}} and the forward count."""
    results, forwards = {}, 0
    for subset in subsets:
        query = datasets.load_dataset(data_dir, subset, split="query")
        gallery = datasets.concatenate_datasets(
            [datasets.load_dataset(data_dir, subset, split="gallery"), datasets.load_dataset(data_dir, "noise", split="gallery")])
        q, g = _embed(encoder, query, batch_size), _embed(encoder, gallery, batch_size)
        forwards += len(q) + len(g)
        index = faiss.IndexFlatIP(g.shape[1])
        index.add(g)
        _, ids = index.search(q, max(KS))
        q_rows, g_rows = query.remove_columns(["image", "raw_image"]), gallery.remove_columns(["image", "raw_image"])
        hits = {k: 0 for k in KS}
        for i, ranking in enumerate(ids):  # the Python metric loop
            ref = q_rows[i]
            wanted = _attrs(ref)
            first = None
            for rank, j in enumerate(ranking):
                item = g_rows[int(j)]
                if item["category"] == ref["category"] and wanted <= _attrs(item):
                    first = rank
                    break
            for k in KS:
                hits[k] += first is not None and first < k
        results[subset] = {k: 100.0 * hits[k] / len(q) for k in KS}
    return {"fine_recall": results, "forward_images": forwards}
