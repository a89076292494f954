"""The evaluation result (lookbench.results.result): its table fits the width it is given."""
from __future__ import annotations

import lookbench


def test_the_table_is_never_wider_than_asked(data, tmp_path):
    result = lookbench.evaluate("raw-pixels", data=data, cache_dir=tmp_path, quiet=True)
    for width in (60, 80, 120):
        lines = result.table(width).splitlines()
        assert max(map(len, lines)) <= width and any("[" in line for line in lines) and not any("±" in line for line in lines)
    assert len(result.table(120).splitlines()[2]) > len(result.table(60).splitlines()[2])  # more columns when wider
