"""Regenerate every command output shown in README.md and docs/ (the blocks after a ``<!-- capture: NAME -->`` line).

    python docs/captures.py            # run the commands, rewrite the blocks
    python docs/captures.py --check    # run them, exit 1 naming each block that drifted (tests/test_captures.py)

The commands run in a scratch folder (``runs/`` relative to it) with their own ``HF_HOME``, offline, ``COLUMNS=100``
and stdout a pipe, in the order below (a capture may depend on the runs before it), one after the other in one fresh
process (``lookbench.cli.main`` each, its stdout taken apart): eleven more starts of torch, datasets and faiss
would add a minute and show nothing. The scratch ``HF_HOME`` is shown as
``/tmp/docs_hf``. What differs from run to run is normalised before ``--check`` compares, and only that: the seconds
a run took and the date a stored result was made (``NONDETERMINISTIC``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHOWN_HF_HOME = "/tmp/docs_hf"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1", "COLUMNS": "100"}
# (pattern, placeholder): the parts of an output that change from run to run
NONDETERMINISTIC = ((re.compile(r"\b\d+\.\d s\b"), "<seconds> s"),
                    (re.compile(r"stored result of \d{4}-\d\d-\d\dT[\d:.+-]+"), "stored result of <date>"))


@dataclass
class Capture:
    """``lookbench *argv``; its stdout from the first line matching ``start`` (all of it when None) goes in the block
    after ``<!-- capture: name -->`` in ``file``; ``prompt``: the block begins with ``$ lookbench …``."""

    name: str
    file: str
    argv: tuple[str, ...]
    start: str | None = None
    prompt: bool = False


@dataclass
class Step:
    """A run whose output no document shows (it makes a result a capture reads)."""

    argv: tuple[str, ...]
    name: str = field(default="", init=False)


STEPS = [
    Capture("quickstart", "README.md", ("evaluate",)),
    Capture("evaluate-again", "docs/evaluating.md", ("evaluate",), start=r"^\[lo, hi\]: the 95% interval"),
    Step(("evaluate", "--save-predictions", "--output", "runs/gr-lite-mini", "--quiet")),
    Step(("evaluate", "--model", "efficientnet-lite0", "--output", "runs/efficientnet-lite0", "--quiet")),
    Step(("evaluate", "--model", "raw-pixels", "--quiet")),
    Step(("evaluate", "--cutoff", "model", "--quiet")),
    Step(("evaluate", "--model", "efficientnet-lite0", "--cutoff", "model", "--quiet")),
    Step(("evaluate", "--cutoff", "mini-v20250101", "--quiet")),
    Step(("evaluate", "--model", "efficientnet-lite0", "--cutoff", "2025-01-01", "--quiet")),
    Capture("explain", "docs/evaluating.md",
            ("explain", "runs/gr-lite-mini/results.json", "--subset", "RealStreetLook", "--query", "1", "--top", "5"), prompt=True),
    Capture("compare", "docs/statistics.md",
            ("compare", "runs/gr-lite-mini", "runs/efficientnet-lite0", "--metric", "fine", "--k", "1"), prompt=True),
    Capture("leaderboard", "docs/results-and-leaderboard.md", ("leaderboard",), prompt=True),
]


# Runs in the fresh process: each step's argv through the CLI, its stdout kept apart; a failing step ends the run.
DRIVER = """
import contextlib, io, json, sys
from lookbench.cli import main
outputs = []
for argv in json.loads(sys.argv[1]):
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(argv)
    if code:
        sys.exit(f"lookbench {' '.join(argv)} failed ({code})")
    outputs.append(stdout.getvalue())
print(json.dumps(outputs))
"""


def run(steps, cwd: Path, hf_home: Path) -> list[str]:
    """Each step's ``lookbench *argv`` offline in ``cwd``, in order, in one fresh process; their stdouts, with the
    scratch HF_HOME shown as ``SHOWN_HF_HOME``."""
    env = {**os.environ, **OFFLINE, "HF_HOME": str(hf_home)}
    proc = subprocess.run([sys.executable, "-c", DRIVER, json.dumps([list(step.argv) for step in steps])], cwd=cwd,
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.strip()[-2000:])
    return [stdout.replace(str(hf_home), SHOWN_HF_HOME) for stdout in json.loads(proc.stdout.splitlines()[-1])]


def shown(capture: Capture, stdout: str) -> str:
    """The block's text: the output from ``start``, after its ``$`` line."""
    lines = stdout.rstrip("\n").splitlines()
    if capture.start:
        first = next((i for i, line in enumerate(lines) if re.search(capture.start, line)), None)
        if first is None:
            raise SystemExit(f"{capture.name}: no line of `lookbench {' '.join(capture.argv)}` matches {capture.start!r}")
        lines = lines[first:]
    return "\n".join(([f"$ lookbench {' '.join(capture.argv)}"] if capture.prompt else []) + lines)


def block(text: str, name: str) -> re.Match:
    """The fenced block after the capture's marker."""
    found = re.search(rf"<!-- capture: {re.escape(name)} -->\n```\n(.*?)\n```", text, re.S)
    if found is None:
        raise SystemExit(f"no block after <!-- capture: {name} --> (a marker line, then a ``` block)")
    return found


def normalised(text: str) -> str:
    for pattern, placeholder in NONDETERMINISTIC:
        text = pattern.sub(placeholder, text)
    return text


def captures() -> dict[str, str]:
    """Every capture's text, the commands run in a fresh scratch folder."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="lookbench-captures-") as scratch:
        cwd, hf_home = Path(scratch) / "work", Path(scratch) / "hf"
        cwd.mkdir()
        for step, stdout in zip(STEPS, run(STEPS, cwd, hf_home), strict=True):
            if isinstance(step, Capture):
                out[step.name] = shown(step, stdout)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of rewriting; exit 1 on a drift")
    args = parser.parse_args(argv)
    texts = captures()
    drifted = []
    for capture in (s for s in STEPS if isinstance(s, Capture)):
        path = ROOT / capture.file
        doc = path.read_text()
        found = block(doc, capture.name)
        if args.check:
            if normalised(found.group(1)) != normalised(texts[capture.name]):
                drifted.append(f"{capture.file}: capture {capture.name}")
        else:
            path.write_text(doc[:found.start(1)] + texts[capture.name] + doc[found.end(1):])
    for line in drifted:
        print(f"drifted: {line} (python docs/captures.py rewrites it)")
    return 1 if drifted else 0


if __name__ == "__main__":
    sys.exit(main())
