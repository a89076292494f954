"""GR-Lite-text tests' training sets (tests/helpers/gr_lite.py draws them) and a tiny GR-Lite folder as the frozen tower."""
from pathlib import Path

import pytest
import torch

from tests.helpers.gr_lite import tiny_config, write_single_view_set, write_train_set


@pytest.fixture(scope="session")
def train_folder(tmp_path_factory) -> Path:
    return write_train_set(tmp_path_factory.mktemp("train-data"))


@pytest.fixture(scope="session")
def single_view_folder(tmp_path_factory, train_folder) -> Path:
    return write_single_view_set(tmp_path_factory.mktemp("single-view-data"), train_folder)


@pytest.fixture(scope="session")
def tower_folder(tmp_path_factory) -> Path:
    """A random tiny GR-Lite (64 px, 2 layers) saved with its processor: a folder `load_encoder` and training read."""
    from lookbench.models.gr_lite import GrLiteModel, processor_for

    folder = tmp_path_factory.mktemp("tower")
    torch.manual_seed(0)
    model = GrLiteModel(tiny_config()).eval()
    model.save_pretrained(folder)
    processor_for(model.config).save_pretrained(folder)
    return folder
