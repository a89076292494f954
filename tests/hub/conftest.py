"""One staged mirror shared by the stage and push tests (staging is slow); a test that changes a mirror changes a
copy of it. Every stage here builds the demo's real-photo gallery from the same 200 Fashion-MNIST t10k photos (not
10,000), so its prepared assets are built once and reused."""
from __future__ import annotations

from pathlib import Path

import pytest

from lookbench.upload_scripts.stage import stage


@pytest.fixture(scope="session")
def photos(tmp_path_factory) -> Path:
    """The IDX folder of the demo's real-photo gallery, for ``stage(photos=...)`` and ``lookbench stage --photos``."""
    from tests.helpers.photos import small_photos

    return small_photos(tmp_path_factory.mktemp("photos"))


@pytest.fixture(scope="session")
def hub(tmp_path_factory, photos) -> Path:
    out = tmp_path_factory.mktemp("mirror") / "HUB"
    stage(out, photos=photos)
    return out
