"""Leaderboards: the published LookBench figures and stored local results, ranked per comparable group.

Scores are only ranked against each other when they were measured on the same thing: the same data (release
and content revision), query kind (images, or text queries in one form: a section of their own), mode, distractor
setting and cutoff. A LookBench-Mini result therefore never appears inside the published table; it gets a section
of its own whose label says what it was measured on.
"""
from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from lookbench.leaderboard import figures
from lookbench.leaderboard.hub_rows import ORIGIN, hub_origin
from lookbench.leaderboard.load import Entry, Group, load_reference, load_store
from lookbench.leaderboard.render import CUTOFF_COLUMN, ZERO_SHOT_COLUMN, Section, render_sections
from lookbench.results.trust import BLOCKS, PUBLISHED, TRUSTED, level
from lookbench.schema import TEST_SUBSETS, resolve_subset
from lookbench.settings import DEFAULT_REFERENCE, METRICS

# A local run of a registered published model (its provenance names ``published_name``) on the published data.
LOCAL_RUN = " (local run)"


@dataclass
class Leaderboard:
    """The ranked sections of one metric at one K, and the store's files that were skipped, each with its reason."""

    sections: list[Section]
    skipped: list[str]
    metric: str
    k: int

    def render(self, fmt: str = "table", top: int | None = None) -> str:
        """The sections as text (``lookbench.leaderboard.render``); ``top``: a terminal table's rows per section."""
        return render_sections(self.sections, self.skipped, fmt, top=top)

    def trusted(self) -> "Leaderboard":
        """Only the trusted rows (``trust.TRUSTED``: reproduced or scored sealed), ranks and groups those of the full table;
        sections left empty are dropped."""
        return self.keeping(lambda row: row["verified"] in TRUSTED)

    def zero_shot(self) -> "Leaderboard":
        """Only the zero-shot rows (their column says yes, derived or claimed), ranks and groups those of the full
        table."""
        return self.keeping(lambda row: row.get(ZERO_SHOT_COLUMN, "").startswith("yes"))

    def keeping(self, keep) -> "Leaderboard":
        """Only the rows ``keep(row)`` keeps; sections left empty are dropped."""
        sections = [replace(s, rows=[r for r in s.rows if keep(r)]) for s in self.sections]
        return Leaderboard([s for s in sections if s.rows], self.skipped, self.metric, self.k)

    def figure(self):
        """The sections drawn (``lookbench.leaderboard.figures``): a matplotlib ``Figure``, not kept by pyplot."""
        return figures.figure(self.sections)

    def plot(self, path) -> Path:
        """The figure written to ``path`` (``.png`` added when it has no suffix); returns the path written."""
        return figures.plot(self.sections, path)


def _after_own_cutoff(entries: list[Entry]) -> dict[int, Entry]:
    """For each full-data entry, the entry of the same model and data measured after the model's declared cutoff."""
    from lookbench.results.store import normalise_cutoff

    def cut(value):
        try:
            return normalise_cutoff(value)
        except ValueError:
            return None

    by_cutoff = {(e.model, e.group.key, e.group.queries, e.group.mode, e.group.distractors, cut(e.group.cutoff)): e
                 for e in entries if e.group.cutoff is not None}
    out = {}
    for e in entries:
        declared = e.extra.get("training_cutoff")
        match = declared and e.group.cutoff is None and by_cutoff.get(
            (e.model, e.group.key, e.group.queries, e.group.mode, e.group.distractors, cut(declared)))
        if match:
            out[id(e)] = match
    return out


class _Memo:
    """Figures computed from a submission's outcomes, kept by its key (the sha256 of its files, ``Entry.extra["key"]``)
    across rankings: the board ranks again at every new verdict, and only the new rows cost anything. Bounded; rows
    without a key (a store's results, published rows) are computed each time."""

    def __init__(self, limit: int):
        self.values: dict = {}
        self.limit = limit
        self.lock = threading.Lock()

    def get(self, key, compute):
        if key is None:
            return compute()
        with self.lock:
            if key in self.values:
                return self.values[key]
        value = compute()
        with self.lock:
            if len(self.values) >= self.limit:
                self.values.clear()
            self.values[key] = value
        return value


_MEMO = _Memo(50_000)  # intervals and p-values: a few hundred bytes each
_OUTCOMES = _Memo(1_024)  # parsed outcomes: arrays of every query, so fewer are kept


def _memo_key(entries, *parts):
    keys = [e.extra.get("key") for e in entries]
    return None if None in keys else (*keys, *parts)


def _outcomes(entry: Entry, names: list[str]):
    return _OUTCOMES.get(_memo_key([entry], "outcomes", tuple(names)), lambda: entry.outcomes(names))


