"""The tiny offline LookBench folder (tests/helpers/engine_data.py) that the engine tests evaluate."""
from __future__ import annotations

import pytest

from tests.helpers.engine_data import write_folder


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("tiny") / "lookbench")
