"""A fresh raw release for each builder test that asks for one (tests/helpers/raw_release.py writes it)."""
import pytest

from tests.helpers.raw_release import write_release


@pytest.fixture
def release(tmp_path):
    return write_release(tmp_path / "raw")
