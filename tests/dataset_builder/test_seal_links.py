"""Issue 53: the public part of a sealed release links no query to its matches (docs/publishing.md). On a sealed
LookBench-Mini, for every column the public query and gallery splits share — found in the data, not listed here —
rankings that put the gallery rows with the query's value first (the nearest first, for a time) score Fine Recall@1
within the random baseline's 95 % interval, scored as the board scores them (the labels filled in, the one judge);
the same rankings on the release before sealing do not. No query image is a gallery image byte for byte, no public
value is an item or outfit id, the images carry no metadata, and the sealed card keeps its body."""
from __future__ import annotations

import hashlib
import io
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image, PngImagePlugin

from lookbench.citation import BIBTEX
from lookbench.dataset_builder import seal as sealing
from lookbench.dataset_builder.labels import Labels
from lookbench.dataset_builder.seal import scrubbed, seal, unseal
from lookbench.dataset_builder.sealed import SEALED_KEY, card_yaml, is_map
from lookbench.dataset_builder.sources import SourceError
from lookbench.engine.data import load_benchmark
from lookbench.metric.fine_recall.records import GalleryColumns
from lookbench.results.judge import fine_matches, gallery_columns, judge_modes, query_columns
from lookbench.schema import NOISE, SUBSETS, TEST_SUBSETS
from tests.helpers.shared import mini_copy

MODE = "strict"
DEPTH = 20


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    """(the Mini as built, its sealed public part, its labels folder). The per-release key is fixed here, so the
    draw each check below makes is one fixed draw rather than a new one per run (a 95 % interval misses 1 in 20)."""
    root = tmp_path_factory.mktemp("sealed")
    mini_copy(root / "built")
    shutil.copytree(root / "built", root / "data")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sealing, "_secret", lambda: hashlib.sha256(b"issue 53, a fixed test key").digest())
        seal(root / "data")
    return root / "built", root / "data", root / "data-labels"


def _tables(folder, config: str) -> dict[str, pa.Table]:
    splits = {}
    for shard in sorted((folder / config).glob("*.parquet")):
        splits.setdefault(shard.name.split("-", 1)[0], []).append(pq.read_table(shard))
    return {split: pa.concat_tables(parts) for split, parts in splits.items()}


def _rankings(queries: list, gallery: list, timelike: bool) -> np.ndarray:
    """Per query the first ``DEPTH`` gallery rows: those whose value equals the query's first (for a time, the
    nearest first), ties in gallery order."""
    out = []
    for value in queries:
        if timelike:
            key = np.array([abs((g - value).total_seconds()) if g is not None and value is not None else np.inf
                            for g in gallery])
        else:
            key = np.array([0 if g == value else 1 for g in gallery])
        out.append(np.argsort(key, kind="stable")[:DEPTH])
    return np.array(out)


def _interval(chances: np.ndarray) -> tuple[int, int]:
    """The central 95 % interval of the number of top-1 fine hits of a random ranking: each query hits with its own
    chance (the share of fine matches in its gallery), so the count is Poisson-binomial, worked out exactly."""
    dist = np.zeros(len(chances) + 1)
    dist[0] = 1.0
    for p in chances:
        dist[1:] = dist[1:] * (1 - p) + dist[:-1] * p
        dist[0] *= 1 - p
    cdf = np.cumsum(dist)
    return int(np.searchsorted(cdf, 0.025)), int(np.searchsorted(cdf, 0.975))


def _linked(folder, labels=None) -> dict[str, tuple[int, tuple[int, int]]]:
    """Per shared column of ``folder``'s query and gallery splits: the top-1 fine hits, over every subset, of the
    rankings by that column, and the random baseline's interval; scored on the data with ``labels`` filled in, as
    the board scores a sealed release."""
    bench = load_benchmark(folder, labels=labels)
    noise_columns = GalleryColumns(bench.noise)
    noise = _tables(folder, NOISE)["gallery"]
    hits, chances = {}, []
    for subset in TEST_SUBSETS:
        public = _tables(folder, subset)
        shared = sorted(set(public["query"].column_names) & set(public["gallery"].column_names) & set(noise.column_names))
        joined = bench.subsets[subset]
        queries = joined["query"].select_columns(query_columns(joined["query"]))
        columns = gallery_columns(joined["gallery"], noise_columns)
        chances.append(fine_matches(queries, columns, MODE).mean(axis=1))
        for name in shared:
            timelike = pa.types.is_timestamp(public["query"].schema.field(name).type)
            gallery = public["gallery"].column(name).to_pylist() + noise.column(name).to_pylist()
            ranking = _rankings(public["query"].column(name).to_pylist(), gallery, timelike)
            judged = judge_modes(ranking, queries, columns, (MODE,))[MODE]
            hits[name] = hits.get(name, 0) + int(np.asarray(judged.fine)[:, 0].sum())
    interval = _interval(np.concatenate(chances))
    return {name: (count, interval) for name, count in hits.items()}


@pytest.mark.slow
def test_no_public_column_links_a_query_to_its_matches(sealed):
    built, public, labels = sealed
    found = _linked(public, labels)
    assert {"image", "item_id", "timestamp", "outfit_id", "release"} <= set(found)  # the scan sees the columns
    outside = {name: got for name, got in found.items() if not got[1][0] <= got[0] <= got[1][1]}
    assert outside == {}, outside
    # the same rankings on the release before it was sealed: a query's item id is its matches'
    count, (_, high) = _linked(built)["item_id"]
    assert count > 5 * high, (count, high)


