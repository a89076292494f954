"""docs/architecture.md is the map of the code: every path and name it gives in backticks exists (issue 52, item 6).

A span is checked when it reads as a repo path — a file with a suffix (``lookbench/results/folder.py``) or a folder
ending in ``/`` (``space/board/``), from the repo's root, from a folder setup.cfg's ``package_dir`` maps into the
namespace (``engine/run.py``, ``board/app.py``) or as installed (``lookbench/training/`` is ``models/training/``); a
``path::name`` also for its name — or as a dotted name: ``lookbench.results.folder`` (a module, found through
``package_dir`` as the layer test finds them), ``lookbench.results.folder.ResultFolder.saved_rankings`` (then each name
defined where the one before it is: the module, a class), and the short ``results.folder.snapshot`` or
``store.read_json`` (the tail of a module's name; a name of several modules must be defined in one of them). So on the
page a dotted name whose head is a module's tail means that module: a JSON key is written ``provenance["model"]``.
Anything else in backticks (a Hub id, ``$HF_HOME/…``, ``<raw>/…``, a file name such as ``results.json``) is prose.

The map sends its reader to the topic pages, so every relative link of the README and the docs must resolve too: the
file, and the heading its ``#anchor`` names (as GitHub makes anchors of headings).
"""
from __future__ import annotations

import ast
import importlib.util
import re
import textwrap
from pathlib import Path

from tests.helpers.import_graph import modules, package_dirs

ROOT = Path(__file__).resolve().parent.parent
PATH = re.compile(r"[\w.-]+(/[\w.-]+)*/([\w-]+\.\w+)?")  # a file with a suffix, or a folder ending in "/"
FILE_SUFFIXES = {"py", "md", "json", "jsonl", "txt", "cfg", "toml", "parquet", "npz", "gz", "faiss", "png", "html",
                 "safetensors", "bin", "lock", "whl"}  # ``results.json`` is a file, not a name in ``lookbench.results``
NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(\(.*\))?")


def _defined(body) -> dict[str, ast.AST]:
    """The names a module or class body defines (functions, classes, assignments, imports) → their node."""
    names = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for leaf in ast.walk(target):
                    if isinstance(leaf, ast.Name):
                        names[leaf.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, (ast.If, ast.Try)):  # TYPE_CHECKING blocks, guarded imports
            names.update(_defined(node.body))
    return names


