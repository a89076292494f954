"""The metric as users get it: `evaluate.load("lookbench/fine_recall")` from a folder, its card and its Space."""
import doctest
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import SpaceCard

import lookbench.metric.fine_recall.fine_recall as fine_recall_module
from lookbench.metric.fine_recall.bootstrap import score_retrieval

METRIC_DIR = Path(fine_recall_module.__file__).resolve().parent
GALLERY = [
    {"category": "top", "main_attribute": "crew neck", "attributes": [{"name": "sleeve", "value": "long"}]},
    {"category": "top", "main_attribute": "v-neck", "attributes": [{"name": "sleeve", "value": "short"}]},
    {"category": "dress", "main_attribute": "midi", "attributes": [{"name": "pattern", "value": "floral"}]},
]
# dataset-like rows: undeclared fields that evaluate's feature check would reject if they reached it
QUERIES = [
    {"category": "top", "main_attribute": "crew neck", "attributes": [{"name": "sleeve", "value": "long"}],
     "outfit_id": "look-1", "item_id": "a", "timestamp": "2025-07-01T00:00:00Z"},
    {"category": "dress", "main_attribute": "midi", "attributes": [{"name": "pattern", "value": "floral"}],
     "outfit_id": "look-1", "item_id": "b"},
    {"category": "top", "main_attribute": "v-neck", "attributes": [], "item_id": "c"},
]
PREDICTIONS = [[1, 0, 2], [2], [0, 1]]

LOAD_SCRIPT = """
import json, sys
import numpy as np
sys.modules["lookbench"] = None  # the Hub module must not need the lookbench package
import evaluate
data = json.load(open("data.json"))
metric = evaluate.load("lookbench/fine_recall")
single = metric.compute(predictions=data["predictions"], references=data["references"], gallery=data["gallery"])
metric.add_batch(predictions=data["predictions"][:1], references=data["references"][:1])
padded = np.array([data["predictions"][1] + [-1], data["predictions"][2]], dtype=np.int64)  # faiss-style
metric.add_batch(predictions=padded, references=data["references"][1:])
batched = metric.compute(gallery=data["gallery"])
print(json.dumps({"single": single, "batched": batched, "module": type(metric).__module__}))
"""


@pytest.fixture
def staged(tmp_path):
    """A working directory holding `lookbench/fine_recall/`, a copy of the module folder as on the Hub."""
    shutil.copytree(METRIC_DIR, tmp_path / "lookbench" / "fine_recall", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.mark.slow
def test_evaluate_load_in_a_fresh_offline_process(staged):
    data = {"predictions": PREDICTIONS, "references": QUERIES, "gallery": GALLERY}
    (staged / "data.json").write_text(json.dumps(data))
    env = dict(os.environ, HF_EVALUATE_OFFLINE="1")
    process = subprocess.run(
        [sys.executable, "-c", LOAD_SCRIPT], cwd=staged, env=env, capture_output=True, text=True, timeout=300
    )
    assert process.returncode == 0, process.stderr
    out = json.loads(process.stdout.strip().splitlines()[-1])
    expected = json.loads(json.dumps(score_retrieval(PREDICTIONS, QUERIES, GALLERY)))
    assert out["single"] == expected
    assert out["batched"] == expected
    # rank 1: the dress is found, the top without attributes takes any top, the crew-neck top is missed
    assert out["single"]["fine_recall@1"] == pytest.approx(200 / 3)
    assert out["single"]["outfit_fine_recall@5"] == 100.0 and out["single"]["num_outfits"] == 1
    assert "fine_recall" in out["module"]


def run_examples(text, name, globs=None):
    test = doctest.DocTestParser().get_doctest(text, dict(globs or {}), name, name, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    return runner.summarize(verbose=False)


def test_docstring_example_runs(staged, monkeypatch):
    monkeypatch.chdir(staged)
    failed, attempted = run_examples(fine_recall_module._KWARGS_DESCRIPTION, "fine_recall inputs description")
    assert (failed, attempted) == (0, 12)
    assert fine_recall_module._KWARGS_DESCRIPTION in fine_recall_module.FineRecall.__doc__


def test_metric_card_example_runs_and_card_is_a_space_card(staged, monkeypatch):
    monkeypatch.chdir(staged)
    readme = METRIC_DIR / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)
    blocks = [block for block in blocks if ">>>" in block]
    failed, attempted = run_examples("\n".join(blocks), "README.md")
    assert failed == 0 and attempted >= 15
    card = SpaceCard.load(readme)
    assert (card.data.sdk, card.data.app_file) == ("gradio", "app.py")
    assert {"evaluate", "metric"} <= set(card.data.tags)
    for section in ("## Metric Description", "### Inputs", "### Output Values", "### Examples",
                    "## Limitations and Bias", "## Citation"):
        assert section in card.text


def test_space_app_scores_and_reports_bad_input(staged, monkeypatch):
    gradio = pytest.importorskip("gradio")
    monkeypatch.chdir(staged)
    app = runpy.run_path(str(staged / "lookbench" / "fine_recall" / "app.py"))  # not __main__: no launch
    assert isinstance(app["demo"], gradio.Blocks)
    results = app["score"](json.dumps(PREDICTIONS), json.dumps(QUERIES), json.dumps(GALLERY), "1, 5", "strict")
    assert results == score_retrieval(PREDICTIONS, QUERIES, GALLERY, k=[1, 5])
    # every score the Space shows has its interval, per category too
    assert set(results["ci95"]) == {key for key, value in results.items() if isinstance(value, float)}
    assert all(set(block["ci95"]) == {"fine_recall@1", "coarse_recall@1"} for block in results["per_category"].values())
    with pytest.raises(gradio.Error, match=r"query 0: predicted index 9"):
        app["score"]("[[9], [2], [0]]", json.dumps(QUERIES), json.dumps(GALLERY), "1", "strict")


@pytest.mark.parametrize("predictions, references, k, message", [
    (json.dumps(PREDICTIONS), json.dumps(QUERIES), "1000000000000", r"^k=1000000000000 is larger than both the ranking depth"),
    (json.dumps(PREDICTIONS), json.dumps(QUERIES), "1, " + ", ".join(map(str, range(2, 400))),
     r"^k names 399 cut-offs; at most MAX_CUTOFFS = 256"),
    ("5", json.dumps(QUERIES), "1", r"^predictions must be a list of rankings, one per query, got int$"),
    (json.dumps(PREDICTIONS), "5", "1", r"^references must be a list of annotation records, got int$"),
    ("null", json.dumps(QUERIES), "1", r"^predictions is required"),
    (json.dumps(PREDICTIONS), "null", "1", r"^references is required"),
    ("[" * 100_000 + "]" * 100_000, json.dumps(QUERIES), "1", r"^predictions is not JSON this page can read \(RecursionError"),
    (json.dumps(PREDICTIONS), json.dumps(QUERIES), "1.5", r"^k must be whole numbers separated by commas, got '1.5'$"),
])
def test_space_shows_what_the_metric_refuses_instead_of_crashing(staged, monkeypatch, predictions, references, k, message):
    """Issue 37: a typed K of 10**12 used to reach the metric and fail with a MemoryError; every refusal is now the
    page's message (``gradio.Error``), never an exception of another kind."""
    gradio = pytest.importorskip("gradio")
    monkeypatch.chdir(staged)
    app = runpy.run_path(str(staged / "lookbench" / "fine_recall" / "app.py"))
    with pytest.raises(gradio.Error) as err:
        app["score"](predictions, references, json.dumps(GALLERY), k, "strict")
    assert re.match(message, err.value.message), err.value.message
