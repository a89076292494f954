"""Layers without circles (docs/architecture.md §2): the import graph read from the source has no cycle, no module
imports upward across the declared layers, and every module has a layer."""
from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers.import_graph import cycles, declared_layers, import_graph, layer_of, modules, upward_imports

ROOT = Path(__file__).resolve().parents[1]
LAYERS = declared_layers(ROOT / "docs" / "architecture.md")


def test_the_layer_table_is_declared():
    assert {"lookbench.schema", "lookbench.engine", "lookbench.cli"} <= set(LAYERS)
    assert LAYERS["lookbench.schema"] < LAYERS["lookbench.engine"] < LAYERS["lookbench.cli"]


def test_every_module_has_a_layer():
    graph = modules(ROOT)
    assert len(graph) > 80  # the whole namespace was found through setup.cfg's package_dir
    assert [name for name in sorted(graph) if layer_of(name, LAYERS) is None] == []


def test_no_import_cycle():
    assert cycles(import_graph(ROOT)) == []


def test_no_import_runs_upward():
    assert upward_imports(import_graph(ROOT), LAYERS) == []


def test_the_checks_find_a_cycle_and_an_upward_import(tmp_path):
    """A tree with both faults, laid out as this project is (a folder mapped into the namespace by setup.cfg)."""
    (tmp_path / "setup.cfg").write_text("[options]\npackage_dir =\n    lookbench = lookbench\n    lookbench.metric = metric\n")
    files = {
        "lookbench/__init__.py": "",
        "lookbench/schema.py": "def record():\n    from lookbench.engine import run  # deferred, still an edge\n",
        "lookbench/engine/__init__.py": "from lookbench.engine.search import search\n",
        "lookbench/engine/search.py": "from . import run_twice\nimport lookbench.schema\n",
        "lookbench/engine/run_twice.py": "import importlib\nimportlib.import_module('lookbench.engine.search')\n",
        "metric/__init__.py": "",
        "metric/core.py": "from ..engine import search\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    graph = import_graph(tmp_path)
    assert graph["lookbench.metric.core"] == {"lookbench.engine.search"}  # the package_dir remap resolved
    assert cycles(graph) == [["lookbench.engine", "lookbench.engine.run_twice", "lookbench.engine.search", "lookbench.schema"]]
    layers = {"lookbench.schema": 0, "lookbench.metric": 0, "lookbench.engine": 3}
    assert upward_imports(graph, layers) == [
        "lookbench.metric.core (layer 0) → lookbench.engine.search (layer 3)",
        "lookbench.schema (layer 0) → lookbench.engine (layer 3)",
    ]
