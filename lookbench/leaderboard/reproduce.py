"""``lookbench reproduce``: every registered model of the published leaderboard, run here in leaderboard mode and
set beside its published row.

A model that cannot run here (not in the cache while offline, a package missing, remote code without the trust
flag, no loadable checkpoint) is listed with the reason instead of stopping the others. The comparison is only
meaningful on the published data: when the data is another snapshot, or its query counts differ from the published
ones, the output says that the differences mean nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lookbench.encoders.registry import BY_PUBLISHED_NAME, find
from lookbench.hub import UPSTREAM
from lookbench.leaderboard.load import entry_from_result, load_reference
from lookbench.leaderboard.ranking import interval
from lookbench.settings import DEFAULT_DISTRACTORS, DEFAULT_REFERENCE, METRICS


@dataclass
class Row:
    published_name: str
    name: str
    local: float | None = None
    published: float | None = None
    local_ci: list[float] | None = None  # bootstrap of the local run's per-query outcomes
    published_ci: list[float] | None = None  # Wilson, from the published score and query count (approximate)
    reason: str | None = None  # why it was not run

    @property
    def difference(self) -> float | None:
        """Local minus published, in points."""
        return None if self.local is None or self.published is None else self.local - self.published

    @property
    def difference_ci(self) -> list[float] | None:
        """The approximate 95 % interval of the difference: no per-query outcomes were published, so the two
        half-widths combine as those of independent measurements."""
        if self.local_ci is None or self.published_ci is None:
            return None
        half = (((self.local_ci[1] - self.local_ci[0]) / 2) ** 2 + ((self.published_ci[1] - self.published_ci[0]) / 2) ** 2) ** 0.5
        return [self.difference - half, self.difference + half]


@dataclass
class Reproduction:
    score: str  # e.g. "overall fine R@1"
    data: str
    rows: list[Row]
    notes: list[str] = field(default_factory=list)

    @property
    def reproduced(self) -> bool:
        """Whether any model ran: a reproduction of nothing must not read (or exit) as one."""
        return any(r.local is not None for r in self.rows)

    def render(self) -> str:
        """The rows as a terminal table (``lookbench.terminal``), the models not run and the notes after it."""
        from lookbench import terminal

        cells = [[r.name, r.published_name, terminal.score(r.local, digits=2), terminal.score(r.published, digits=2),
                  terminal.score(r.difference, r.difference_ci, 2, signed=True) if r.difference is not None else "-",
                  terminal.bounds(r.local_ci), terminal.bounds(r.published_ci)] for r in self.rows]
        lines = terminal.table(
            [terminal.Column("model", "left"), terminal.Column("published_name", "left"), f"local {self.score}",
             "published", "difference [95% interval]", "local ci95", "published ci95"], cells,
            title=(f"Published leaderboard reproduced on {self.data}" if self.reproduced else
                   f"Nothing reproduced on {self.data}: no model ran (each one's reason below)"),
            footnotes=["difference [95% interval]: local minus published, its interval approximate (the local run's "
                       "interval and the published score's Wilson interval, combined as independent)"],
            drop_order=["published ci95", "local ci95", "published_name"])
        skipped = [r for r in self.rows if r.reason]
        if skipped:
            lines += ["", "Not run:"] + [line for r in skipped
                                         for line in terminal.paragraph(f"  {r.published_name} ({r.name}): {r.reason}", indent="    ")]
        return "\n".join(lines + [line for n in self.notes for line in terminal.paragraph(f"note: {n}", indent="  ")])


def published_models(reference: str = DEFAULT_REFERENCE) -> list[str]:
    """Registry names of the reference's rows that have an entry, in the reference's order."""
    entries, _ = load_reference(reference)
    return [BY_PUBLISHED_NAME[e.model].name for e in entries if e.model in BY_PUBLISHED_NAME]


def reproduce(data=None, models=None, *, reference: str = DEFAULT_REFERENCE, metric: str = "fine", k: int = 1,
              distractors: bool = DEFAULT_DISTRACTORS, trust_remote_code: bool = False, results_dir=None,
              **evaluate_options) -> Reproduction:
    """Run each model (default: every registered published model) in leaderboard mode on ``data`` (default: the
    published ``srpone/look-bench`` snapshot) and pair its overall score with the published one."""
    from lookbench.engine import evaluate
    from lookbench.errors import EvaluationError
    from lookbench.encoders.base import EncoderError

    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    data = UPSTREAM if data is None else data
    published, _ = load_reference(reference)
    by_name = {e.model: e for e in published}
    metas = [find(m) for m in (models or published_models(reference))]
    if any(m.status()[0] for m in metas):
        from lookbench.engine.data import load_benchmark

        # Data that cannot be read fails here once, in one line, not once per model (the runs reuse datasets' cache).
        load_benchmark(data, None, None, distractors)
    key, rows, seen = METRICS[metric], [], None
    for meta in metas:
        row = Row(meta.published_name or "-", meta.name)
        reference_entry = by_name.get(meta.published_name)
        ready, needs = meta.status()
        if not meta.published_name or reference_entry is None:
            row.reason = f"not a model of the published leaderboard {reference}"
        elif not ready:
            row.reason = needs
        else:
            try:
                result = evaluate(meta.name, data=data, mode="leaderboard", distractors=distractors,
                                  trust_remote_code=trust_remote_code, results_dir=results_dir, **evaluate_options)
            except (EncoderError, EvaluationError) as err:
                row.reason = str(err)
            else:
                local = entry_from_result(result.to_dict(), "local run")
                names = list(local.subsets)
                row.local = local.score(key, k, over=names)
                row.published = reference_entry.score(key, k, over=names)
                row.local_ci = interval(local, key, k, None, names, row.local, local.queries(names))[0]
                row.published_ci = interval(reference_entry, key, k, None, names, row.published,
                                            reference_entry.queries(names))[0]
                seen = seen or (local, names)
        rows.append(row)
    out = Reproduction(f"{'overall' if seen is None else '+'.join(seen[1])} {metric}@{k}", str(data), rows)
    if seen is not None:
        out.notes += _comparability(seen[0], seen[1], published[0], distractors)
    return out


def _comparability(local, names, reference_entry, distractors: bool) -> list[str]:
    """Why the differences may mean nothing: other data, other query counts, no distractors."""
    notes = []
    if local.group.key != reference_entry.group.key:
        notes.append(f"the data is {local.group.key}, not the published {reference_entry.group.key}")
    counts = {s: (int(local.subsets[s].get("num_queries") or 0), int(reference_entry.subsets.get(s, {}).get("num_queries") or 0))
              for s in names}
    differ = {s: c for s, c in counts.items() if c[0] != c[1]}
    if differ:
        notes.append("query counts differ from the published ones (" + ", ".join(
            f"{s}: {a} here, {b} published" for s, (a, b) in differ.items()) + ")")
    if not distractors:
        notes.append("run without the noise gallery; the published figures include it")
    if notes:
        notes.append("so these scores are not the published measurement and their differences mean nothing")
    return notes
