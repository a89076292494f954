"""``lookbench verify``: a submission re-scored from its rankings, so no leaderboard takes a score as typed.

A submission (docs/submitting.md) is a result JSON with each subset's saved ranking beside it (``results.json`` and
``results.predictions/<subset>.parquet``, as ``evaluate --output`` and the store keep them). Each ranked row is judged
again against the data's own ground truth: the gallery row it names (``gallery_index``, whose ``item_id`` must be the
one written) is looked up in the snapshot, and the annotations written in the file are never read. The scoring is the
engine's (``score_queries``, ``summarise``, ``combine_subsets``, ``per_release``); every score the JSON claims must
agree within ``TOLERANCE``, and so must its per-query outcomes. Files are read only inside the submission, their size
capped before they are parsed.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lookbench.errors import EvaluationError
from lookbench.files import contained_file, read_regular
from lookbench.paths import looks_like_hub_id
from lookbench.results.store import Settings, predictions_folder, read_json
from lookbench.settings import EMBEDDED_MINI

TOLERANCE = 1e-6  # percent points: a recomputed score is the engine's own arithmetic, so an honest one is exact
RESULT_NAME = "results.json"
MAX_RANKING_BYTES = 256 * 1024 * 1024  # one subset's ranking file, and the decoded size of the columns read
MAX_RANKING_ROWS = 1 << 22  # 200,000 queries x 20 ranks; a file of more rows is never decoded
MAX_FOLDERS = 10_000  # folders walked looking for the one submission below PATH
_COLUMNS = {"query": "int", "query_item_id": "str", "rank": "int", "gallery_index": "int", "item_id": "str"}
_NOT_SCORES = ("ci95", "per_query", "per_release", "per_category", "self_matches_removed")  # checked apart, or no score
_SHOWN = 10  # problems named per subset


@dataclass
class Verification:
    """The verdict on one submission: ``verified`` only when no reason stands against it. ``scores`` holds every
    claimed score as (name, claimed, recomputed), recomputed ``None`` where the rankings give no such score."""

    verified: bool
    reasons: list[str]
    scores: list[tuple[str, object, float | None]] = field(default_factory=list)
    result: str = ""
    data: str = ""


@dataclass
class Ranking:
    """The columns of one subset's saved ranking that verify and submit read: per row the query (1-based) and its
    item id, the rank (1-based), the gallery row (0-based, noise rows after the subset's) and the retrieved item id."""

    query: np.ndarray
    query_item_id: np.ndarray
    rank: np.ndarray
    gallery_index: np.ndarray
    item_id: np.ndarray

    def shallowest(self) -> tuple[int, int]:
        """(depth, query) of the query ranked least deep."""
        queries, depth = np.unique(self.query, return_counts=True)
        at = int(np.argmin(depth)) if depth.size else 0
        return (int(depth[at]), int(queries[at])) if depth.size else (0, 0)


def locate(path) -> tuple[Path, str]:
    """(folder, file name) of the result JSON: ``path`` itself, its ``results.json``, or the one ``results.json`` below
    it (the output of ``submit --dry-run``, laid out as the results repo). Symlinked folders are not entered."""
    path = Path(path)
    if not path.is_dir():
        return path.parent, path.name
    if os.path.lexists(path / RESULT_NAME):
        return path, RESULT_NAME
    found = []
    for visited, (root, folders, names) in enumerate(os.walk(path)):
        if visited > MAX_FOLDERS:
            raise ValueError(f"{path} holds more than {MAX_FOLDERS} folders; name the submission folder itself")
        if RESULT_NAME in names:
            found.append(Path(root))
            folders.clear()
    if len(found) != 1:
        listed = ": " + ", ".join(sorted(str(f.relative_to(path)) for f in found)[:5]) if found else ""
        raise ValueError(f"{path} holds {len(found) or 'no'} submission(s) ({RESULT_NAME}){listed}; "
                         "name one submission folder")
    return found[0], RESULT_NAME


def ranking_bytes(folder: Path, relative: str) -> bytes:
    """A ranking file inside ``folder``: regular, at most ``MAX_RANKING_BYTES`` (its size checked before it is read)."""
    path, shown = contained_file(folder, relative), Path(folder) / relative
    if path.stat().st_size > MAX_RANKING_BYTES:
        raise ValueError(f"{shown} is larger than the {MAX_RANKING_BYTES}-byte limit of one file")
    return read_regular(path, MAX_RANKING_BYTES, shown)


def parse_ranking(data: bytes, shown: str) -> Ranking:
    """The columns verify reads from a ranking's Parquet bytes; its row count and the decoded size of those columns are
    checked in the file's metadata first, and strings stay dictionary-encoded, so no file decodes to gigabytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(pa.BufferReader(data)).metadata
        if meta.num_rows > MAX_RANKING_ROWS:
            raise ValueError(f"{shown} holds {meta.num_rows} rows; a ranking holds at most {MAX_RANKING_ROWS}")
        columns = [meta.row_group(g).column(c) for g in range(meta.num_row_groups)
                   for c in range(meta.num_columns)]
        decoded = sum(c.total_uncompressed_size for c in columns if c.path_in_schema in _COLUMNS)
        if decoded > MAX_RANKING_BYTES:
            raise ValueError(f"{shown} decodes to {decoded} bytes; a ranking's columns hold at most {MAX_RANKING_BYTES}")
        names = meta.schema.to_arrow_schema().names
        missing = [c for c in _COLUMNS if c not in names]
        if missing:
            raise ValueError(f"{shown}: column {missing[0]} is missing")
        # one thread: pyarrow's reader threads, left at exit, abort the interpreter now and then (pyarrow 26)
        table = pq.read_table(pa.BufferReader(data), columns=list(_COLUMNS), read_dictionary=["query_item_id", "item_id"],
                              use_threads=False)
    except (OSError, pa.ArrowException) as err:
        first = (str(err).splitlines() or [type(err).__name__])[0][:200]
        raise ValueError(f"{shown} cannot be read as a saved ranking ({first})") from None
    out = {}
    for name, kind in _COLUMNS.items():
        column = table[name]
        value_type = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        right = (pa.types.is_integer(value_type) if kind == "int"
                 else pa.types.is_string(value_type) or pa.types.is_large_string(value_type))
        if not right:
            raise ValueError(f"{shown}: column {name} is {column.type}, not {'an integer' if kind == 'int' else 'text'}")
        if column.null_count:
            raise ValueError(f"{shown}: column {name} has {column.null_count} empty value(s)")
        out[name] = column.to_numpy().astype(np.int64) if kind == "int" else _strings(column)
    return Ranking(**out)


def _strings(column) -> np.ndarray:
    """A dictionary-encoded text column as an object array sharing one str per distinct value."""
    parts = [np.asarray(chunk.dictionary.to_pylist(), dtype=object)[chunk.indices.to_numpy(zero_copy_only=False)]
             if hasattr(chunk, "dictionary") else np.asarray(chunk.to_pylist(), dtype=object) for chunk in column.chunks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)


def named_data(dataset: dict):
    """The data a result names, as ``--data`` takes it: ``None`` for the embedded LookBench-Mini (rebuilt), a Hub
    dataset at the commit it recorded, or a local folder that is here. Other data is an ``EvaluationError``, as data
    ``load_benchmark`` cannot load is: the data is missing here, the submission is not at fault."""
    label, commit = dataset.get("data"), dataset.get("commit")
    if label == EMBEDDED_MINI:
        return None
    if isinstance(label, str) and isinstance(commit, str) and looks_like_hub_id(label):
        return f"{label.partition('@')[0]}@{commit}"
    if isinstance(label, str) and Path(label).is_dir():
        return label
    raise EvaluationError(f"the result's data {label!r} is neither the embedded LookBench-Mini, a Hub dataset at a "
                          "recorded commit, nor a folder here: give --data")


def verify_submission(path, data=None) -> Verification:
    """Re-score the submission at ``path`` (a submission folder, a folder holding one, or a stored result with
    rankings) on ``data`` (default: the data the result names). Bad input is a ``ValueError`` naming the file."""
    from lookbench.engine.data import load_benchmark

    folder, name = locate(path)
    result = read_json(contained_file(folder, name), folder / name)
    provenance, blocks, settings = _parts(result, str(folder / name))
    saved, rankings = provenance.get("saved_predictions"), {}
    for subset in blocks:  # every file is read and checked before any data is loaded
        relative = f"{predictions_folder(Path(name)).name}/{subset}.parquet"
        if not isinstance(saved, list) or subset not in saved:
            raise ValueError(f"{folder / name} has no saved ranking of {subset} ({relative}); a result is verified "
                             "from its rankings")
        rankings[subset] = (relative, parse_ranking(ranking_bytes(folder, relative), str(folder / relative)))
    bench = load_benchmark(named_data(provenance["dataset"]) if data is None else data,
                           list(settings.subsets) if settings.chosen_subsets else None, settings.cutoff,
                           settings.distractors)
    label, revision = bench.provenance["data"], bench.provenance["revision"]
    verdict = Verification(False, [], result=str(folder / name), data=f"{label} (revision {revision})")
    claimed = provenance["dataset"].get("revision")
    if claimed != revision:
        verdict.reasons.append(f"the result is for data revision {claimed}; {label} is revision {revision}: its "
                               "rankings are not judged against other data")
        return verdict
    if set(blocks) != set(bench.subsets):
        verdict.reasons.append(f"the result scores {', '.join(sorted(blocks))}; with its settings {label} has "
                               f"{', '.join(bench.subsets)}")
        return verdict
    matrices = {}
    for subset, splits in bench.subsets.items():
        relative, ranking = rankings[subset]
        gallery = list(splits["gallery"]["item_id"]) + (list(bench.noise["item_id"]) if bench.noise is not None else [])
        problems, matrices[subset] = _matrix(ranking, list(splits["query"]["item_id"]), gallery, subset, relative,
                                             bench.noise is not None)
        verdict.reasons += problems
    if verdict.reasons:
        return verdict
    scores, outcomes, releases = _rescore(bench, matrices, settings.mode)
    verdict.scores = list(_compared(result, blocks, scores, releases))
    verdict.reasons += [f"{n} claimed {_number(c)}, recomputed {_number(r)}" for n, c, r in verdict.scores
                        if not _agrees(c, r)]
    for subset, o in outcomes.items():
        verdict.reasons += _outcome_differences(subset, blocks[subset].get("per_query"), o.to_json())
    verdict.verified = not verdict.reasons
    return verdict


def _parts(result, name: str) -> tuple[dict, dict, Settings]:
    """The provenance, the subsets' blocks and the settings of a result, or a ValueError saying what is malformed."""
    from lookbench.schema import TEST_SUBSETS
    from lookbench.settings import MODES

    if not isinstance(result, dict) or not isinstance(result.get("provenance"), dict):
        raise ValueError(f"{name} is not a LookBench result: it has no provenance")
    provenance = result["provenance"]
    if not isinstance(provenance.get("dataset"), dict):
        raise ValueError(f"{name}: provenance.dataset is {provenance.get('dataset')!r}, not the data's description")
    blocks = {key: block for key, block in result.items() if key not in ("overall", "provenance")}
    bad = next((key for key, block in blocks.items() if not isinstance(block, dict)), None)
    if bad is not None or not blocks:
        raise ValueError(f"{name}: {bad or 'no subset'} is not a block of scores")
    foreign = next((key for key in blocks if key not in TEST_SUBSETS), None)
    if foreign is not None:
        raise ValueError(f"{name}: {foreign[:100]!r} is not a LookBench subset ({', '.join(TEST_SUBSETS)})")
    try:
        if not isinstance(provenance.get("subsets"), list) or not all(isinstance(s, str) for s in provenance["subsets"]):
            raise TypeError(f"subsets is {provenance.get('subsets')!r}, not a list of names")
        settings = Settings.of(provenance)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{name}: the provenance's settings cannot be read ({err})") from None
    if settings.mode not in MODES:
        raise ValueError(f"{name}: provenance.mode is {settings.mode!r}, not one of {', '.join(MODES)}")
    return provenance, blocks, settings


def _matrix(ranking: Ranking, query_ids: list, gallery_ids: list, subset: str, shown: str, noise: bool):
    """(problems, matrix): the rankings as the metric takes them (queries x depth gallery rows in the data's query
    order, -1 pads), or the problems that stop it (a query missing or listed twice, an item not the gallery's)."""
    q, rank, index, qid, iid = ranking.query, ranking.rank, ranking.gallery_index, ranking.query_item_id, ranking.item_id
    n, size = len(query_ids), len(gallery_ids)
    queries, gallery = np.asarray(query_ids, dtype=object), np.asarray(gallery_ids, dtype=object)
    if n == 0:
        return [f"{subset}: the data has no query under the result's settings"], None
    problems = []

    def named(p):
        return f"query {p} ({queries[p - 1]})"

    inside = (q >= 1) & (q <= n)
    first = {}
    for number, item in enumerate(query_ids, 1):
        first.setdefault(item, number)
    for p in np.unique(q[~inside]):
        item = qid[q == p][0]
        problems.append(f"{subset}: {named(first[item])} appears more than once in {shown} (again as query {p})"
                        if item in first else f"{subset}: query {p} ({item}) of {shown} is not one of the {n} queries")
    wrong = inside & (qid != queries[np.clip(q, 1, max(n, 1)) - 1])
    for p in np.unique(q[wrong]):
        problems.append(f"{subset}: query {p} is {qid[wrong & (q == p)][0]!r} in {shown}; the data's query {p} is "
                        f"{queries[p - 1]!r}")
    qi, ri, gi = q[inside], rank[inside], index[inside]
    counts = np.bincount(qi, minlength=n + 1)[1:]
    problems += [f"{subset}: {named(p)} has no ranking in {shown}" for p in np.flatnonzero(counts == 0) + 1]
    twice = set()  # queries named once for a repeat are not named again for what follows from it
    for column, what in ((ri, "{0} appears more than once in {1} (rank {2} is given {3} times)"),
                         (gi, "{0} ranks gallery row {2} {3} times in {1}")):
        pairs, times = np.unique(np.stack([qi, column]), axis=1, return_counts=True)
        for (p, value), count in zip(pairs.T[times > 1], times[times > 1]):
            if p not in twice:
                twice.add(p)
                problems.append(f"{subset}: " + what.format(named(p), shown, value, count))
    lowest, highest = np.full(n + 1, np.iinfo(np.int64).max), np.zeros(n + 1, dtype=np.int64)
    np.minimum.at(lowest, qi, ri)
    np.maximum.at(highest, qi, ri)
    for p in np.flatnonzero((counts > 0) & ((lowest[1:] != 1) | (highest[1:] != counts))) + 1:
        if p not in twice:
            problems.append(f"{subset}: {named(p)} has ranks {lowest[p]}..{highest[p]} in {shown}, not 1..{counts[p - 1]}")
    at = np.clip(index, 0, max(size, 1) - 1)
    off = (index < 0) | (index >= size) | (iid != gallery[at] if size else True)
    known = set(gallery_ids)
    where = f"the {subset} gallery" + (" nor the noise gallery" if noise else "")
    for row in np.flatnonzero(off):
        item, spot = iid[row], f"(query {q[row]}, rank {rank[row]})"
        problems.append(f"{subset}: item_id {item!r} {spot} is in neither {where}" if item not in known else
                        f"{subset}: item_id {item!r} {spot} is not gallery row {index[row]} of {shown}")
    if problems:
        more = [f"{subset}: and {len(problems) - _SHOWN} more problem(s) in {shown}"] if len(problems) > _SHOWN else []
        return problems[:_SHOWN] + more, None
    matrix = np.full((n, int(counts.max())), -1, dtype=np.int64)
    matrix[qi - 1, ri - 1] = gi
    return [], matrix


def _rescore(bench, matrices: dict, mode: str) -> tuple[dict, dict, dict]:
    """What the engine writes for these rankings: per subset its scores (with ``gallery_size``) and ``overall``, each
    subset's outcomes, and the scores per release."""
    from lookbench.metric.fine_recall.judging import DEFAULT_K, combine_subsets, score_queries, summarise
    from lookbench.metric.fine_recall.records import RECORD_FIELDS, GalleryColumns
    from lookbench.results.outcomes import Outcomes
    from lookbench.results.per_release import per_release

    noise = None if bench.noise is None else GalleryColumns(bench.noise)
    scores, outcomes, sizes = {}, {}, {}
    for name, matrix in matrices.items():
        queries = bench.subsets[name]["query"]
        annotations = queries.select_columns([*RECORD_FIELDS, "item_id"]
                                             + (["release"] if "release" in queries.column_names else []))
        gallery = GalleryColumns(bench.subsets[name]["gallery"])
        gallery = gallery + noise if noise is not None else gallery
        per_query = score_queries(matrix, annotations, gallery, k=list(DEFAULT_K), mode=mode)
        scores[name], outcomes[name], sizes[name] = summarise(per_query), Outcomes.of(per_query, annotations), len(gallery)
    scores["overall"] = combine_subsets({name: scores[name] for name in matrices})
    for name, size in sizes.items():
        scores[name] = {**scores[name], "gallery_size": size}
    return scores, outcomes, per_release(outcomes)[0]


def _compared(result: dict, blocks: dict, scores: dict, releases: dict):
    """(name, claimed, recomputed) of every score the result claims: per subset and overall, per category, per release."""
    for name, block in [*blocks.items(), ("overall", result.get("overall"))]:
        truth = scores.get(name, {})
        yield from _rows(name, block, truth)
        if not isinstance(block, dict):
            continue
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
                yield f"{scope} {flat}", number, truth.get(flat)
        else:
            yield f"{scope} {key}", value, truth.get(key)


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
        return json.dumps({"verified": verdict.verified, "result": verdict.result, "data": verdict.data,
                           "reasons": verdict.reasons, "scores": [
                               {"name": n, "claimed": plain(c), "recomputed": r, "agrees": _agrees(c, r)}
                               for n, c, r in verdict.scores]}, indent=2)
    width = max([len("score"), *(len(n) for n, _, _ in verdict.scores)])
    lines = [f"{verdict.result}: rankings re-judged against {verdict.data}"]
    if verdict.scores:
        lines.append(f"{'score':<{width}} {'claimed':>14} {'recomputed':>14}")
        lines += [f"{n:<{width}} {_number(c):>14} {_number(r):>14} {'agrees' if _agrees(c, r) else 'DIFFERS'}"
                  for n, c, r in verdict.scores]
    lines += [f"- {reason}" for reason in verdict.reasons]
    differing = sum(not _agrees(c, r) for _, c, r in verdict.scores)
    if verdict.verified:
        lines.append(f"verified: all {len(verdict.scores)} claimed scores agree with the rankings re-judged against "
                     f"the data (within {TOLERANCE:g})")
    elif verdict.scores:
        other = len(verdict.reasons) - differing
        lines.append(f"not verified: {differing} of {len(verdict.scores)} claimed scores differ from what the rankings "
                     "give" + (f", and {other} other problem(s)" if other else "") + " (listed above)")
    else:
        lines.append(f"not verified: {len(verdict.reasons)} problem(s), listed above")
    return "\n".join(lines)
