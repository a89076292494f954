"""The built wheel installs one namespace, ``lookbench``, into a fresh virtual environment, with its extras beside the
CPU torch."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.staged_hub import shared_mirror
from tests.helpers.venvs import clean_env, linked_copy, pip_install, space_venv

ROOT = Path(__file__).resolve().parent.parent

CHECK = r"""
import importlib.util, json, sysconfig
from pathlib import Path
import importlib.metadata
import lookbench, datasets, lookbench.mteb, mteb
site = Path(sysconfig.get_paths()["purelib"])
print(json.dumps({
    "torchvision": importlib.util.find_spec("torchvision") is not None,
    "mteb": mteb.__version__,
    "mteb_only_in_extras": all("extra ==" in r for r in importlib.metadata.requires("lookbench") if r.startswith("mteb")),
    "lookbench": lookbench.__file__,
    "top_level": {name: importlib.util.find_spec(name) is not None for name in ("models", "metric", "space", "dataset_builder", "upload_scripts")},
    "site_entries": sorted(p.name for p in site.iterdir() if p.name.split(".")[0] in ("models", "metric", "space", "dataset_builder", "upload_scripts")),
    "datasets_file": datasets.__file__,
    "datasets_is_hf": hasattr(datasets, "load_dataset") and hasattr(datasets, "GeneratorBasedBuilder"),
    "card_template": (Path(lookbench.__file__).parent / "dataset_builder" / "dataset_card_template.md").is_file(),
    "metric_card": (Path(lookbench.__file__).parent / "metric" / "fine_recall" / "README.md").is_file(),
    "taxonomy": (Path(lookbench.__file__).parent / "dataset_builder" / "mini_taxonomy.json").is_file(),
    "gr_lite_mini": sorted(p.name for p in (Path(lookbench.__file__).parent / "models" / "gr_lite" / "gr-lite-mini").iterdir() if p.name != "__pycache__"),
}))
"""


@pytest.mark.slow
def test_wheel_installs_one_namespace_in_a_fresh_venv(tmp_path, tmp_path_factory):
    """The venv starts with the libraries the demo Space installs from its requirements.txt — the package's own
    dependencies, read from its metadata, and gradio — linked from the venv built from exactly that file
    (tests/helpers/venvs.py), and pip installs the wheel with its extras into it, resolving the wheel's dependencies
    against them: the mteb extra beside the CPU torch, without the torchvision that breaks beside it."""
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(ROOT)], check=True, capture_output=True)
    wheel = next(dist.glob("lookbench-*.whl"))
    venv = linked_copy(space_venv(tmp_path_factory, shared_mirror(tmp_path_factory) / "lookbench" / "demo"), tmp_path / "venv")
    python = venv / "bin" / "python"
    # [space]: stage writes the Spaces' sdk_version from gradio
    pip_install(python, "torch==2.13.0", f"lookbench[space,mteb] @ {wheel.as_uri()}", cwd=tmp_path)
    env = clean_env()
    proc = subprocess.run([str(python), "-c", CHECK], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["lookbench"].startswith(str(venv)) and "site-packages/lookbench/" in out["lookbench"]
    assert not out["torchvision"] and out["mteb"].startswith("2.") and out["mteb_only_in_extras"]
    assert out["top_level"] == {"models": False, "metric": False, "space": False, "dataset_builder": False, "upload_scripts": False}
    assert out["site_entries"] == []
    assert out["datasets_file"].endswith("site-packages/datasets/__init__.py") and out["datasets_is_hf"]
    assert out["card_template"] and out["metric_card"] and out["taxonomy"]
    assert out["gr_lite_mini"] == [
        "README.md", "config.json", "configuration_gr_lite.py", "image_processing_gr_lite.py", "model.safetensors",
        "modeling_gr_lite.py", "preprocessor_config.json", "training_summary.json"]
    # the README's main job, from the installed wheel: build LookBench-Mini, evaluate the default model
    env.update({"HF_HOME": str(tmp_path / "hf_home"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"})
    cli = subprocess.run([str(venv / "bin" / "lookbench"), "evaluate", "--quiet", "--output", str(tmp_path / "results")],
                         cwd=tmp_path, capture_output=True, text=True, env=env)
    assert cli.returncode == 0, cli.stderr[-3000:]
    assert "LookBench-Mini (synthetic) — model gr-lite-mini, strict mode" in cli.stdout  # the table names its data
    overall = next(line for line in cli.stdout.splitlines() if line.startswith("overall")).split()
    assert overall[-1] == "282"  # LookBench-Mini's test queries
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["provenance"]["model"]["name"] == "gr-lite-mini"
    # the demo Space carries the installed package as site-packages lays it out, file for file (less the
    # subpackages of extras its requirements leave out); its two galleries, and the real-photo release the second
    # is of, are the run's, prepared once (tests/helpers/staged_hub.py) and copied here: this stage checks them
    from lookbench.paths import lookbench_home
    from lookbench.space.assets import real_photo_release
    from tests.helpers.staged_hub import shared_photos

    photos = shared_photos(tmp_path_factory)
    for prepared in (lookbench_home() / "space", real_photo_release(photos)):
        shutil.copytree(prepared, tmp_path / "hf_home" / prepared.relative_to(Path(os.environ["HF_HOME"])))
    stage = subprocess.run([str(venv / "bin" / "lookbench"), "stage", "--out", str(tmp_path / "hub"), "--photos", str(photos)],
                           cwd=tmp_path, capture_output=True, text=True, env=env)
    assert stage.returncode == 0, stage.stderr[-3000:]
    assert "Preparing the Space's assets" not in stage.stdout, stage.stdout  # both galleries read as prepared
    installed = Path(out["lookbench"]).parent
    carried = tmp_path / "hub" / "lookbench" / "demo" / "lookbench"
    from lookbench.upload_scripts.carried import EXTRA_ONLY

    files = {p.relative_to(installed).as_posix() for p in installed.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.relative_to(installed).parts[0] not in EXTRA_ONLY}
    assert {p.relative_to(carried).as_posix() for p in carried.rglob("*") if p.is_file()} == files


@pytest.mark.slow
def test_import_lookbench_is_the_library_beside_a_dataset_folder_named_lookbench(tmp_path):
    """Where users run load_dataset("lookbench", ...), a data folder `lookbench/` (no __init__.py) sits in the working
    directory; under the editable install `import lookbench` must still be the library, not that folder as a
    namespace package (docs/architecture.md §6)."""
    (tmp_path / "lookbench" / "RealStreetLook").mkdir(parents=True)
    (tmp_path / "lookbench" / "README.md").write_text("---\npretty_name: LookBench\n---\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = "import lookbench, lookbench.models.gr_lite; print(lookbench.__file__); print(callable(lookbench.evaluate))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    where, evaluate_callable = proc.stdout.split()
    assert where.endswith("lookbench/__init__.py") and not where.startswith(str(tmp_path)) and evaluate_callable == "True"


def test_setup_cfg_lists_every_package_folder():
    """setup.cfg is the one list of packages: every folder of the namespace that holds an ``__init__.py`` is in
    ``packages =`` (a missing one would be left out of the wheel), and every listed one exists."""
    import configparser

    from tests.helpers.import_graph import modules, package_dirs

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    listed = config["options"]["packages"].split()
    found = [name for name, path in modules(ROOT).items() if path.name == "__init__.py"]
    assert sorted(listed) == sorted(found)
    assert set(package_dirs(ROOT)) <= set(listed)
