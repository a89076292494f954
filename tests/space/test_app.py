"""The Gradio Space: assets with a manifest (checked, rebuilt when stale or damaged), two galleries (the synthetic
Mini and real photos), queries marked by the metric, the API through gradio_client, bad input, and a real browser
(Debian's chromium driven by Playwright)."""
import contextlib
import io
import json
import os
import re
import shutil
import socket
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lookbench.metric.fine_recall.bootstrap import score_retrieval
from lookbench.space.app import REFUSED

from tests.helpers.photos import small_photos
from tests.helpers.staged_hub import shared_photos
from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.report_rows import query_rows

TILE = re.compile(r"<figure class='tile' data-mark='(?P<mark>\w+)' style='--mark:(?P<colour>#\w+)'><img src='data:image/webp;"
                  r"base64,(?P<image>[^']+)' alt='[^']*'><span class='head'><span>#(?P<rank>\d+) · (?P<label>[^<]+)</span>"
                  r"<span>(?P<score>-?\d\.\d{3})</span></span><span class='what'>(?P<what>[^<]*)</span>"
                  r"(?:<span class=chips>(?P<chips>.*?)</span>)?</figure>")


@pytest.fixture(scope="session")
def space_root(tmp_path_factory):
    """The folder of the session's galleries, as ``lookbench demo --assets`` takes it."""
    return tmp_path_factory.mktemp("space")


def _prepared(tmp_path_factory, gallery: str, space_root: Path) -> Path:
    """A copy in ``space_root`` of one of the demo's galleries as the run prepared them once in ``$HF_HOME`` (about a
    minute each to build; tests/helpers/staged_hub.py), so what this file's tests prepare there stays their own."""
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


def _serving(app):
    """``app`` on a free loopback port, in this process, closed at the end (its example cache: in the assets)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    demo = app.blocks()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **app.launch_options)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="session")
def served(space_app):
    yield from _serving(space_app)


@pytest.fixture(scope="session")
def client(served):
    from gradio_client import Client

    return Client(served, verbose=False)


def _gallery_source(folder: Path, subset: str, row: int) -> bytes:
    """The original encoded bytes of a gallery image, as stored in the Mini."""
    import datasets

    from lookbench.dataset_builder import ensure_default_mini

    ds = datasets.load_dataset(str(ensure_default_mini()), subset, split="gallery", cache_dir=str(folder / "ds"))
    return ds.cast_column("image", datasets.Image(decode=False))[row]["image"]["bytes"]


def _expected_marks(query, items):
    """Strict Fine Recall by its definition (same category and A_q ⊆ A_i), independent of the metric's code."""
    q = {(a["name"], a["value"]) for a in query["attributes"]}
    marks = []
    for item in items:
        same = item["category"] == query["category"]
        marks.append("fine" if same and q <= {(a["name"], a["value"]) for a in item["attributes"]}
                     else "coarse" if same else "miss")
    return marks


# -- assets ----------------------------------------------------------------------------------------------------


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
        "LookBench Fashion-MNIST", "mit", False, ["v20170825"])
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


# -- retrieval, marked by the metric ----------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["gr-lite-mini", "efficientnet-lite0"])
def test_benchmark_query_marks_and_scores_agree_with_the_metric(space_app, model):
    retriever = space_app.retriever()
    assets = retriever.assets
    k = 10
    for key in ("RealStudioFlat/2", "RealStreetLook/1", "AIGen-StreetLook/5"):
        query = retriever.benchmark_query(key)
        result = retriever.search(query, model, "all", True, k)
        assert [h.rank for h in result.hits] == list(range(1, k + 1))
        rows = [h.row for h in result.hits]
        assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
        items = assets.gallery.select(rows).to_list()
        assert [h.mark for h in result.hits] == _expected_marks(query.annotation, items)
        scores = score_retrieval([rows], [query.annotation], assets.gallery, k=[k])
        assert 100.0 * result.fine_hit == scores[f"fine_recall@{k}"]
        assert 100.0 * result.coarse_hit == scores[f"coarse_recall@{k}"]
        assert result.ndcg == pytest.approx(scores[f"ndcg@{k}"])
        for hit, item in zip(result.hits, items):
            names = {a["name"] for a in item["attributes"]}
            if hit.mark == "coarse":
                assert hit.lacks or hit.differs
                assert all(n not in names for n, _ in hit.lacks) and all(n in names for n, _, _ in hit.differs)


def test_subset_scope_and_distractors_restrict_the_gallery(space_app):
    retriever = space_app.retriever()
    query = retriever.benchmark_query("AIGen-Studio/3")
    only = retriever.search(query, "gr-lite-mini", "RealStreetLook", False, 20)
    assert {h.subset for h in only.hits} == {"RealStreetLook"}
    wide = retriever.search(query, "gr-lite-mini", "AIGen-Studio", True, 50)
    assert {h.subset for h in wide.hits} <= {"AIGen-Studio", "noise"}
    assert retriever.search(query, "gr-lite-mini", "aigen_studio", True, 50).hits == wide.hits  # the alias works


def test_random_query_is_seeded_and_respects_the_cutoff(space_app):
    from lookbench.space.retrieval import QueryError

    retriever, queries = space_app.retriever(), space_app.retriever().assets.queries
    first = retriever.random_query("RealStreetLook", 7)
    assert first.label == retriever.random_query("RealStreetLook", 7).label and first.label.startswith("RealStreetLook/")
    picked = {retriever.random_query("all", seed, "2025-01-01").benchmark_row for seed in range(25)}
    assert all(queries[row]["timestamp"].year >= 2025 for row in picked) and len(picked) > 5
    with pytest.raises(QueryError, match="after 2100-01-01"):
        retriever.random_query("all", 0, "2100-01-01")


