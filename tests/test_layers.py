"""Layers without circles (docs/architecture.md §2): the import graph read from the source has no cycle, neither between
modules nor between areas (packages and modules as their siblings see them), no module imports upward across the
declared layers, and every module has a layer."""
from __future__ import annotations

import textwrap
from pathlib import Path

from tests.helpers.import_graph import (area_graph, cycles, declared_layers, import_graph, layer_of, modules,
                                        upward_imports)

ROOT = Path(__file__).resolve().parents[1]
LAYERS = declared_layers(ROOT / "docs" / "architecture.md")


def test_the_layer_table_is_declared():
    assert {"lookbench.schema", "lookbench.engine", "lookbench.cli"} <= set(LAYERS)
    assert LAYERS["lookbench.schema"] < LAYERS["lookbench.engine"] < LAYERS["lookbench.cli"]


def test_every_module_has_a_layer():
    graph = modules(ROOT)
    assert len(graph) > 80  # the whole namespace was found through setup.cfg's package_dir
    assert [name for name in sorted(graph) if layer_of(name, LAYERS) is None] == []


MAX_LINES = 500  # a module a reader can hold in their head (issue 52 item 6)


def test_no_module_is_longer_than_a_reader_can_hold():
    long = {name: n for name, path in modules(ROOT).items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"split these by idea (over {MAX_LINES} lines): {long}"


def test_no_import_cycle():
    assert cycles(import_graph(ROOT)) == []


def test_no_import_cycle_between_areas():
    areas = area_graph(import_graph(ROOT))
    assert {"lookbench.engine", "lookbench.models", "lookbench.training", "lookbench.hub",
            "lookbench.dataset_builder"} <= set(areas)  # the whole namespace, as areas
    assert cycles(areas) == []


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


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))


def test_the_area_check_finds_cycles_the_module_check_cannot(tmp_path):
    """No module circle, yet two area circles: two sibling packages (engine ⇄ models) and a subpackage beside a sibling
    module (data.review ⇄ data.sources). A package importing its own submodule, or a module its own package, is none."""
    (tmp_path / "setup.cfg").write_text("[options]\npackage_dir =\n    lookbench = lookbench\n    lookbench.models = models\n")
    _tree(tmp_path, {
        "lookbench/__init__.py": "from lookbench.engine import search\n",  # the package and its own descendant
        "lookbench/engine/__init__.py": "",
        "lookbench/engine/search.py": "from lookbench.models.net import Net\n",
        "lookbench/engine/rank.py": "",
        "models/__init__.py": "",
        "models/net.py": "def load():\n    from lookbench.engine.rank import rank\n",
        "lookbench/data/__init__.py": "from lookbench.data.sources import read\n",  # its own submodule
        "lookbench/data/sources.py": "from lookbench.data.review.store import Store\n",
        "lookbench/data/review/__init__.py": "",
        "lookbench/data/review/store.py": "",
        "lookbench/data/review/items.py": "import lookbench.data.review  # its own package\nfrom ..sources import read\n",
    })
    graph = import_graph(tmp_path)
    assert cycles(graph) == []
    assert area_graph(graph) == {
        "lookbench.engine": {"lookbench.models"}, "lookbench.models": {"lookbench.engine"},
        "lookbench.data.sources": {"lookbench.data.review"}, "lookbench.data.review": {"lookbench.data.sources"},
    }
    assert cycles(area_graph(graph)) == [["lookbench.data.review", "lookbench.data.sources"],
                                         ["lookbench.engine", "lookbench.models"]]
