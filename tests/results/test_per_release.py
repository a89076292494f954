"""Scores per release (lookbench.results.per_release, issue 23): every result scores each release's queries apart,
the gallery whole; on a folder that holds two snapshots because the second was appended with `lookbench build --append`."""
from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image

import lookbench
from lookbench.results.per_release import HEADLINE

from tests.helpers.raw_build import build_two_releases


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory) -> Path:
    return build_two_releases(tmp_path_factory.mktemp("releases"))


class MeanColour:
    """A deliberately weak encoder (an image's mean colour, blurred by noise seeded on its content): its scores
    differ per subset and per release."""

    name = "noisy-mean-colour"
    revision = "1"

    def encode(self, images):
        out = []
        for im in images:
            noise = np.random.default_rng(int(_content(im)[:12], 16)).normal(0, 90, 3)
            out.append(np.asarray(im.convert("RGB"), dtype=np.float32).mean(axis=(0, 1)) + noise + 300.0)
        return np.stack(out).astype(np.float32)


@pytest.mark.slow
def test_per_release_scores_recombine_to_the_subset_scores_and_count_the_data(two_releases, tmp_path):
    result = lookbench.evaluate(MeanColour(), data=two_releases, results_dir=tmp_path, quiet=True, use_cache=False)
    releases = ["v20251201", "v20260301"]
    for subset, scores in result.subsets.items():
        per = result.per_release[subset]
        queries = datasets.load_dataset(str(two_releases), subset, split="query")
        assert list(per) == releases
        assert {r: per[r]["num_queries"] for r in releases} == {r: queries["release"].count(r) for r in releases}
        for key in HEADLINE:
            recombined = sum(per[r][key] * per[r]["num_queries"] for r in releases) / scores["num_queries"]
            # Hits are exact; a query's nDCG is kept to 1e-6 of a fraction in the outcomes (lookbench.results.outcomes).
            assert recombined == pytest.approx(scores[key], abs=1e-9 if "recall" in key else 1e-4), (subset, key)
            assert all(lo <= per[r][key] <= hi for r in releases for lo, hi in [result.release_intervals[subset][r][key]])
    overall = result.per_release["overall"]
    for r in releases:  # a release's overall is the query-weighted mean over the subsets
        n = sum(result.per_release[s][r]["num_queries"] for s in result.subsets)
        assert overall[r]["num_queries"] == n
        assert overall[r]["fine_recall@1"] == pytest.approx(
            sum(result.per_release[s][r]["fine_recall@1"] * result.per_release[s][r]["num_queries"] for s in result.subsets) / n)
    assert sum(overall[r]["fine_recall@1"] * overall[r]["num_queries"] for r in releases) / result.overall["num_queries"] == (
        pytest.approx(result.overall["fine_recall@1"]))
    assert len({round(result.per_release[s][r]["fine_recall@1"], 6) for s in result.subsets for r in releases}) > 2  # not trivial

    # Only the queries are split: the later release's block is what --cutoff <the earlier one> scores, gallery whole.
    later = lookbench.evaluate(MeanColour(), data=two_releases, cutoff="v20251201", quiet=True, use_cache=False)
    for subset in result.subsets:
        assert {k: result.per_release[subset]["v20260301"][k] for k in HEADLINE} == pytest.approx(
            {k: later.subsets[subset][k] for k in HEADLINE})
        assert result.release_intervals[subset]["v20260301"] == {k: later.intervals[subset][k] for k in HEADLINE}

    table = result.table(width=200)
    block = table.split("Per release")[1].splitlines()
    assert [line.split()[0] for line in block[3:5]] == releases and block[1].split()[:2] == ["release", "Fine@1"]
    assert set(block[2]) == {"─"}  # the header's rule
    assert "after the model's declared training cutoff" not in table  # the encoder declares none
    dated = MeanColour()
    dated.training_cutoff = "2025-12-31"
    marked = lookbench.evaluate(dated, data=two_releases, quiet=True, use_cache=False).table(width=200)
    block = marked.split("Per release")[1].splitlines()
    assert block[3].split()[:1] == ["v20251201"] and block[3].split()[1] != "*" and block[4].split()[:2] == ["v20260301", "*"]
    assert "* a release after the model's declared training cutoff (2025-12-31)" in block[5:7]  # a footnote
    assert "Per release" not in later.table(width=200)  # one release: no block
    stored = json.loads(result.stored.read_text())
    assert stored["RealStudioFlat"]["per_release"]["v20260301"]["num_queries"] == 6
    assert set(stored["overall"]["per_release"]["v20251201"]["ci95"]["fine_recall"]) == {"@1", "@5", "@10", "@20"}
    again = lookbench.evaluate(MeanColour(), data=two_releases, results_dir=tmp_path, quiet=True, use_cache=False)
    assert again.reused and again.per_release == result.per_release
    assert {n: b["per_release"] for n, b in again.to_dict().items() if n != "provenance"} == {
        n: b["per_release"] for n, b in result.to_dict().items() if n != "provenance"}  # intervals kept to 1e-4

    from lookbench.leaderboard.ranking import leaderboard

    row = leaderboard(results=tmp_path, reference="none", by_release=True).sections[0].rows[0]
    assert row["model"].startswith("noisy-mean-colour") and row["training cutoff"] is None
    assert {r: row[r] for r in releases} == pytest.approx({r: overall[r]["fine_recall@1"] for r in releases})


