"""Stage 6: the result of an evaluation — leaderboard-shaped JSON, a fixed-width table and two plots.

docs/architecture.md §5 (the results JSON shape) and §8.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lookbench import terminal
from lookbench.results import stats
from lookbench.results.outcomes import Outcomes
from lookbench.results.trust import SCORED_SEALED

# The table's columns, most wanted first: when the terminal is too narrow they are left out from the end (Fine@1
# and the query count stay); every score and interval is in results.json.
_COLUMNS = (("Fine@1", "fine_recall@1"), ("Coarse@1", "coarse_recall@1"), ("nDCG@5", "ndcg@5"),
            ("Fine@10", "fine_recall@10"), ("MRR@10", "mrr@10"), ("Fine@5", "fine_recall@5"), ("Fine@20", "fine_recall@20"),
            ("MAP@10", "map@10"), ("Coarse@10", "coarse_recall@10"), ("Outfit@1", "outfit_fine_recall@1"),
            ("nDCG@10", "ndcg@10"))


# What each mode counts as a fine hit, for the table's line of the other mode.
_MODE_WORDS = {"strict": "category + every query attribute, the paper's", "leaderboard": "category + main attribute, "
               "the published table's"}


def _after(releases: list[str], cutoff) -> set[str]:
    """The releases whose snapshot date lies after a declared training cutoff (none when it is undeclared)."""
    from lookbench.filtering import to_utc
    from lookbench.schema import release_date

    return set() if cutoff is None else {r for r in releases if release_date(r) > to_utc(cutoff)}


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


def _ci95(bounds: dict) -> dict:
    """Intervals ``{"fine_recall@1": (lo, hi)}`` in the leaderboard shape, to 1e-4 of a point."""
    return _leaderboard({k: [round(lo, 4), round(hi, 4)] for k, (lo, hi) in bounds.items()})


def _bounds(shaped: dict) -> dict:
    """``_ci95`` read back."""
    return {k: tuple(v) for k, v in _flat(shaped).items()}


def _flat(shaped: dict) -> dict:
    """The leaderboard shape back as metric output: {"fine_recall": {"@1": x}} -> {"fine_recall@1": x}."""
    out: dict = {}
    for key, value in shaped.items():
        if isinstance(value, dict) and value and all(str(k).startswith("@") for k in value):
            out.update({f"{key}{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def _rate(block) -> str:
    """An attribute error rate with its (asymmetric) Wilson interval, ``-`` without one."""
    from lookbench import terminal

    return terminal.score(block["rate"], block["ci95"]) if block else "-"


def attribute_lines(errors: dict, width: int) -> list[str]:
    """The attribute error block of a table: one row per attribute, its overall rate@1 with its interval, its most
    frequent confusion, each subset's rate and the overall count; subsets then the confusion left out to fit
    ``width``. ``errors``: subset or "overall" -> ``attribute_errors`` (``None`` for a result written before they
    were kept)."""
    from lookbench import terminal

    overall = errors.get("overall")
    if overall is None:
        return [""] + terminal.paragraph("Attribute errors at top-1: not in this result (written before they were kept; "
                                         "evaluate again with --overwrite).", width)
    if not overall:
        return [""] + terminal.paragraph("Attribute errors at top-1: no query with attributes has a top-1 item of its "
                                         "category.", width)
    names = list(overall)

    def confusion(block):
        if not block["confusions"]:
            return "-"
        query, top, count = block["confusions"][0]
        return f"{query} → {top if top is not None else 'missing'} ×{count}"

    subsets = [n for n in errors if n != "overall"]
    rows = [[a, _rate(overall[a]), confusion(overall[a]), *(_rate((errors[n] or {}).get(a)) for n in subsets),
             str(overall[a]["n"])] for a in names]
    return [""] + terminal.table(
        [terminal.Column("attribute", "left"), "overall", terminal.Column("most confused", "left"), *subsets, "queries"],
        rows, title="Attribute errors at top-1: of the queries with the attribute whose top-1 item is of their category, "
                    "the % whose top-1 lacks the query's value (95% Wilson interval); every confusion in results.json "
                    "(attribute_errors).", drop_order=[*reversed(subsets), "most confused"], at=width)


def attribute_figure(errors: dict, title: str):
    """The overall attribute error rate@1 of each attribute as a bar with its 95 % Wilson interval, the counts
    beside it (a ``matplotlib.figure.Figure`` pyplot never keeps); ``errors``: an ``attribute_errors`` block."""
    from matplotlib.figure import Figure

    names = sorted(errors, key=lambda a: errors[a]["rate"])
    fig = Figure(figsize=(8, 1.2 + 0.32 * max(1, len(names))))
    ax = fig.subplots()
    values = [errors[a]["rate"] for a in names]
    lows, highs = zip(*(errors[a]["ci95"] for a in names)) if names else ((), ())
    ax.barh(names, values, xerr=[[v - lo for v, lo in zip(values, lows)], [hi - v for v, hi in zip(values, highs)]],
            capsize=3, color="#c44e52", ecolor="#222222")
    for y, a in enumerate(names):
        ax.annotate(f"n={errors[a]['n']}", (100, y), xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize=8, annotation_clip=False)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of counted queries whose top-1 lacks the query's value (95% Wilson interval)")
    ax.set_title(title, fontsize=10, wrap=True)
    fig.tight_layout()
    return fig


@dataclass
class EvaluationResult:
    """Scores per subset and overall (percent), and the provenance that makes them reproducible.

    ``outcomes``: per subset each query's outcome; ``intervals``: per subset and ``overall`` the 95 % interval of
    every score (``{"fine_recall@1": (lo, hi)}``, ``lookbench.results.stats``). ``per_release`` and ``release_intervals``:
    the same, per subset and ``overall``, of the headline scores on each release's queries (``{release: {...}}``,
    ``lookbench.results.per_release``; the gallery is whole). ``stored``: the results-store file it was
    written to or read from (``reused`` when an identical stored evaluation was returned instead of recomputed);
    ``notes``: what the user should know about the store; ``rankings``: per subset the saved ranking (a
    ``datasets.Dataset``) when predictions were asked for. ``modes``: every mode the run judged its one ranking in →
    that mode's result, this one first (``result.modes["leaderboard"]``); a result read from a file has only itself.
    """

    subsets: dict
    overall: dict
    provenance: dict
    outcomes: dict = field(default_factory=dict, repr=False)
    intervals: dict = field(default_factory=dict)
    per_release: dict = field(default_factory=dict)
    release_intervals: dict = field(default_factory=dict)
    stored: Path | None = None
    reused: bool = False
    notes: list = field(default_factory=list)
    rankings: dict | None = field(default=None, repr=False)
    modes: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        self.modes = self.modes or {self.provenance.get("mode"): self}

    @classmethod
    def from_dict(cls, data: dict, **kwargs) -> "EvaluationResult":
        """A result from its ``to_dict()`` JSON (e.g. a stored one)."""
        blocks = {n: dict(r) for n, r in data.items() if n != "provenance"}
        releases = {n: r.pop("per_release") for n, r in blocks.items() if "per_release" in r}
        per_release = {n: {rel: _flat({k: v for k, v in b.items() if k != "ci95"}) for rel, b in by.items()}
                       for n, by in releases.items()}
        release_intervals = {n: {rel: _bounds(b.get("ci95", {})) for rel, b in by.items()} for n, by in releases.items()}
        intervals = {n: _bounds(r.pop("ci95", {})) for n, r in blocks.items()}
        outcomes = {n: Outcomes.from_json(r.pop("per_query"), n) for n, r in blocks.items() if "per_query" in r}
        overall = _flat(blocks.pop("overall"))
        subsets = {n: _flat(r) for n, r in blocks.items()}
        return cls(subsets, overall, data["provenance"], outcomes, intervals, per_release, release_intervals, **kwargs)

    def to_dict(self) -> dict:
        """Leaderboard shape: subset → metric → "@K" → percent, with ``ci95`` (metric → "@K" → [lo, hi]) beside
        the scores, ``per_release`` (release → the headline scores, ``num_queries`` and ``ci95`` in the same shape)
        and, per subset, ``per_query`` (``lookbench.results.outcomes``); plus "overall" and "provenance"."""
        out = {}
        for name, scores in [*self.subsets.items(), ("overall", self.overall)]:
            out[name] = _leaderboard(scores)
            if name in self.intervals:
                out[name]["ci95"] = _ci95(self.intervals[name])
            if name in self.per_release:
                out[name]["per_release"] = {
                    release: {**_leaderboard(block), "ci95": _ci95(self.release_intervals.get(name, {}).get(release, {}))}
                    for release, block in self.per_release[name].items()}
            if name in self.outcomes:
                out[name]["per_query"] = self.outcomes[name].to_json()
        out["provenance"] = self.provenance
        return out

    def table(self, width: int | None = None, published: str | None = None) -> str:
        """Subsets (and the overall) × the leading scores as ``85.8 [80.1, 90.2]`` (the 95 % interval), never wider
        than ``width`` (default: the terminal's, ``lookbench.terminal``): columns are left out from the end of
        ``_COLUMNS`` to fit. Under it, one line per other mode the run judged (its overall Fine@1), the leaderboard
        mode's with ``published`` (what the published table holds on this data,
        ``lookbench.leaderboard.ranking.published_best``). Data of more than one release adds a block of the scores
        per release."""
        at = width or terminal.width()
        rows = list(self.subsets.items()) + [("overall", self.overall)]
        p = self.provenance
        kind = p.get("queries", "image")
        title = (f"{p['dataset'].get('name') or 'LookBench'} — model {p['model']['name']}, "
                 + ("" if kind == "image" else f"text queries ({kind.removeprefix('text-')} form), ")
                 + f"{p['mode']} mode, "
                 f"{'with' if p['distractors'] else 'without'} distractors, search {p['search']}"
                 + (f", queries after {p['cutoff']}" if p.get("cutoff") else ""))
        lines = terminal.table(
            [terminal.Column("subset", "left"), *(t for t, _ in _COLUMNS), "queries"],
            [[n, *(terminal.score(r.get(key), self.intervals.get(n, {}).get(key)) for _, key in _COLUMNS),
              str(int(r.get("num_queries", 0)))] for n, r in rows],
            title=title, drop_order=[t for t, _ in reversed(_COLUMNS[1:])], at=at)
        for mode, other in self.modes.items():
            said = [] if other is self else [
                f"{mode} mode ({_MODE_WORDS.get(mode, mode)}): overall Fine@1 "
                + terminal.score(other.overall.get("fine_recall@1"), other.intervals.get("overall", {}).get("fine_recall@1"))]
            said += [published] if mode == "leaderboard" and published else []
            lines += terminal.paragraph("; ".join(said), at) if said else []
        releases = list(self.per_release.get("overall", {}))
        if len(releases) > 1:
            lines += [""] + self._release_table(releases, at)
        lines += attribute_lines({n: r.get("attribute_errors") for n, r in rows}, at)
        counts = p["counts"]
        skipped = len(counts["invalid_images_skipped"])
        intervals = p.get("intervals")
        # a result answered from the store did no work now: its counts and seconds are those of the run that made it
        when = f"stored result of {p.get('evaluated_at', 'an earlier run')}: " if self.reused else ""
        footer = ((stats.note(intervals) + " " if intervals else "")
                  + f"{when}{counts['self_matches_removed']} self-match(es) removed; {counts['forward_images']} image(s) "
                  f"encoded, {counts['cache_hits']} from cache; "
                  + (f"{counts['texts_encoded']} text(s) encoded; " if counts.get("texts_encoded") else "")
                  + (f"{skipped} unreadable image(s) skipped (listed in the provenance); " if skipped else "")
                  + f"{p['wall_time_s']:.1f} s")
        lines += terminal.paragraph(footer, at)
        return "\n".join(lines)

    def _release_table(self, releases: list[str], at: int) -> list[str]:
        """Per release: overall Fine@1, each subset's Fine@1, then the other overall scores (left out first, from
        the end, then the subsets from the last)."""
        blocks = {n: self.per_release.get(n, {}) for n in [*self.subsets, "overall"]}
        bounds = {n: self.release_intervals.get(n, {}) for n in blocks}

        def by_release(name, key):
            return [terminal.score(blocks[name].get(r, {}).get(key), bounds[name].get(r, {}).get(key)) for r in releases]

        keys = [(title, key) for title, key in _COLUMNS if key in blocks["overall"][releases[0]]]
        columns = ([(keys[0][0], by_release("overall", keys[0][1]))] + [(n, by_release(n, "fine_recall@1")) for n in self.subsets]
                   + [(title, by_release("overall", key)) for title, key in keys[1:]])
        queries = [str(int(blocks["overall"][r]["num_queries"])) for r in releases]
        cutoff = self.provenance["model"].get("training_cutoff")
        after = _after(releases, cutoff)
        names = [r + (" *" if r in after else "") for r in releases]
        return terminal.table(
            [terminal.Column("release", "left"), *(t for t, _ in columns), "queries"],
            [[name, *(cells[i] for _, cells in columns), queries[i]] for i, name in enumerate(names)],
            title="Per release (each release's queries, the gallery whole): overall Fine@1, each subset's Fine@1, then "
                  "the other overall scores.",
            footnotes=[f"* a release after the model's declared training cutoff ({cutoff})"] if after else [],
            drop_order=[t for t, _ in reversed(keys[1:])] + list(reversed(self.subsets)), at=at)

    def save(self, output_dir) -> dict[str, Path]:
        """Write results.json (and the saved rankings), ``results-<mode>.json`` for each other mode of the run, and
        the two PNG plots; returns their paths. Another mode's file an earlier run left there is removed, so the
        folder never pairs this run with another's."""
        from lookbench.metric.fine_recall.records import MODES
        from lookbench.results import store

        out = Path(output_dir)
        paths = {"json": self.write_json(out / "results.json")}
        for mode in MODES:
            other, path = self.modes.get(mode), out / mode_file(mode)
            if other is not None and other is not self:
                paths[f"json-{mode}"] = other.write_json(path)
            elif path.exists() or store.predictions_folder(path).exists():
                store.remove_result(path)
        paths.update(self.plot(out))
        return paths

    def write_json(self, path) -> Path:
        """The JSON at ``path`` and the saved rankings, if any, in the folder beside it (``store.write_result``:
        each written whole and put in place under the result's lock)."""
        import functools
        import json

        from lookbench.results import store

        rankings = None
        if self.rankings:
            from lookbench.engine.predictions import write

            rankings = functools.partial(write, self.rankings)
        return store.write_result(Path(path), json.dumps(self.to_dict(), indent=2, default=str), rankings)

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
        ax.set_ylabel("% (95% interval)")
        ax.set_ylim(0, 105)  # room for an interval reaching 100
        ax.set_title(f"{self.label()}: Fine vs Coarse Recall@1", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
        fig.tight_layout()
        paths = {"fine_vs_coarse": _save(fig, out / "fine_vs_coarse_r1.png")}
        plt.close(fig)

        per_cat: dict[str, dict[str, dict]] = {}
        for n in names:
            for cat, r in (self.subsets[n].get("per_category") or {}).items():
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
        ax.set_xticks(np.arange(len(cats)), cats, rotation=45, ha="right")
        ax.set_ylabel("Fine R@1 (%), 95% Wilson interval")
        ax.set_ylim(0, 105)
        ax.set_title(f"{self.label()}: Fine Recall@1 per category", fontsize=10)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
        fig.tight_layout()
        paths["per_category"] = _save(fig, out / "per_category_fine_r1.png")
        plt.close(fig)
        errors = self.overall.get("attribute_errors")
        if errors:
            paths["attribute_errors"] = _save(attribute_figure(errors, f"{self.label()}: attribute error rate@1"),
                                              out / "attribute_errors_r1.png")
        return paths

    def label(self) -> str:
        """``model on data (mode mode[, text queries])``: what every plot's title names."""
        p = self.provenance
        kind = p.get("queries", "image")
        return (f"{p['model']['name']} on {(p.get('dataset') or {}).get('name') or 'LookBench'} ({p['mode']} mode"
                + ("" if kind == "image" else f", {kind} queries") + ")")


@dataclass
class SealedRun:
    """An evaluation on a sealed release: the rankings (ids and ranks) and the counts, with no score, because the
    labels are withheld; the leaderboard scores it once submitted (``lookbench submit``). ``subsets``: per subset its
    ``num_queries``, ``gallery_size`` and ``self_matches_removed``."""

    subsets: dict
    provenance: dict
    rankings: dict | None = field(default=None, repr=False)
    stored: Path | None = None
    reused: bool = False
    notes: list = field(default_factory=list)

    @property
    def modes(self) -> dict:
        """Its one result, by the headline mode it was stored under (nothing is judged in any mode)."""
        return {self.provenance["mode"]: self}

    def to_dict(self) -> dict:
        total = sum(block["num_queries"] for block in self.subsets.values())
        return {**self.subsets, "overall": {"num_queries": total}, "provenance": self.provenance}

    def table(self, width: int | None = None, published=None) -> str:
        width = width or terminal.width()
        p = self.provenance
        sealed = p["dataset"]["sealed"]
        until = f" until {sealed['until']}" if sealed.get("until") else ""
        lines = terminal.paragraph(f"{p['dataset'].get('name') or 'LookBench'} — model {p['model']['name']}: releases "
                                   f"{', '.join(sealed['releases'])} are sealed{until}, so no score is computed here.",
                                   width)
        lines += [line for name, block in self.subsets.items() for line in terminal.paragraph(
            f"  {name}: {block['num_queries']} queries ranked in {block['gallery_size']} gallery rows", width, "    ")]
        saved = "the rankings are saved beside the result" if self.rankings else \
            "no ranking was saved: evaluate again with --save-predictions"
        lines += terminal.paragraph(f"{saved}; to have them scored, send them to the leaderboard: lookbench submit "
                                    f"{self.stored or '<results.json>'} (it scores them against the withheld labels and "
                                    f"shows the row as {SCORED_SEALED}).", width)
        return "\n".join(lines)

    def save(self, output_dir) -> dict[str, Path]:
        return {"json": self.write_json(Path(output_dir) / "results.json")}

    def write_json(self, path) -> Path:
        return EvaluationResult.write_json(self, path)


def mode_file(mode: str) -> str:
    """The name of a mode's result in an ``--output`` folder beside the run's ``results.json``."""
    return f"results-{mode}.json"


def _save(fig, path: Path) -> Path:
    """A PNG written whole beside ``path`` and then moved into place (a failed write leaves the old plot)."""
    from lookbench.files import replacing

    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=100, format="png")
    return path