def interval(entry: Entry, key: str, k: int, subset: str | None, names: list[str], value, queries: int):
    """(ci95, how it was computed) of one row's ranked score: from its stored per-query outcomes as every result's
    intervals are (``stats.intervals``: Wilson on the effective sample size for a recall, the bootstrap for nDCG),
    else (published rows) a Wilson interval from the score and the query count, marked approximate."""
    from lookbench.metric.fine_recall.bootstrap import interval_method
    from lookbench.results import stats

    def every_interval():
        outcomes = _outcomes(entry, names)
        return None if outcomes is None else stats.intervals(outcomes)

    intervals = _MEMO.get(_memo_key([entry], "intervals", tuple(names)), every_interval)
    if intervals is not None:
        lo, hi = intervals["overall" if subset is None else subset][f"{key}@{k}"]
        return [round(lo, 2), round(hi, 2)], interval_method(f"{key}@{k}")
    if value is None or not queries:
        return None, None
    lo, hi = stats.wilson(value, queries)
    return [round(lo, 2), round(hi, 2)], "Wilson (approximate)"


def release_interval(entry: Entry, names: list[str], release: str, key: str, k: int, subset: str | None):
    """The 95 % interval of a row's score on one release's queries, ``[lo, hi]``: drawn from its per-query outcomes as
    the engine draws the ``per_release`` intervals it stores (``results.per_release``, design-corrected), never read
    from the file; ``None`` without outcomes (a published row, a result written before they were kept) or for a
    score kept only whole."""
    from lookbench.results.per_release import per_release

    def every_release():
        outcomes = _outcomes(entry, names)
        return None if outcomes is None else per_release(outcomes)[1]

    intervals = _MEMO.get(_memo_key([entry], "release intervals", tuple(names)), every_release)
    bounds = ((intervals or {}).get("overall" if subset is None else subset, {}).get(release) or {}).get(f"{key}@{k}")
    return None if bounds is None else [round(bound, 4) for bound in bounds]


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
            lead_row, lead_entry = leader

            def paired(lead=lead_entry, entry=entry):  # None: no paired test on the same queries
                ours, theirs = _outcomes(entry, names), _outcomes(lead, names)
                ok = ours is not None and theirs is not None and same_queries(ours, theirs)
                return paired_p(theirs, ours, key) if ok else None

            p = _MEMO.get(_memo_key([lead_entry, entry], "paired", tuple(names), key), paired)
            if p is not None:
                apart = p < 0.05
            else:
                apart = row["ci95"][1] < lead_row["ci95"][0] or lead_row["ci95"][1] < row["ci95"][0]
        if leader is None or apart:
            group, leader = group + 1, (row, entry)
        row["group"] = group


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


def placed(entry: Entry, published_here: set) -> int:
    """The block of ``entry`` (``trust.BLOCKS``): its level's standing, except a local run of a model whose published
    row is in the group (and that failed no check), which stands unranked beside that row (``_beside_published``)."""
    rank = level(entry.verified).standing
    return 0 if rank == 1 and entry.extra.get("published_name") in published_here else rank


@dataclass
class _Table:
    """What every section of one leaderboard shares: the ranked score (``key``@``k`` on ``subset`` or overall, its
    column ``score_name``), the entries measured after their model's cutoff, and ``by_release``."""

    key: str
    k: int
    subset: str | None
    score_name: str
    after_cutoff: dict
    by_release: bool

    def section(self, title: str, origin: str, block: list[Entry], names: list[str], published_here: set,
                ranked: bool) -> Section:
        """One block of a group as a section, best first: ranked with rank groups and intervals, or (a failed check)
        listed by its claimed score with neither. ``published_here``: the published models of the whole group."""
        key, k, subset, score_name, after_name = self.key, self.k, self.subset, self.score_name, "after model's cutoff"
        rows, pairs = [], []
        beside = {e.model for e in block if e.verified == PUBLISHED}
        for entry in block:
            value = entry.score(key, k, subset, over=names)
            row = {"rank": 0, "model": entry.model, "group": None, score_name: value, "ci95": None, "ci_method": None}
            twin = entry.extra.get("published_name")
            if twin in published_here and entry.verified != PUBLISHED:
                row["model"] = f"{twin}{LOCAL_RUN}"
                if twin in beside:
                    row["beside"] = twin
            if id(entry) in self.after_cutoff:  # the same model and data, evaluated with --cutoff model
                row[after_name] = self.after_cutoff[id(entry)].score(key, k, subset, over=names)
            if subset is None:
                row.update({s: entry.score(key, k, s) for s in names})
            row["queries"] = entry.queries(names)
            if ranked:
                row["ci95"], row["ci_method"] = interval(entry, key, k, subset, names, value, row["queries"])
            row[ZERO_SHOT_COLUMN] = entry.extra.get("zero_shot") or "unknown"
            row["verified"] = entry.verified
            rows.append(row)
            pairs.append((row, entry))
        extra = [after_name] if any(after_name in r for r in rows) else []
        for row in rows if extra else ():
            row.setdefault(after_name, None)
        releases = sorted({r for e in block for r in e.releases()}) if self.by_release else []
        for row, entry in pairs:
            for release in releases:
                on = entry.on_release(release)
                over = [n for n in names if n in on.subsets]
                row[release] = on.score(key, k, subset, over=over or None)
                # the plot's error bar (not a column): ``release_interval``, from the row's own outcomes
                row.setdefault("release_ci95", {})[release] = (
                    release_interval(entry, names, release, key, k, subset) if row[release] is not None else None)
            if releases:
                row[CUTOFF_COLUMN] = entry.extra.get("training_cutoff")
        extra += [CUTOFF_COLUMN, *releases] if releases else []
        # a column that would say unknown on every row (no model or data declares its sources) is left out
        if any(r[ZERO_SHOT_COLUMN] != "unknown" for r in rows):
            extra.append(ZERO_SHOT_COLUMN)
        else:
            for row in rows:
                del row[ZERO_SHOT_COLUMN]
        columns = ["rank", "model", "group", score_name, "ci95", *extra] + (names if subset is None else []) + [
            "queries", "ci_method", "verified"]
        rows.sort(key=lambda r: (-(r[score_name] if r[score_name] is not None and not math.isnan(r[score_name]) else -1), r["model"]))
        if not ranked:
            for row in rows:
                row["rank"] = None
            return Section(title, origin, columns, rows, releases)
        order = {id(row): i for i, row in enumerate(rows)}
        pairs.sort(key=lambda pair: order[id(pair[0])])  # a local run beside its published row is in no rank group
        _rank_groups([p for p in pairs if "beside" not in p[0]], score_name, f"{key}@{k}",
                     names if subset is None else [subset])
        return Section(title, origin, columns, _beside_published(rows), releases)  # copies each row with its group


