"""`lookbench stage --only` and `lookbench push --only` (docs/publishing.md, issue 54 part 6): a release that changed only
its data stages and pushes just the dataset and its labels — the other repos of the mirror kept as they are, nothing
of the demo prepared, no model loaded — and an unknown part is refused with the list."""
from __future__ import annotations

import json

import pytest

from lookbench.files import folder_revision
from lookbench.upload_scripts.manifest import MANIFEST, PARTS, Staging, files_of, parts_of
from lookbench.upload_scripts.stage import stage

from tests.helpers.fake_hub import FakeHub
from tests.helpers.shared import sealed_mini
from tests.helpers.staged_hub import REPOS, TOKEN, copy_mirror, run_cli, staged_files


def _nothing_prepared(monkeypatch) -> None:
    """Any gallery prepared or encoder loaded fails the test."""
    import lookbench.encoders.registry
    import lookbench.space.assets

    def refused(*args, **kwargs):
        raise AssertionError("a part not asked for was prepared")

    monkeypatch.setattr(lookbench.space.assets, "open_galleries", refused)
    monkeypatch.setattr(lookbench.encoders.registry, "load_encoder", refused)


def _tops(mirror) -> set[str]:
    return {p.relative_to(mirror).as_posix() for p in mirror.rglob("*") if p.is_file()}


def test_an_unknown_part_is_refused_with_the_list(tmp_path):
    assert parts_of("labels, dataset") == ("dataset", "labels")
    assert parts_of(None) == PARTS
    for only in ("dataset,demos", "", " , "):
        with pytest.raises(ValueError) as err:
            parts_of(only)
        assert str(err.value).endswith("the parts are dataset, labels, fine_recall, gr-lite-mini, gr-lite-mini-text, "
                                       "demo, leaderboard, review"), str(err.value)
    with pytest.raises(ValueError, match="unknown part 'demos'"):
        stage(tmp_path / "HUB", only="dataset,demos")
    assert not (tmp_path / "HUB").exists()
    proc = run_cli("push", "--hub", str(tmp_path), "--only", "models", endpoint=None, token=None, cwd=tmp_path)
    assert proc.returncode != 0 and "unknown part 'models'; the parts are dataset, labels," in proc.stderr, proc.stderr


@pytest.mark.slow
def test_only_the_dataset_is_staged_as_a_full_stage_stages_it_and_nothing_else_is_prepared(hub, tmp_path, monkeypatch):
    _nothing_prepared(monkeypatch)
    staging = stage(tmp_path / "HUB", only="dataset")
    mirror = tmp_path / "HUB"
    full = Staging.load(hub)
    assert staging.repos == (full.repos[0],)  # the same entry: id, releases, data revision, the nested repos ignored
    dataset = [f for f in staged_files(hub, "lookbench") if f.split("/")[0] not in ("fine_recall", "gr-lite-mini",
                                                                                     "gr-lite-mini-text", "demo", "leaderboard")]
    assert _tops(mirror) == {MANIFEST, *(f"lookbench/{f}" for f in dataset)}
    for name in dataset:
        assert (mirror / "lookbench" / name).read_bytes() == (hub / "lookbench" / name).read_bytes(), name
    assert Staging.load(mirror).files == tuple(f"lookbench/{f}" for f in dataset)


@pytest.mark.slow
def test_restaging_one_part_keeps_the_others_and_the_manifest_true(hub, tmp_path, monkeypatch):
    mirror = copy_mirror(hub, tmp_path)
    _nothing_prepared(monkeypatch)
    stage(mirror, only="dataset")
    assert Staging.load(mirror) == Staging.load(hub)  # the same data: the same mirror, every file listed
    for folder in ("lookbench/demo", "lookbench/gr-lite-mini", "lookbench/leaderboard"):
        assert staged_files(mirror, folder) == staged_files(hub, folder)
    # a mirror staged for another namespace is not mixed with this one
    with pytest.raises(ValueError, match="was staged for namespace 'lookbench'"):
        stage(mirror, namespace="acme", only="dataset")


