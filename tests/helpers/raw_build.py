"""`lookbench build` of raw releases (tests/helpers/raw_release.py), run through the CLI as a user runs it."""
from __future__ import annotations

from pathlib import Path

from lookbench import cli

from tests.helpers.raw_release import write_release

FLAT = "RealStudioFlat"
LATER = ("2026-01-10T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z")  # the appended release's stamps


def build(release, out, *flags):
    """`lookbench build --source raw` of ``release`` into ``out``, quiet, with any further flags: the exit code."""
    return cli.main(["build", "--source", "raw", "--input", str(release), "--out", str(out), "--quiet", *flags])


def build_two_releases(root: Path) -> Path:
    """``root/lookbench`` holding two snapshots: a raw release built, then a later one appended with `--append`."""
    out = root / "lookbench"
    assert cli.main(["build", "--source", "raw", "--input", str(write_release(root / "raw1")), "--out", str(out), "--quiet"]) == 0
    assert cli.main(["build", "--append", str(write_release(root / "raw2", stamps=LATER, tag="b", variant=20)),
                     "--out", str(out), "--quiet"]) == 0
    return out
