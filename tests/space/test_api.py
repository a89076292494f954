"""The demo's API through gradio_client: uploads, benchmark queries, both galleries, words, bad and hostile input
(a refusal says nothing of the server's files; a huge input is echoed shortened, logged as one line)."""
import io
import json
import os
import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lookbench.metric.fine_recall.bootstrap import score_retrieval
from lookbench.space.requests import REFUSED

from tests.helpers.space_app import (expected_marks as _expected_marks, search as _search, seen as _seen,
                                     shown as _shown, tiles as _tiles)


def _gallery_source(folder: Path, subset: str, row: int) -> bytes:
    """The original encoded bytes of a gallery image, as stored in the Mini."""
    import datasets

    from lookbench.dataset_builder import ensure_default_mini

    ds = datasets.load_dataset(str(ensure_default_mini()), subset, split="gallery", cache_dir=str(folder / "ds"))
    return ds.cast_column("image", datasets.Image(decode=False))[row]["image"]["bytes"]


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
    from lookbench.report.records import chips

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
        for tile, hit, item in zip(tiles, hits, items):  # chips: the report's, why a result is not fine (strict)
            colours.setdefault(tile["mark"], set()).add(tile["colour"])
            assert tile["chips"] == ([] if tile["mark"] == "fine" else
                                     [c.text for c in chips(query.annotation, item, "strict", tile["mark"] == "coarse")])
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
    photos = space_app.galleries["Fashion-MNIST real photos in LookBench's format"]
    status, _, annotation, _, panel_a, details_a, panel_b, _ = client.predict(
        None, "RealStudioFlat/2", "all", True, "gr-lite-mini", "none", 6, "Fashion-MNIST real photos in LookBench's format", api_name="/search")
    assert status == "RealStudioFlat/2: top 6 of Fashion-MNIST real photos in LookBench's format, all subsets, no noise gallery."
    assert details_a.startswith("### gr-lite-mini · Fashion-MNIST real photos in LookBench's format") and panel_b == ""
    query = photos.benchmark_query("RealStudioFlat/2")
    assert f"category **{query.annotation['category']}**" in annotation
    hits = photos.search(query, "gr-lite-mini", "all", True, 6).hits
    assert _seen(panel_a) == _shown(hits)
    mini = client.predict(None, "RealStudioFlat/2", "all", True, "gr-lite-mini", "none", 6, api_name="/search")
    assert mini[0].startswith("RealStudioFlat/2: top 6 of LookBench-Mini (synthetic)")
    assert _seen(mini[4]) != _seen(panel_a)
    status, *_ = client.predict(None, "RealStudioFlat/2", "AIGen-Studio", True, "gr-lite-mini", "none", 6,
                                "Fashion-MNIST real photos in LookBench's format", api_name="/search")
    assert status == "⚠️ Fashion-MNIST real photos in LookBench's format has no subset AIGen-Studio; it has RealStudioFlat"
    image, query_id, seed, status = client.predict("all", 3, "", "Fashion-MNIST real photos in LookBench's format", api_name="/random")
    assert query_id.startswith("RealStudioFlat/") and status.endswith("of Fashion-MNIST real photos in LookBench's format (seed 3).")


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
    status, note, annotation, *_ = client.predict("dark ankle boot", "", "all", True, 4, "Fashion-MNIST real photos in LookBench's format",
                                                  api_name="/search_words")
    assert status == "the words “dark ankle boot”: top 4 of Fashion-MNIST real photos in LookBench's format, all subsets, no noise gallery."
    assert "no annotation" in annotation and note == "Read: dark, ankle, boot"
    status, note, *rest = client.predict("a black leather handbag", "", "all", True, 4, "Fashion-MNIST real photos in LookBench's format",
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
