"""Issue 46 item 6: every command output shown in README.md and docs/ is what the command prints today
(docs/captures.py regenerates them; this fails when a deterministic part drifts)."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("captures", ROOT / "docs" / "captures.py")
captures = sys.modules["captures"] = importlib.util.module_from_spec(spec)  # dataclasses look their module up
spec.loader.exec_module(captures)


def test_every_capture_has_its_block_and_every_marker_a_capture():
    names = [s.name for s in captures.STEPS if isinstance(s, captures.Capture)]
    markers = [m for f in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
               for m in re.findall(r"<!-- capture: ([\w-]+) -->", f.read_text())]
    assert sorted(markers) == sorted(names) and len(set(names)) == len(names)
    for capture in (s for s in captures.STEPS if isinstance(s, captures.Capture)):
        text = captures.block((ROOT / capture.file).read_text(), capture.name).group(1)
        assert text.startswith(f"$ lookbench {' '.join(capture.argv)}\n") == capture.prompt


def test_only_the_stated_nondeterministic_parts_are_normalised():
    shown = "intervals in results.json. stored result of 2026-12-04T17:48:52+00:00: 0 self-match(es) removed; 182.0 s"
    again = "intervals in results.json. stored result of 2026-12-06T05:01:02+00:00: 0 self-match(es) removed; 12.3 s"
    assert captures.normalised(shown) == captures.normalised(again)
    assert captures.normalised(shown) != captures.normalised(shown.replace("0 self-match", "1 self-match"))
    assert captures.normalised("86.9 [83.3, 89.8]") == "86.9 [83.3, 89.8]"  # scores are compared as they are


@pytest.mark.slow
def test_no_capture_has_drifted():
    """Runs every command of docs/captures.py in a scratch HF_HOME (the Mini, GR-Lite-mini, EfficientNet-Lite0)."""
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "captures.py"), "--check"], capture_output=True,
                          text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
