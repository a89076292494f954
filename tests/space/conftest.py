"""What the tests of tests/space/ share: the demo's galleries, its app and the app served on loopback, built once per
session (about a minute each gallery); a folder in gradio's upload cache per test that asks; and, once per test
module, the leaderboard Space's results repo and its board with every submission judged."""
import shutil
from pathlib import Path

import pytest

from lookbench.space.board.app import Board
from lookbench.space.board.repo import Verdicts

from tests.helpers import clients
from tests.helpers.board import ALLOWED, honest_result, judged, results_repo
from tests.helpers.staged_hub import shared_photos
from tests.helpers.space_app import serving as _serving


@pytest.fixture(scope="session")
def space_root(tmp_path_factory):
    """The folder of the session's galleries, as ``lookbench demo --assets`` takes it."""
    return tmp_path_factory.mktemp("space")


def _prepared(tmp_path_factory, gallery: str, space_root: Path) -> Path:
    """A copy in ``space_root`` of one of the demo's galleries as the run prepared them once in ``$HF_HOME`` (about a
    minute each to build; tests/helpers/staged_hub.py), so what these tests prepare there stays their own."""
    from lookbench.paths import space_assets_dir

    shared_photos(tmp_path_factory)
    return Path(shutil.copytree(space_assets_dir() / gallery, space_root / gallery))


@pytest.fixture(scope="session")
def space_assets(space_root, tmp_path_factory):
    """The Space's assets of the embedded Mini."""
    from lookbench.space.assets import EMBEDDED

    return _prepared(tmp_path_factory, EMBEDDED, space_root)


@pytest.fixture(scope="session")
def photo_assets(space_root, tmp_path_factory):
    """The real-photo gallery: the release `lookbench build --source fashion-mnist` makes of the first 200 t10k photos."""
    from lookbench.space.assets import PHOTOS

    return _prepared(tmp_path_factory, PHOTOS, space_root)


@pytest.fixture(scope="session")
def space_app(space_assets, photo_assets):
    from lookbench.space.app import SpaceApp

    return SpaceApp([space_assets, photo_assets])


@pytest.fixture(scope="session")
def served(space_app):
    yield from _serving(space_app)


@pytest.fixture(scope="session")
def client(served):
    return clients.gradio(served)


@pytest.fixture
def upload_cache():
    """A folder inside gradio's upload cache, where gradio's upload and preprocessing put files; removed after."""
    import uuid

    from gradio.utils import get_upload_folder

    folder = Path(get_upload_folder()) / f"lookbench-test-{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """The results repo: the honest submission and the two tampered ones."""
    result = honest_result(tmp_path_factory.mktemp("honest") / "out")
    return results_repo(result, tmp_path_factory.mktemp("results") / "repo")


@pytest.fixture(scope="module")
def board(repo, tmp_path_factory):
    board = Board(folder=repo, verdicts=Verdicts(tmp_path_factory.mktemp("verdicts") / "verdicts.json"), allowed=ALLOWED)
    board.refresh()
    judged(board)
    return board