@pytest.mark.slow
def test_no_public_image_or_value_names_a_row_of_the_labels(sealed):
    _, public, labels = sealed
    ids = set()
    for shard in (p for p in labels.glob("*/*.parquet") if p.parent.name in SUBSETS):
        for name in ("item_id", "outfit_id"):
            ids.update(v for v in pq.read_table(shard, columns=[name]).column(name).to_pylist() if v)
    assert len(ids) > 100

    def strings(value):
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    seen = 0
    for shard in public.glob("*/*.parquet"):
        table = pq.read_table(shard)
        for name in table.column_names:
            values = table.column(name).to_pylist()
            if name in ("image", "raw_image"):
                values = [{k: v for k, v in value.items() if k != "bytes"} for value in values if value]
            found = {s for value in values for s in strings(value)}
            seen += len(found)
            assert not found & ids, (shard, name, sorted(found & ids)[:3])
    assert seen > 1000
    card = (public / "README.md").read_text()
    assert not [i for i in ids if i in card]
    noise = {hashlib.sha256(v["bytes"]).hexdigest() for v in _tables(public, NOISE)["gallery"].column("image").to_pylist()}
    for subset in TEST_SUBSETS:
        splits = _tables(public, subset)
        images = {split: [v["bytes"] for v in t.column("image").to_pylist()] for split, t in splits.items()}
        digests = {split: {hashlib.sha256(b).hexdigest() for b in found} for split, found in images.items()}
        assert not digests["query"] & (digests["gallery"] | noise), subset
        for data in images["query"][:5] + images["gallery"][:5]:
            opened = Image.open(io.BytesIO(data))
            assert set(opened.info) <= {"transparency"} and not opened.getexif(), (subset, opened.info)


@pytest.mark.slow
def test_the_sealed_card_has_its_body_and_unseal_gives_the_release_back_with_its_map(sealed, tmp_path):
    built, public, labels = sealed
    card = (public / "README.md").read_text()
    assert "{rest}" not in card and card_yaml(public)[SEALED_KEY]["releases"]
    for part in ("## Subsets", "## Release history", "## Fields", BIBTEX.strip().splitlines()[0], "opaque row id"):
        assert part in card, part
    assert "synthetic" in card.lower()  # the description says what the Mini is
    folder = tmp_path / "data"
    shutil.copytree(public, folder)
    unseal(folder, labels)
    for shard in sorted(built.glob("*/*.parquet")):
        assert pq.read_table(folder / shard.relative_to(built)).equals(pq.read_table(shard)), shard
    maps = sorted(p.name for p in labels.iterdir() if is_map(p.name))
    assert len(maps) == 3 and sorted(p.name for p in folder.iterdir() if is_map(p.name)) == maps
    # the unsealed release scores the sealed public part exactly as the withheld labels do
    state = sealing.sealed_state(public)
    withheld, published = Labels.read(labels, state.releases), Labels.read(folder, state.releases)
    assert withheld.tables == published.tables and withheld.rows == published.rows
    filled = {}
    for name, found in (("withheld", withheld), ("published", published)):
        found.fill_into(public, tmp_path / name, state)
        filled[name] = {p.relative_to(tmp_path / name): pq.read_table(p) for p in (tmp_path / name).glob("*/*.parquet")}
    assert filled["withheld"].keys() == filled["published"].keys()
    assert all(filled["withheld"][p].equals(filled["published"][p]) for p in filled["withheld"])
    # a never-sealed copy has the labels but not the map: it cannot name the public rows
    with pytest.raises(SourceError, match="hold no map of the sealed rows"):
        Labels.read(built, state.releases).fill_into(public, tmp_path / "never", state)


def test_an_image_is_published_with_its_pixels_only():
    exif = Image.Exif()
    exif[0x010E] = "rsf-000001 shot at 48.85N 2.35E"
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), (200, 30, 60)).save(buffer, "JPEG", exif=exif, icc_profile=b"rsf-000001 profile",
                                                    comment=b"rsf-000001")
    jpeg = scrubbed(buffer.getvalue(), "a.jpg")
    opened = Image.open(io.BytesIO(jpeg))
    assert opened.format == "JPEG" and opened.size == (32, 24) and b"rsf-000001" not in jpeg
    assert not {"exif", "icc_profile", "comment"} & set(opened.info) and not opened.getexif()
    info = PngImagePlugin.PngInfo()
    info.add_text("item_id", "rsf-000001")
    picture = Image.new("P", (16, 16), 3)
    buffer = io.BytesIO()
    picture.save(buffer, "PNG", pnginfo=info, transparency=3)
    png = scrubbed(buffer.getvalue(), "b.png")
    opened = Image.open(io.BytesIO(png))
    assert b"rsf-000001" not in png and set(opened.info) == {"transparency"}
    assert opened.convert("RGBA").tobytes() == picture.convert("RGBA").tobytes()  # lossless


def test_an_image_past_the_bomb_limit_is_refused_naming_its_row(monkeypatch):
    buffer = io.BytesIO()
    Image.new("L", (64, 64)).save(buffer, "PNG")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)
    with pytest.raises(SourceError, match="RealStreetLook/query row 7: refused as a decompression bomb"):
        scrubbed(buffer.getvalue(), "RealStreetLook/query row 7")


@pytest.mark.slow
def test_a_sealed_release_has_no_mteb_task(sealed):
    pytest.importorskip("mteb")
    from lookbench.errors import EvaluationError
    from lookbench.mteb.tasks import lookbench_tasks

    with pytest.raises(EvaluationError, match="is sealed: its labels are withheld, so it has no qrels"):
        lookbench_tasks(sealed[1])
