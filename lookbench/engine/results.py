"""Stage 6: the result of an evaluation — leaderboard-shaped JSON, a fixed-width table and two plots.

docs/architecture.md §5 (the results JSON shape) and §8.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..metric.fine_recall.fine_recall import DEFAULT_K


def _leaderboard(result: dict) -> dict:
    """Metric output {"fine_recall@1": x, ...} as {"fine_recall": {"@1": x}, ...}; other keys kept as they are."""
    out: dict = {}
    for key, value in result.items():
        if "@" in key:
            metric, k = key.split("@", 1)
            out.setdefault(metric, {})[f"@{k}"] = value
        else:
            out[key] = value
    return out


def _flat(shaped: dict) -> dict:
    """The leaderboard shape back as metric output: {"fine_recall": {"@1": x}} -> {"fine_recall@1": x}."""
    out: dict = {}
    for key, value in shaped.items():
        if isinstance(value, dict) and value and all(str(k).startswith("@") for k in value):
            out.update({f"{key}{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


@dataclass
class EvaluationResult:
    """Scores per subset and overall (percent), and the provenance that makes them reproducible.

    ``stored``: the results-store file it was written to or read from (``reused`` when an identical stored
    evaluation was returned instead of recomputed); ``notes``: what the user should know about the store;
    ``rankings``: per subset the saved ranking (a ``datasets.Dataset``) when predictions were asked for.
    """

    subsets: dict
    overall: dict
    provenance: dict
    stored: Path | None = None
    reused: bool = False
    notes: list = field(default_factory=list)
    rankings: dict | None = field(default=None, repr=False)

    @classmethod
    def from_dict(cls, data: dict, **kwargs) -> "EvaluationResult":
        """A result from its ``to_dict()`` JSON (e.g. a stored one)."""
        subsets = {n: _flat(r) for n, r in data.items() if n not in ("overall", "provenance")}
        return cls(subsets, _flat(data["overall"]), data["provenance"], **kwargs)

    def to_dict(self) -> dict:
        """Leaderboard shape: subset → metric → "@K" → percent, plus "overall" and "provenance"."""
        out = {name: _leaderboard(r) for name, r in self.subsets.items()}
        out["overall"] = _leaderboard(self.overall)
        out["provenance"] = self.provenance
        return out

    def table(self) -> str:
        """A fixed-width table: subsets × Fine/Coarse R@K, nDCG@5, MRR, outfit R@1, with the overall row."""
        cols = [f"Fine@{k}" for k in DEFAULT_K] + [f"Coarse@{k}" for k in DEFAULT_K] + ["nDCG@5", "MRR", "Outfit@1", "queries"]
        keys = [f"fine_recall@{k}" for k in DEFAULT_K] + [f"coarse_recall@{k}" for k in DEFAULT_K] + [
            "ndcg@5", "mrr", "outfit_fine_recall@1", "num_queries"]
        rows = list(self.subsets.items()) + [("overall", self.overall)]
        width = max(len(n) for n, _ in rows)

        def cell(r, key):
            v = r.get(key)
            if v is None:
                return "-"
            return str(int(v)) if key == "num_queries" else f"{v:.2f}"

        p = self.provenance
        title = (f"LookBench — model {p['model']['name']}, {p['mode']} mode, "
                 f"{'with' if p['distractors'] else 'without'} distractors, search {p['search']}"
                 + (f", queries after {p['cutoff']}" if p.get("cutoff") else ""))
        lines = [title, " ".join([f"{'subset':<{width}}"] + [f"{c:>9}" for c in cols])]
        lines += [" ".join([f"{n:<{width}}"] + [f"{cell(r, k):>9}" for k in keys]) for n, r in rows]
        counts = p["counts"]
        skipped = len(counts["invalid_images_skipped"])
        lines.append(f"{counts['self_matches_removed']} self-match(es) removed; {counts['forward_images']} image(s) "
                     f"encoded, {counts['cache_hits']} from cache; "
                     + (f"{skipped} unreadable image(s) skipped (listed in the provenance); " if skipped else "")
                     + f"{p['wall_time_s']:.1f} s")
        return "\n".join(lines)

    def save(self, output_dir) -> dict[str, Path]:
        """Write results.json (and the saved rankings) and the two PNG plots; returns their paths."""
        out = Path(output_dir)
        paths = {"json": self.write_json(out / "results.json")}
        paths.update(self.plot(out))
        return paths

    def write_json(self, path) -> Path:
        """The JSON at ``path`` and the saved rankings, if any, in the folder beside it, each written whole and then
        put in place, so a failure leaves what was there; rankings left by an earlier result are removed, so they
        never stand beside a result they do not belong to."""
        import json
        import shutil

        from .. import store
        from ..files import new_sibling, replace_folder

        text = json.dumps(self.to_dict(), indent=2, default=str)
        folder = store.predictions_folder(path)
        if self.rankings:
            from .predictions import write

            Path(path).parent.mkdir(parents=True, exist_ok=True)
            staged = new_sibling(folder, "writing", folder=True)
            try:
                write(self.rankings, staged)
                replace_folder(staged, folder)
            finally:
                shutil.rmtree(staged, ignore_errors=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)
        return store.write_atomic(Path(path), text)

    def plot(self, out: Path) -> dict[str, Path]:
        """Fine vs Coarse Recall@1 per subset, and Fine Recall@1 per category; returns their paths."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = list(self.subsets)
        fine = [self.subsets[n].get("fine_recall@1", 0.0) for n in names]
        coarse = [self.subsets[n].get("coarse_recall@1", 0.0) for n in names]
        x = np.arange(len(names))
        fig, ax = plt.subplots(figsize=(max(5, 1.8 * len(names)), 4))
        ax.bar(x - 0.2, fine, 0.4, label="Fine R@1")
        ax.bar(x + 0.2, coarse, 0.4, label="Coarse R@1")
        ax.set_xticks(x, names, rotation=15)
        ax.set_ylabel("%")
        ax.set_ylim(0, 100)
        ax.set_title(f"{self.provenance['model']['name']}: Fine vs Coarse Recall@1")
        ax.legend()
        fig.tight_layout()
        paths = {"fine_vs_coarse": _save(fig, out / "fine_vs_coarse_r1.png")}
        plt.close(fig)

        per_cat: dict[str, dict[str, float]] = {}
        for n in names:
            for cat, r in (self.subsets[n].get("per_category") or {}).items():
                per_cat.setdefault(cat, {})[n] = r.get("fine_recall@1", 0.0)
        cats = sorted(per_cat)
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(cats) * max(1, len(names)) ** 0.5), 4))
        width = 0.8 / max(1, len(names))
        for i, n in enumerate(names):
            ax.bar(np.arange(len(cats)) + (i - (len(names) - 1) / 2) * width, [per_cat[c].get(n, 0.0) for c in cats], width, label=n)
        ax.set_xticks(np.arange(len(cats)), cats, rotation=45, ha="right")
        ax.set_ylabel("Fine R@1 (%)")
        ax.set_ylim(0, 100)
        ax.set_title("Fine Recall@1 per category")
        ax.legend(fontsize="small")
        fig.tight_layout()
        paths["per_category"] = _save(fig, out / "per_category_fine_r1.png")
        plt.close(fig)
        return paths


def _save(fig, path: Path) -> Path:
    """A PNG written whole beside ``path`` and then moved into place (a failed write leaves the old plot)."""
    from ..files import replacing

    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=100, format="png")
    return path
