"""A result as text: the fixed-width table ``lookbench evaluate`` prints (``EvaluationResult.table``), its block per
release and its block of attribute errors (also ``lookbench explain``'s)."""
from __future__ import annotations

from lookbench import terminal
from lookbench.results import stats
from lookbench.results.trust import SCORED_SEALED

# The table's columns, most wanted first: when the terminal is too narrow they are left out from the end (Fine@1
# and the query count stay); every score and interval is in results.json.
_COLUMNS = (("Fine@1", "fine_recall@1"), ("Coarse@1", "coarse_recall@1"), ("nDCG@5", "ndcg@5"),
            ("Fine@10", "fine_recall@10"), ("MRR@10", "mrr@10"), ("Fine@5", "fine_recall@5"), ("Fine@20", "fine_recall@20"),
            ("MAP@10", "map@10"), ("Coarse@10", "coarse_recall@10"), ("Outfit@1", "outfit_fine_recall@1"),
            ("nDCG@10", "ndcg@10"))


# The intervals' note when the details are left out (the method in full: stats.note, with --details).
BRIEF_NOTE = "[lo, hi]: the 95% interval (how it is drawn: --details); all scores and intervals in results.json."

# What each mode counts as a fine hit, for the table's line of the other mode.
_MODE_WORDS = {"strict": "category + every query attribute, the paper's", "leaderboard": "category + main attribute, "
               "the published table's"}


def _after(releases: list[str], cutoff) -> set[str]:
    """The releases whose snapshot date lies after a declared training cutoff (none when it is undeclared)."""
    from lookbench.filtering import to_utc
    from lookbench.schema import release_date

    return set() if cutoff is None else {r for r in releases if release_date(r) > to_utc(cutoff)}


def _rate(block) -> str:
    """An attribute error rate with its (asymmetric) Wilson interval, ``-`` without one."""
    return terminal.score(block["rate"], block["ci95"]) if block else "-"


def attribute_lines(errors: dict, width: int) -> list[str]:
    """The attribute error block of a table: one row per attribute, its overall rate@1 with its interval, its most
    frequent confusion, each subset's rate and the overall count; subsets then the confusion left out to fit
    ``width``. ``errors``: subset or "overall" -> ``attribute_errors`` (``None`` for a result written before they
    were kept)."""
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


def table(result, width: int | None = None, published: str | None = None, details: bool = True) -> str:
    """``EvaluationResult.table``: subsets (and the overall) × the leading scores as ``85.8 [80.1, 90.2]``, never
    wider than ``width``; a line per other mode judged, the per-release block, the attribute errors, the counts.
    ``details`` False: the per-release block and the attribute errors left out and the intervals' method in a few
    words, so `lookbench evaluate` fits one screen (its --details prints them)."""
    at = width or terminal.width()
    rows = list(result.subsets.items()) + [("overall", result.overall)]
    p = result.meta
    kind = p.queries
    title = (f"{p.dataset.title} — model {p.model.name}, "
             + ("" if kind == "image" else f"text queries ({kind.removeprefix('text-')} form), ")
             + f"{p.mode} mode, "
             f"{'with' if p.distractors else 'without'} distractors, search {p.search}"
             + (f", queries after {p.cutoff}" if p.cutoff else ""))
    lines = terminal.table(
        [terminal.Column("subset", "left"), *(t for t, _ in _COLUMNS), "queries"],
        [[n, *(terminal.score(r.get(key), result.intervals.get(n, {}).get(key)) for _, key in _COLUMNS),
          str(int(r.get("num_queries", 0)))] for n, r in rows],
        title=title, drop_order=[t for t, _ in reversed(_COLUMNS[1:])], at=at)
    for mode, other in result.modes.items():
        said = [] if other is result else [
            f"{mode} mode ({_MODE_WORDS.get(mode, mode)}): overall Fine@1 "
            + terminal.score(other.overall.get("fine_recall@1"), other.intervals.get("overall", {}).get("fine_recall@1"))]
        said += [published] if mode == "leaderboard" and published else []
        lines += terminal.paragraph("; ".join(said), at) if said else []
    releases = list(result.per_release.get("overall", {}))
    if details and len(releases) > 1:
        lines += [""] + _release_table(result, releases, at)
    if details:
        lines += attribute_lines({n: r.get("attribute_errors") for n, r in rows}, at)
    counts = p.counts
    skipped = len(counts["invalid_images_skipped"])
    intervals = p.intervals
    # a result answered from the store did no work now: its counts and seconds are those of the run that made it
    when = f"stored result of {p.evaluated_at or 'an earlier run'}: " if result.reused else ""
    footer = (((stats.note(intervals) if details else BRIEF_NOTE) + " " if intervals else "")
              + f"{when}{counts['self_matches_removed']} self-match(es) removed; {counts['forward_images']} image(s) "
              f"encoded, {counts['cache_hits']} from cache; "
              + (f"{counts['texts_encoded']} text(s) encoded; " if counts.get("texts_encoded") else "")
              + (f"{skipped} unreadable image(s) skipped (listed in the provenance); " if skipped else "")
              + f"{p.wall_time_s:.1f} s")
    lines += terminal.paragraph(footer, at)
    return "\n".join(lines)


