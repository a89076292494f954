"""A result as pictures: the PNG plots ``EvaluationResult.save`` writes beside results.json, and the attribute error
chart the report and the demo's "Your results" draw."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lookbench.results import stats
from lookbench.terminal import terminal_safe


def attribute_figure(errors: dict, title: str):
    """The overall attribute error rate@1 of each attribute as a bar with its 95 % Wilson interval, the counts
    beside it (a ``matplotlib.figure.Figure`` pyplot never keeps); ``errors``: an ``attribute_errors`` block."""
    from matplotlib.figure import Figure

    names = sorted(errors, key=lambda a: errors[a]["rate"])
    fig = Figure(figsize=(8, 1.2 + 0.32 * max(1, len(names))))
    ax = fig.subplots()
    values = [errors[a]["rate"] for a in names]
    lows, highs = zip(*(errors[a]["ci95"] for a in names)) if names else ((), ())
    ax.barh(range(len(names)), values, xerr=[[v - lo for v, lo in zip(values, lows)], [hi - v for v, hi in zip(values, highs)]],
            capsize=3, color="#c44e52", ecolor="#222222")
    ax.set_yticks(range(len(names)), [_plain(a) for a in names])
    for y, a in enumerate(names):
        ax.annotate(f"n={errors[a]['n']}", (100, y), xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize=8, annotation_clip=False)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of counted queries whose top-1 lacks the query's value (95% Wilson interval)")
    ax.set_title(_plain(title), fontsize=10, wrap=True)
    fig.tight_layout()
    return fig


def _plain(text: str) -> str:
    """A name from a result file drawn as it is written: terminal-safe, its ``$`` not mathtext's (a model named
    ``$\\frac{$`` stopped the report; a wrapped title is measured as mathtext whatever ``parse_math`` says)."""
    return terminal_safe(text).replace("$", r"\$")


def plot(result, out: Path) -> dict[str, Path]:
    """``EvaluationResult.plot``: Fine vs Coarse Recall@1 per subset, Fine Recall@1 per category and the attribute
    error rates; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result.subsets)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(5, 1.8 * len(names)), 4))
    for offset, key, label in ((-0.2, "fine_recall@1", "Fine R@1"), (0.2, "coarse_recall@1", "Coarse R@1")):
        values = [result.subsets[n].get(key, 0.0) for n in names]
        bounds = [result.intervals.get(n, {}).get(key, (v, v)) for n, v in zip(names, values)]
        errors = np.array([[v - lo, hi - v] for v, (lo, hi) in zip(values, bounds)]).T  # the 95 % intervals
        ax.bar(x + offset, values, 0.4, yerr=errors, capsize=3, label=label)
    ax.set_xticks(x, names, rotation=15)
    ax.set_ylabel("% (95% interval)")
    ax.set_ylim(0, 105)  # room for an interval reaching 100
    ax.set_title(_plain(f"{result.label()}: Fine vs Coarse Recall@1"), fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.tight_layout()
    paths = {"fine_vs_coarse": _save(fig, out / "fine_vs_coarse_r1.png")}
    plt.close(fig)

    per_cat: dict[str, dict[str, dict]] = {}
    for n in names:
        for cat, r in (result.subsets[n].get("per_category") or {}).items():
            per_cat.setdefault(cat, {})[n] = r
    cats = sorted(per_cat)
    fig, ax = plt.subplots(figsize=(max(7, 0.6 * len(cats) * max(1, len(names)) ** 0.5 + 2), 4.5))
    width = 0.8 / max(1, len(names))
    for i, n in enumerate(names):
        shown = [c for c in cats if n in per_cat[c]]
        values = [per_cat[c][n]["fine_recall@1"] for c in shown]
        # each category's queries taken as independent: a plain Wilson interval (the table's are design-corrected)
        bounds = [stats.wilson(v, per_cat[c][n]["num_queries"]) for c, v in zip(shown, values)]
        errors = np.array([[v - lo, hi - v] for v, (lo, hi) in zip(values, bounds)]).T.reshape(2, -1)
        ax.bar(np.array([cats.index(c) for c in shown]) + (i - (len(names) - 1) / 2) * width, values, width,
               yerr=errors, capsize=2, error_kw={"elinewidth": 0.8}, label=n)
    ax.set_xticks(np.arange(len(cats)), [_plain(c) for c in cats], rotation=45, ha="right")
    ax.set_ylabel("Fine R@1 (%), 95% Wilson interval")
    ax.set_ylim(0, 105)
    ax.set_title(_plain(f"{result.label()}: Fine Recall@1 per category"), fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.tight_layout()
    paths["per_category"] = _save(fig, out / "per_category_fine_r1.png")
    plt.close(fig)
    errors = result.overall.get("attribute_errors")
    if errors:
        paths["attribute_errors"] = _save(attribute_figure(errors, f"{result.label()}: attribute error rate@1"),
                                          out / "attribute_errors_r1.png")
    return paths


def _save(fig, path: Path) -> Path:
    """A PNG written whole beside ``path`` and then moved into place (a failed write leaves the old plot)."""
    from lookbench.files import replacing

    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=100, format="png")
    return path
