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


def scored(model: str, value: float, **changes) -> dict:
    """A leaderboard-mode result scoring ``value`` on every subset and overall (what a Hub row's notes describe)."""
    data = result(model, {s: (value, n) for s, (_, n) in FOUR.items()}, mode="leaderboard", **changes)
    data["overall"] = {"fine_recall": {"@1": value}, "num_queries": sum(n for _, n in FOUR.values())}
    return data


def eval_results(data: dict, dataset: str, trust: str = "not checked", source: str = "https://example.org/row") -> str:
    """``data``'s headline scores as the ``.eval_results`` file ``lookbench export --format eval-results`` writes."""
    from lookbench.results import hub_results

    return hub_results.to_yaml(hub_results.entries(data, dataset, source, trust))


def run_cli(capsys, *argv):
    """``lookbench leaderboard *argv``: (exit code, stdout, stderr)."""
    from lookbench.cli import main

    code = main(["leaderboard", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
