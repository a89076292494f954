"""The embedding cache (lookbench.engine.embedding_cache): a killed run resumes with the missing images only, a
damaged file or record costs only its own images, compacting keeps the entries of other images."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lookbench

from tests.helpers.engine_data import CountingEncoder, UNIQUE_IMAGES, scores


@pytest.mark.slow
def test_killed_run_resumes_with_only_missing_images(data, tmp_path):
    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "import lookbench\nfrom tests.helpers.engine_data import CountingEncoder\n"
        "lookbench.evaluate(CountingEncoder(fail_after=2), data=%r, cache_dir=%r, batch_size=4, quiet=True, workers=1)\n"
    ) % (str(Path(__file__).resolve().parents[2]), str(data), str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", script], env=dict(os.environ), capture_output=True, text=True)
    assert proc.returncode == -9, proc.stderr  # SIGKILLed in the third forward pass
    resumed = CountingEncoder()
    result = lookbench.evaluate(resumed, data=data, cache_dir=tmp_path, batch_size=4, quiet=True)
    assert resumed.images == UNIQUE_IMAGES - 2 * 4
    assert result.provenance["counts"]["cache_hits"] == 8
    assert result.to_dict()["overall"]["fine_recall"]["@1"] == 100.0


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupted_cache_is_detected_and_recomputed(data, tmp_path, damage):
    reference = lookbench.evaluate(CountingEncoder(), data=data, cache_dir=tmp_path, quiet=True).to_dict()
    (shard,) = list(tmp_path.rglob("*.emb"))  # one file after compaction
    raw = bytearray(shard.read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) - 10]
    else:
        raw[-3] ^= 0xFF
    shard.write_bytes(bytes(raw))
    again = CountingEncoder()
    with pytest.warns(UserWarning, match="corrupted"):
        result = lookbench.evaluate(again, data=data, cache_dir=tmp_path, quiet=True)
    assert again.images == UNIQUE_IMAGES
    assert result.provenance["counts"]["corrupt_cache_files"] == [shard.name]
    assert scores(result.to_dict()) == scores(reference)


@pytest.mark.parametrize("damage", ["truncate", "flip-middle", "garbage-between"])
def test_a_damaged_cache_record_costs_only_its_own_images(data, tmp_path, monkeypatch, damage):
    from lookbench.engine import embedding_cache

    monkeypatch.setattr(embedding_cache, "RECORD_ROWS", 4)  # 19 entries -> records of 4, 4, 4, 4, 3
    reference = lookbench.evaluate(CountingEncoder(), data=data, cache_dir=tmp_path, quiet=True).to_dict()
    (shard,) = list(tmp_path.rglob("*.emb"))
    raw = bytearray(shard.read_bytes())
    starts = [i for i in range(len(raw)) if raw.startswith(embedding_cache.MAGIC, i)]
    assert len(starts) == 5
    if damage == "truncate":  # a torn last record: its 3 images
        raw, lost = raw[: len(raw) - 10], 3
    elif damage == "flip-middle":  # one flipped byte in the payload of the second record: its 4 images
        raw[starts[2] - 5] ^= 0xFF
        lost = 4
    else:  # bytes that belong to no record, between the second and third: nothing lost
        raw[starts[2]:starts[2]] = b"stray bytes"
        lost = 0
    shard.write_bytes(bytes(raw))
    again = CountingEncoder()
    with pytest.warns(UserWarning, match="corrupted"):
        result = lookbench.evaluate(again, data=data, cache_dir=tmp_path, quiet=True)
    assert again.images == lost
    assert result.provenance["counts"]["cache_hits"] == UNIQUE_IMAGES - lost
    assert scores(result.to_dict()) == scores(reference)
    third = CountingEncoder()  # the damaged file was replaced by a whole one
    lookbench.evaluate(third, data=data, cache_dir=tmp_path, quiet=True)
    assert third.images == 0 and len(list(tmp_path.rglob("*.emb"))) == 1


def test_compacting_the_cache_keeps_entries_of_other_images(tmp_path):
    from lookbench.engine.embedding_cache import EmbeddingCache

    rng = np.random.default_rng(2)
    other = [bytes([i]) * 16 for i in range(5)]  # another dataset's images, cached earlier
    first = EmbeddingCache(tmp_path, "m", "p", "fp32")
    first.write(other, rng.standard_normal((5, 4)).astype(np.float32))
    first.close()
    ours = [bytes([100 + i]) * 16 for i in range(3)]
    matrix = rng.standard_normal((3, 4)).astype(np.float32)
    cache = EmbeddingCache(tmp_path, "m", "p", "fp32")
    before = {h: v.copy() for block, vectors in cache.records() for h, v in zip(block, vectors)}
    cache.write(ours[:2], matrix[:2])  # this run's log: a second file, so the end of the run compacts
    cache.compact(ours, matrix, np.array([True, True, False]))
    (merged,) = tmp_path.rglob("*.emb")
    after = {h: v for block, vectors in EmbeddingCache(tmp_path, "m", "p", "fp32").records() for h, v in zip(block, vectors)}
    assert set(after) == set(other) | set(ours[:2])  # the invalid third row is not cached
    for h in other:
        np.testing.assert_array_equal(after[h], before[h])
    np.testing.assert_array_equal(after[ours[1]], matrix[1])
