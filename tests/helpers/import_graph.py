"""The project's import graph read from its source, as Python would resolve it once installed.

setup.cfg's ``package_dir`` places folders into the ``lookbench`` namespace (``models/`` is ``lookbench.models``), so
module names come from that mapping, not from the folders. Every ``import`` and ``from … import`` counts, wherever it
stands (inside functions too: a deferred import is still a dependency), and so does ``importlib.import_module`` of a
literal name. An edge goes to the module named (``from lookbench.engine import search`` → ``lookbench.engine.search``;
``from lookbench.engine import evaluate`` → ``lookbench.engine``); a parent package's ``__init__`` counts only where it
is named itself. docs/architecture.md §2 declares the layers this graph is checked against.
"""
from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path


def package_dirs(root: Path) -> dict[str, Path]:
    """setup.cfg's ``package_dir``: package name → folder."""
    config = configparser.ConfigParser()
    config.read(root / "setup.cfg", encoding="utf-8")
    pairs = (line.split("=") for line in config["options"]["package_dir"].strip().splitlines())
    return {name.strip(): root / folder.strip() for name, folder in pairs}


def modules(root: Path) -> dict[str, Path]:
    """Every module of the installed namespace → its source file. Folders that are not identifiers (the
    ``gr-lite-mini`` model folder, whose code files are remote-code copies) are not packages and are left out. A file
    is named by the deepest folder ``package_dir`` maps that holds it, so ``models/training/`` is ``lookbench.training``
    (its mapping), never also ``lookbench.models.training``."""
    mapped = package_dirs(root)
    owner = {folder: package for package, folder in mapped.items()}
    found = {}
    for package, folder in mapped.items():
        for path in folder.rglob("*.py"):
            if owner[max((f for f in owner if path.is_relative_to(f)), key=lambda f: len(f.parts))] != package:
                continue
            parts = path.relative_to(folder).with_suffix("").parts
            if not all(part.isidentifier() for part in parts):
                continue
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            found[".".join((package, *parts))] = path
    return found


def _imported(tree: ast.AST, name: str, is_package: bool):
    """Absolute names of everything a module's source imports (each ``from`` name also as ``module.name``)."""
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = here
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                yield base, f"{base}.{alias.name}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.args[0].value, None


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the project modules it imports."""
    found = modules(root)
    graph = {}
    for name, path in found.items():
        edges = set()
        for base, member in _imported(ast.parse(path.read_text(encoding="utf-8"), str(path)), name,
                                      path.name == "__init__.py"):
            target = member if member in found else base
            while target and target not in found:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def area_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between areas (docs/architecture.md §2): an import ``a → b`` is an edge between the children
    of the deepest package both lie in that hold them (``lookbench.space.board.app → lookbench.leaderboard.load`` is
    ``lookbench.space → lookbench.leaderboard``); an import between a package and its own descendant is none."""
    areas: dict[str, set[str]] = {}
    for module, targets in graph.items():
        for target in targets:
            mine, theirs = module.split("."), target.split(".")
            shared = 0
            while shared < min(len(mine), len(theirs)) and mine[shared] == theirs[shared]:
                shared += 1
            if shared in (len(mine), len(theirs)):
                continue  # one holds the other
            areas.setdefault(".".join(mine[:shared + 1]), set()).add(".".join(theirs[:shared + 1]))
            areas.setdefault(".".join(theirs[:shared + 1]), set())
    return areas


def declared_layers(document: Path) -> dict[str, int]:
    """The layer table of docs/architecture.md §2: module name (a name covers its submodules) → layer number."""
    layers = {}
    for line in document.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\|\s*(\d+)\s[^|]*\|([^|]*)\|", line)
        if match:
            for name in re.findall(r"`([\w.]+)`", match.group(2)):
                layers[name] = int(match.group(1))
    return layers


def layer_of(module: str, layers: dict[str, int]) -> int | None:
    """The layer of the longest declared name that is the module or one of its packages."""
    best = max((name for name in layers if module == name or module.startswith(name + ".")), key=len, default=None)
    return None if best is None else layers[best]


def upward_imports(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    """Each import from a lower layer into a higher one, as ``a (layer) → b (layer)``."""
    found = []
    for module in sorted(graph):
        for target in sorted(graph[module]):
            mine, theirs = layer_of(module, layers), layer_of(target, layers)
            if mine is not None and theirs is not None and theirs > mine:
                found.append(f"{module} (layer {mine}) → {target} (layer {theirs})")
    return found
