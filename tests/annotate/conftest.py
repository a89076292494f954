import pytest

from lookbench.dataset_builder.crawl import write_crawl


@pytest.fixture(scope="session")
def mini_crawl(tmp_path_factory):
    """A LookBench-Mini crawl whose labels are known (``truth.jsonl`` beside it); shop titles name the category and
    the colour ("red top")."""
    return write_crawl("mini", tmp_path_factory.mktemp("mini") / "c", scale=0.04)
