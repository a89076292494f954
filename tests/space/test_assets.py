"""The demo's prepared assets: a manifest of the data and models, every file checked, rebuilt when stale or
damaged, never served otherwise; two galleries (the synthetic Mini and real photos); `lookbench demo --prepare`."""
import io
import json
import os
import re
import shutil

import numpy as np
import pytest
from PIL import Image

from lookbench.metric.fine_recall.bootstrap import score_retrieval

from tests.helpers.clients import free_port


def _webp(blob: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(blob)) as image:
        assert image.format == "WEBP"
        return np.asarray(image.convert("RGB"), dtype=int)


def test_assets_hold_every_gallery_row_per_model_with_a_manifest(space_assets):
    import faiss

    from lookbench.dataset_builder.export import default_mini_dir
    from lookbench.encoders.registry import load_encoder
    from lookbench.space.assets import SpaceAssets

    assets = SpaceAssets.load(space_assets)
    manifest = assets.manifest
    assert manifest["data"]["key"] == default_mini_dir().parent.name and manifest["data"]["revision"].startswith("local-")
    assert manifest["data"]["name"] == "LookBench-Mini (synthetic)" and manifest["data"]["synthetic"]
    assert sorted(manifest["files"]) == ["efficientnet-lite0/index.faiss.gz", "efficientnet-lite0/queries.npz",
                                         "gallery.parquet", "gr-lite-mini/index.faiss.gz", "gr-lite-mini/queries.npz",
                                         "queries.parquet"]
    for name in ("gr-lite-mini", "efficientnet-lite0"):
        assert manifest["models"][name]["fingerprint"] == load_encoder(name).fingerprint
        model = assets.models[name]
        assert isinstance(model.index, faiss.IndexFlatIP) and model.index.ntotal == len(assets.gallery)
        assert model.queries.shape[0] == len(assets.queries) and model.queries.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(model.index.reconstruct_n(0, model.index.ntotal), axis=1), 1.0, rtol=1e-5)
    ranges = manifest["ranges"]
    assert ranges["noise"][1] == len(assets.gallery) and ranges["RealStudioFlat"][0] == 0
    assert all(max(_webp(t).shape[:2]) <= 160 for t in assets.gallery["thumb"][:20])
    street = [(o, p) for s, o, p in zip(assets.queries["subset"], assets.queries["outfit"], assets.queries["photo"])
              if s == "RealStreetLook"]
    assert street and all(o and p for o, p in street)
    boxed, plain = (_webp(f) for f in street[0])
    assert boxed.shape == plain.shape and (np.abs(boxed - plain).sum(axis=2) > 40).mean() < 0.2  # only the box differs
    studio = set(zip(*(assets.queries[c] for c in ("subset", "outfit", "photo"))))
    assert ("RealStudioFlat", None, None) in studio


def test_the_real_photo_gallery_says_what_it_is(photo_assets):
    from lookbench.space.assets import SpaceAssets

    assets = SpaceAssets.load(photo_assets)
    data = assets.manifest["data"]
    assert (data["name"], data["license"], data["synthetic"], data["releases"]) == (
        "Fashion-MNIST real photos in LookBench's format", "mit", False, ["v20170825"])
    assert "Zalando's Fashion-MNIST: real product photos" in data["origin"]
    assert assets.manifest["ranges"] == {"RealStudioFlat": [0, 180]} and len(assets.queries) == 20  # every tenth a query
    assert set(assets.gallery["category"]) <= {"t-shirt/top", "trouser", "pullover", "dress", "coat", "sandal", "shirt",
                                               "sneaker", "bag", "ankle boot"}
    assert _webp(assets.gallery[0]["thumb"]).shape == (96, 96, 3)  # the release's 96 px photo, not enlarged


def test_the_embedded_minis_key_is_known_without_building_it(monkeypatch):
    """A Space's first start checks its shipped Mini assets without rendering LookBench-Mini (the minutes it took)."""
    import lookbench.dataset_builder.export as export
    from lookbench.space.assets import data_key

    monkeypatch.setattr(export, "build_release", lambda *a, **k: pytest.fail("LookBench-Mini was built"))
    assert data_key(None) == export.default_mini_dir().parent.name


