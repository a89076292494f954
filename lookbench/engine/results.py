"""Stage 6: the result of an evaluation — leaderboard-shaped JSON, a fixed-width table and two plots.

docs/architecture.md §5 (the results JSON shape) and §8.
"""
from __future__ import annotations

import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..outcomes import Outcomes

# The table's columns, most wanted first: as many as the terminal's width allows are shown, in this order; every
# score and interval is in results.json.
_COLUMNS = (("Fine@1", "fine_recall@1"), ("Coarse@1", "coarse_recall@1"), ("nDCG@5", "ndcg@5"),
            ("Fine@10", "fine_recall@10"), ("MRR@10", "mrr@10"), ("Fine@5", "fine_recall@5"), ("Fine@20", "fine_recall@20"),
            ("MAP@10", "map@10"), ("Coarse@10", "coarse_recall@10"), ("Outfit@1", "outfit_fine_recall@1"),
            ("nDCG@10", "ndcg@10"))


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

    ``outcomes``: per subset each query's outcome; ``intervals``: per subset and ``overall`` the 95 % interval of
    every score (``{"fine_recall@1": (lo, hi)}``, ``lookbench.stats``). ``stored``: the results-store file it was
    written to or read from (``reused`` when an identical stored evaluation was returned instead of recomputed);
    ``notes``: what the user should know about the store; ``rankings``: per subset the saved ranking (a
    ``datasets.Dataset``) when predictions were asked for.
    """

    subsets: dict
    overall: dict
    provenance: dict
    outcomes: dict = field(default_factory=dict, repr=False)
    intervals: dict = field(default_factory=dict)
    stored: Path | None = None
    reused: bool = False
    notes: list = field(default_factory=list)
    rankings: dict | None = field(default=None, repr=False)

    @classmethod
    def from_dict(cls, data: dict, **kwargs) -> "EvaluationResult":
        """A result from its ``to_dict()`` JSON (e.g. a stored one)."""
        blocks = {n: dict(r) for n, r in data.items() if n != "provenance"}
        intervals = {n: {k: tuple(v) for k, v in _flat(r.pop("ci95", {})).items()} for n, r in blocks.items()}
        outcomes = {n: Outcomes.from_json(r.pop("per_query"), n) for n, r in blocks.items() if "per_query" in r}
        overall = _flat(blocks.pop("overall"))
        subsets = {n: _flat(r) for n, r in blocks.items()}
        return cls(subsets, overall, data["provenance"], outcomes, intervals, **kwargs)

    def to_dict(self) -> dict:
        """Leaderboard shape: subset → metric → "@K" → percent, with ``ci95`` (metric → "@K" → [lo, hi]) beside
        the scores and, per subset, ``per_query`` (``lookbench.outcomes``); plus "overall" and "provenance"."""
        out = {}
        for name, scores in [*self.subsets.items(), ("overall", self.overall)]:
            out[name] = _leaderboard(scores)
            if name in self.intervals:
                out[name]["ci95"] = _leaderboard({k: [round(lo, 4), round(hi, 4)] for k, (lo, hi) in self.intervals[name].items()})
            if name in self.outcomes:
                out[name]["per_query"] = self.outcomes[name].to_json()
        out["provenance"] = self.provenance
        return out

    def table(self, width: int | None = None) -> str:
        """Subsets (and the overall) × the leading scores as ``85.8 ±4.1`` (± half the 95 % interval), never wider
        than ``width`` (default: the terminal's): columns are dropped from the end of ``_COLUMNS`` to fit."""
        width = width or shutil.get_terminal_size((100, 24)).columns
        rows = list(self.subsets.items()) + [("overall", self.overall)]
        name_width = max(6, *(len(n) for n, _ in rows))

        def cell(name, scores, key):
            value = scores.get(key)
            if value is None:
                return "-"
            lo_hi = self.intervals.get(name, {}).get(key)
            return f"{value:.1f}" + (f" ±{(lo_hi[1] - lo_hi[0]) / 2:.1f}" if lo_hi else "")

        cells = {title: [cell(n, r, key) for n, r in rows] for title, key in _COLUMNS}
        queries = [str(int(r.get("num_queries", 0))) for _, r in rows]
        shown, used = [], name_width + 1 + max(7, *(len(q) for q in queries))
        for title, _ in _COLUMNS:
            column = max(len(title), *(len(v) for v in cells[title])) + 1
            if used + column > width:
                break
            shown.append((title, column - 1))
            used += column
        p = self.provenance
        title = (f"{p['dataset'].get('name') or 'LookBench'} — model {p['model']['name']}, {p['mode']} mode, "
                 f"{'with' if p['distractors'] else 'without'} distractors, search {p['search']}"
                 + (f", queries after {p['cutoff']}" if p.get("cutoff") else ""))
        lines = textwrap.wrap(title, width)
        lines.append(" ".join([f"{'subset':<{name_width}}", *(f"{t:>{w}}" for t, w in shown), f"{'queries':>7}"]))
        for i, (name, _) in enumerate(rows):
            lines.append(" ".join([f"{name:<{name_width}}", *(f"{cells[t][i]:>{w}}" for t, w in shown), f"{queries[i]:>7}"]))
        counts = p["counts"]
        skipped = len(counts["invalid_images_skipped"])
        intervals = p.get("intervals")
        footer = ((f"± half the 95% interval ({intervals['resamples']} bootstrap resamples over queries, outfits "
                   "resampled whole; all scores and intervals in results.json). " if intervals else "")
                  + f"{counts['self_matches_removed']} self-match(es) removed; {counts['forward_images']} image(s) "
                  f"encoded, {counts['cache_hits']} from cache; "
                  + (f"{skipped} unreadable image(s) skipped (listed in the provenance); " if skipped else "")
                  + f"{p['wall_time_s']:.1f} s")
        lines += textwrap.wrap(footer, width)
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
        x = np.arange(len(names))
        fig, ax = plt.subplots(figsize=(max(5, 1.8 * len(names)), 4))
        for offset, key, label in ((-0.2, "fine_recall@1", "Fine R@1"), (0.2, "coarse_recall@1", "Coarse R@1")):
            values = [self.subsets[n].get(key, 0.0) for n in names]
            bounds = [self.intervals.get(n, {}).get(key, (v, v)) for n, v in zip(names, values)]
            errors = np.array([[v - lo, hi - v] for v, (lo, hi) in zip(values, bounds)]).T  # the 95 % intervals
            ax.bar(x + offset, values, 0.4, yerr=errors, capsize=3, label=label)
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
