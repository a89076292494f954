"""A results repo as the leaderboard Space reads it, made from one honest run of gr-lite-mini on LookBench-Mini: the
honest submission, one whose claimed score was edited and one whose ranking was edited (a top-1 swapped); and a real
browser (Debian's chromium, driven by Playwright as tests/space/test_browser.py drives it) reading the board."""
from __future__ import annotations

import json
import os
from pathlib import Path

from tests.helpers.browser import chromium_page

REVISION = "5e1f0c2d9a7b3e4f6a8b0c1d2e3f4a5b6c7d8e9f"
# The rows' labels: the verified one's is the Hub id it names at its revision's first 12 digits; a row that is not
# verified is labelled by its submission folder (these are the start of it), never by the model it claims.
HONEST = f"lookbench/gr-lite-mini@{REVISION[:12]}"
EDITED_SCORE, EDITED_RANKING = (f"someone/{name}@{REVISION[:12]}" for name in ("edited-score", "edited-ranking"))
ALLOWED = frozenset({"lookbench/lookbench", "srpone/look-bench"})  # the board's data: its card's list


def honest_result(out: Path) -> Path:
    """``evaluate --output out --save-predictions`` of gr-lite-mini on the embedded LookBench-Mini: its results.json."""
    import lookbench

    lookbench.evaluate("gr-lite-mini", output_dir=out, save_predictions=True, quiet=True)
    return out / "results.json"


def results_repo(result: Path, root: Path) -> Path:
    """``root`` laid out as the results repo (``submissions/...``) with the three submissions of ``result``, each
    written as ``lookbench submit --dry-run`` writes it; the two tampered ones edited afterwards."""
    from lookbench.submissions.submit import prepare, write

    for model, tamper in (("lookbench/gr-lite-mini", None), ("someone/edited-score", edit_score),
                          ("someone/edited-ranking", swap_top1)):
        folder = write(prepare(result, model_id=f"{model}@{REVISION}", allow_synthetic=True), root)
        if tamper:
            tamper(folder)
    return root


def edit_score(folder: Path) -> None:
    """The overall Fine Recall@1 claimed one point higher."""
    data = json.loads((folder / "results.json").read_text())
    data["overall"]["fine_recall"]["@1"] += 1.0
    (folder / "results.json").write_text(json.dumps(data))


def swap_top1(folder: Path) -> None:
    """In RealStudioFlat's first query whose rank 1 is a fine hit and rank 2 is not, the two swap places."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / "results.predictions" / "RealStudioFlat.parquet"
    table = pq.read_table(path)
    query, rank, hit = (table[c].to_numpy() for c in ("query", "rank", "fine_hit"))
    q = next(q for q in np.unique(query) if hit[(query == q) & (rank == 1)][0] and not hit[(query == q) & (rank == 2)][0])
    swapped = np.where((query == q) & (rank == 1), 2, np.where((query == q) & (rank == 2), 1, rank))
    pq.write_table(table.set_column(table.schema.get_field_index("rank"), "rank", pa.array(swapped)), path)


def judged(board, timeout_s: float = 900) -> str:
    """Wait until the board has judged every submission of its copy (it judges in the background); its status."""
    import time

    deadline = time.monotonic() + timeout_s
    while "pending" in (status := board.status()):
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    return status


def browser_reads_the_board(url: str, out: Path) -> dict[str, str]:
    """Open the board in headless chromium, wait for the three submissions' rows, and return each row's text (by
    label: the row holding it); a screenshot of the page goes to ``out/board.png``."""
    from playwright.sync_api import expect

    with chromium_page(str(out / "profile"), 1600, 1800) as page:
        page.goto(url)
        rows = {}
        for label in (HONEST, EDITED_SCORE, EDITED_RANKING):
            row = page.locator(".board-table tr", has_text=label).first
            expect(row).to_be_visible()
            rows[label] = " ".join(row.inner_text().split())
        expect(page.get_by_text("GR-Pro", exact=True).first).to_be_visible()  # the published rows beside them
        expect(page.get_by_text("Error", exact=True)).to_have_count(0)
        page.screenshot(path=str(out / "board.png"), full_page=True)
    return rows


def honest_folder(copy):
    """The honest submission's folder in a copy of the results repo."""
    from lookbench.space.board.repo import submission_folders

    (folder,) = [f for f in submission_folders(copy) if "submissions/lookbench/gr-lite-mini/" in f.as_posix()]
    return folder


def same_size_edit(folder) -> float:
    """The overall Fine Recall@1 claimed with its first digit changed, the file's size and times as they were; the
    new claim."""
    path = folder / "results.json"
    before, text = os.stat(path), path.read_text()
    value = json.loads(text)["overall"]["fine_recall"]["@1"]
    old = repr(value)
    new = str((int(old[0]) + 1) % 10) + old[1:]
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_size == before.st_size
    return float(new)
