"""``lookbench verify``: a submission re-judged from its rankings by the one judge, and every field that places its
row recomputed from the data it was judged on.

A submission (docs/submitting.md) is read as ``lookbench.results.folder.read_submitted`` reads one: every file of its
folder once, hashed (the verdict's ``key``), the result and the rankings parsed from those same bytes, so a verdict is
never shown for bytes it did not hash. Each ranked row is judged again against the data's own ground truth
(``lookbench.results.judge``, the engine's own judge): the gallery row it names (``gallery_index``, whose ``item_id``
must be the one written) is looked up in the data, and the annotations written in the file are never read. Every score
the JSON claims must agree within ``TOLERANCE``, and so must its per-query outcomes; every field a leaderboard places a
row by (data name, key, releases, revision, commit, query kind and words, mode, cutoff, distractors, subsets, K) must
be what the data and the rankings give: ``placement`` is that record, and the leaderboard reads it, never the file. All
work is bounded: rows by queries x the deepest K reported, decoded bytes by the pages' own headers
(``lookbench.results.rankings``), messages by count and length.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

import numpy as np

from lookbench import terminal
from lookbench.errors import EvaluationError, clip, shorten
from lookbench.hub import looks_like_hub_id
from lookbench.results.attributes import differences as attribute_differences
from lookbench.results.folder import deepest_k, read_submitted
from lookbench.results.halves import HELD, SHOWN, headline, rounded, shown
from lookbench.results.rankings import TEXT_COLUMN, Ranking
from lookbench.results.provenance import UNSEALED, Provenance, named_data
from lookbench.results.store import Settings

TOLERANCE = 1e-6  # percent points: a recomputed score is the engine's own arithmetic, so an honest one is exact
MAX_REASONS = 20  # problems kept per verdict (the table of claimed scores lists every difference)
_NOT_SCORES = ("ci95", "per_query", "per_release", "per_category", "self_matches_removed", "attribute_errors")  # checked apart, or no score
_SHOWN = 10  # problems named per subset
# The fields of provenance.dataset the data itself gives, compared one by one.
_DATA_FIELDS = ("name", "key", "revision", "commit", "releases")
_SEALED_FIELDS = ("releases", "until", "repo")  # of provenance.dataset.sealed: what is sealed (its labels are the board's)
SEALED_BLOCK = frozenset({"num_queries", "gallery_size", "self_matches_removed"})  # all a sealed run's blocks hold


SEALED = "sealed: scored by the leaderboard (the release's labels are withheld until it is unsealed)"


@dataclass
class Verification:
    """The verdict on one submission: ``verified`` only when no reason stands against it. ``scores`` holds every
    claimed score as (name, claimed, recomputed), recomputed ``None`` where the rankings give no such score. ``key``:
    the sha256 of every file judged; ``placement``: what places its row, recomputed (only when verified);
    ``claims``: the result exactly as judged (parsed from the hashed bytes)."""

    verified: bool
    reasons: list[str]
    scores: list[tuple[str, object, float | None]] = field(default_factory=list)
    result: str = ""
    data: str = ""
    key: str = ""
    placement: dict | None = None
    claims: dict | None = None
    attributes_checked: bool = False  # did the result claim attribute errors (each then checked)?
    sealed: bool = False  # a sealed release's rankings: scored only where its labels are (``scored``)
    scored: dict | None = None  # a sealed submission's scores, as the leaderboard ranks them (``sealed_scores``)
    halves: dict | None = None  # and its headline on each half of the queries (``lookbench.results.halves``)
    judged: "Judged | None" = field(default=None, repr=False, compare=False)  # verified and not sealed: what was judged


@dataclass(frozen=True)
class Judged:
    """What a verified submission was judged as, kept so what is shown of it (the leaderboard's "Your results") is the
    judge's, never the file's: the data, each subset's ranking (queries x depth gallery rows, -1 pads) and the
    judgement."""

    bench: object
    rankings: dict
    judgement: object
    mode: str


def _benchmark(data, settings: Settings, text_form, labels):
    """The data to judge on. A sealed release is joined to ``labels`` when given (a folder or Hub id); else, for a Hub
    dataset, to the repo's main revision if it has been unsealed since (its labels public: ``UNSEALED``); else, with
    the board's ``labels`` (a mapping of labels repo -> that repo at its pinned revision), to the pinned labels; else
    it stays unlabelled."""
    from lookbench.engine.data import load_benchmark

    args = (list(settings.subsets) if settings.chosen_subsets else None, settings.cutoff, settings.distractors)
    pins = labels if isinstance(labels, dict) else None
    bench = load_benchmark(data, *args, text_form=text_form, labels=None if pins is not None else labels)
    if bench.unlabelled and isinstance(data, str) and looks_like_hub_id(data):
        try:
            return load_benchmark(data, *args, text_form=text_form, labels=data.partition("@")[0])
        except EvaluationError:  # not unsealed (or not reachable): sealed it stays
            pass
    pinned = (pins or {}).get(bench.provenance.get("sealed", {}).get("repo"))
    if bench.unlabelled and pinned is not None:
        return load_benchmark(data, *args, text_form=text_form, labels=pinned)
    return bench


def sealed_scores(judged) -> dict:
    """Per subset and overall: every ranked metric at every K and the query count, as a result's blocks hold them."""
    return {**{name: headline(j.scores) for name, j in judged.subsets.items()}, "overall": headline(judged.overall)}


def claimed_scores(result: dict) -> list[str]:
    """What a run on a sealed release claims beyond its counts (``SEALED_BLOCK``), as ``block field`` names: a sealed
    submission sends rankings only, and no answer may compare a claim with what the withheld labels give."""
    return [clip(f"{name} {field}", 80) for name, block in result.items() if name != "provenance" and isinstance(block, dict)
            for field in block if field not in SEALED_BLOCK]


def _halves(bench, matrices: dict, mode: str) -> dict | None:
    """The headline on the shown half of the queries (to one decimal) and on the held half, each judged on its own
    queries alone; ``None`` when the labels hold no split key."""
    if bench.split_key is None:
        return None
    masks = {name: shown(bench.split_key, _column(bench.subsets[name]["query"], "item_id")) for name in matrices}
    shown_half, held_half = (_rejudge(bench, matrices, mode, {n: m == side for n, m in masks.items()})
                             for side in (True, False))
    return {SHOWN: rounded(headline(shown_half.overall)), HELD: headline(held_half.overall)}


def verify_submission(path, data=None, allowed=None, labels=None) -> Verification:
    """Re-judge the submission at ``path`` (a submission folder, a folder holding one, or a stored result with
    rankings) on ``data`` (default: the data the result names; ``allowed`` limits which, see ``named_data``).
    ``labels``: a sealed release's labels (``engine.data.with_labels``); without them a sealed release is not scored
    here (``SEALED``). Bad input is a ``ValueError`` naming the file relative to the submission."""
    submitted = read_submitted(path)
    folder, name, key, result = submitted.folder, submitted.name, submitted.key, submitted.result
    provenance, blocks, settings, kmax = submitted.provenance, submitted.blocks, submitted.settings, deepest_k(submitted.blocks)
    text_form, sealed = provenance.text_form, provenance.dataset.is_sealed
    from lookbench.engine.data import as_recorded

    data = as_recorded(named_data(provenance.dataset, allowed) if data is None else data, provenance.dataset)
    bench = _benchmark(data, settings, text_form, labels)
    label, revision = bench.provenance["data"], bench.provenance["revision"]
    verdict = Verification(False, [], result=str(folder / name), data=f"{label} (revision {revision})", key=key,
                           claims=result, sealed=sealed or bench.unlabelled)
    if bench.unlabelled:  # placed as it would be, so submit can check the data; scored by the leaderboard
        verdict.reasons.append(SEALED)
        verdict.placement = _placement(bench, settings, [])
        return verdict
    verdict.reasons += _data_differences(provenance, bench.provenance, text_form)
    truth = bench.provenance.get("sealed")
    if sealed and not isinstance(truth, dict):
        verdict.reasons.append(f"provenance.dataset says {label} is sealed; the data it names is not")
    elif isinstance(truth, dict) and _what_is_sealed(provenance.dataset.sealed) != _what_is_sealed(truth):
        verdict.reasons.append(f"provenance.dataset.sealed is {shorten(provenance.dataset.sealed, 60)}; the data judged "
                               f"is a sealed release ({shorten(_what_is_sealed(truth), 100)})")
    elif sealed and claimed_scores(result):
        claimed = claimed_scores(result)
        verdict.reasons.append(f"a run on a sealed release claims {', '.join(claimed[:3])}"
                               + (f" and {len(claimed) - 3} more" if len(claimed) > 3 else "")
                               + ": a sealed submission sends rankings only, and the leaderboard scores them")
    if verdict.reasons:
        return verdict
    if set(blocks) != set(bench.subsets) or sorted(provenance.subsets) != sorted(bench.subsets):
        verdict.reasons.append(f"the result scores {', '.join(sorted(blocks))} (provenance.subsets "
                               f"{shorten(provenance.subsets, 60)}); with its settings {label} has "
                               f"{', '.join(bench.subsets)}")
        return verdict
    matrices, noise = {}, _column(bench.noise, "item_id") if bench.noise is not None else []
    for subset, splits in bench.subsets.items():
        relative, ranking = submitted.ranking(subset), submitted.rankings[subset]
        words = _column(splits["query"], "query_text") if text_form is not None else None
        problems, matrices[subset] = _matrix(ranking, _column(splits["query"], "item_id"),
                                             _column(splits["gallery"], "item_id") + noise, subset, relative,
                                             bench.noise is not None, kmax, words)
        verdict.reasons += problems
    if verdict.reasons:
        verdict.reasons = verdict.reasons[:MAX_REASONS]
        return verdict
    judged = _rejudge(bench, matrices, settings.mode)
    scores = {name: {**j.scores, "gallery_size": j.gallery_size} for name, j in judged.subsets.items()}
    scores["overall"] = judged.overall
    verdict.scores = list(_compared(result, blocks, scores, judged.per_release))
    differing = [f"{n} claimed {_number(c)}, recomputed {_number(r)}" for n, c, r in verdict.scores if not _agrees(c, r)]
    # A result written before attribute errors were kept claims none: its scores are verified, its attribute
    # errors neither checked nor shown (the verdict says so). One that claims them has every one checked.
    claimed_attributes = any(isinstance(b, dict) and "attribute_errors" in b for b in [*blocks.values(), result.get("overall")])
    outcomes = [] if sealed else [  # a sealed run keeps no outcome: they come from the labels
        reason for subset, j in judged.subsets.items()
        for reason in _outcome_differences(subset, blocks[subset].get("per_query"),
                                           _kept(j.outcomes.to_json(), blocks[subset], claimed_attributes))]
    if claimed_attributes:
        outcomes += [reason for name, block in [*blocks.items(), ("overall", result.get("overall"))]
                     for reason in attribute_differences(block.get("attribute_errors") if isinstance(block, dict) else block,
                                                         scores[name]["attribute_errors"],
                                                         name, TOLERANCE)]
    verdict.attributes_checked = claimed_attributes
    half = MAX_REASONS // 2  # the table lists every score; the reasons keep some of each kind
    verdict.reasons += differing[:half] + outcomes[:half]
    if len(differing) + len(outcomes) > 2 * half:
        verdict.reasons.append(f"and {len(differing) + len(outcomes) - 2 * half} more difference(s) (the table lists "
                               "every claimed score)")
    verdict.verified = not verdict.reasons
    if verdict.verified:
        from lookbench.metric.fine_recall.judging import DEFAULT_K

        verdict.placement = _placement(bench, settings, list(DEFAULT_K) if sealed else _claimed_ks(verdict.scores))
        verdict.scored = sealed_scores(judged) if sealed else None
        verdict.halves = _halves(bench, matrices, settings.mode) if sealed else None
        verdict.judged = None if sealed else Judged(bench, matrices, judged, settings.mode)
        if sealed:  # which labels scored it: the board re-checks what it scored while sealed once they are public
            verdict.placement["labels"] = UNSEALED if bench.provenance["sealed"]["labels"]["public"] else "withheld"
    return verdict


def _what_is_sealed(sealed) -> dict | None:
    """The fields of ``provenance.dataset.sealed`` a result is bound by (which labels joined it is the verifier's)."""
    return {f: sealed.get(f) for f in _SEALED_FIELDS} if isinstance(sealed, dict) else None


def _kept(truth: dict, block: dict, claimed_attributes: bool) -> dict:
    """The recomputed outcomes a result's own are held against: without its attribute marks when it keeps none and
    claims no attribute errors (written before they were kept)."""
    stored = block.get("per_query")
    if claimed_attributes or isinstance(stored, dict) and "attributes_at_1" in stored:
        return truth
    return {key: value for key, value in truth.items() if key != "attributes_at_1"}


def _column(dataset, name: str) -> list:
    """One column of a (possibly filtered) split as a list, read through Arrow at once (a Dataset's column reads row
    by row)."""
    return dataset.select_columns([name]).with_format("arrow")[:][name].to_pylist()


def _data_differences(provenance: Provenance, truth: dict, text_form: str | None) -> list[str]:
    """Where the result's description of its data differs from the data judged: every field a leaderboard groups by."""
    claimed = provenance.dataset
    problems = [f"provenance.dataset.{f} is {shorten(getattr(claimed, f), 60)}; the data judged gives "
                f"{shorten(truth.get(f), 60)}" for f in _DATA_FIELDS if getattr(claimed, f) != truth.get(f)]
    if text_form is not None and provenance.text_queries != truth.get("text_queries"):
        problems.append(f"provenance.text_queries is {shorten(provenance.text_queries, 60)}; the data's text "
                        f"config gives {shorten(truth.get('text_queries'), 60)}")
    return problems


def _claimed_ks(scores) -> list[int]:
    return sorted({int(m.group(1)) for n, _, _ in scores for m in [re.search(r"@(\d+)$", n)] if m})


def _placement(bench, settings: Settings, ks: list[int]) -> dict:
    """What places a verified row, every field taken from the data judged and the settings it was judged with."""
    data = bench.provenance
    sources = {s for splits in bench.subsets.values() for ds in splits.values()
               if "source" in ds.column_names for s in ds.unique("source")}
    return {"data": data["data"], **{f: data[f] for f in _DATA_FIELDS}, "queries": settings.queries,
            "mode": settings.mode, "cutoff": settings.cutoff, "distractors": settings.distractors,
            "subsets": sorted(bench.subsets), "k": ks, "sources": data.get("sources"),
            "synthetic": "synthetic" in sources or any(r.startswith("mini-") for r in data["releases"])}


def _matrix(ranking: Ranking, query_ids: list, gallery_ids: list, subset: str, shown: str, noise: bool, kmax: int,
            words: list | None = None):
    """(problems, matrix): the rankings as the judge takes them (queries x depth gallery rows in the data's query
    order, -1 pads), or the problems that stop it (a query missing or listed twice, ranked deeper than the result's
    deepest K, an item not the gallery's, a text query's words not the data's). Sorting-based throughout: the work is
    O(rows log rows) and at most ``_SHOWN`` messages are built, whatever the file holds."""
    q, rank, index, qid, iid = ranking.query, ranking.rank, ranking.gallery_index, ranking.query_item_id, ranking.item_id
    n, size = len(query_ids), len(gallery_ids)
    queries, gallery = np.asarray(query_ids, dtype=object), np.asarray(gallery_ids, dtype=object)
    if n == 0:
        return [f"{subset}: the data has no query under the result's settings"], None
    problems, extra = [], 0

    def add(message):
        nonlocal extra
        if len(problems) < _SHOWN:
            problems.append(f"{subset}: {message}")
        else:
            extra += 1

    def named(p):
        return f"query {p} ({clip(queries[p - 1], 60)})"

    if (ranking.query_text is not None) != (words is not None):
        add(f"{shown} holds the words of text queries, but the result's queries are images" if words is None else
            f"{shown} holds no {TEXT_COLUMN}; the result's queries are text")
        return [*problems], None
    inside = (q >= 1) & (q <= n)
    outside = np.flatnonzero(~inside)
    if outside.size:
        numbers, first_row = np.unique(q[outside], return_index=True)
        for p, row in zip(numbers[:_SHOWN], outside[first_row[:_SHOWN]]):
            add(f"query {p} ({clip(qid[row], 60)}) of {shown} is not one of the {n} queries")
        extra += max(0, numbers.size - _SHOWN)
    wrong = np.flatnonzero(inside & (qid != queries[np.clip(q, 1, n) - 1]))
    if wrong.size:
        numbers, first_row = np.unique(q[wrong], return_index=True)
        for p, row in zip(numbers[:_SHOWN], wrong[first_row[:_SHOWN]]):
            add(f"query {p} is {shorten(qid[row], 60)} in {shown}; the data's query {p} is {shorten(queries[p - 1], 60)}")
        extra += max(0, numbers.size - _SHOWN)
    if words is not None:
        said = np.asarray(words, dtype=object)
        differ = np.flatnonzero(inside & (ranking.query_text != said[np.clip(q, 1, n) - 1]))
        if differ.size:
            add(f"{named(int(q[differ[0]]))}'s words in {shown} are not the data's ({differ.size} row(s) differ)")
    qi, ri, gi = q[inside], rank[inside], index[inside]
    counts = np.bincount(qi, minlength=n + 1)[1:]
    missing = np.flatnonzero(counts == 0) + 1
    for p in missing[:_SHOWN]:
        add(f"{named(p)} has no ranking in {shown}")
    extra += max(0, missing.size - _SHOWN)
    twice = set()  # queries named once for a repeat are not named again for what follows from it
    for column, what in ((ri, "{0} appears more than once in {1} (rank {2} is given {3} times)"),
                         (gi, "{0} ranks gallery row {2} {3} times in {1}")):
        order = np.lexsort((column, qi))
        a, b = qi[order], column[order]
        repeat = np.flatnonzero((a[1:] == a[:-1]) & (b[1:] == b[:-1]))
        named_queries, first = np.unique(a[repeat], return_index=True)
        for p, at in zip(named_queries.tolist(), repeat[first].tolist()):
            if p not in twice and len(twice) < _SHOWN:
                add(what.format(named(p), shown, int(b[at]), int(np.count_nonzero((a == p) & (b == b[at])))))
            elif p not in twice:
                extra += 1
            twice.add(p)
    lowest, highest = np.full(n + 1, np.iinfo(np.int64).max), np.zeros(n + 1, dtype=np.int64)
    np.minimum.at(lowest, qi, ri)
    np.maximum.at(highest, qi, ri)
    for p in np.flatnonzero((counts > 0) & ((lowest[1:] != 1) | (highest[1:] != counts))) + 1:
        if p not in twice:
            add(f"{named(p)} has ranks {lowest[p]}..{highest[p]} in {shown}, not 1..{counts[p - 1]}")
    deep = [p for p in np.flatnonzero(counts > kmax) + 1 if p not in twice]
    if deep:
        add(f"{named(deep[0])} ranks {counts[deep[0] - 1]} items in {shown}; the result reports K up to {kmax}, and no "
            "ranking is judged deeper than that")
    at = np.clip(index, 0, max(size, 1) - 1)
    off = np.flatnonzero((index < 0) | (index >= size) | (iid != gallery[at] if size else True))
    if off.size:
        known = set(gallery_ids)
        where = f"the {subset} gallery" + (" nor the noise gallery" if noise else "")
        for row in off[:_SHOWN]:
            item, spot = shorten(iid[row], 60), f"(query {q[row]}, rank {rank[row]})"
            add(f"item_id {item} {spot} is in neither {where}" if iid[row] not in known else
                f"item_id {item} {spot} is not gallery row {index[row]} of {shown}")
        extra += max(0, off.size - _SHOWN)
    if problems:
        return problems + ([f"{subset}: and {extra} more problem(s) in {shown}"] if extra else []), None
    matrix = np.full((n, int(counts.max())), -1, dtype=np.int64)
    matrix[qi - 1, ri - 1] = gi
    return [], matrix


def _rejudge(bench, matrices: dict, mode: str, keep: dict | None = None):
    """The one judge on these rankings, as the engine ran it: each subset's gallery followed by the noise gallery.
    ``keep``: per subset, which queries are judged (a half's; a subset left with none is left out)."""
    from lookbench.metric.fine_recall.records import GalleryColumns
    from lookbench.results.judge import combine, gallery_columns, judge_subset, query_columns

    noise = None if bench.noise is None else GalleryColumns(bench.noise)
    judged = {}
    for name, matrix in matrices.items():
        queries = bench.subsets[name]["query"]
        if keep is not None:
            rows = np.flatnonzero(keep[name])
            if not rows.size:
                continue
            queries, matrix = queries.select(rows), matrix[rows]
        judged[name] = judge_subset(matrix, queries.select_columns(query_columns(queries)),
                                    gallery_columns(bench.subsets[name]["gallery"], noise), mode)
    return combine(judged)


def _compared(result: dict, blocks: dict, scores: dict, releases: dict):
    """(name, claimed, recomputed) of every score the result claims: per subset and overall, per category, per release."""
    for name, block in [*blocks.items(), ("overall", result.get("overall"))]:
        truth = scores.get(name, {})
        yield from _rows(name, block, truth)
        if not isinstance(block, dict):
            continue
        errors, given = block.get("attribute_errors"), truth.get("attribute_errors") or {}
        if errors is not None:
            for attribute in {**given, **(errors if isinstance(errors, dict) else {})}:
                said = errors.get(attribute) if isinstance(errors, dict) else errors
                for key in ("rate", "n"):
                    yield (clip(f"{name} attribute_errors.{attribute}.{key}"),
                           said.get(key) if isinstance(said, dict) else said, (given.get(attribute) or {}).get(key))
        for scope, by, given in (("per_category ", block.get("per_category"), truth.get("per_category") or {}),
                                 ("", block.get("per_release"), releases.get(name, {}))):
            for key, claimed in (by.items() if isinstance(by, dict) else [("", by)] if by is not None else []):
                yield from _rows(f"{name} {scope}{key}".rstrip(), claimed, given.get(key, {}))


def _rows(scope: str, block, truth: dict):
    """The claimed numbers of one block of scores (``metric -> "@K" -> value`` and counts) beside ``truth``'s."""
    if not isinstance(block, dict):
        yield scope, block, None
        return
    for key, value in block.items():
        if key in _NOT_SCORES:
            continue
        if isinstance(value, dict):
            for at, number in value.items():
                flat = f"{key}{at}" if str(at).startswith("@") else f"{key}.{at}"
                yield clip(f"{scope} {flat}"), number, truth.get(flat)
        else:
            yield clip(f"{scope} {key}"), value, truth.get(key)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _agrees(claimed, recomputed) -> bool:
    return _is_number(claimed) and _is_number(recomputed) and abs(claimed - recomputed) <= TOLERANCE


def _number(value) -> str:
    return f"{value:.6f}" if _is_number(value) and isinstance(value, float) else "none" if value is None else str(value)


def _outcome_differences(subset: str, stored, truth: dict) -> list[str]:
    """Where the result's per-query outcomes differ from the rankings' (the first query per column), so paired
    tests read what the rankings give."""
    where = f"{subset} per_query"
    if not isinstance(stored, dict):
        return [f"{where} is {type(stored).__name__}, not the outcomes of its queries"]
    problems = []
    for key, values in truth.items():
        columns = [(f"{key}.{at}", (stored.get(key) or {}).get(at) if isinstance(stored.get(key), dict) else None, given)
                   for at, given in values.items()] if isinstance(values, dict) else [(key, stored.get(key), values)]
        for label, claimed, given in columns:
            if not isinstance(claimed, list) or len(claimed) != len(given):
                shown = f"{len(claimed)} values" if isinstance(claimed, list) else type(claimed).__name__
                problems.append(f"{where}.{label} is {shown}; the rankings give {len(given)} values")
                continue
            bad = next((i for i, (c, g) in enumerate(zip(claimed, given)) if not (
                _agrees(c, g) if isinstance(g, float) else type(c) is type(g) and c == g)), None)
            if bad is not None:
                query = f"query {bad + 1} ({truth['item_id'][bad]})" if key != "k" else f"entry {bad + 1}"
                problems.append(f"{where}.{label}: {query} is {claimed[bad]!r} in the result, the rankings give "
                                f"{given[bad]!r}")
    return problems


def render(verdict: Verification, fmt: str = "table") -> str:
    """The verdict as a table (each score claimed vs recomputed, the reasons, the verdict last) or as JSON."""
    def plain(value):
        return value if value is None or isinstance(value, str) or _is_number(value) else repr(value)

    if fmt == "json":
        return json.dumps({"verified": verdict.verified, "attributes_checked": verdict.attributes_checked,
                           "result": verdict.result, "data": verdict.data, "sealed": verdict.sealed,
                           "scored": verdict.scored, "halves": verdict.halves, "reasons": verdict.reasons, "scores": [
                               {"name": n, "claimed": plain(c), "recomputed": r, "agrees": _agrees(c, r)}
                               for n, c, r in verdict.scores]}, indent=2)
    if verdict.sealed and not verdict.scores:
        return "\n".join(terminal.paragraph(f"{verdict.result}: {SEALED}"))
    title = f"{verdict.result}: rankings re-judged against {verdict.data}"
    if verdict.scores:
        lines = terminal.table(
            [terminal.Column("score", "left"), "claimed", "recomputed", terminal.Column("", "left")],
            [[n, _number(c), _number(r), "agrees" if _agrees(c, r) else "DIFFERS"] for n, c, r in verdict.scores],
            title=title)
    else:
        lines = terminal.paragraph(title)
    lines += [line for reason in verdict.reasons for line in terminal.paragraph(f"- {reason}", indent="  ")]
    differing = sum(not _agrees(c, r) for _, c, r in verdict.scores)
    if verdict.verified and verdict.scored is not None:
        overall = verdict.scored["overall"]
        last = (f"scored: the rankings of a sealed release, judged against its labels: overall Fine Recall@1 "
                f"{overall['fine_recall']['@1']:.2f}, Coarse Recall@1 {overall['coarse_recall']['@1']:.2f}, nDCG@5 "
                f"{overall['ndcg']['@5']:.2f} ({overall['num_queries']} queries)")
    elif verdict.verified:
        last = (f"verified: all {len(verdict.scores)} claimed scores agree with the rankings re-judged against the data "
                f"(within {TOLERANCE:g})")
        if not verdict.attributes_checked:
            lines += terminal.paragraph("attribute errors: none claimed (a result written before they were kept), "
                                        "none checked")
    elif verdict.scores:
        other = len(verdict.reasons) - differing
        last = (f"not verified: {differing} of {len(verdict.scores)} claimed scores differ from what the rankings give"
                + (f", and {other} other problem(s)" if other else "") + " (listed above)")
    else:
        last = f"not verified: {len(verdict.reasons)} problem(s), listed above"
    return "\n".join(lines + terminal.paragraph(last))
