"""Leaderboards: the published LookBench figures as data, and stored local results ranked beside them.

Scores are only ranked against each other when they were measured on the same thing: the same data (release
and content revision), mode, distractor setting and cutoff. A LookBench-Mini result therefore never appears
inside the published table; it gets a section of its own whose label says what it was measured on.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from lookbench.metric.fine_recall.core import combine_subsets
from lookbench.schema import RELEASE_PATTERN, TEST_SUBSETS, resolve_subset

METRICS = {"fine": "fine_recall", "coarse": "coarse_recall", "ndcg": "ndcg"}
GROUPS_NOTE = ("ci95: the 95% interval of the ranked score (bootstrap of the stored per-query outcomes; a published row's "
               "is a Wilson interval from its score and query count, approximate). group: rows share a rank group when "
               "the data cannot separate them from the group's best row (paired test p >= 0.05 where both have "
               "per-query outcomes, else overlapping intervals).")
FORMATS = ("table", "markdown", "csv", "json")
# Names of the published benchmark.json for the metrics above.
_PUBLISHED_METRICS = {"Fine Recall": "fine_recall", "Coarse Recall": "coarse_recall", "nDCG": "ndcg"}


def references() -> list[str]:
    """Names of the published leaderboards shipped with the package (e.g. ``release_v2601``)."""
    folder = resources.files("lookbench.leaderboard") / "published"
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


@dataclass(frozen=True)
class Group:
    """What a score was measured on; only rows of one group are comparable."""

    data: str = field(compare=False)  # human label, e.g. "LookBench (srpone/look-bench v20251201)"
    key: str  # identity of the data: its content revision, or the published snapshot it was converted from
    mode: str
    distractors: bool
    cutoff: str | None

    @property
    def label(self) -> str:
        cut = f", queries after {self.cutoff}" if self.cutoff else ""
        noise = "with" if self.distractors else "without"
        return f"{self.data} — {self.mode} mode, {noise} distractors{cut}"


@dataclass
class Entry:
    """One model's scores in one group: subset -> metric -> "@K" -> percent (+ num_queries per subset)."""

    model: str
    group: Group
    subsets: dict
    origin: str  # the reference name or the result file
    extra: dict = field(default_factory=dict)

    def queries(self, names) -> int:
        """The number of queries behind its scores on the subsets ``names``."""
        return sum(int(self.subsets.get(s, {}).get("num_queries") or 0) for s in names)

    def score(self, metric: str, k: int, subset: str | None = None, over=None) -> float | None:
        """One subset's score, or the query-weighted overall over the subsets ``over`` (default: its own) with the
        metric's combine_subsets; ``None`` when one of them is missing."""
        if subset is not None:
            return self.subsets.get(subset, {}).get(metric, {}).get(f"@{k}")
        flat = {}
        for name in over or self.subsets:
            scores = self.subsets.get(name, {})
            value = scores.get(metric, {}).get(f"@{k}")
            if value is None or not scores.get("num_queries"):
                return None
            flat[name] = {f"{metric}@{k}": value, "num_queries": int(scores["num_queries"])}
        return combine_subsets(flat)[f"{metric}@{k}"] if flat else None

    def outcomes(self, names) -> dict | None:
        """The per-query outcomes of the subsets ``names`` (``lookbench.results.outcomes``), or ``None`` when any of them
        has none (a published row, or a result written before they were kept)."""
        from lookbench.results.outcomes import Outcomes

        if any(not isinstance(self.subsets.get(s, {}).get("per_query"), dict) for s in names):
            return None
        try:
            return {s: Outcomes.from_json(self.subsets[s]["per_query"], f"{self.origin}: {s}") for s in names}
        except ValueError:
            return None

    def releases(self) -> list[str]:
        """The releases this result scored separately (its subsets' ``per_release``), oldest first."""
        return sorted({r for scores in self.subsets.values() for r in scores.get("per_release") or {}})

    def on_release(self, release: str) -> "Entry":
        """The same model on one release's queries only: each subset's ``per_release`` block of that release."""
        blocks = {name: scores["per_release"][release] for name, scores in self.subsets.items()
                  if release in (scores.get("per_release") or {})}
        return Entry(self.model, self.group, blocks, self.origin, self.extra)