@pytest.mark.slow
def test_stage_only_dataset_and_labels_of_a_sealed_release(hub, tmp_path, tmp_path_factory, monkeypatch):
    """A sealed release's public part and labels, staged into a new folder and into a copy of a full mirror: exactly
    those two repos (and the manifest), no demo asset and no encoder touched, the labels repo listed beside the
    others kept; sealed data and labels go together."""
    data, labels = sealed_mini(tmp_path_factory, tmp_path)
    _nothing_prepared(monkeypatch)
    staging = stage(tmp_path / "HUB", data=data, namespace="acme", labels=labels, only="dataset,labels")
    assert [(r.repo_id, r.private) for r in staging.repos] == [("acme/lookbench", False), ("acme/lookbench-labels", True)]
    mirror = tmp_path / "HUB"
    assert {f.split("/")[0] for f in _tops(mirror)} == {MANIFEST, "lookbench", "acme"}
    assert staged_files(mirror, "acme") == [f"lookbench-labels/{f}" for f in staged_files(mirror, "acme/lookbench-labels")]
    assert staging.repos[1].data_revision == folder_revision(labels)
    assert staging.repos[0].data_revision == folder_revision(data) and staging.repos[1].releases == staging.repos[0].releases
    for name in staged_files(mirror, "acme/lookbench-labels"):
        assert (mirror / "acme/lookbench-labels" / name).read_bytes() == (labels / name).read_bytes()
    with pytest.raises(ValueError, match="staged together"):
        stage(tmp_path / "HUB2", data=data, namespace="acme", labels=labels, only="dataset")

    # into a copy of the full mirror of the default namespace: the labels nest in the dataset's folder, not its files
    full = copy_mirror(hub, tmp_path / "full")
    staging = stage(full, data=data, labels=labels, only="dataset,labels")
    assert {r.repo_id: r.repo_type for r in staging.repos} == {**REPOS, "lookbench/lookbench-labels": "dataset"}
    assert "lookbench-labels/**" in staging.repos[0].ignore
    assert not [p for p in files_of(full, staging.repos[0]) if "lookbench-labels" in p.as_posix()]
    assert staged_files(full, "lookbench/demo") == staged_files(hub, "lookbench/demo")
    Staging.load(full).sent(full)  # every listed file found in exactly its repo, as push checks


@pytest.mark.slow
def test_push_only_the_dataset_uploads_only_that_repo(hub, tmp_path):
    with FakeHub() as fake:
        proc = run_cli("push", "--hub", str(hub), "--only", "dataset", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
        missing = run_cli("push", "--hub", str(hub), "--only", "labels", endpoint=fake.url, token=TOKEN, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [f"{c['organization']}/{c['name']}" for c in fake.created] == ["lookbench/lookbench"]
    assert set(fake.commits) == {"dataset/lookbench/lookbench"}
    manifest = json.loads((hub / MANIFEST).read_text())
    assert fake.commits["dataset/lookbench/lookbench"]["paths"] == sorted(
        f.removeprefix("lookbench/") for f in manifest["files"] if f.removeprefix("lookbench/").split("/")[0]
        not in ("fine_recall", "gr-lite-mini", "gr-lite-mini-text", "demo", "leaderboard"))
    assert missing.returncode != 0 and "--only labels: " in missing.stderr and "holds no such repo; it holds dataset, " \
        "fine_recall" in missing.stderr, missing.stderr


@pytest.mark.slow
def test_a_full_stage_reuses_the_prepared_galleries_until_an_input_changes(photos, tmp_path, monkeypatch):
    """The demo's galleries prepared once (``shared_photos``) are copied, not rebuilt, while the data, the photos and
    the models' weights are unchanged; new photos re-prepare that gallery alone. The galleries are read from a copy of
    the run's prepared ones, so the run's own stay as they are."""
    import shutil

    import lookbench.space.assets as assets
    from lookbench.paths import space_assets_dir

    from tests.helpers.photos import small_photos

    root = tmp_path / "space"
    shutil.copytree(space_assets_dir(), root, ignore=shutil.ignore_patterns(".*"))
    monkeypatch.setattr(assets, "space_assets_dir", lambda: root)
    encoded = []
    real_encode = assets.encode_images
    monkeypatch.setattr(assets, "encode_images", lambda encoder, *a, **k: encoded.append(encoder.name) or real_encode(encoder, *a, **k))
    stage(tmp_path / "HUB", photos=photos, only="demo")
    assert encoded == []
    shipped = tmp_path / "HUB/lookbench/demo/assets"
    assert sorted(p.name for p in shipped.iterdir()) == ["fashion-mnist", "mini"]
    assert (shipped / "mini/manifest.json").read_bytes() == (root / "mini/manifest.json").read_bytes()

    stage(tmp_path / "HUB", photos=small_photos(tmp_path / "photos-50", n=50), only="demo")
    assert encoded == list(assets.DEFAULT_MODELS)  # the photo gallery alone, once per model
    assert json.loads((shipped / "fashion-mnist/manifest.json").read_text())["ranges"]["RealStudioFlat"][1] < 50
