"""A stored result, typed: the result of an evaluation (``EvaluationResult``, or ``SealedRun`` on a sealed release)
and its leaderboard-shaped JSON; its provenance typed as ``lookbench.results.provenance.Provenance`` (``.meta``).

docs/architecture.md §5 (the results JSON shape) and §8. The JSON is what ``to_dict`` returns and what is stored.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lookbench.results import store
from lookbench.results.outcomes import Outcomes
from lookbench.results.provenance import Provenance
from lookbench.settings import MODES


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
        self.modes = self.modes or {self.meta.mode: self}

    @property
    def meta(self) -> Provenance:
        """The provenance, typed."""
        return Provenance(self.provenance)

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

    def table(self, width: int | None = None, published: str | None = None, details: bool = True) -> str:
        """Subsets (and the overall) × the leading scores as ``85.8 [80.1, 90.2]`` (the 95 % interval), never wider
        than ``width`` (default: the terminal's, ``lookbench.terminal``): columns are left out from the end to fit.
        Under it, one line per other mode the run judged (its overall Fine@1), the leaderboard mode's with
        ``published`` (what the published table holds on this data, ``lookbench.leaderboard.ranking.published_best``).
        Data of more than one release adds a block of the scores per release, then the attribute errors at top-1
        (``lookbench.results.table``); ``details=False`` leaves both out (`lookbench evaluate` without --details)."""
        from lookbench.results.table import table

        return table(self, width, published, details)

    def save(self, output_dir) -> dict[str, Path]:
        """Write results.json (and the saved rankings), ``results-<mode>.json`` for each other mode of the run, and
        the PNG plots; returns their paths. Another mode's file an earlier run left there is removed, so the folder
        never pairs this run with another's."""
        out = Path(output_dir)
        paths = {"json": self.write_json(out / "results.json")}
        for mode in MODES:
            other, path = self.modes.get(mode), out / mode_file(mode)
            if other is not None and other is not self:
                paths[f"json-{mode}"] = other.write_json(path)
            else:
                store.remove_result(path)
        paths.update(self.plot(out))
        return paths

    def write_json(self, path) -> Path:
        """The JSON at ``path`` and the saved rankings, if any, in the folder beside it (``store.write_result``:
        each written whole and put in place under the result's lock)."""
        import functools
        import json

        rankings = None
        if self.rankings:
            from lookbench.results.rankings import write

            rankings = functools.partial(write, self.rankings)
        return store.write_result(Path(path), json.dumps(self.to_dict(), indent=2, default=str), rankings)

    def plot(self, out: Path) -> dict[str, Path]:
        """Fine vs Coarse Recall@1 per subset, Fine Recall@1 per category, attribute errors (``lookbench.results.plots``)."""
        from lookbench.results.plots import plot

        return plot(self, out)

    def label(self) -> str:
        """``model on data (mode mode[, text queries])``: what every plot's title names."""
        p = self.meta
        kind = p.queries
        return (f"{p.model.name} on {p.dataset.title} ({p.mode} mode" + ("" if kind == "image" else f", {kind} queries") + ")")


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
    def meta(self) -> Provenance:
        return Provenance(self.provenance)

    @property
    def modes(self) -> dict:
        """Its one result, by the headline mode it was stored under (nothing is judged in any mode)."""
        return {self.meta.mode: self}

    def to_dict(self) -> dict:
        total = sum(block["num_queries"] for block in self.subsets.values())
        return {**self.subsets, "overall": {"num_queries": total}, "provenance": self.provenance}

    def table(self, width: int | None = None, published=None, details: bool = True) -> str:
        from lookbench.results.table import sealed_table

        return sealed_table(self, width)

    def save(self, output_dir) -> dict[str, Path]:
        return {"json": self.write_json(Path(output_dir) / "results.json")}

    def write_json(self, path) -> Path:
        return EvaluationResult.write_json(self, path)


def mode_file(mode: str) -> str:
    """The name of a mode's result in an ``--output`` folder beside the run's ``results.json``."""
    return f"results-{mode}.json"