def _release_table(result, releases: list[str], at: int) -> list[str]:
    """Per release: overall Fine@1, each subset's Fine@1, then the other overall scores (left out first, from the
    end, then the subsets from the last)."""
    blocks = {n: result.per_release.get(n, {}) for n in [*result.subsets, "overall"]}
    bounds = {n: result.release_intervals.get(n, {}) for n in blocks}

    def by_release(name, key):
        return [terminal.score(blocks[name].get(r, {}).get(key), bounds[name].get(r, {}).get(key)) for r in releases]

    keys = [(title, key) for title, key in _COLUMNS if key in blocks["overall"][releases[0]]]
    columns = ([(keys[0][0], by_release("overall", keys[0][1]))] + [(n, by_release(n, "fine_recall@1")) for n in result.subsets]
               + [(title, by_release("overall", key)) for title, key in keys[1:]])
    queries = [str(int(blocks["overall"][r]["num_queries"])) for r in releases]
    cutoff = result.meta.model.training_cutoff
    after = _after(releases, cutoff)
    names = [r + (" *" if r in after else "") for r in releases]
    return terminal.table(
        [terminal.Column("release", "left"), *(t for t, _ in columns), "queries"],
        [[name, *(cells[i] for _, cells in columns), queries[i]] for i, name in enumerate(names)],
        title="Per release (each release's queries, the gallery whole): overall Fine@1, each subset's Fine@1, then "
              "the other overall scores.",
        footnotes=[f"* a release after the model's declared training cutoff ({cutoff})"] if after else [],
        drop_order=[t for t, _ in reversed(keys[1:])] + list(reversed(result.subsets)), at=at)


def sealed_table(run, width: int | None = None) -> str:
    """``SealedRun.table``: no score, the rankings' counts and how to have them scored."""
    width = width or terminal.width()
    p = run.meta
    sealed = p.dataset.sealed
    until = f" until {sealed['until']}" if sealed.get("until") else ""
    lines = terminal.paragraph(f"{p.dataset.title} — model {p.model.name}: releases "
                               f"{', '.join(sealed['releases'])} are sealed{until}, so no score is computed here.",
                               width)
    lines += [line for name, block in run.subsets.items() for line in terminal.paragraph(
        f"  {name}: {block['num_queries']} queries ranked in {block['gallery_size']} gallery rows", width, "    ")]
    saved = "the rankings are saved beside the result" if run.rankings else \
        "no ranking was saved: evaluate again with --save-predictions"
    lines += terminal.paragraph(f"{saved}; to have them scored, send them to the leaderboard: lookbench submit "
                                f"{run.stored or '<results.json>'} (it scores them against the withheld labels and "
                                f"shows the row as {SCORED_SEALED}).", width)
    return "\n".join(lines)