def test_float16_would_change_the_scores_so_the_embeddings_stay_float32(space_assets):
    """Issue 38 item 1: float16 embeddings only if the scores are unchanged. Rounded to float16, the Mini's gallery
    and queries rank some queries differently and Fine Recall@1 moves, so the assets keep float32 (and stay small by
    compression instead)."""
    from lookbench.space.assets import SpaceAssets

    assets = SpaceAssets.load(space_assets)
    references = assets.queries.select_columns(["category", "main_attribute", "attributes", "outfit_id"]).to_list()
    changed = {}
    for name, model in assets.models.items():
        gallery = model.index.reconstruct_n(0, model.index.ntotal)
        scores = {}
        for dtype in (np.float32, np.float16):
            q, g = (m.astype(dtype).astype(np.float32) for m in (model.queries, gallery))
            ranking = np.argsort(-(q @ g.T), axis=1, kind="stable")[:, :20]
            scores[dtype] = score_retrieval(ranking.tolist(), references, assets.gallery, k=[1, 5, 10, 20], n_resamples=0)
        changed[name] = [key for key, value in scores[np.float32].items()
                         if isinstance(value, float) and value != scores[np.float16][key]]
    assert "fine_recall@1" in changed["gr-lite-mini"], changed
    assert any(changed.values())


@pytest.mark.slow
def test_fresh_assets_are_served_as_they_are_and_stale_ones_rebuilt_saying_why(space_assets, tmp_path, capsys):
    from lookbench.space.assets import open_assets

    copy = tmp_path / "mini"
    shutil.copytree(space_assets, copy)
    stamp = (copy / "manifest.json").stat().st_mtime_ns
    assert open_assets(None, copy).folder == copy
    assert (copy / "manifest.json").stat().st_mtime_ns == stamp and capsys.readouterr().out == ""  # fresh: nothing built
    manifest = json.loads((copy / "manifest.json").read_text())
    real = manifest["models"]["efficientnet-lite0"]["fingerprint"]
    manifest["models"]["efficientnet-lite0"]["fingerprint"] = "efficientnet-lite0:older-weights"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    rebuilt = open_assets(None, copy)
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Preparing")]
    assert said == [f"Preparing the Space's assets in {copy} (efficientnet-lite0's weights changed); this happens once "
                    "per data revision and model."]
    assert rebuilt.manifest["models"]["efficientnet-lite0"]["fingerprint"] == real
    assert rebuilt.models["efficientnet-lite0"].index.ntotal == rebuilt.manifest["ranges"]["noise"][1]