def test_words_are_read_by_the_text_tower_and_searched_in_gr_lite_minis_index(space_app):
    """GR-Lite-mini-text's words land in GR-Lite-mini's image space: a benchmark query's own words are that query
    (its annotation marks the results, as the metric does), free words are unmarked, and the ranking is the index's
    inner products with the text tower's unit vector."""
    from lookbench.dataset_builder.text_queries import record_text
    from lookbench.encoders.registry import load_encoder
    from lookbench.space.retrieval import QueryError

    retriever = space_app.retriever()
    assets = retriever.assets
    assert list(space_app.readers) == ["gr-lite-mini"]
    fine = 0
    keys = [f"{s}/{n}" for s in ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook") for n in (1, 2, 3)]
    for key in keys:
        query = retriever.words(retriever.described(key), key)
        record = assets.queries[query.benchmark_row]
        assert query.text == record_text(record) and query.annotation == retriever.benchmark_query(key).annotation
        result = retriever.search(query, "gr-lite-mini", "all", True, 5)
        items = assets.gallery.select([h.row for h in result.hits]).to_list()
        assert [h.mark for h in result.hits] == _expected_marks(query.annotation, items)
        assert record["hash"] not in [item["hash"] for item in items]  # the query's own image is left out
        fine += result.hits[0].mark == "fine"
    assert fine >= 9, f"{fine} of {len(keys)} benchmark queries in words found a fine hit first"  # the card: 96.8 % on Mini
    free = retriever.words("  striped   red top ")
    assert (free.text, free.annotation, free.label) == ("striped red top", None, "the words “striped red top”")
    result = retriever.search(free, "gr-lite-mini", "all", True, 5)
    assert all(h.mark is None for h in result.hits)
    vector = load_encoder("gr-lite-mini-text").encode_text(["striped red top"])[0]
    vector = vector / np.linalg.norm(vector)
    index = assets.models["gr-lite-mini"].index
    assert [h.score for h in result.hits] == pytest.approx([float(index.reconstruct(h.row) @ vector) for h in result.hits],
                                                           abs=1e-5)
    assert retriever.words("red top", "RealStudioFlat/1").annotation is None  # not the query's own words: free words
    for bad, message in (("", "No words yet"), ("x" * 301, "has 301 characters; a text query has at most 300")):
        with pytest.raises(QueryError, match=message):
            retriever.words(bad)
    with pytest.raises(QueryError, match="Model 'efficientnet-lite0' reads no words"):
        retriever.search(free, "efficientnet-lite0", "all", True, 5)
    assert "\\[" in retriever.words("[a](http://x)").label  # a visitor's words are shown, never rendered as Markdown


def test_the_words_box_names_the_words_it_ignores_and_refuses_words_it_cannot_read(space_app):
    """Issue 47 item 2: "a black leather handbag" returned five black skirts, the unknown words dropped silently.
    The words read and ignored come from the text tower's own vocabulary (its tokenizer's unknown token); the
    suggestions are the gallery's taxonomy values it reads; only unknown words is a message, not results."""
    from lookbench.space.retrieval import QueryError

    retriever = space_app.retriever()
    tokenizer = space_app.readers["gr-lite-mini"].text_reader.tokenizer
    vocabulary = set(tokenizer.get_vocab())
    assert retriever.reading("A black leather handbag, blue-jeans!") == (["A", "black", "blue"], ["leather", "handbag", "jeans"])
    assert {"leather", "handbag", "jeans"}.isdisjoint(vocabulary) and {"black", "blue"} <= vocabulary
    assert retriever.words("a black leather handbag").ignored == ["leather", "handbag"]
    annotated = set(retriever.assets.gallery["category"]) | {a["value"] for attrs in retriever.assets.gallery["attributes"]
                                                             for a in attrs}
    values = {" ".join(v.replace("_", " ").split()).lower() for v in annotated}
    assert "v-neck" in retriever.vocabulary and set(retriever.vocabulary) <= values
    assert all(set(re.findall(r"\w+", v)) <= vocabulary for v in retriever.vocabulary)  # every word of each is read
    with pytest.raises(QueryError) as refused:
        retriever.words("leather handbag")
    message = str(refused.value)
    assert message.startswith("No word of “leather handbag” is one the text tower knows (ignored: leather, handbag); "
                              "words it knows include ")
    offered = message.rsplit("include ", 1)[1].split(", ")
    assert len(offered) == 12 and set(offered) <= set(retriever.vocabulary)
    note = space_app.words_note("a black leather handbag")
    assert note.startswith("Read: a, black · **ignored** (not in its vocabulary): leather, handbag · words it knows include ")
    assert space_app.words_note("") == ""
    past = retriever.reading(" ".join(["red"] * 70 + ["top"]))  # past the 64 tokens it reads: ignored too
    assert past == (["red"], ["top"])
    status, note, *rest = space_app.search_words("leather handbag", "", "all", True, 5)
    assert status.startswith("⚠️ No word of “leather handbag”") and "ignored" in note and rest[2:] == ["", "", "", ""]


@pytest.mark.slow
def test_any_prepared_model_is_offered_two_at_a_time(photo_assets, tmp_path_factory):
    """Issue 47 item 4: `lookbench demo --models` offers every model given (each with prepared assets); any two are
    the two panels, each titled with its model and this query's hit@k as the metric marks it."""
    from lookbench.commands.demo import models
    from lookbench.encoders.base import EncoderError
    from lookbench.space.app import SpaceApp
    from lookbench.space.assets import open_assets, real_photo_release

    three = models(["gr-lite-mini", "efficientnet-lite0", "raw-pixels"])
    release = real_photo_release(small_photos(tmp_path_factory.mktemp("photos")))
    assets = open_assets(release, tmp_path_factory.mktemp("three") / "photos", three, quiet=True)
    assert set(assets.manifest["models"]) == set(three)
    app = SpaceApp([assets], models=three)
    assert app.models == list(three) and app.pair == ("gr-lite-mini", "efficientnet-lite0")
    status, _, _, _, panel_a, _, panel_b, _ = app.search(None, "RealStudioFlat/3", "all", False, "raw-pixels",
                                                         "gr-lite-mini", 5)
    assert status.startswith("RealStudioFlat/3: top 5 of LookBench Fashion-MNIST")
    retriever = app.retriever()
    query = retriever.benchmark_query("RealStudioFlat/3")
    for panel, model in ((panel_a, "raw-pixels"), (panel_b, "gr-lite-mini")):
        result = retriever.search(query, model, "all", False, 5)
        assert f"<h3>{model} — fine hit@5 {'✓' if result.fine_hit else '✗'}" in panel
        assert _seen(panel) == _shown(result.hits)
    assert app.search(None, "RealStudioFlat/3", "all", False, "raw-pixels", "raw-pixels", 5)[6] == ""  # the same: one
    status, *_ = app.search(None, "RealStudioFlat/3", "all", False, "raw-pixels", "clip", 5)
    assert status == "⚠️ Unknown second model 'clip'; choose one of gr-lite-mini, efficientnet-lite0, raw-pixels, none"
    with pytest.raises(EncoderError, match="Unknown model 'no-such-model'"):
        models(["no-such-model"])


def test_a_gallery_prepared_in_the_background_shows_its_progress_then_joins(space_assets, photo_assets):
    """Issue 47 item 5: the first gallery is served while another is prepared on a thread; the page shows its stage
    and count, then offers it (the timer stops); a failed preparation is said and the app keeps serving."""
    import threading

    from lookbench.space.app import SpaceApp
    from lookbench.space.assets import SpaceAssets

    app = SpaceApp([space_assets])
    assert list(app.galleries) == ["LookBench-Mini (synthetic)"] and app.progress_note() == ""
    counted, release = threading.Event(), threading.Event()

    def job(bars):
        with bars("encode gr-lite-mini", quiet=False, unit="img") as bar:
            bar.reset(total=200)
            bar.update(80)
            counted.set()
            release.wait(60)
        return SpaceAssets.load(photo_assets)

    worker = app.prepare_later("LookBench Fashion-MNIST (real photos)", job)
    assert app.poll("LookBench-Mini (synthetic)")[2].active  # the page polls from its first view
    worker.start()
    assert counted.wait(60)
    assert app.progress_note() == ("⏳ Preparing the gallery **LookBench Fashion-MNIST (real photos)** in the background: "
                                   "encode gr-lite-mini 80 of 200. It joins the choices when ready.")
    choices, note, timer, *_ = app.poll("LookBench-Mini (synthetic)")
    assert choices["choices"] == ["LookBench-Mini (synthetic)"] and timer.active
    release.set()
    worker.join(60)
    choices, note, timer, *_ = app.poll("LookBench-Mini (synthetic)")
    assert choices["choices"] == ["LookBench-Mini (synthetic)", "LookBench Fashion-MNIST"] and note == "" and not timer.active
    assert app.search(None, "RealStudioFlat/2", "all", False, "gr-lite-mini", "none", 4,
                      "LookBench Fashion-MNIST")[0].startswith("RealStudioFlat/2: top 4 of LookBench Fashion-MNIST")

    def broken(bars):
        raise ValueError("the t10k IDX files are missing")

    failing = app.prepare_later("Other photos", broken)
    failing.start()
    failing.join(60)
    assert app.progress_note() == ("⚠️ The gallery Other photos could not be prepared: ValueError: the t10k IDX files "
                                   "are missing")
    assert not app.poll("LookBench-Mini (synthetic)")[2].active and len(app.galleries) == 2


# -- the API, through gradio_client ------------------------------------------------------------------------------


def _search(client, image=None, query_id="", subset="all", model="gr-lite-mini", k=6, distractors=True, second="none"):
    """The /search endpoint: status, words' note, annotation, outfit, then each panel's tiles (HTML) and table."""
    from gradio_client import handle_file

    return client.predict(handle_file(str(image)) if image else None, query_id, subset, distractors, model, second, k,
                          api_name="/search")


def _tiles(panel: str) -> list[dict]:
    """The result tiles of a panel, each as its mark, rank, score, thumbnail bytes and chips."""
    import base64
    import html

    tiles = [m.groupdict() for m in TILE.finditer(panel)]
    assert len(tiles) == panel.count("<figure"), panel[:300]
    return [{**t, "rank": int(t["rank"]), "image": base64.b64decode(t["image"]),
             "chips": [html.unescape(c) for c in re.findall(r"<span class='chip \w+'>([^<]*)</span>", t["chips"] or "")]}
            for t in tiles]


def _shown(hits) -> list[tuple]:
    """What the tiles of ``hits`` must show: rank, mark, score, thumbnail."""
    return [(h.rank, h.mark or "none", f"{h.score:.3f}", h.thumb) for h in hits]


def _seen(panel: str) -> list[tuple]:
    return [(t["rank"], t["mark"], t["score"], t["image"]) for t in _tiles(panel)]


@pytest.mark.slow
def test_api_upload_query_returns_k_captioned_results(client, space_app, tmp_path):
    upload = tmp_path / "query.png"
    Image.open(io.BytesIO(space_app.retriever().assets.queries[0]["image"])).save(upload)
    status, note, annotation, outfit, panel_a, _, panel_b, details_b = _search(client, upload, k=7)
    assert status.startswith("uploaded file (PNG ") and "top 7" in status and note == ""
    assert "no annotation" in annotation and outfit is None and panel_b == details_b == ""
    tiles = _tiles(panel_a)
    assert [t["rank"] for t in tiles] == list(range(1, 8))
    assert {t["mark"] for t in tiles} == {"none"} and "gr-lite-mini — top 7, unmarked" in panel_a  # no annotation
    direct = space_app.retriever().search(space_app.retriever().upload(upload.read_bytes()), "gr-lite-mini", "all", True, 7)
    assert _seen(panel_a) == _shown(direct.hits)
    assert [t["what"] for t in tiles] == [f"{h.category} · {h.main_attribute}" for h in direct.hits]


@pytest.mark.slow
def test_api_same_benchmark_query_with_both_models(client, space_app):
    k = 8
    status, _, annotation, outfit, panel_a, details_a, panel_b, details_b = _search(
        client, query_id="RealStreetLook/2", subset="RealStreetLook", model="gr-lite-mini", second="efficientnet-lite0", k=k)
    assert status == "RealStreetLook/2: top 8 of LookBench-Mini (synthetic), RealStreetLook, with noise distractors."
    assert "category" in annotation and outfit.endswith(".webp")
    assert details_a.startswith("### gr-lite-mini · LookBench-Mini (synthetic)")
    assert details_b.startswith("### efficientnet-lite0 · LookBench-Mini (synthetic)")
    query = space_app.retriever().benchmark_query("RealStreetLook/2")
    gallery = space_app.retriever().assets.gallery
    colours = {}
    for panel, details in ((panel_a, details_a), (panel_b, details_b)):
        tiles = _tiles(panel)
        assert len(tiles) == k
        table = [line.split("|")[1:3] for line in details.splitlines() if re.match(r"^\| \d+ \|", line)]
        assert [int(rank) for rank, _ in table] == list(range(1, k + 1))
        model = details.splitlines()[0][4:].split(" · ")[0]
        hits = space_app.retriever().search(query, model, "RealStreetLook", True, k).hits
        items = gallery.select([h.row for h in hits]).to_list()
        expected = _expected_marks(query.annotation, items)
        assert [t["mark"] for t in tiles] == expected and _seen(panel) == _shown(hits)
        assert [mark.strip() for _, mark in table] == [{"fine": "fine ✓", "coarse": "coarse ✓", "miss": "miss ✗"}[m]
                                                       for m in expected]
        for tile, hit in zip(tiles, hits):  # chips: what a coarse result lacks or has otherwise, a miss its category
            colours.setdefault(tile["mark"], set()).add(tile["colour"])
            assert tile["chips"] == ({"fine": [], "miss": ["other category"]}.get(tile["mark"]) or
                                     [f"{n}={v}" for n, v in hit.lacks] + [f"{n}: {v} → {'/'.join(w)}" for n, v, w in hit.differs])
        scores = score_retrieval([[h.row for h in hits]], [query.annotation], gallery, k=[k])
        fine = "✓" if scores[f"fine_recall@{k}"] == 100.0 else "✗"
        coarse = "✓" if scores[f"coarse_recall@{k}"] == 100.0 else "✗"
        assert f"Fine hit@{k} {fine}" in details and f"nDCG@{k} {scores[f'ndcg@{k}']:.1f}" in details
        assert f"<h3>{model} — fine hit@{k} {fine} · coarse hit@{k} {coarse} · nDCG@{k} {scores[f'ndcg@{k}']:.1f}</h3>" in panel
    assert _seen(panel_a) != _seen(panel_b)
    assert all(len(c) == 1 for c in colours.values()) and len({c for cs in colours.values() for c in cs}) == len(colours)


@pytest.mark.slow
def test_api_each_gallery_answers_from_its_own_images(client, space_app):
    """The same query id in each gallery: each answer comes from the gallery chosen and says which it is."""
    photos = space_app.galleries["LookBench Fashion-MNIST"]
    status, _, annotation, _, panel_a, details_a, panel_b, _ = client.predict(
        None, "RealStudioFlat/2", "all", True, "gr-lite-mini", "none", 6, "LookBench Fashion-MNIST", api_name="/search")
    assert status == "RealStudioFlat/2: top 6 of LookBench Fashion-MNIST, all subsets, no noise gallery."
    assert details_a.startswith("### gr-lite-mini · LookBench Fashion-MNIST") and panel_b == ""
    query = photos.benchmark_query("RealStudioFlat/2")
    assert f"category **{query.annotation['category']}**" in annotation
    hits = photos.search(query, "gr-lite-mini", "all", True, 6).hits
    assert _seen(panel_a) == _shown(hits)
    mini = client.predict(None, "RealStudioFlat/2", "all", True, "gr-lite-mini", "none", 6, api_name="/search")
    assert mini[0].startswith("RealStudioFlat/2: top 6 of LookBench-Mini (synthetic)")
    assert _seen(mini[4]) != _seen(panel_a)
    status, *_ = client.predict(None, "RealStudioFlat/2", "AIGen-Studio", True, "gr-lite-mini", "none", 6,
                                "LookBench Fashion-MNIST", api_name="/search")
    assert status == "⚠️ LookBench Fashion-MNIST has no subset AIGen-Studio; it has RealStudioFlat"
    image, query_id, seed, status = client.predict("all", 3, "", "LookBench Fashion-MNIST", api_name="/random")
    assert query_id.startswith("RealStudioFlat/") and status.endswith("of LookBench Fashion-MNIST (seed 3).")


@pytest.mark.slow
def test_api_words_of_a_benchmark_query_and_free_words(client, space_app):
    words = client.predict("RealStreetLook/2", "LookBench-Mini (synthetic)", api_name="/describe")
    assert words == space_app.retriever().described("RealStreetLook/2")
    status, note, annotation, _, panel_a, details_a, panel_b, _ = client.predict(
        words, "RealStreetLook/2", "all", True, 6, "LookBench-Mini (synthetic)", api_name="/search_words")
    assert status == (f"RealStreetLook/2 in words: “{words}”: top 6 of LookBench-Mini (synthetic), all subsets, with "
                      "noise distractors.")
    assert "category" in annotation and details_a.startswith("### gr-lite-mini · ") and panel_b == ""
    assert note.startswith("Read: ") and "ignored" not in note  # the query's own words are the tower's
    direct = space_app.retriever().search(space_app.retriever().words(words, "RealStreetLook/2"), "gr-lite-mini", "all", True, 6)
    assert _seen(panel_a) == _shown(direct.hits)
    assert all(t["mark"] in ("fine", "coarse", "miss") for t in _tiles(panel_a))  # marked by the metric
    status, note, annotation, *_ = client.predict("dark ankle boot", "", "all", True, 4, "LookBench Fashion-MNIST",
                                                  api_name="/search_words")
    assert status == "the words “dark ankle boot”: top 4 of LookBench Fashion-MNIST, all subsets, no noise gallery."
    assert "no annotation" in annotation and note == "Read: dark, ankle, boot"
    status, note, *rest = client.predict("a black leather handbag", "", "all", True, 4, "LookBench Fashion-MNIST",
                                         api_name="/search_words")
    assert status.startswith("the words “a black leather handbag”: top 4") and len(_tiles(rest[2])) == 4
    assert note.startswith("Read: a, black · **ignored** (not in its vocabulary): leather, handbag · words it knows include ")
    status, *_ = client.predict("", "", "all", True, 4, "LookBench-Mini (synthetic)", api_name="/search_words")
    assert status.startswith("⚠️ No words yet")


def _png_header_only(width, height) -> bytes:
    """A tiny PNG file that claims a huge size: PIL's decompression-bomb check fires on its header."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")


@pytest.mark.slow
def test_api_bad_input_gets_a_message_and_the_app_keeps_serving(client, space_app, tmp_path):
    good = tmp_path / "good.jpg"
    Image.open(io.BytesIO(space_app.retriever().assets.queries[3]["image"])).convert("RGB").save(good, quality=95)
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    text = tmp_path / "notes.png"
    text.write_text("these are not pixels")
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_png_header_only(30000, 30000))
    cases = {text: "not an image PIL can read", truncated: "cannot be decoded: OSError", bomb: "decompression bomb"}
    for path, message in cases.items():
        status, _, _, _, panel, _, _, _ = _search(client, path)
        assert status.startswith("⚠️") and message in status and panel == ""
        status, _, _, _, panel, _, _, _ = _search(client, good)  # the next request is served as usual
        assert status.startswith("uploaded file (JPEG") and len(_tiles(panel)) == 6
    status, *_ = _search(client)
    assert "No query yet" in status
    status, *_ = _search(client, query_id="RealStreetLook/999")
    assert "No benchmark query 'RealStreetLook/999'" in status
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="No query of all is time-stamped after 2100-01-01"):
        client.predict("all", 0, "2100-01-01", api_name="/random")
    image, query_id, seed, status = client.predict("RealStreetLook", 4, "", api_name="/random")
    assert query_id.startswith("RealStreetLook/") and seed == 5
    assert status == f"Random query {query_id} of LookBench-Mini (synthetic) (seed 4)."


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["L", "P", "RGBA", "CMYK", "I;16"])
def test_api_other_image_modes_are_converted_not_refused(client, space_app, tmp_path, mode):
    source = Image.open(io.BytesIO(space_app.retriever().assets.queries[5]["image"])).convert("RGB")
    image = {"I;16": lambda: Image.fromarray((np.asarray(source.convert("L"), dtype=np.uint16) * 257)),
             "P": lambda: source.convert("P", palette=Image.ADAPTIVE)}.get(mode, lambda: source.convert(mode))()
    path = tmp_path / ("query.jpg" if mode == "CMYK" else "query.png")
    image.save(path)
    assert Image.open(path).mode == mode
    status, _, _, _, panel, *_ = _search(client, path, k=4)
    assert f"{mode} converted to RGB" in status and len(_tiles(panel)) == 4


@pytest.mark.slow
def test_api_query_identical_to_a_gallery_image_is_dropped_and_said(client, space_app, tmp_path):
    original = tmp_path / "gallery-image.png"
    original.write_bytes(_gallery_source(tmp_path, "AIGen-Studio", 4))
    status, _, _, _, panel, details, _, _ = _search(client, original, subset="AIGen-Studio", k=5)
    assert "own image is in the gallery: dropped" in status and "identical to the query dropped" in details
    item = space_app.retriever().assets.gallery[space_app.retriever().ranges["AIGen-Studio"][0] + 4]
    assert item["subset"] == "AIGen-Studio" and item["row"] == 4
    assert len(_tiles(panel)) == 5 and all(t["image"] != item["thumb"] for t in _tiles(panel))


@pytest.fixture
def upload_cache():
    """A folder inside gradio's upload cache, where gradio's upload and preprocessing put files; removed after."""
    import uuid

    from gradio.utils import get_upload_folder

    folder = Path(get_upload_folder()) / f"lookbench-test-{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_empty_crop_and_missing_crop_get_a_message(space_app, upload_cache, tmp_path):
    outside = tmp_path / "crop.png"  # not in gradio's upload cache: refused, never opened
    Image.new("RGB", (40, 50), "navy").save(outside)
    _, _, status = space_app.crop({"composite": str(outside)})
    assert status == f"⚠️ {REFUSED}"
    tmp_path = upload_cache
    transparent = tmp_path / "empty.png"
    Image.new("RGBA", (80, 60), (0, 0, 0, 0)).save(transparent)
    _, _, status = space_app.crop({"composite": str(transparent)})
    assert "crop is empty" in status
    _, _, status = space_app.crop({"background": None, "layers": [], "composite": None})
    assert "Nothing to crop" in status
    garment = tmp_path / "crop.png"
    Image.new("RGB", (40, 50), "navy").save(garment)
    path, query_id, status = space_app.crop({"composite": str(garment)})
    assert path == str(garment) and query_id == "" and "loaded as the query" in status


def test_leaderboard_tab_uses_the_leaderboard_function(space_app):
    board = space_app.board("fine", 1, "overall")
    published = board.sections[0]
    assert "GR-Pro" in set(published.frame()["model"]) and published.source != "local results store"
    assert space_app.board("ndcg", 5, "RealStreetLook").sections[0].columns[3] == "RealStreetLook nDCG@5"
    frame = published.frame()  # each row's interval and rank group, as the tab shows them
    gr_pro = frame[frame["model"] == "GR-Pro"].iloc[0]
    assert (gr_pro["group"], round(gr_pro["ci95_lo"], 1), round(gr_pro["ci95_hi"], 1)) == (1, 65.5, 69.2)


def test_leaderboard_table_fits_the_page_with_its_interval_in_one_column(space_app):
    """Issue 38 item 6: the tables scrolled sideways; the interval is one column, its method and counts the line under."""
    from lookbench.space.views import board_frame

    published = space_app.board("fine", 1, "overall").sections[0]
    full = published.frame()
    frame, facts = board_frame(published)
    assert {"ci95_lo", "ci95_hi", "ci_method", "queries"}.isdisjoint(frame.columns) and len(frame) == len(full)
    row = full[full["model"] == "GR-Pro"].iloc[0]
    assert frame[frame["model"] == "GR-Pro"].iloc[0]["95% interval"] == f"{row['ci95_lo']:.2f}–{row['ci95_hi']:.2f}"
    assert facts.startswith("intervals: ") and "queries: " in facts


def test_plot_titles_are_wrapped_to_fit_the_figure():
    """Issue 38 item 6: a long section title (a local run's data, revision, releases, mode) ran past the plot's edge."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from lookbench.space.views import fitted

    title = ("LookBench-Mini (synthetic) (revision local-18960bc904e6a4c7, releases mini-v20240601, mini-v20250101, "
             "mini-v20251201) — strict mode, with distractors")

    def drawn():
        figure = Figure(figsize=(9, 3))
        ax = figure.subplots()
        ax.barh(["a model"], [50.0])
        ax.set_title(title, fontsize=9)
        figure.tight_layout()
        return figure

    def title_spans(figure):
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        return [(box.x0, box.x1) for box in (ax.title.get_window_extent(canvas.get_renderer()) for ax in figure.axes)]

    width = drawn().bbox.width
    assert any(x0 < 0 or x1 > width for x0, x1 in title_spans(drawn()))  # cut off as drawn before
    assert all(0 <= x0 and x1 <= width for x0, x1 in title_spans(fitted(drawn())))
    assert fitted(drawn()).axes[0].get_title().replace("\n", " ") == title


def test_leaderboard_tab_survives_a_bad_store_file(space_app, monkeypatch, tmp_path):
    """Case 4, in the Space's tab: a FIFO and a string score in the store are skipped and named, never a hang."""
    import threading

    from lookbench.leaderboard.load import load_reference

    store = tmp_path / "results"
    store.mkdir()
    os.mkfifo(store / "fifo.json")
    provenance = {"dataset": {"name": "x", "revision": "r", "releases": []}, "model": {"name": "m"}, "mode": "strict",
                  "distractors": True, "cutoff": None}
    (store / "bad.json").write_text(json.dumps({"RealStudioFlat": {"fine_recall": {"@1": "high"}, "num_queries": 3},
                                                "provenance": provenance}))
    monkeypatch.setattr(space_app, "results", store)
    answer = []
    worker = threading.Thread(target=lambda: answer.append(space_app.board("fine", 1, "overall")), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():
        with open(store / "fifo.json", "w"):
            pass
        pytest.fail("the leaderboard tab blocked on a FIFO in the store")
    board = answer[0]
    assert len(board.sections[0].rows) == len(load_reference()[0])
    assert {line.split(":")[0].rsplit("/", 1)[-1] for line in board.skipped} == {"fifo.json", "bad.json"}
    assert any("bad.json: not a LookBench result (RealStudioFlat fine_recall @1 is 'high', not a percentage" in line
               for line in board.skipped), board.skipped


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
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
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


# -- hostile requests (issue 19 case 1, case 8) ----------------------------------------------------------------------


def _raw_search(served, image, query_id="", k=4, timeout=90):
    """A search through the HTTP API as any client can send it: (event, data) of its answer."""
    import urllib.request

    body = json.dumps({"data": [image, query_id, "all", True, "gr-lite-mini", "none", k, "LookBench-Mini (synthetic)"]}).encode()
    request = urllib.request.Request(f"{served}gradio_api/call/search", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        event = json.loads(response.read())["event_id"]
    with urllib.request.urlopen(f"{served}gradio_api/call/search/{event}", timeout=timeout) as response:
        text = response.read().decode()
    kind = re.findall(r"^event: (\w+)$", text, re.M)[-1]
    data = re.findall(r"^data: (.*)$", text, re.M)[-1]
    return kind, json.loads(data)


@pytest.mark.slow
def test_api_reads_no_server_file_it_was_not_sent(served, client, space_app, upload_cache, tmp_path):
    """Case 1: a path outside the upload cache, a directory, a FIFO and a 1 GB sparse file, with and without gradio's
    upload meta: each gets the one refusal (which names no server file); the next query answers; memory stays flat."""
    import threading

    import psutil

    png = tmp_path / "server-side.png"  # a PNG on the server that nobody uploaded
    Image.open(io.BytesIO(space_app.retriever().assets.queries[0]["image"])).save(png)
    (upload_cache / "folder").mkdir()
    os.mkfifo(upload_cache / "fifo.png")
    with open(upload_cache / "huge.png", "wb") as sparse:
        sparse.truncate(1 << 30)
    meta = {"_type": "gradio.FileData"}
    hostile = [{"path": str(png)}, {"path": "/etc/shadow"}, {"path": "/no/such/file.png"}, {"path": str(upload_cache / "folder")},
               {"path": str(upload_cache / "fifo.png")}, {"path": str(upload_cache / "huge.png")}, {"path": "relative.png"},
               {"path": str(upload_cache / "folder"), "meta": meta}, {"path": str(upload_cache / "fifo.png"), "meta": meta},
               {"path": str(upload_cache / "huge.png"), "meta": meta}]
    server, peak, done = psutil.Process(), [], threading.Event()
    baseline = server.memory_info().rss

    def sample():
        while not done.is_set():
            peak.append(server.memory_info().rss)
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        for value in hostile:
            kind, data = _raw_search(served, value)
            assert kind == "complete" and data[0] == f"⚠️ {REFUSED}" and data[4] == "", (value, kind, data)
        for value in ({"path": str(png), "meta": meta}, {"path": "/etc/shadow", "meta": meta},
                      {"path": "relative.png", "meta": meta}, "/etc/passwd", 7, {"path": 7}):  # gradio's own checks come first
            kind, data = _raw_search(served, value)
            assert kind == "error" or data[0] == f"⚠️ {REFUSED}", (value, kind, data)
            assert "top 4" not in json.dumps(data)
    finally:
        done.set()
        sampler.join()
        try:  # a reader blocked on the FIFO (the bug) gets end-of-file, so the server can stop
            os.close(os.open(upload_cache / "fifo.png", os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader: nothing was blocked
    assert max(peak) - baseline < 300 * 1024**2, (baseline, max(peak))
    status, *_ = _search(client, query_id="RealStreetLook/1")  # the endpoint still answers everyone
    assert status.startswith("RealStreetLook/1: top 6")
    upload = tmp_path / "query.png"
    upload.write_bytes(png.read_bytes())
    status, _, _, _, panel, *_ = _search(client, upload)  # a real upload is searched as before
    assert status.startswith("uploaded file (PNG ") and len(_tiles(panel)) == 6


@pytest.mark.slow
def test_api_bad_seed_top_k_and_cutoff_are_messages(served, client):
    """Case 8: a random-query seed of 10**30 gave a server traceback and a bare client error."""
    from gradio_client.exceptions import AppError

    for seed in (10**30, -1):
        with pytest.raises(AppError, match="Seed must be a whole number from 0 to"):
            client.predict("all", seed, "", api_name="/random")
    for k in (10**30, "ten", None, 0):
        kind, data = _raw_search(served, None, query_id="RealStudioFlat/1", k=k)
        assert kind == "complete" and data[0].startswith("⚠️ top-k must be a whole number from 1 to 50"), (k, data)
    with pytest.raises(AppError, match="is not an ISO 8601"):
        client.predict("all", 0, "yesterday", api_name="/random")
    image, query_id, seed, status = client.predict("RealStreetLook", 4, "", api_name="/random")
    assert seed == 5 and query_id.startswith("RealStreetLook/")


# -- a real browser ----------------------------------------------------------------------------------------------


def _not_blank(path: Path) -> None:
    pixels = np.asarray(Image.open(path).convert("RGB"))
    assert pixels.shape[0] > 200 and pixels.shape[1] > 400
    assert pixels.std() > 10 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 200


def _inside(page, selector: str) -> dict:
    """The element's box, asserted to lie wholly inside the viewport (no scrolling needed to see it)."""
    box = page.locator(selector).first.bounding_box()
    size = page.viewport_size
    assert box and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= size["width"] + 1 \
        and box["y"] + box["height"] <= size["height"] + 1, (selector, box, size)
    return box


@contextlib.contextmanager
@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_browser_query_beside_its_marked_results_words_phone_and_leaderboard(served, space_app, tmp_path):
    """A visitor's path through the page in Debian's chromium (issue 47): at 1280x800 a random query's image (at
    least 200 px) and its first result tile both in view without scrolling; tiles bordered in their mark's colour
    (the legend's), with chips; two models side by side; the words box naming the words it ignored; stale state
    cleared; at 390x844 the panels stacked with the table's mark column in view; the leaderboard's rows whole."""
    from playwright.sync_api import expect

    out = tmp_path
    border = "els => els.map(e => [e.dataset.mark, getComputedStyle(e).borderTopColor])"
    with chromium_page(tmp_path / "profile", 1280, 800) as page:
        page.goto(served)
        expect(page.locator("#gallery-info")).to_contain_text("Gallery: LookBench-Mini (synthetic)")
        expect(page.locator("#intro a[href='https://arxiv.org/abs/2601.14706']")).to_have_count(1)
        expect(page.locator("#column-b")).to_be_hidden()  # no results yet: no empty second panel
        page.locator("#random").click()
        tiles_a, tiles_b = page.locator("#results-a .tile"), page.locator("#results-b .tile")
        expect(tiles_a).to_have_count(10)
        expect(tiles_b).to_have_count(10)
        expect(page.locator("#status")).to_contain_text(re.compile(r"\S+/\d+: top 10 of LookBench-Mini"))
        query = page.locator("#query-image img").first
        expect(query).to_be_visible()
        box = _inside(page, "#query-image img")
        assert min(box["width"], box["height"]) >= 200, box
        first = _inside(page, "#results-a .tile")
        assert first["x"] > box["x"] + box["width"]  # beside the query, not below it
        b = page.locator("#results-b .tile").first.bounding_box()
        assert abs(b["y"] - first["y"]) < 5 and b["x"] > first["x"] + first["width"]  # two models side by side
        expect(page.locator("#results-a h3")).to_contain_text(re.compile(r"^gr-lite-mini — fine hit@10 [✓✗] · "
                                                                         r"coarse hit@10 [✓✗] · nDCG@10 \d"))
        expect(page.locator("#results-b h3")).to_contain_text(re.compile(r"^efficientnet-lite0 — fine hit@10"))
        legend = dict(page.locator("#legend .legend span").evaluate_all(
            "els => els.map(e => [e.textContent.split(':')[0], getComputedStyle(e).getPropertyValue('--mark').trim()])"))
        marks = tiles_a.evaluate_all(border) + tiles_b.evaluate_all(border)
        rgb = {m: tuple(int(legend[m][i:i + 2], 16) for i in (1, 3, 5)) for m in ("fine", "coarse", "miss")}
        for mark, colour in marks:
            assert mark in rgb and colour == f"rgb({', '.join(map(str, rgb[mark]))})", (mark, colour)
        assert len({c for _, c in marks}) == len({m for m, _ in marks})  # one colour per mark
        chips = page.locator("#results-a .tile:not([data-mark=fine]) .chip, #results-b .tile:not([data-mark=fine]) .chip")
        assert chips.count() >= sum(m != "fine" for m, _ in marks) > 0  # every result short of fine says why
        assert page.locator(".tile[data-mark=fine] .chip").count() == 0
        shot = out / "mini.png"
        page.screenshot(path=str(shot))  # the viewport a visitor sees: query and results together
        # A benchmark query, then the other gallery: the query, its image and its results are cleared
        page.locator("#query-id textarea").fill("RealStreetLook/1")
        page.locator("#search").click()
        expect(page.locator("#status")).to_contain_text("RealStreetLook/1: top 10 of LookBench-Mini (synthetic)")
        page.get_by_role("radio", name="LookBench Fashion-MNIST").click()
        expect(page.locator("#status")).to_contain_text("Gallery LookBench Fashion-MNIST: pick a benchmark query")
        expect(tiles_a).to_have_count(0)
        expect(page.locator("#query-id textarea")).to_have_value("")
        expect(page.locator("#gallery-info")).to_contain_text("licence mit")
        page.locator("#random").click()
        expect(page.locator("#status")).to_contain_text(re.compile(r"RealStudioFlat/\d+: top 10 of LookBench Fashion-MNIST"))
        expect(tiles_b).to_have_count(10)
        _inside(page, "#query-image img")
        _inside(page, "#results-a .tile")
        photos = out / "photos.png"
        page.screenshot(path=str(photos))
        # A phone: the panels stacked, the table's mark column in view
        page.set_viewport_size({"width": 390, "height": 844})
        page.locator("#details-a table").scroll_into_view_if_needed()
        header = page.locator("#details-a th", has_text="mark").first
        mark = header.bounding_box()
        assert mark["x"] >= 0 and mark["x"] + mark["width"] <= 390, mark
        a, b = (page.locator(f"#results-{c} .tile").first.bounding_box() for c in "ab")
        assert b["y"] > a["y"] + a["height"]  # stacked
        page.set_viewport_size({"width": 1280, "height": 800})
        page.get_by_role("tab", name="Leaderboard").click()
        expect(page.get_by_text("GR-Pro", exact=True).first).to_be_visible()
        table = page.locator(".board-table").first
        expect(table.locator("tbody tr")).to_have_count(len(space_app.board("fine", 1, "overall").sections[0].rows))
        assert page.locator(".board-wrap").first.evaluate("e => e.scrollHeight <= e.clientHeight + 1")  # no inner scroll
        numbers = table.locator("td.num").all_inner_texts()
        assert numbers and all(re.fullmatch(r"\d+(\.\d\d)?", n) for n in numbers), numbers
        expect(page.get_by_text("Error", exact=True)).to_have_count(0)
        page.screenshot(path=str(out / "space-leaderboard.png"), full_page=True)
        page.get_by_role("tab", name="Search").click()
        # Words: the ones it does not know are named; all-unknown words are that message, not results
        page.locator("#words textarea").fill("a black leather handbag")
        page.locator("#search-words").click()
        expect(page.locator("#words-note")).to_contain_text("ignored (not in its vocabulary): leather, handbag")
        expect(page.locator("#status")).to_contain_text("the words “a black leather handbag”: top 10 of LookBench Fashion-MNIST")
        expect(page.locator("#query-image img")).to_have_count(0)  # the earlier query's image is not these results'
        expect(page.locator("#column-b")).to_be_hidden()  # one model reads words: no empty second panel
        expect(tiles_a).to_have_count(10)
        page.locator("#words textarea").fill("leather handbag")
        page.locator("#search-words").click()
        expect(page.locator("#status")).to_contain_text("No word of “leather handbag” is one the text tower knows")
        expect(tiles_a).to_have_count(0)
    _stack([shot, photos], out / "space-search.png")
    for name in ("space-search.png", "space-leaderboard.png"):
        _not_blank(out / name)
        if os.environ.get("LOOKBENCH_SCREENSHOTS"):  # how the README's screenshots are refreshed
            Image.open(out / name).convert("RGB").quantize(128).save(Path(os.environ["LOOKBENCH_SCREENSHOTS"]) / name, optimize=True)


def _stack(paths, target: Path) -> None:
    images = [Image.open(p).convert("RGB") for p in paths]
    canvas = Image.new("RGB", (max(i.width for i in images), sum(i.height for i in images) + 12 * (len(images) - 1)), "white")
    y = 0
    for image in images:
        canvas.paste(image, (0, y))
        y += image.height + 12
    canvas.save(target)


@pytest.mark.slow
def test_api_a_huge_bad_input_is_echoed_shortened_and_logged_as_one_line(client, caplog, capfd):
    """Round 4: a query id, subset, model or cutoff of 10,000 characters came back in full, and each bad call that
    ends in an error logged a traceback. Echoed input is at most 80 characters with an ellipsis; each refusal is one
    log line, with no traceback."""
    import logging

    from gradio_client.exceptions import AppError

    caplog.set_level(logging.INFO, logger="lookbench.space")
    capfd.readouterr()
    huge = "RealStreetLook/" + "9" * 10_000
    answers = [_search(client, query_id=huge)[0], _search(client, query_id="x" * 10_000)[0],
               _search(client, query_id="RealStudioFlat/1", subset="s" * 10_000)[0],
               _search(client, query_id="RealStudioFlat/1", model="m" * 10_000)[0]]
    for inputs, api in ((("all", 0, "c" * 10_000), "/random"), (("s" * 10_000, 0, ""), "/random"), ((huge,), "/describe")):
        with pytest.raises(AppError) as refused:
            client.predict(*inputs, api_name=api)
        answers.append(str(refused.value))
    for answer in answers:
        assert "…" in answer and len(answer) < 400, answer[:500]
        echoed = max(re.findall(r"'[^']*…'?", answer), key=len)
        assert len(echoed) <= 80, answer
    lines = [r for r in caplog.records if r.name == "lookbench.space"]
    assert len(lines) == len(answers) and all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)
    assert all(len(r.getMessage()) < 400 for r in lines)
    assert "Traceback" not in capfd.readouterr().err
    assert _search(client, query_id="RealStudioFlat/1")[0].startswith("RealStudioFlat/1: top 6")


# -- Your results (issue 47 item 3) ----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def stored(tmp_path_factory):
    """A results folder as `lookbench demo --results` takes it: `evaluate --save-predictions --output` of raw-pixels
    on the embedded Mini, the same without saved rankings, and that result submitted (`lookbench submit --dry-run`)."""
    import lookbench
    from lookbench.submissions.submit import prepare, write

    root = tmp_path_factory.mktemp("your-results")
    for name, save in (("saved", True), ("plain", False)):
        lookbench.evaluate("raw-pixels", output_dir=root / "runs" / name, save_predictions=save, quiet=True,
                           use_cache=False, results_dir=None)
    folder = write(prepare(root / "runs" / "saved", model_id=f"someone/raw-pixels@{'5' * 40}", allow_synthetic=True),
                   root / "repo")
    return {"root": root / "runs", "submission": folder, "repo": root / "repo"}


@pytest.fixture(scope="session")
def yours_app(space_app, space_assets, stored):
    from lookbench.space.app import SpaceApp

    encoders = {**space_app.encoders, **{"gr-lite-mini-text": r for r in space_app.readers.values()}}
    return SpaceApp([space_assets], results=stored["root"], encoders=encoders)


@pytest.fixture(scope="session")
def yours_served(yours_app):
    yield from _serving(yours_app)


def test_your_results_show_the_reports_worst_queries_with_their_marks_and_filters(yours_app, stored):
    from lookbench.report import records
    from lookbench.space.yours import SHOWN

    assert yours_app.yours.choices == ["saved/results.json", "saved/results-leaderboard.json"]  # plain/: no rankings
    report = records.worst_queries(stored["root"] / "saved", top=10, limit=100)
    line, figure, html, *filters = yours_app.yours.answer("saved/results.json")
    assert line.startswith("**raw-pixels on LookBench-Mini (synthetic), strict mode** (saved/results.json): "
                           f"{report.evaluated} queries evaluated")
    assert figure is not None and [t.get_text() for t in figure.axes[0].get_yticklabels()] == \
        sorted(report.attribute_errors["overall"], key=lambda a: report.attribute_errors["overall"][a]["rate"])
    rows = query_rows(html)
    assert len(rows) == min(SHOWN, len(report.queries)) > 0
    for row, w in zip(rows, report.queries):  # the report's records, in its order, each card its mark
        assert row["title"] == f"{w.subset} query {w.number}"
        assert row["marks"] == [r.mark for r in w.results] and "fine" not in row["marks"][:1]
    assert html.count("class='chip ") == sum(len(r.chips) for w in report.queries[:SHOWN] for r in w.results) > 0
    subsets = filters[0]["choices"]
    assert [c[0] if isinstance(c, tuple) else c for c in subsets][0] == "all"
    subset = report.queries[-1].subset
    _, narrowed, html, *_ = yours_app.yours.answer("saved/results.json", subset)
    kept = [w for w in report.queries if w.subset == subset]
    assert [r["title"] for r in query_rows(html)] == [f"{w.subset} query {w.number}" for w in kept[:SHOWN]]
    assert narrowed.axes[0].get_title().endswith(subset)  # the chart of that subset's attribute errors
    chosen = next(w for w in report.queries if w.attribute_names())
    attribute, category = chosen.attribute_names()[0], chosen.category
    _, _, html, *_ = yours_app.yours.answer("saved/results.json", "all", category, attribute)
    rows = query_rows(html)
    assert rows and all(r["category"] == category and attribute in r["attributes"] for r in rows)
    assert len(rows) == min(SHOWN, sum(w.category == category and attribute in w.attribute_names() for w in report.queries))


def test_a_submission_folder_opens_with_the_same_reader(stored):
    from lookbench.report import records
    from lookbench.space.yours import YourResults

    yours = YourResults(stored["repo"])
    (choice,) = yours.choices
    assert (stored["repo"] / choice).parent == stored["submission"]
    _, _, html, *_ = yours.browse(choice)
    original = records.worst_queries(stored["root"] / "saved")
    assert [r["title"] for r in query_rows(html)][:5] == [f"{w.subset} query {w.number}" for w in original.queries[:5]]


def test_a_walk_cut_short_says_so(stored, tmp_path, monkeypatch):
    from lookbench.space import yours

    for name in ("a", "b"):
        shutil.copytree(stored["root"] / "saved", tmp_path / name)
    monkeypatch.setattr(yours, "MAX_FOLDERS", 2)  # the given folder and a/: b/ is not reached
    cut = yours.YourResults(tmp_path)
    assert cut.cut and cut.choices == ["a/results.json", "a/results-leaderboard.json"]
    assert cut.browse("a/results.json")[0].endswith("Only the results in the first 2 folders under the given one are offered.")
    monkeypatch.setattr(yours, "MAX_FOLDERS", 3)
    whole = yours.YourResults(tmp_path)
    assert not whole.cut and len(whole.choices) == 4
    monkeypatch.setattr(yours, "MAX_OPENED", 2)  # what stays opened is bounded: the first opened goes first
    for choice in whole.choices[:3]:
        whole.browse(choice)
    assert [key[0] for key in whole._opened] == whole.choices[1:3]


def test_your_results_bad_choices_and_results_without_rankings_are_one_line(yours_app, stored, tmp_path):
    from lookbench.space.yours import YourResults

    def line(app, *args):
        answer = app.yours.answer(*args)
        assert answer[1] is None and answer[2] == "" and "\n" not in answer[0]
        return answer[0]

    assert line(yours_app, "../../etc/passwd").startswith("⚠️ Unknown result '../../etc/passwd'; choose one of ")
    assert "Unknown subset 'Nowhere' in this result" in line(yours_app, "saved/results.json", "Nowhere")
    plain = YourResults(stored["root"] / "plain" / "results.json")  # a result JSON given: offered, then refused
    assert plain.choices == ["results.json"]
    with pytest.raises(ValueError, match="has no saved rankings for .*evaluate again with --save-predictions"):
        plain.browse("results.json")
    assert "No result with saved rankings in" in YourResults(tmp_path / "missing").empty
    # A result whose JSON lies outside the folder given (a link) is never read
    outside = tmp_path / "elsewhere"
    shutil.copytree(stored["root"] / "saved", outside)
    (tmp_path / "given").mkdir()
    (tmp_path / "given" / "linked.json").symlink_to(outside / "results.json")
    (tmp_path / "given" / "linked.predictions").mkdir()
    linked = YourResults(tmp_path / "given")
    assert linked.choices == ["linked.json"]
    with pytest.raises(ValueError, match="lies outside the given/ folder"):
        linked.browse("linked.json")
    with pytest.raises(ValueError, match=r"^No stored result given: start with `lookbench demo --results PATH`"):
        YourResults(None).browse(None)  # the Hub Space, started without a results folder


def test_a_result_never_makes_the_tab_read_outside_the_folders_given(stored, tmp_path):
    """A result names its data and its subsets: a local data folder elsewhere is not read (the records shown, the
    images not, the line says why), and a subset name that is no LookBench subset (a path) is refused in one line."""
    from lookbench.report import records
    from lookbench.space.yours import SHOWN, YourResults

    given = tmp_path / "given"
    shutil.copytree(stored["root"] / "saved", given / "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = json.loads((given / "run" / "results.json").read_text())
    result["provenance"]["dataset"]["data"] = str(elsewhere)
    (given / "run" / "results.json").write_text(json.dumps(result))
    line, _, html, *_ = YourResults(given).answer("run/results.json")
    shown = line.replace("\\", "")  # as markdown_safe escapes it
    assert "Images not shown: its data '/" in shown and str(elsewhere)[:40] in shown  # a long path is cut with …
    assert shown.endswith(" lies outside the folders given to the demo (--results, --data)")
    assert html.count("<div class='query' ") == min(SHOWN, len(records.worst_queries(given / "run").queries)) > 0
    assert "data:image" not in html and "image unreadable" in html  # the records stand; no image was read
    subset = result["provenance"]["subsets"][0]
    moved = "../../outside/" + subset
    result["provenance"]["subsets"][0] = moved
    result["provenance"]["saved_predictions"] = [moved if s == subset else s for s in result["provenance"]["saved_predictions"]]
    result[moved] = result.pop(subset)
    (given / "run" / "results.json").write_text(json.dumps(result))
    line = YourResults(given).answer("run/results.json")[0]
    assert line.startswith("⚠️ ") and "provenance.subsets names '../../outside/" in line and "not a LookBench subset" in line


def test_api_your_results_through_gradio_client(yours_served, stored):
    from gradio_client import Client

    from lookbench.report import records

    client = Client(yours_served, verbose=False)
    report = records.worst_queries(stored["root"] / "saved")
    subset = report.queries[0].subset
    line, chart, html, *filters = client.predict("saved/results.json", subset, "all", "all", api_name="/your_results")
    assert f"({'saved/results.json'}): {report.evaluated} queries evaluated" in line and chart is not None
    assert {r["subset"] for r in query_rows(html)} == {subset}
    line, chart, html, *_ = client.predict("saved/nowhere.json", "all", "all", "all", api_name="/your_results")
    assert line.startswith("⚠️ Unknown result 'saved/nowhere.json'") and html == "" and chart is None


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_browser_your_results_opens_a_stored_result_and_a_filter_narrows_it(yours_served, stored, tmp_path):
    """`lookbench demo --results` in Debian's chromium: "Your results" shows the stored result's attribute error chart
    and its worst queries, each card bordered in its mark's colour (the Search tab's) with chips saying why it is not
    fine; the subset filter narrows the rows to that subset's."""
    from playwright.sync_api import expect

    from lookbench.report import records
    from lookbench.space.views import MARKS
    from lookbench.space.yours import SHOWN

    report = records.worst_queries(stored["root"] / "saved")
    rgb = {m: f"rgb({', '.join(str(int(MARKS[m][1][i:i + 2], 16)) for i in (1, 3, 5))})" for m in ("fine", "coarse", "miss")}
    with chromium_page(tmp_path / "profile", 1280, 800) as page:
        page.goto(yours_served)
        page.get_by_role("tab", name="Your results").click()
        expect(page.locator("#your-note")).to_contain_text(
            f"raw-pixels on LookBench-Mini (synthetic), strict mode (saved/results.json): {report.evaluated} queries")
        rows = page.locator("#your-queries .query")
        expect(rows).to_have_count(min(SHOWN, len(report.queries)))
        expect(page.locator("#your-chart img, #your-chart svg").first).to_be_visible()  # the attribute error chart
        first = report.queries[0]
        expect(rows.first.locator(".q b")).to_have_text(f"{first.subset} query {first.number}")
        cards = rows.first.locator(".results .card")
        marks = cards.evaluate_all("cs => cs.map(c => [c.title, getComputedStyle(c.querySelector('img')).borderTopColor])")
        assert [m for m, _ in marks] == [r.mark for r in first.results]
        assert all(colour == rgb[mark] for mark, colour in marks), marks
        loaded = "imgs => imgs.map(i => i.complete && i.naturalWidth > 0)"
        assert all(rows.first.locator("img").evaluate_all(loaded))
        assert rows.first.locator(".card:not(.fine) .chip").count() >= sum(r.mark != "fine" for r in first.results) > 0
        page.screenshot(path=str(tmp_path / "space-your-results.png"))
        subset = report.queries[-1].subset
        page.locator("#your-subset input").click()
        page.get_by_role("option", name=subset, exact=True).click()
        kept = [w for w in report.queries if w.subset == subset]
        assert len(kept) < len(report.queries)
        expect(page.locator("#your-note")).to_contain_text(f"{len(kept)} kept by the filters")
        expect(rows.first.locator(".q b")).to_have_text(f"{kept[0].subset} query {kept[0].number}")
        expect(rows).to_have_count(min(SHOWN, len(kept)))
        assert set(rows.evaluate_all("qs => qs.map(q => q.dataset.subset)")) == {subset}
        expect(page.get_by_text("Error", exact=True)).to_have_count(0)
    _not_blank(tmp_path / "space-your-results.png")
    if os.environ.get("LOOKBENCH_SCREENSHOTS"):  # how the docs' screenshots are refreshed
        Image.open(tmp_path / "space-your-results.png").convert("RGB").quantize(128).save(
            Path(os.environ["LOOKBENCH_SCREENSHOTS"]) / "space-your-results.png", optimize=True)