def leaderboard(results=None, reference: str | None = DEFAULT_REFERENCE, metric: str = "fine", k: int = 1,
                subset: str | None = None, by_release: bool = False, verify=None, loaded=None,
                keys: dict | None = None) -> Leaderboard:
    """Ranked tables of the published leaderboard and of a results store (or a folder of submissions), one per
    comparable group and standing (``trust.Level.standing``); ``by_release`` adds each model's declared training
    cutoff and its score on every release's queries (the gallery whole); ``verify``: how a submission is re-scored
    (``load_store``), and ``keys`` the reproduction records' trusted keys. ``loaded``: ``load_store``'s (entries,
    skipped), read once and ranked many times (the board), instead of ``results``."""
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
    if loaded is None and results is not None:
        loaded = load_store(results, verify, keys=keys)
    if loaded is not None:
        local, skipped = loaded
        entries += local
        skipped = list(skipped)
    present = sorted({int(at[1:]) for e in entries
                      for scores in [*e.subsets.values(), e.headline or {}, e.overall or {}]
                      for at in scores.get(key, {}) if re.fullmatch(r"@\d+", at)})
    if entries and k not in present:
        raise ValueError(f"no result has {metric} at K={k}; the Ks present are {', '.join(map(str, present)) or 'none'}")
    groups: dict[Group, list[Entry]] = {}
    for entry in entries:
        groups.setdefault(entry.group, []).append(entry)
    table = _Table(key, k, subset, f"{subset or 'overall'} {metric} R@{k}" if metric != "ndcg" else
                   f"{subset or 'overall'} nDCG@{k}", _after_own_cutoff(entries), by_release)
    sections = []
    # The published table first, then local groups in a stable order; in each group its blocks by standing.
    for group, members in sorted(groups.items(), key=lambda item: (item[0] not in sources, item[0].label)):
        names = [s for s in TEST_SUBSETS if any(s in e.subsets for e in members)] if subset is None else [subset]
        published_here = {e.model for e in members if e.verified == PUBLISHED}
        blocks = [[e for e in members if placed(e, published_here) == rank] for rank in range(len(BLOCKS))]
        for rank, block in enumerate(blocks):
            if not block:
                continue
            title = group.label + (BLOCKS[rank] if rank == len(BLOCKS) - 1 or any(blocks[:rank]) else "")
            origin = sources.get(group) if any(e.verified == PUBLISHED for e in block) else None
            hub = hub_origin(block)
            local = [e for e in block if e.verified != PUBLISHED and not e.origin.startswith(ORIGIN)]
            if origin is None:
                origin = "; ".join(["local results store"] * bool(local or not hub) + [hub] * bool(hub))
            elif local or hub:
                origin += "; other rows: " + "; ".join(["local results store"] * bool(local) + [hub] * bool(hub))
            sections.append(table.section(title, origin, block, names, published_here, ranked=rank < len(BLOCKS) - 1))
    return Leaderboard(sections, skipped, metric, k)


def published_best(result: dict, reference: str = DEFAULT_REFERENCE) -> str:
    """What ``lookbench evaluate`` prints beside a leaderboard-mode result's overall Fine@1: the published table's
    best row on the same data (same group, over the result's subsets), or that the table has none there."""
    from lookbench.leaderboard.load import entry_from_result

    entry = entry_from_result(result, "this run")
    rows, _ = load_reference(reference)
    names = list(entry.subsets)
    scores = [(row.score("fine_recall", 1, over=names), row.model) for row in rows if row.group == entry.group]
    scores = [(value, model) for value, model in scores if value is not None]
    if not scores:
        return f"no published row on this data ({reference} is on {rows[0].group.data}, {rows[0].group.mode} mode)"
    value, model = max(scores)
    return f"published best on this data ({reference}): {model} {value:.1f}"
