"""One staged mirror shared by the stage and push tests (staging is slow); a test that changes a mirror changes a
copy of it."""
from __future__ import annotations

from pathlib import Path

import pytest

from lookbench.upload_scripts.stage import stage


@pytest.fixture(scope="session")
def hub(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mirror") / "HUB"
    stage(out)
    return out
