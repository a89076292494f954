"""Fast start (docs/architecture.md §7): the CLI's help and listings, and `import lookbench`, load no heavy library;
GR-Lite joins transformers' Auto classes when registered."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GR_LITE_MINI = Path(__file__).resolve().parent.parent / "models" / "gr_lite" / "gr-lite-mini"
HEAVY = ("torch", "transformers", "datasets", "faiss", "pyarrow")

PROBE = """
{before}
import json, sys
{code}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r} or m == {extra!r})))
"""


def loaded_after(code: str, extra: str = "", before: str = "") -> list[str]:
    """Modules among HEAVY (and ``extra``) that a fresh interpreter has loaded after running ``before`` and ``code``."""
    proc = subprocess.run([sys.executable, "-c", PROBE.format(code=code, heavy=HEAVY, extra=extra, before=before)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cli(*argv: str) -> str:
    return f"from lookbench.cli import main\ntry:\n    main({list(argv)!r})\nexcept SystemExit:\n    pass"


@pytest.mark.parametrize("argv", [["--help"], ["evaluate", "--help"], ["build", "--help"], ["leaderboard", "--help"],
                                  ["explain", "--help"], ["compare", "--help"], ["stage", "--help"], ["push", "--help"]])
def test_help_imports_no_heavy_library(argv):
    assert loaded_after(cli(*argv)) == []


@pytest.mark.parametrize("argv", [["models"], ["subsets"], ["leaderboard", "--reference", "release_v2601"]])
def test_listings_import_no_torch(argv):
    assert not [m for m in loaded_after(cli(*argv)) if m.split(".")[0] in ("torch", "transformers", "faiss")]


def test_import_lookbench_loads_no_auto_classes_and_hooks_no_import():
    modeling_auto = "transformers.models.auto.modeling_auto"
    assert loaded_after("import lookbench, sys; assert len(sys.meta_path) == LEN", extra=modeling_auto,
                        before="import sys; LEN = len(sys.meta_path)") == []


@pytest.mark.slow
@pytest.mark.parametrize("order", ["lookbench first", "transformers first"])
def test_auto_model_loads_gr_lite_without_remote_code_once_registered(order):
    imports = ["from lookbench.models.gr_lite import register_auto_classes",
               "from transformers import AutoConfig, AutoImageProcessor, AutoModel"]
    if order == "transformers first":
        imports.reverse()
    code = "\n".join(imports) + "\nregister_auto_classes()" + f"""
model = AutoModel.from_pretrained({str(GR_LITE_MINI)!r})
config = AutoConfig.from_pretrained({str(GR_LITE_MINI)!r})
processor = AutoImageProcessor.from_pretrained({str(GR_LITE_MINI)!r})
print(type(model).__name__, type(config).__name__, type(processor).__name__, file=sys.stderr)
assert type(model).__module__ == "lookbench.models.gr_lite.modeling_gr_lite", type(model).__module__
"""
    assert "torch" in loaded_after(code)


def test_cli_choices_are_the_declared_ones():
    from lookbench.metric.fine_recall import bootstrap, fine_recall, records
    from lookbench.settings import MODES

    assert MODES is records.MODES and fine_recall.score_retrieval is bootstrap.score_retrieval  # one implementation


def test_the_metric_core_serves_the_cli_and_leaderboard_without_datasets_or_evaluate():
    code = ("import lookbench.settings, lookbench.leaderboard.ranking, lookbench.metric.fine_recall.records, "
            "lookbench.metric.fine_recall.judging, lookbench.metric.fine_recall.bootstrap")
    assert loaded_after(code, extra="evaluate") == []