def load_reference(name: str = "release_v2601") -> tuple[list[Entry], str]:
    """The published leaderboard ``name`` as entries, with its source line."""
    path = resources.files("lookbench.leaderboard") / "published" / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"Unknown published leaderboard {name!r}; shipped: {', '.join(references())}")
    raw = json.loads(path.read_text())
    group = Group(raw["dataset"]["label"], raw["dataset"]["key"], raw["dataset"]["mode"], raw["dataset"]["distractors"], None)
    models: dict[str, dict] = {}
    for published, per_model in raw["results"].items():
        subset = raw["subset_names"][published]
        for model, metrics in per_model.items():
            scores = {_PUBLISHED_METRICS[m]: dict(v) for m, v in metrics.items()}
            scores["num_queries"] = raw["query_counts"][subset]
            models.setdefault(model, {})[subset] = scores
    return [Entry(model, group, subsets, f"published {name}") for model, subsets in models.items()], raw["source"]


def _text(value, what: str, optional: bool = False):
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{what} is {type(value).__name__}, not a string")
    return value


def _percent(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 100:
        raise ValueError(f"{what} is {value!r}, not a percentage (a finite number in [0, 100])")
    return float(value)


def _checked_subset(name: str, scores) -> dict:
    """A subset's scores as the leaderboard reads them: every ranked metric "@K" a percentage, num_queries a count."""
    if not isinstance(scores, dict):
        raise ValueError(f"{name} is {type(scores).__name__}, not a mapping of scores")
    out = dict(scores)
    for metric in METRICS.values():
        if metric not in scores:
            continue
        if not isinstance(scores[metric], dict):
            raise ValueError(f"{name} {metric} is {type(scores[metric]).__name__}, not a mapping of @K to a score")
        out[metric] = {str(at): _percent(v, f"{name} {metric} {at}") for at, v in scores[metric].items()}
    count = scores.get("num_queries")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise ValueError(f"{name} num_queries is {count!r}, not a count of queries")
    if "per_release" in scores:  # release name -> the same scores on that release's queries
        if not isinstance(scores["per_release"], dict):
            raise ValueError(f"{name} per_release is {type(scores['per_release']).__name__}, not a mapping of releases")
        for release in scores["per_release"]:
            if not isinstance(release, str) or not RELEASE_PATTERN.match(release):
                raise ValueError(f"{name} per_release names {terminal_safe(release)!r}, not a release v<YYYYMMDD>")
        out["per_release"] = {r: _checked_subset(f"{name} {r}", block) for r, block in scores["per_release"].items()}
    return out


def entry_from_result(result: dict, origin: str) -> Entry:
    """An entry from a results JSON written by ``lookbench evaluate`` (leaderboard shape plus provenance); every
    value the table shows is type-checked, so a tampered file is a ``ValueError`` naming the field."""
    if not isinstance(result, dict) or not isinstance(result.get("provenance"), dict):
        raise ValueError("no provenance mapping")
    p = result["provenance"]
    data, model = p.get("dataset"), p.get("model")
    if not isinstance(data, dict) or not isinstance(model, dict):
        raise ValueError("provenance.dataset and provenance.model must be mappings")
    releases = data.get("releases") or []
    if not isinstance(releases, list) or not all(isinstance(r, str) for r in releases):
        raise ValueError("provenance.dataset.releases is not a list of strings")
    # The engine records the data's name (its card's pretty_name) and key; results without them name their data only.
    label = f"{_text(data.get('name') or data.get('data'), 'provenance.dataset.name')} {'+'.join(releases) or '(no release)'}"
    key = data.get("key") or data.get("revision")
    if key is None:
        raise ValueError("the result records no data revision, so nothing is comparable with it")
    key = _text(key, "provenance.dataset.key")
    if not key.startswith("srpone/look-bench@"):
        label += f", revision {key[:22]}"
    if not isinstance(p.get("distractors"), bool):
        raise ValueError("provenance.distractors is not true or false")
    group = Group(label, key, _text(p.get("mode"), "provenance.mode"), p["distractors"],
                  _text(p.get("cutoff"), "provenance.cutoff", optional=True))
    subsets = {s: _checked_subset(s, r) for s, r in result.items() if s not in ("overall", "provenance") and isinstance(r, dict)}
    name = _text(model.get("name"), "provenance.model.name")
    revision = _text(model.get("revision"), "provenance.model.revision", optional=True)
    label_model = name + (f"@{revision[:12]}" if revision and "@" not in name else "")
    cutoff = _text(model.get("training_cutoff"), "provenance.model.training_cutoff", optional=True)
    published = _text(model.get("published_name"), "provenance.model.published_name", optional=True)
    return Entry(label_model, group, subsets, origin, {"training_cutoff": cutoff, "published_name": published})


def load_store(root) -> tuple[list[Entry], list[str]]:
    """Every result JSON under a results store, and one line per file that is skipped and why.

    Each file is read as ``lookbench.results.store.read_json`` reads one (inside the store, regular, size-capped,
    non-blocking, depth-checked), so no single file can stop, hang or corrupt the table."""
    from lookbench.files import contained_file
    from lookbench.results.store import read_json

    entries, skipped = [], []
    root = Path(root)
    # os.walk does not follow links to folders: a link to / in the store is not a walk of the whole disk.
    found = sorted(Path(top) / name for top, _, names in os.walk(root) for name in names if name.endswith(".json"))
    for path in found:
        try:
            raw = read_json(contained_file(root, str(path.relative_to(root))), "it")
        except ValueError as err:
            skipped.append(f"{path}: {err}")
            continue
        try:
            entries.append(entry_from_result(raw, str(path)))
        except ValueError as err:
            skipped.append(f"{path}: not a LookBench result ({err})")
    return entries, skipped


@dataclass
class Section:
    """One ranked table: a comparable group, its rows best first, and where its figures come from. ``releases``:
    the columns that hold the score on one release's queries (``by_release``)."""

    title: str
    source: str
    columns: list[str]
    rows: list[dict]
    releases: list[str] = field(default_factory=list)

    def frame(self):
        """The rows as a pandas DataFrame (what the Space shows), percentages to two decimals as published; the
        interval as two columns, ``ci95_lo`` and ``ci95_hi``."""
        import pandas as pd

        frame = pd.DataFrame(self.rows, columns=self.columns)
        at = frame.columns.get_loc("ci95")
        bounds = [r["ci95"] or [None, None] for r in self.rows]
        frame.insert(at, "ci95_hi", [b[1] for b in bounds])
        frame.insert(at, "ci95_lo", [b[0] for b in bounds])
        return frame.drop(columns="ci95").round(2)


@dataclass
class Leaderboard:
    sections: list[Section]
    skipped: list[str]
    metric: str
    k: int

    def render(self, fmt: str = "table") -> str:
        """The sections as text. JSON is strict (no NaN); names are escaped for the terminal, Markdown and CSV. The
        skipped files are not part of the text (``lookbench leaderboard`` names them on stderr, in every format)."""
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        if fmt == "json":
            return json.dumps([{"title": s.title, "source": s.source, "rows": s.rows} for s in self.sections]
                              + ([{"skipped": self.skipped}] if self.skipped else []), indent=2, allow_nan=False)
        parts = [_render_section(s, fmt) for s in self.sections]
        if not self.sections and fmt != "csv":
            parts.append("No results to show.")
        return "\n\n".join(parts)

    def figure(self):
        """Bar chart of the ranked score with its 95 % interval as an error bar, one panel per section, each bar
        labelled with its rank group (a matplotlib ``Figure``, not kept by pyplot); with scores per release, the
        score against the release date instead, one line per model, its declared training cutoff marked."""
        from matplotlib.figure import Figure

        if any(s.releases for s in self.sections):
            return self._release_figure()
        score = self.sections[0].columns[3] if self.sections else "score"
        fig = Figure(figsize=(9, 0.35 * sum(len(s.rows) for s in self.sections) + 1.5 * max(1, len(self.sections))))
        axes = fig.subplots(len(self.sections) or 1, 1, squeeze=False)
        for ax, section in zip(axes[:, 0], self.sections):
            rows = section.rows[::-1]
            names = [terminal_safe(f"{r['model']} (group {r['group']})" if r["group"] else r["model"]) for r in rows]
            values = [r[score] if r[score] is not None else 0.0 for r in rows]
            bounds = [r["ci95"] or (v, v) for r, v in zip(rows, values)]
            errors = [[v - lo for v, (lo, _) in zip(values, bounds)], [hi - v for v, (_, hi) in zip(values, bounds)]]
            ax.barh(names, values, xerr=errors, capsize=3, color="#4c72b0", ecolor="#222222")
            ax.set_xlim(0, 100)
            ax.set_title(terminal_safe(section.title), fontsize=9)
            ax.set_xlabel(f"{score} (%), 95% interval")
        fig.tight_layout()
        return fig

    def plot(self, path) -> Path:
        """The bar chart written to ``path`` (``.png`` added when it has no suffix); returns the path written."""
        path = Path(path)
        path = path if path.suffix else path.with_name(path.name + ".png")
        self.figure().savefig(path, dpi=100)
        return path


    def _release_figure(self):
        import matplotlib
        from matplotlib.figure import Figure

        from lookbench.filtering import to_utc
        from lookbench.schema import release_date

        sections = [s for s in self.sections if s.releases]
        fig = Figure(figsize=(9, 4 * len(sections)))
        axes = fig.subplots(len(sections), 1, squeeze=False)
        colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
        for ax, section in zip(axes[:, 0], sections):
            dates = [release_date(r) for r in section.releases]
            for i, row in enumerate(section.rows):
                points = [(d, row[r]) for d, r in zip(dates, section.releases) if row[r] is not None]
                if not points:
                    continue
                colour = colours[i % len(colours)]
                ax.plot(*zip(*points), marker="o", color=colour, label=terminal_safe(row["model"]))
                try:
                    cutoff = to_utc(row[CUTOFF_COLUMN]) if row.get(CUTOFF_COLUMN) else None
                except ValueError:
                    cutoff = None  # a declared cutoff that is no date is shown in the table, not drawn
                if cutoff is not None:
                    ax.axvline(cutoff, color=colour, linestyle="--", linewidth=1)
            ax.set_ylim(0, 100)
            ax.set_ylabel(f"{section.columns[3]} (%)")
            ax.set_xlabel("release date (dashed: the model's declared training cutoff)")
            ax.set_title(terminal_safe(section.title), fontsize=9)
            ax.legend(fontsize="small")
        fig.autofmt_xdate()
        fig.tight_layout()
        return fig


CUTOFF_COLUMN = "training cutoff"


def terminal_safe(text) -> str:
    """``text`` with every non-printable character (escape sequences, newlines, bidi controls) written as its Python
    escape, so a name from a results file can neither move the cursor, retitle the window nor break a row."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


def markdown_safe(text) -> str:
    """``terminal_safe`` text with Markdown's active characters backslash-escaped (``|`` cannot end a cell)."""
    return re.sub(r"([\\`*_\[\]<>|#])", r"\\\1", terminal_safe(text))


def _render_section(section: Section, fmt: str) -> str:
    def cell(v):
        if isinstance(v, list):  # an interval
            return "[" + ", ".join(f"{x:.2f}" for x in v) + "]"
        return "-" if v is None else (f"{v:.2f}" if isinstance(v, float) else terminal_safe(v))

    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["section", *section.columns])
        writer.writerows([terminal_safe(section.title),
                          *(terminal_safe(r[c]) if isinstance(r[c], str) else r[c] for c in section.columns)]
                         for r in section.rows)
        return buffer.getvalue().rstrip("\r\n")
    if fmt == "markdown":
        cells = [[markdown_safe(cell(r[c])) for c in section.columns] for r in section.rows]
        lines = [f"### {markdown_safe(section.title)}", "", "| " + " | ".join(section.columns) + " |",
                 "|" + "|".join("---:" if i != 1 else "---" for i in range(len(section.columns))) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines + ["", f"Source: {markdown_safe(section.source)}"])
    cells = [[cell(r[c]) for c in section.columns] for r in section.rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(section.columns)]
    lines = [terminal_safe(section.title),
             "  ".join(c.ljust(w) if i == 1 else c.rjust(w) for i, (c, w) in enumerate(zip(section.columns, widths)))]
    lines += ["  ".join(v.ljust(w) if i == 1 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths))) for row in cells]
    return "\n".join(lines + [f"source: {terminal_safe(section.source)}"])


