"""The choices ``lookbench evaluate`` offers, each declared once, importable without torch, datasets or faiss.

The scoring modes are the metric's ``MODES``. The metric module is self-contained (it is published alone on
the Hub), so it cannot import them from here, and importing it costs datasets + evaluate (about 5 s): the CLI
reads the literal from its source instead. docs/architecture.md §5.
"""
from __future__ import annotations

import ast
from importlib import resources

INDEXES = ("flat", "hnsw")  # faiss IndexFlatIP (exact) or IndexHNSWFlat (approximate), both cosine
PRECISIONS = ("fp32", "bf16")


def metric_constant(name: str):
    """A literal assigned at the top level of the fine_recall metric module, read without importing it."""
    source = resources.files("lookbench.metric.fine_recall").joinpath("fine_recall.py").read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"the fine_recall metric declares no {name}")


MODES = metric_constant("MODES")
