"""The choices ``lookbench evaluate`` offers, each declared once, importable without torch, datasets or faiss.

The scoring modes are the metric's ``MODES``, read from its numpy core (``metric/fine_recall/core.py``), which
imports neither datasets nor evaluate. docs/architecture.md §5.
"""
from __future__ import annotations

from lookbench.metric.fine_recall.core import MODES

INDEXES = ("flat", "hnsw")  # exact faiss knn (IndexFlatIP for the Space) or IndexHNSWFlat (approximate), both cosine
PRECISIONS = ("fp32", "bf16")

__all__ = ["INDEXES", "MODES", "PRECISIONS"]