def _after_own_cutoff(entries: list[Entry]) -> dict[int, Entry]:
    """For each full-data entry, the entry of the same model and data measured after the model's declared cutoff."""
    from lookbench.results.store import normalise_cutoff

    def cut(value):
        try:
            return normalise_cutoff(value)
        except ValueError:
            return None

    by_cutoff = {(e.model, e.group.key, e.group.mode, e.group.distractors, cut(e.group.cutoff)): e
                 for e in entries if e.group.cutoff is not None}
    out = {}
    for e in entries:
        declared = e.extra.get("training_cutoff")
        match = declared and e.group.cutoff is None and by_cutoff.get(
            (e.model, e.group.key, e.group.mode, e.group.distractors, cut(declared)))
        if match:
            out[id(e)] = match
    return out


def interval(entry: Entry, key: str, k: int, subset: str | None, names: list[str], value, queries: int):
    """(ci95, how it was computed) of one row's ranked score: the bootstrap of its stored per-query outcomes, else
    (published rows) a Wilson interval from the score and the query count, marked approximate."""
    from lookbench.results import stats

    outcomes = entry.outcomes(names)
    if outcomes is not None:
        lo, hi = stats.intervals(outcomes)["overall" if subset is None else subset][f"{key}@{k}"]
        return [round(lo, 2), round(hi, 2)], "bootstrap"
    if value is None or not queries:
        return None, None
    lo, hi = stats.wilson(value, queries)
    return [round(lo, 2), round(hi, 2)], "Wilson (approximate)"


