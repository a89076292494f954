"""Loading the benchmark (lookbench.engine.data): `lookbench evaluate --data` on a snapshot in the published
srpone/look-bench layout (converted once by the builder), and a cutoff keeping only the queries after it."""
import pytest

import lookbench
from tests.helpers.raw_release import write_upstream


def test_evaluate_reads_the_published_layout(tmp_path):
    snapshot = write_upstream(tmp_path / "look-bench")
    result = lookbench.evaluate("raw-pixels", data=snapshot, distractors=False, cache_dir=tmp_path / "cache", quiet=True).to_dict()
    street = result["RealStreetLook"]
    assert street["num_queries"] == 6 and street["gallery_size"] == 4
    # red (tops, loose) and blue (trousers, full) queries have two true matches each; green tops has none
    assert street["fine_recall"]["@20"] == pytest.approx(100 * 4 / 6)
    assert street["coarse_recall"]["@20"] == pytest.approx(100.0)
    dataset = result["provenance"]["dataset"]
    assert dataset["releases"] == ["v20250101", "v20251201"] and "(published layout)" in str(dataset)
    # what the leaderboard compares by: the published snapshot it was converted from, and the card's name
    assert dataset["key"] == "srpone/look-bench@v20250101+v20251201" and dataset["name"] == "LookBench"
    again = lookbench.evaluate("raw-pixels", data=snapshot, distractors=False, cache_dir=tmp_path / "cache", quiet=True).to_dict()
    assert again["provenance"]["dataset"]["revision"] == dataset["revision"]  # converted once, same folder reused
    assert again["provenance"]["counts"]["forward_images"] == 0


def test_cutoff_keeps_only_later_queries(data, tmp_path):
    result = lookbench.evaluate("raw-pixels", data=data, cutoff="2025-01-02", cache_dir=tmp_path, quiet=True).to_dict()
    counts = result["provenance"]["dataset"]["counts"]
    # RealStudioFlat queries are stamped on Jan 1..4, AIGen-Studio on Jan 5..7: strictly after Jan 2 leaves 2 + 3.
    assert counts["RealStudioFlat"] == {"queries_total": 4, "queries": 2, "gallery": 7, "queries_after_model_cutoff": None}
    assert counts["AIGen-Studio"]["queries"] == 3
    assert result["RealStudioFlat"]["num_queries"] == 2 and result["overall"]["num_queries"] == 5
    assert result["provenance"]["cutoff"] == "2025-01-02"
