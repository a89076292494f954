"""Results files as ``lookbench evaluate`` writes them, and the ``lookbench leaderboard`` command, for the leaderboard's tests."""
from __future__ import annotations

# Four subsets at the published query counts: (fine Recall@1, num_queries).
FOUR = {"RealStudioFlat": (70.0, 1011), "AIGen-Studio": (60.0, 193), "RealStreetLook": (50.0, 981), "AIGen-StreetLook": (40.0, 160)}


def result(model: str, fine: dict, *, name="LookBench-Mini", revision="local-abc", key=None, mode="strict", cutoff=None,
           training_cutoff=None):
    """A results JSON in the shape `lookbench evaluate` writes (leaderboard shape plus provenance)."""
    out = {s: {"fine_recall": {"@1": v}, "coarse_recall": {"@1": v + 10}, "ndcg": {"@1": v}, "num_queries": n}
           for s, (v, n) in fine.items()}
    out["overall"] = {}
    out["provenance"] = {"dataset": {"name": name, "data": "somewhere", "revision": revision, "key": key or revision,
                                     "releases": ["v20251201"]},
                         "model": {"name": model, "training_cutoff": training_cutoff}, "mode": mode, "distractors": True,
                         "cutoff": cutoff}
    return out


def run_cli(capsys, *argv):
    """``lookbench leaderboard *argv``: (exit code, stdout, stderr)."""
    from lookbench.cli import main

    code = main(["leaderboard", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