def _rank_groups(ranked: list[tuple[dict, Entry]], score_name: str, key: str, names: list[str]) -> None:
    """Number the rank groups, best first: a row joins the group of the row that opened it unless the data can tell
    the two apart — by the paired test of ``lookbench compare`` (p < 0.05) when both have per-query outcomes on the
    same queries, else by their 95 % intervals not overlapping. A row with no score has no group."""
    from lookbench.results.comparison import paired_p, same_queries

    group, leader = 0, None
    for row, entry in ranked:
        if row[score_name] is None or row["ci95"] is None:
            row["group"] = None
            continue
        if leader is not None:
            (lead_row, lead_entry), ours, theirs = leader, entry.outcomes(names), leader[1].outcomes(names)
            if ours is not None and theirs is not None and same_queries(ours, theirs):
                apart = paired_p(theirs, ours, key) < 0.05
            else:
                apart = row["ci95"][1] < lead_row["ci95"][0] or lead_row["ci95"][1] < row["ci95"][0]
        if leader is None or apart:
            group, leader = group + 1, (row, entry)
        row["group"] = group


# A local run of a registered published model (its provenance names ``published_name``) on the published data.
LOCAL_RUN = " (local run)"


def _beside_published(rows: list[dict]) -> list[dict]:
    """Ranked rows, each local run of a published model unranked right below that model's published row: the
    published ranking stays the published one, and the two figures for one model read side by side."""
    ranked = [r for r in rows if "beside" not in r]
    for rank, row in enumerate(ranked, 1):
        row["rank"] = rank
    out = []
    for row in ranked:
        out.append(row)
        out += [dict((k, v) for k, v in r.items() if k != "beside") | {"rank": None}
                for r in rows if r.get("beside") == row["model"]]
    return out


