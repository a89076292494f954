"""The GR-Lite tests' training sets, built once per session (tests/helpers/gr_lite.py draws them)."""
from pathlib import Path

import pytest

from tests.helpers.gr_lite import write_noise_gallery, write_single_view_set, write_train_set


@pytest.fixture(scope="session")
def train_folder(tmp_path_factory) -> Path:
    return write_train_set(tmp_path_factory.mktemp("train-data"))


@pytest.fixture(scope="session")
def single_view_folder(tmp_path_factory, train_folder) -> Path:
    return write_single_view_set(tmp_path_factory.mktemp("single-view-data"), train_folder)


@pytest.fixture(scope="session")
def distractor_folder(tmp_path_factory, train_folder) -> Path:
    return write_noise_gallery(tmp_path_factory.mktemp("distractors"), train_folder)
