"""The leaderboard Space's render with 300 submissions (docs/architecture.md §5, §7): one honest gr-lite-mini run on
the embedded Mini, submitted 300 times with distinct claimed scores (so distinct keys), their verdicts pre-filled as
verified with the honest one's placement, so every row is ranked with its interval and rank group (judging is the
tests' business, not measured here). Times the refresh (load_store reads and hashes every submission once),
the first render of one set of controls (ranked once) and a repeated one (the cached board), and the memory a
render adds (tracemalloc peak).

    HF_HOME=.hf_home/bench python benchmarks/bench_board.py [--submissions 300] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path

REVISION = "5e1f0c2d9a7b3e4f6a8b0c1d2e3f4a5b6c7d8e9f"


def build(root: Path, n: int) -> None:
    """``root/submissions``: n copies of one honest submission, each claiming a distinct (wrong) overall score."""
    import lookbench
    from lookbench.submissions.submit import prepare, write

    out = root.parent / "run"
    lookbench.evaluate("gr-lite-mini", output_dir=out, save_predictions=True, quiet=True)
    honest = write(prepare(out / "results.json", model_id=f"lookbench/gr-lite-mini@{REVISION}", allow_synthetic=True),
                   root)
    for i in range(1, n):
        folder = root / "submissions" / "someone" / f"model-{i:03d}" / Path(*honest.relative_to(root / "submissions").parts[2:])
        shutil.copytree(honest, folder)
        result = json.loads((folder / "results.json").read_text())
        result["overall"]["fine_recall"]["@1"] = round(50 + i / 10, 3)
        (folder / "results.json").write_text(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from lookbench.leaderboard.load import Verdict, judge_submission
    from lookbench.space.board.app import Board
    from lookbench.space.board.repo import Verdicts
    from lookbench.submissions.verify import snapshot

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        build(root, args.submissions)
        verdicts = Verdicts(Path(tmp) / "verdicts.json")
        (honest,) = (root / "submissions" / "lookbench" / "gr-lite-mini").rglob("results.json")
        placement = judge_submission(honest.parent).placement  # every copy placed (and ranked) as the honest one
        for path in sorted((root / "submissions").rglob("results.json")):
            key = snapshot(path.parent)[0]
            verdicts.known[key] = Verdict("yes", key, placement)
        board = Board(folder=root, verdicts=verdicts, judge=lambda folder, key: Verdict("not checked: not judged here", key))
        start = time.perf_counter()
        status = board.refresh()
        refresh = time.perf_counter() - start
        controls = ("fine", 1, "overall")
        tracemalloc.start()
        start = time.perf_counter()
        answer = board.api_board(*controls)
        first = time.perf_counter() - start
        first_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        repeats = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            board.api_board(*controls)
            repeats.append(time.perf_counter() - start)
        repeat_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows = sum(len(s["rows"]) for s in answer["sections"])
        print(status)
        print(f"{args.submissions} submissions, {rows} rows shown")
        print(f"  refresh (load_store: read + hash every submission once)   {refresh:.3f} s")
        print(f"  first render (rank once), api_board {controls}       {first:.3f} s, peak {first_peak / 2**20:.1f} MB")
        print(f"  repeated render (cached), best of {args.repeat}               {min(repeats):.4f} s, peak "
              f"{repeat_peak / 2**20:.2f} MB")
        print(f"  first / repeated = {first / min(repeats):.0f}x")


if __name__ == "__main__":
    main()
