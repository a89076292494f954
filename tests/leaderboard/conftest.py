"""A folder of submissions as `lookbench submit --dry-run --out` writes them, made once per session: an honest one,
three tampered copies, and the honest result itself beside them (not a submission), for the `verified` column."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

REVISION = "a" * 40


def _submission(root: Path, owner: str) -> Path:
    """The strict-mode folder of ``owner``'s submission below ``root``."""
    (found,) = (root / "submissions" / owner).glob("*/*/*/strict")
    return found


def _copy(root: Path, owner: str) -> Path:
    """The honest submission copied as ``owner``'s (its label says whose; nothing verify reads changes)."""
    source = _submission(root, "someone")
    target = root / "submissions" / owner / "raw-pixels" / source.relative_to(root / "submissions" / "someone" / "raw-pixels")
    shutil.copytree(source, target)
    data = json.loads((target / "results.json").read_text())
    data["provenance"]["submission"]["model"] = f"{owner}/raw-pixels"
    (target / "results.json").write_text(json.dumps(data))
    return target


def _swap_top_two(folder: Path, subset: str = "RealStudioFlat") -> None:
    """Ranks 1 and 2 of the first query whose first result is a fine hit and second is not, swapped in the Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / "results.predictions" / f"{subset}.parquet"
    table = pq.read_table(path)
    query, rank, hit = (table[c].to_numpy() for c in ("query", "rank", "fine_hit"))
    q = next(q for q in np.unique(query) if hit[(query == q) & (rank == 1)][0] and not hit[(query == q) & (rank == 2)][0])
    swapped = np.where((query == q) & (rank == 1), 2, np.where((query == q) & (rank == 2), 1, rank))
    pq.write_table(table.set_column(table.schema.get_field_index("rank"), "rank", pa.array(swapped)), path)


@pytest.fixture(scope="session")
def submissions(tmp_path_factory) -> Path:
    """raw-pixels evaluated on a tiny local release with its rankings saved and submitted (dry run) as
    someone/raw-pixels; copies as swapped/ (top-1 swapped in a ranking), edited/ (a score edited in the JSON) and
    unreadable/ (a ranking file missing); and ``runs/results.json``, the evaluated result, no submission."""
    import lookbench
    from lookbench.cli import main
    from tests.helpers.engine_data import write_folder

    work = tmp_path_factory.mktemp("verified")
    data = write_folder(work / "lookbench")
    lookbench.evaluate("raw-pixels", data=data, output_dir=work / "out", save_predictions=True,
                       cache_dir=work / "cache", quiet=True)
    root = work / "folder"
    assert main(["submit", str(work / "out" / "results.json"), "--dry-run", "--out", str(root),
                 "--model-id", f"someone/raw-pixels@{REVISION}"]) == 0
    _swap_top_two(_copy(root, "swapped"))
    edited = _copy(root, "edited")
    result = json.loads((edited / "results.json").read_text())
    result["RealStudioFlat"]["fine_recall"]["@1"] = 99.0
    (edited / "results.json").write_text(json.dumps(result))
    (_copy(root, "unreadable") / "results.predictions" / "AIGen-Studio.parquet").unlink()
    shutil.copytree(work / "out", root / "runs", ignore=shutil.ignore_patterns("*.png"))
    return root