@pytest.mark.slow
def test_a_damaged_embedding_file_is_rebuilt_never_served(space_assets, tmp_path, capsys):
    from lookbench.space.assets import SpaceAssets, StaleAssets, open_assets

    copy = tmp_path / "mini"
    shutil.copytree(space_assets, copy)
    original = SpaceAssets.load(copy).models["gr-lite-mini"].queries
    damaged = copy / "gr-lite-mini" / "queries.npz"
    blob = bytearray(damaged.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    damaged.write_bytes(bytes(blob))
    with pytest.raises(StaleAssets, match=r"^gr-lite-mini/queries.npz is damaged \(its sha256 differs from manifest.json's\)$"):
        SpaceAssets.load(copy)
    rebuilt = open_assets(None, copy)
    assert "(gr-lite-mini/queries.npz is damaged (its sha256 differs from manifest.json's))" in capsys.readouterr().out
    np.testing.assert_array_equal(rebuilt.models["gr-lite-mini"].queries, original)
    damaged.unlink()
    with pytest.raises(StaleAssets, match="cannot read gr-lite-mini/queries.npz: No such file or directory"):
        SpaceAssets.load(copy)


@pytest.mark.slow
def test_a_gzip_bomb_index_is_refused_within_its_bound_and_rebuilt(space_assets, tmp_path, capsys):
    """Round 4: index.faiss.gz was gunzipped with no bound, so a gzip bomb (its manifest rewritten to vouch for it)
    decompressed whole. It is read in chunks up to what a flat index of the gallery's vectors can take, refused past
    that in one line naming the file, and rebuilt as a damaged asset is."""
    import gzip
    import hashlib
    import tracemalloc

    from lookbench.space.assets import SpaceAssets, StaleAssets, open_assets

    copy = tmp_path / "mini"
    shutil.copytree(space_assets, copy)
    index = copy / "gr-lite-mini" / "index.faiss.gz"
    whole = len(gzip.decompress(index.read_bytes()))
    bomb = 256 << 20
    index.write_bytes(gzip.compress(bytes(bomb), compresslevel=9, mtime=0))
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"]["gr-lite-mini/index.faiss.gz"] = hashlib.sha256(index.read_bytes()).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(manifest))
    tracemalloc.start()
    try:
        with pytest.raises(StaleAssets) as refused:
            SpaceAssets.load(copy)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(refused.value)
    assert re.fullmatch(r"gr-lite-mini/index\.faiss\.gz decompresses to more than (\d+) bytes, the most a flat index of "
                        r"\d+ vectors of \d+ dimensions takes; refused \(a gzip bomb, or damaged\)", message), message
    bound = int(re.search(r"more than (\d+) bytes", message).group(1))
    assert whole <= bound < whole + (64 << 10) and peak < bound + (32 << 20) < bomb
    rebuilt = open_assets(None, copy)
    assert f"({message})" in capsys.readouterr().out
    assert rebuilt.models["gr-lite-mini"].index.ntotal == rebuilt.manifest["ranges"]["noise"][1]


def test_a_damaged_shipped_gallery_is_left_out_saying_why(space_assets, photo_assets, tmp_path, capsys):
    """A gallery the Space ships without its data (the real photos) cannot be rebuilt there: it is not served."""
    from lookbench.space.assets import open_galleries, shipped_galleries

    root = tmp_path / "assets"
    shutil.copytree(space_assets, root / "mini")
    shutil.copytree(photo_assets, root / "fashion-mnist")
    index = root / "fashion-mnist" / "efficientnet-lite0" / "index.faiss.gz"
    index.write_bytes(index.read_bytes()[:-10])
    served, _ = open_galleries(shipped_galleries(root))
    assert [a.name for a in served] == ["LookBench-Mini (synthetic)"]
    assert capsys.readouterr().out.splitlines() == [
        "Not serving the gallery fashion-mnist: efficientnet-lite0/index.faiss.gz is damaged (its sha256 differs from "
        "manifest.json's); its data is not here to rebuild it from"]


def test_a_folder_that_is_not_an_assets_folder_is_never_replaced(tmp_path):
    from lookbench.space.assets import ensure_assets

    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not a Space assets folder"):
        ensure_assets(None, tmp_path, quiet=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_lookbench_demo_serves_on_loopback_and_prepare_reuses_fresh_assets(space_root, space_assets, tmp_path):
    import queue
    import subprocess
    import sys
    import threading
    import urllib.request

    prepare = subprocess.run([sys.executable, "-m", "lookbench", "demo", "--prepare", "--assets", str(space_root)],
                             capture_output=True, text=True, timeout=300)
    assert prepare.returncode == 0 and prepare.stdout.strip() == f"assets: {space_assets} (LookBench-Mini (synthetic))"
    assert "Preparing" not in prepare.stdout + prepare.stderr  # fresh assets: nothing rebuilt
    port = free_port()
    temp = tmp_path / "tmp"  # the demo's temporary folder: it must leave no lookbench-space-plots-* behind (case 8)
    temp.mkdir()
    server = subprocess.Popen([sys.executable, "-m", "lookbench", "demo", "--port", str(port), "--assets", str(space_root)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "TMPDIR": str(temp)})
    lines = queue.Queue()  # its output is a pipe: the address must come at once all the same (flushed)
    threading.Thread(target=lambda: [lines.put(line) for line in server.stdout], daemon=True).start()
    try:
        said = []
        while not any(line.startswith("Ready: ") for line in said):
            said.append(lines.get(timeout=240))
        assert f"Running on http://127.0.0.1:{port}\n" in said, said
        assert said[-1] == "Ready: LookBench-Mini (synthetic) with gr-lite-mini, efficientnet-lite0\n"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as response:
            assert "LookBench" in response.read().decode()  # listening once it said so
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert not list(temp.glob("lookbench-space-plots-*"))
