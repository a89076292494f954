"""One staged mirror for the whole run, shared by the stage, push and acceptance tests (staging is slow); a test that
changes a mirror changes a copy of it. Every stage here builds the demo's real-photo gallery from the same 200
Fashion-MNIST t10k photos (not 10,000), so its prepared assets are built once and reused."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.staged_hub import shared_mirror, shared_photos


@pytest.fixture(scope="session")
def photos(tmp_path_factory) -> Path:
    """The IDX folder of the demo's real-photo gallery, for ``stage(photos=...)`` and ``lookbench stage --photos``."""
    return shared_photos(tmp_path_factory)


@pytest.fixture(scope="session")
def hub(tmp_path_factory) -> Path:
    return shared_mirror(tmp_path_factory)