def leaderboard(results=None, reference: str | None = "release_v2601", metric: str = "fine", k: int = 1,
                subset: str | None = None, by_release: bool = False) -> Leaderboard:
    """Ranked tables of the published leaderboard and of a results store, one per comparable group; ``by_release``
    adds each model's declared training cutoff and its score on every release's queries (the gallery whole)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    subset = resolve_subset(subset) if subset else None
    key = METRICS[metric]
    entries, skipped, sources = [], [], {}
    if reference and reference != "none":
        published, source = load_reference(reference)
        entries += published
        sources[published[0].group] = source
    if results is not None:
        local, skipped = load_store(results)
        entries += local
    present = sorted({int(at[1:]) for e in entries for scores in e.subsets.values() for at in scores.get(key, {})
                      if re.fullmatch(r"@\d+", at)})
    if entries and k not in present:
        raise ValueError(f"no result has {metric} at K={k}; the Ks present are {', '.join(map(str, present)) or 'none'}")
    groups: dict[Group, list[Entry]] = {}
    for entry in entries:
        groups.setdefault(entry.group, []).append(entry)
    after_cutoff = _after_own_cutoff(entries)
    score_name = f"{subset or 'overall'} {metric} R@{k}" if metric != "ndcg" else f"{subset or 'overall'} nDCG@{k}"
    after_name = "after model's cutoff"
    sections = []
    for group, members in groups.items():
        names = [s for s in TEST_SUBSETS if any(s in e.subsets for e in members)] if subset is None else [subset]
        rows, ranked = [], []
        published_here = {e.model for e in members if e.origin.startswith("published")}
        for entry in members:
            value = entry.score(key, k, subset, over=names)
            row = {"rank": 0, "model": entry.model, "group": None, score_name: value, "ci95": None, "ci_method": None}
            twin = entry.extra.get("published_name")
            if twin in published_here and not entry.origin.startswith("published"):
                row.update(model=f"{twin}{LOCAL_RUN}", beside=twin)
            if id(entry) in after_cutoff:  # the same model and data, evaluated with --cutoff model
                row[after_name] = after_cutoff[id(entry)].score(key, k, subset, over=names)
            if subset is None:
                row.update({s: entry.score(key, k, s) for s in names})
            row["queries"] = entry.queries(names)
            row["ci95"], row["ci_method"] = interval(entry, key, k, subset, names, value, row["queries"])
            rows.append(row)
            ranked.append((row, entry))
        extra = [after_name] if any(after_name in r for r in rows) else []
        for row in rows if extra else ():
            row.setdefault(after_name, None)
        releases = sorted({r for e in members for r in e.releases()}) if by_release else []
        for row, entry in zip(rows, members):
            for release in releases:
                on = entry.on_release(release)
                row[release] = on.score(key, k, subset, over=[n for n in names if n in on.subsets] or None)
            if releases:
                row[CUTOFF_COLUMN] = entry.extra.get("training_cutoff")
        extra += [CUTOFF_COLUMN, *releases] if releases else []
        columns = ["rank", "model", "group", score_name, "ci95", *extra] + (names if subset is None else []) + [
            "queries", "ci_method"]
        rows.sort(key=lambda r: (-(r[score_name] if r[score_name] is not None and not math.isnan(r[score_name]) else -1), r["model"]))
        order = {id(row): i for i, row in enumerate(rows)}
        ranked.sort(key=lambda pair: order[id(pair[0])])
        _rank_groups(ranked, score_name, f"{key}@{k}", names if subset is None else [subset])
        rows = _beside_published(rows)  # copies each row with its group and interval
        origin = sources.get(group)
        if origin is None:
            origin = "local results store"
        elif any(not e.origin.startswith("published") for e in members):
            origin += "; other rows: local results store"
        sections.append(Section(group.label, origin, columns, rows, releases))
    # The published table first, then local groups in a stable order.
    sections.sort(key=lambda s: (s.source == "local results store", s.title))
    return Leaderboard(sections, skipped, metric, k)
