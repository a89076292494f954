"""`lookbench push` of a staged mirror (docs/architecture.md §5) against a fake Hub endpoint on loopback (nothing
reaches the network): the repos it creates and uploads, revisions and release tags, and the mirrors it refuses."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from lookbench.upload_scripts.manifest import MANIFEST
from lookbench.upload_scripts.stage import stage

from tests.helpers.clients import free_port
from tests.helpers.fake_hub import FakeHub
from tests.helpers.staged_hub import REPOS, TOKEN, copy_mirror, run_cli, staged_files


@pytest.mark.slow
def test_push_creates_each_repo_and_uploads_its_folder_without_showing_the_token(hub, tmp_path):
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(hub), "--private", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert TOKEN not in proc.stdout + proc.stderr
    assert {r["authorization"] for r in fake.requests} == {f"Bearer {TOKEN}"}
    created = {f"{c['organization']}/{c['name']}": c for c in fake.created}
    assert {repo: c["type"] for repo, c in created.items()} == REPOS
    assert {repo: c.get("sdk") for repo, c in created.items()} == {
        "lookbench/lookbench": None, "lookbench/fine_recall": "gradio", "lookbench/gr-lite-mini": None,
        "lookbench/gr-lite-mini-text": None, "lookbench/demo": "gradio",
        "lookbench/leaderboard": "gradio"}
    assert {c["visibility"] for c in fake.created} == {"private"}
    commits = fake.commits
    assert set(commits) == {"dataset/lookbench/lookbench", "space/lookbench/fine_recall", "model/lookbench/gr-lite-mini",
                            "model/lookbench/gr-lite-mini-text",
                            "space/lookbench/demo", "space/lookbench/leaderboard"}
    assert commits["space/lookbench/demo"]["paths"] == staged_files(hub, "lookbench/demo")  # with the lookbench/ it carries
    assert {"README.md", "app.py", "requirements.txt", "lookbench/space/app.py"} <= set(commits["space/lookbench/demo"]["paths"])
    board = commits["space/lookbench/leaderboard"]["paths"]
    assert board == staged_files(hub, "lookbench/leaderboard") and "lookbench/space/board/app.py" in board
    assert commits["model/lookbench/gr-lite-mini"]["paths"] == staged_files(hub, "lookbench/gr-lite-mini")
    assert commits["model/lookbench/gr-lite-mini"]["bytes"]["model.safetensors"] == (hub / "lookbench/gr-lite-mini/model.safetensors").stat().st_size
    dataset = commits["dataset/lookbench/lookbench"]["paths"]
    assert "README.md" in dataset and not [p for p in dataset if p.split("/")[0] in ("fine_recall", "gr-lite-mini", "gr-lite-mini-text", "demo",
                                                                                      "leaderboard")]
    assert {c["revision"] for c in commits.values()} == {"main"}
    assert set(fake.validated) == set(REPOS.values())  # every card's YAML passed the endpoint's check
    assert "lookbench/demo (space): abc123" in proc.stdout


@pytest.mark.slow
def test_a_private_push_makes_a_repo_that_was_public_private_before_it_sends_a_file(hub, tmp_path):
    """create_repo keeps an existing repo's visibility (the Hub answers 409): a sealed release's labels pushed into a
    public repo of that name would be public. Each repo pushed private is set private before its commit."""
    with FakeHub() as fake:
        fake.existing = {f"{kind}/{repo}" for repo, kind in REPOS.items()}  # every repo there before, public
        proc = run_cli("push", "--hub", str(hub), "--private", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert fake.private == {f"{kind}/{repo}" for repo, kind in REPOS.items()}
    order = [(r["method"], r["path"]) for r in fake.requests]
    for repo, kind in REPOS.items():
        made_private = order.index(("PUT", f"/api/{kind}s/{repo}/settings"))
        assert made_private < next(i for i, (method, path) in enumerate(order)
                                   if method == "POST" and path.startswith(f"/api/{kind}s/{repo}/commit/"))


@pytest.mark.slow
def test_push_to_a_revision_creates_the_branch_first(hub, tmp_path):
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(hub), "--revision", "v2", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(fake.branches) == sorted(f"{t}/{r}@v2" for r, t in REPOS.items())
    assert {c["revision"] for c in fake.commits.values()} == {"v2"}


@pytest.mark.slow
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
@pytest.mark.slow
def test_push_refused_is_one_line_naming_the_repo(hub, tmp_path, status, words):
    with FakeHub(refuse=status) as fake:
        proc = run_cli("push", "--hub", str(hub), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lookbench push: error: lookbench/lookbench (dataset): ") and words in last, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and TOKEN not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_push_with_the_hub_unreachable_is_one_line(hub, tmp_path):
    port = free_port()  # a loopback port nobody listens on
    proc = run_cli("push", "--hub", str(hub), endpoint=f"http://127.0.0.1:{port}", token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lookbench push: error: lookbench/lookbench (dataset): cannot reach http://127.0.0.1:") and TOKEN not in proc.stderr


def test_push_names_a_folder_that_was_not_staged(tmp_path):
    proc = run_cli("push", "--hub", str(tmp_path), endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2 and f"{tmp_path / MANIFEST} not found" in proc.stderr


@pytest.mark.slow
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

@pytest.mark.slow
def test_each_pushed_snapshot_is_a_tagged_revision_and_the_old_one_stays_reachable(tmp_path, photos):
    from tests.helpers.raw_release import write_release
    from lookbench.cli import main

    data = tmp_path / "data" / "lookbench"
    assert main(["build", "--source", "raw", "--input", str(write_release(tmp_path / "raw1")), "--out", str(data), "--quiet"]) == 0
    with FakeHub() as fake:
        stage(tmp_path / "hub1", data=data, photos=photos)
        first = run_cli("push", "--hub", str(tmp_path / "hub1"), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        later = ("2026-01-10T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z")
        assert main(["build", "--append", str(write_release(tmp_path / "raw2", stamps=later, tag="b", variant=20)),
                     "--out", str(data), "--quiet"]) == 0
        staged = stage(tmp_path / "hub2", data=data, photos=photos)
        plan = run_cli("push", "--hub", str(tmp_path / "hub2"), "--dry-run", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        second = run_cli("push", "--hub", str(tmp_path / "hub2"), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        again = run_cli("push", "--hub", str(tmp_path / "hub2"), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    for proc in (first, plan, second, again):
        assert proc.returncode == 0, proc.stderr[-3000:]
    dataset = next(r for r in staged.repos if r.repo_type == "dataset")
    assert dataset.releases == ("v20251201", "v20260301") and dataset.release_tag == "v20260301"
    assert f"releases v20251201, v20260301 (data revision {dataset.data_revision}); tag v20260301 on the upload commit" in " ".join(plan.stdout.split())  # wrapped to the width
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
@pytest.mark.slow
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


@pytest.mark.slow
def test_a_branch_named_after_the_release_is_not_tagged_again(tmp_path, photos):
    from tests.helpers.raw_release import write_release
    from lookbench.cli import main

    data = tmp_path / "lookbench"
    assert main(["build", "--source", "raw", "--input", str(write_release(tmp_path / "raw")), "--out", str(data), "--quiet"]) == 0
    stage(tmp_path / "hub", data=data, photos=photos)
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(tmp_path / "hub"), "--revision", "v20251201", endpoint=fake.url, token=TOKEN,
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "the branch v20251201 carries the release name (no tag)" in " ".join(proc.stdout.split())
    assert fake.tags == {} and "dataset/lookbench/lookbench@v20251201" in fake.branches


# ---------------------------------------------------------------- hostile mirrors (issue 19 cases 2, 3, 8)

@pytest.mark.slow
def test_push_refuses_a_link_out_of_its_repo_folder_before_any_request(hub, tmp_path):
    """Case 2: a symlink demo/passwd.txt -> a file outside was prepared for upload with its contents."""
    mirror = copy_mirror(hub, tmp_path)
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
    (lambda m: m["repos"][4].update(repo_id="victim-org/demo"), "repo 'victim-org/demo' is not <namespace>/<name> for namespace 'lookbench'"),
    (lambda m: m["repos"][4].update(repo_id="../../etc"), "repo '../../etc' is not <namespace>/<name>"),
    (lambda m: m["repos"][4].update(repo_id="lookbench/de..mo"), "'lookbench/de..mo' is not a Hub repo id"),
    (lambda m: m["repos"][2].update(repo_type="weird"), "repo lookbench/gr-lite-mini has type 'weird'; types are dataset, model, space"),
    (lambda m: m["repos"][4].update(folder="."), "repo lookbench/demo names folder '.', the mirror itself"),
    (lambda m: m["repos"][4].update(folder="lookbench/fine_recall"), "which repo lookbench/fine_recall has too"),
    (lambda m: m["repos"][0].update(ignore="demo/**"), "repo lookbench/lookbench: ignore 'demo/**' is not a list of patterns"),
    (lambda m: m.update(namespace="a名前"), "--namespace 'a名前' is not a Hub user or organisation name"),
])
@pytest.mark.slow
def test_push_refuses_a_manifest_stage_would_not_have_written(hub, tmp_path, change, words):
    """Case 2: a tampered repos.json got a dry-run plan for another namespace, a bad type, the whole mirror."""
    mirror = copy_mirror(hub, tmp_path)
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_push_commits_the_files_it_checked_even_if_one_is_swapped_before_the_upload(hub, tmp_path):
    """Issue 37: `upload_folder` listed the folder again itself, so a file swapped for a link to a private file (or
    a file added) between push's check and the upload was sent; the checked files are now the commit."""
    import hashlib

    mirror = copy_mirror(hub, tmp_path)
    app = mirror / "lookbench/demo/app.py"
    checked = hashlib.sha256(app.read_bytes()).hexdigest()
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0 PRIVATE")

    def swap(repo):
        if repo != "space/lookbench/demo" or app.is_symlink():
            return
        app.unlink()
        app.symlink_to(secret)
        (mirror / "lookbench/demo/added-later.txt").write_text("not checked")

    with FakeHub() as fake:
        fake.on_preupload = swap
        proc = run_cli("push", "--hub", str(mirror), endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sent = next(c for c in fake.commit_log if c["repo"] == "space/lookbench/demo")
    assert sent["sha256"]["app.py"] == checked
    assert hashlib.sha256(secret.read_bytes()).hexdigest() not in {h for c in fake.commit_log for h in c["sha256"].values()}
    assert not [c for c in fake.commit_log if "added-later.txt" in c["paths"]]


@pytest.mark.slow
def test_repos_json_lists_exactly_the_files_push_sends(hub, tmp_path):
    """repos.json named the files stage wrote while push walked the folders again: a file added to a repo folder
    after stage was planned and sent, though the manifest never listed it. Now they are one list."""
    from lookbench.upload_scripts.manifest import Staging, files_of

    staging = Staging.load(hub)
    sent = {repo.repo_id: [f"{repo.folder}/{p.relative_to((hub / repo.folder).resolve()).as_posix()}"
                           for p in files_of(hub, repo)] for repo in staging.repos}
    assert sorted(f for files in sent.values() for f in files) == sorted(staging.files)
    dry = run_cli("push", "--hub", str(hub), "--dry-run", endpoint=None, token=None, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-2000:]
    planned = {line.split()[1]: int(line.split()[2]) for line in dry.stdout.splitlines() if line.split()[:1] in (["dataset"], ["model"], ["space"])}
    assert planned == {repo: len(files) for repo, files in sent.items()}
    mirror = copy_mirror(hub, tmp_path)
    (mirror / "lookbench/gr-lite-mini/optimizer.bin").write_bytes(b"added after stage")
    (mirror / "lookbench/demo/README.md").unlink()
    for dry_run in (("--dry-run",), ()):
        with FakeHub() as fake:
            proc = run_cli("push", "--hub", str(mirror), *dry_run, endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        assert proc.returncode == 2 and fake.requests == [] and "Plan" not in proc.stdout, proc.stdout + proc.stderr[-2000:]
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        assert "lookbench/gr-lite-mini/optimizer.bin is not in repos.json" in proc.stderr
    (mirror / "lookbench/gr-lite-mini/optimizer.bin").unlink()
    proc = run_cli("push", "--hub", str(mirror), "--dry-run", endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode == 2 and "repos.json lists lookbench/demo/README.md, which no repo folder" in proc.stderr
