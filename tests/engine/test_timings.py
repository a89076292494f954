"""Stage timings (lookbench.engine.timings): every stage of an evaluation is timed in the provenance."""
from __future__ import annotations

import lookbench


def test_stage_timings_are_recorded(data, tmp_path):
    from lookbench.engine.timings import STAGES

    prov = lookbench.evaluate("raw-pixels", data=data, cache_dir=tmp_path, quiet=True).provenance
    timings = prov["timings_s"]
    assert list(timings) == list(STAGES) == ["load", "hash", "encode", "search", "score"]
    assert all(isinstance(t, float) and t >= 0 for t in timings.values())
    assert timings["encode"] > 0 and sum(timings.values()) <= prov["wall_time_s"] + 0.005  # rounding of each
