"""Issue 56 item 5: every Python snippet of the README runs as written, from the checkout's root and offline (the
local folders the README names: metric/fine_recall, models/gr_lite/gr-lite-mini, the embedded Mini), and prints what
the README says it prints and nothing else: no warning (the model snippet printed torch's ``requires_grad`` one), no
traceback."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# a ```python block, and the "prints `…`" that may follow it
SNIPPET = re.compile(r"```python\n(?P<code>.*?)```\n+(?:prints `(?P<prints>[^`]*)`)?", re.S)


def snippets() -> list[tuple[str, str | None]]:
    return [(m["code"], m["prints"]) for m in SNIPPET.finditer((ROOT / "README.md").read_text())]


def test_the_readme_has_its_three_snippets():
    found = snippets()
    assert len(found) == 3 and [p for _, p in found] == [None, "0.0 100.0 100.0 86.0", "torch.Size([1, 192]) 1.0"]


@pytest.mark.slow
@pytest.mark.parametrize("number", range(3))
def test_a_readme_snippet_prints_what_the_readme_says_and_no_warning(number):
    code, prints = snippets()[number]
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not re.search(r"warn|traceback", proc.stderr, re.I), proc.stderr[-3000:]
    if prints is not None:
        assert proc.stdout == prints + "\n", (proc.stdout, proc.stderr)
    else:  # the evaluate snippet: its table, headed by the model and the cutoff
        title = " ".join(proc.stdout.split("subset")[0].split())
        assert "model efficientnet-lite0" in title and "queries after 2025-01-01" in title, proc.stdout