def _missing_name(module: Path, chain: list[str]) -> str | None:
    """The first name of ``chain`` not defined where the one before it is (the module, then each class). A module
    that loads names on first use (its ``__getattr__``) defines each name it spells out as a string."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    body = tree.body
    lazy = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)} \
        if "__getattr__" in _defined(body) else set()
    for depth, name in enumerate(chain):
        node = _defined(body).get(name)
        if node is None and depth == 0 and name in lazy:
            return None
        if node is None:
            return name
        if not isinstance(node, ast.ClassDef):
            return None  # a function's or a value's attributes are not the tree's
        body = node.body
    return None


def _owners(prefix: list[str], found: dict[str, Path]) -> list[str]:
    """The modules a dotted prefix names: itself when it is written whole (``lookbench.…``), else each module whose
    name ends with it — for a one-part prefix only when it is no library Python would import by that name (the
    ``evaluate`` of ``evaluate.load`` is Hugging Face's, not ``lookbench.commands.evaluate``)."""
    name = ".".join(prefix)
    if prefix[0] == "lookbench":
        return [name] if name in found else []
    if len(prefix) == 1 and importlib.util.find_spec(name) is not None:
        return []
    return [m for m in found if m.endswith("." + name)]


def _check_name(span: str, found: dict[str, Path]) -> str | None:
    """Why a dotted name is not in the namespace (None: it is, or it names no module of ours, or it is a file name)."""
    parts = span.split("(")[0].split(".")
    if parts[-1] in FILE_SUFFIXES:
        return None
    for cut in range(len(parts), 0, -1):
        owners = _owners(parts[:cut], found)
        if owners:
            missing = [_missing_name(found[owner], parts[cut:]) for owner in owners]
            if None in missing:
                return None
            return f"{span}: {' nor '.join(owners)} defines no {missing[0]}"
    return f"{span}: no such module" if parts[0] == "lookbench" else None


def _check_path(span: str, root: Path, mapped: dict[str, Path]) -> str | None:
    """Why a repo path does not exist (None: it does, or it is no path of this repo)."""
    path, _, name = span.partition("::")
    first = path.split("/")[0]
    candidates = [base / path for base in (root, *mapped.values()) if (base / first).is_dir()]
    candidates += [folder / path[len(package) + 1:] for package, folder in mapped.items()
                   if path.startswith(package.replace(".", "/") + "/")]  # as installed: lookbench/training/…
    if not candidates:
        return None
    target = next((c for c in candidates if (c.is_dir() if path.endswith("/") else c.is_file())), None)
    if target is None:
        return f"{span}: no such {'folder' if path.endswith('/') else 'file'}"
    missing = name and target.suffix == ".py" and _missing_name(target, name.split("."))
    return f"{span}: {path} defines no {missing}" if missing else None


def missing(page: str, root: Path) -> list[str]:
    """Each path or name in backticks on ``page`` that the tree under ``root`` does not have."""
    found = modules(root)
    mapped = package_dirs(root)
    problems = []
    for span in dict.fromkeys(re.findall(r"`([^`\n]+)`", page)):
        if PATH.fullmatch(span.split("::")[0]) and "/" in span:
            problem = _check_path(span, root, mapped)
        elif NAME.fullmatch(span):
            problem = _check_name(span, found)
        else:
            continue
        if problem:
            problems.append(problem)
    return problems


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: str) -> set[str]:
    """The anchors GitHub gives a page's headings (lower case, punctuation dropped, spaces as hyphens); a ``#`` line
    inside a fenced block is no heading."""
    found, fenced = set(), False
    for line in page.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"#{1,6}\s+(.*)", line)):
            found.add(re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-"))
    return found


def broken_links(path: Path) -> list[str]:
    """Each relative link of the Markdown page ``path`` whose file or heading does not exist."""
    problems = []
    for target in dict.fromkeys(LINK.findall(path.read_text(encoding="utf-8"))):
        if "://" in target or target.startswith("mailto:"):
            continue
        name, _, anchor = target.partition("#")
        linked = path.parent / name if name else path
        if not linked.exists():
            problems.append(f"{path.name}: {target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text(encoding="utf-8")):
            problems.append(f"{path.name}: {target}: no such heading")
    return problems


def test_every_path_and_module_the_architecture_page_names_exists():
    assert missing((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"), ROOT) == []


def test_a_made_up_path_or_name_is_found(tmp_path):
    """A small tree laid out as this project is (a folder mapped into the namespace), and a page naming real and
    made-up paths and names: only the made-up ones are reported; prose in backticks is left alone."""
    (tmp_path / "setup.cfg").write_text("[options]\npackage_dir =\n    lookbench = lookbench\n    lookbench.space = space\n")
    for name, text in {"lookbench/__init__.py": "", "lookbench/engine/__init__.py": "",
                       "lookbench/engine/run.py": "def evaluate():\n    pass\n\nclass Options:\n    modes = 1\n",
                       "space/__init__.py": "", "space/board/__init__.py": "", "space/board/app.py": "LEGEND = ''\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    page = textwrap.dedent("""\
        Real: `lookbench/engine/run.py`, `engine/run.py`, `space/board/`, `board/app.py`, `space/board/app.py::LEGEND`,
        `lookbench.engine.run`, `lookbench.engine.run.evaluate()`, `lookbench.engine.run.Options.modes`,
        `lookbench.space.board.app.LEGEND`, `engine.run.evaluate`, `board.app.LEGEND`, `run.Options`, `app.LEGEND`.
        As installed: `lookbench/space/board/app.py`, `lookbench/space/`.
        Made up: `lookbench/engine/results.py`, `engine/ranking.py`, `space/review/`, `space/board/app.py::_frame`,
        `lookbench.engine.results`, `lookbench.engine.run.locate`, `lookbench.engine.run.Options.mode`,
        `engine.run.VERIFIED`, `lookbench/space/review.py`, `run.locate`.
        Prose: `lookbench/lookbench`, `srpone/look-bench`, `$HF_HOME/lookbench/results`, `<raw>/<Subset>/query.jsonl`,
        `provenance["model"]`, `DIR/text/`, `lookbench evaluate`, `run.json`, `evaluate.load`, `json.loads`.
        """)
    assert missing(page, tmp_path) == [
        "lookbench/engine/results.py: no such file",
        "engine/ranking.py: no such file",
        "space/review/: no such folder",
        "space/board/app.py::_frame: space/board/app.py defines no _frame",
        "lookbench.engine.results: lookbench.engine defines no results",
        "lookbench.engine.run.locate: lookbench.engine.run defines no locate",
        "lookbench.engine.run.Options.mode: lookbench.engine.run defines no mode",
        "engine.run.VERIFIED: lookbench.engine.run defines no VERIFIED",
        "lookbench/space/review.py: no such file",
        "run.locate: lookbench.engine.run defines no locate",
    ]


def test_every_link_of_the_readme_and_the_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert len(pages) > 10 and [problem for page in pages for problem in broken_links(page)] == []


def test_a_link_to_a_missing_page_or_heading_is_found(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## The `text` config: where it is\n\n```bash\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    page.write_text("[a](other.md) [b](other.md#the-text-config-where-it-is) [c](#here) [d](https://example.org/x#y)\n"
                    "[e](gone.md) [f](other.md#not-a-heading) [g](#nowhere)\n\n## Here\n")
    assert broken_links(page) == ["page.md: gone.md: no such file", "page.md: other.md#not-a-heading: no such heading",
                                  "page.md: #nowhere: no such heading"]