def _content(image) -> str:
    return hashlib.sha256(np.asarray(image.convert("RGB")).tobytes()).hexdigest()


class KnowsOneRelease:
    """Embeds by image content: the query and gallery shot of a product of the known release get the product's
    own axis (perfect retrieval), every other image a seeded random vector."""

    name = "knows-one-release"
    revision = "1"

    def __init__(self, axes: dict[str, int], dim: int = 64):
        self.axes, self.dim = axes, dim

    def vector(self, key: str) -> np.ndarray:
        if key in self.axes:
            return np.eye(self.dim, dtype=np.float32)[self.axes[key]]
        return np.random.default_rng(int(key[:12], 16)).normal(size=self.dim).astype(np.float32)

    def encode(self, images):
        return np.stack([self.vector(_content(im)) for im in images])


def test_perfect_on_one_release_and_random_on_another_shows_exactly_that_split(tmp_path):
    from tests.helpers.engine_data import PRODUCTS, png, record, write_folder
    from lookbench.metric.fine_recall.bootstrap import score_retrieval

    def row(i, seed, release, day):
        colour, category, main, attrs = PRODUCTS[i % len(PRODUCTS)]
        return dict(record(png(colour, seed), f"p{i}", category, main, attrs, day=1), release=release,
                    timestamp=dt.datetime(2025, 1 if release == "v20250101" else 6, day, tzinfo=dt.timezone.utc))

    known = [(row(i, 100 + i, "v20250101", 1), row(i, 200 + i, "v20250101", 1)) for i in range(6)]
    unknown = [(row(i, 300 + i, "v20250601", 2), row(i, 400 + i, "v20250601", 2)) for i in range(6, 12)]
    noise = [dict(row(i, 500 + i, "v20250101", 1), item_id=f"n{i}") for i in range(4)]
    data = write_folder(tmp_path / "lookbench", {
        "RealStudioFlat": {"query": [q for q, _ in known + unknown], "gallery": [g for _, g in known + unknown]},
        "noise": {"gallery": noise}})
    axes = {}
    for axis, (query, gallery) in enumerate(known):
        for item in (query, gallery):
            axes[_content(Image.open(io.BytesIO(item["image"]["bytes"])))] = axis
    encoder = KnowsOneRelease(axes)
    result = lookbench.evaluate(encoder, data=data, quiet=True, use_cache=False)
    per = result.per_release["RealStudioFlat"]
    recalls = [k for k in HEADLINE if "recall" in k]
    assert {k: per["v20250101"][k] for k in recalls} == {k: 100.0 for k in recalls}  # every hit at rank 1
    assert per["v20250101"]["num_queries"] == per["v20250601"]["num_queries"] == 6

    # Each release scored here from the same vectors against the whole gallery (subset + noise).
    def embed(rows):
        x = encoder.encode([Image.open(io.BytesIO(r["image"]["bytes"])) for r in rows])
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    gallery = [g for _, g in known + unknown] + noise
    for release, pairs in (("v20250101", known), ("v20250601", unknown)):
        ranking = np.argsort(-(embed([q for q, _ in pairs]) @ embed(gallery).T), axis=1, kind="stable")[:, :20]
        expected = score_retrieval(ranking, [q for q, _ in pairs], gallery)
        assert {k: per[release][k] for k in HEADLINE} == pytest.approx({k: expected[k] for k in HEADLINE}, abs=1e-4)
    assert per["v20250601"]["fine_recall@1"] < 50.0  # random is far from perfect
    assert result.subsets["RealStudioFlat"]["fine_recall@1"] == pytest.approx((100.0 + per["v20250601"]["fine_recall@1"]) / 2)
