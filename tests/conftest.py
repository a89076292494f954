"""Test-wide offline rules (docs/architecture.md §6): no test may ever reach a hub, and caches stay inside the project."""
import os
import sys
from pathlib import Path

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_EVALUATE_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HOME": str(Path(__file__).resolve().parent.parent / ".hf_home" / "tests"),
}
os.environ.update(OFFLINE_ENV)
# Output read whole: a test that checks what a command says is not a test of wrapping. tests/test_widths.py and the
# captures set the narrow widths (80, 100, a pipe's default) explicitly.
os.environ["COLUMNS"] = "400"
# pytest-xdist runs one worker per core: each worker, and every process it starts, gets its share of the cores for
# torch's (OpenMP) threads. With torch's default of one thread per core in every worker, the threads of one worker
# spin-wait on cores the other is using: two encoding tests side by side took 206 s instead of 94.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
from tests.helpers import venvs  # noqa: E402,F401  (its AT_START: this environment, before any test changes it)
from tests.helpers.clients import free_port  # noqa: E402


import datasets  # noqa: E402  (after the environment above is set)
import pytest  # noqa: E402


def pytest_configure(config):
    """The package's sources compiled to bytecode once, before any worker starts: the suite starts a few hundred
    Python processes that import lookbench, and with ``PYTHONDONTWRITEBYTECODE`` set none of them would keep what it
    compiled, so each compiled the same modules again (tests/submissions: 414 -> 367 CPU-s). Python reads the cache
    whatever that variable says, and compiles a module again when its source changes."""
    if hasattr(config, "workerinput"):  # an xdist worker: its controller compiled them
        return
    import compileall

    from tests.helpers.import_graph import modules

    for source in modules(Path(__file__).resolve().parent.parent).values():  # every module of the namespace
        compileall.compile_file(source, quiet=1)


@pytest.fixture(autouse=True)
def fresh_datasets_cache(tmp_path_factory, monkeypatch):
    """Offline, datasets serves a cached copy of any earlier folder with the same name (docs/architecture.md §6): give every test its own cache."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("datasets-cache")))


@pytest.fixture(autouse=True)
def own_results_store(tmp_path_factory, monkeypatch):
    """`lookbench evaluate` saves into the results store by default and reuses identical results: give every test
    its own store, so no test is answered by a result another test (or an earlier session) stored."""
    import lookbench.paths

    root = tmp_path_factory.mktemp("results-store")
    monkeypatch.setattr(lookbench.paths, "results_dir", lambda: root)
    return root


@pytest.fixture
def accelerate_two_cpu_processes():
    """The `accelerate launch` line for 2 CPU processes (gloo; run it with ACCELERATE_USE_CPU=1), on a port free
    right now so a socket left by an earlier launch never collides with this one."""
    port = free_port()
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(port)]
