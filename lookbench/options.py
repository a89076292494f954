"""The choices ``lookbench evaluate`` offers, each declared once, importable without torch, datasets or faiss.

The scoring modes are the metric's ``MODES``. The metric module is self-contained (it is published alone on
the Hub), so it cannot import them from here, and importing it costs datasets + evaluate (about 5 s): the CLI
reads the literal from its source instead (and the leaderboard a numpy-only function). docs/architecture.md §5.
"""
from __future__ import annotations

import ast
from importlib import resources

INDEXES = ("flat", "hnsw")  # exact faiss knn (IndexFlatIP for the Space) or IndexHNSWFlat (approximate), both cosine
PRECISIONS = ("fp32", "bf16")


def _metric_module() -> ast.Module:
    source = resources.files("lookbench.metric.fine_recall").joinpath("fine_recall.py").read_text(encoding="utf-8")
    return ast.parse(source)


def metric_constant(name: str):
    """A literal assigned at the top level of the fine_recall metric module, read without importing it."""
    for node in _metric_module().body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"the fine_recall metric declares no {name}")


def metric_numpy_function(name: str):
    """A top-level function of the metric module that needs only numpy (``combine_subsets``), compiled from its
    source without importing the module: ``import evaluate`` pulls in transformers and torch, which
    ``lookbench leaderboard`` must not pay for. The same code, not a copy of it."""
    import numpy as np

    for node in _metric_module().body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            namespace = {"np": np}
            exec(compile(ast.Module(body=[node], type_ignores=[]), "fine_recall.py", "exec"), namespace)
            return namespace[name]
    raise LookupError(f"the fine_recall metric defines no function {name}")


MODES = metric_constant("MODES")
