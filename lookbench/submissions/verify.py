"""``lookbench verify``: a submission re-judged from its rankings by the one judge, and every field that places its
row recomputed from the data it was judged on.

A submission (docs/submitting.md) is one folder holding exactly one result JSON and each subset's saved ranking
beside it (``results.json`` and ``results.predictions/<subset>.parquet``, as ``evaluate --output`` and the store keep
them). Every file of the folder is read once and hashed (the verdict's ``key``); the result and the rankings are parsed
from those same bytes, so a verdict is never shown for bytes it did not hash. Each ranked row is judged again against
the data's own ground truth (``lookbench.results.judge``, the engine's own judge): the gallery row it names
(``gallery_index``, whose ``item_id`` must be the one written) is looked up in the data, and the annotations written in
the file are never read. Every score the JSON claims must agree within ``TOLERANCE``, and so must its per-query
outcomes; every field a leaderboard places a row by (data name, key, releases, revision, commit, query kind and words,
mode, cutoff, distractors, subsets, K) must be what the data and the rankings give: ``placement`` is that record, and
the leaderboard reads it, never the file. All work is bounded: rows by queries x the deepest K reported, decoded bytes
by the pages' own headers (``lookbench.submissions.ranking``), messages by count and length.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lookbench import terminal
from lookbench._version import __version__
from lookbench.errors import EvaluationError, clip
from lookbench.files import read_regular
from lookbench.hub import looks_like_hub_id
from lookbench.results.attributes import differences as attribute_differences
from lookbench.results.store import MAX_RESULT_BYTES, Settings, parse_json, predictions_folder
from lookbench.engine.results import mode_file
from lookbench.settings import EMBEDDED_MINI, MODES
from lookbench.submissions.ranking import (
    MAX_RANKING_BYTES,
    MAX_RANKING_ROWS,
    TEXT_COLUMN,
    Ranking,
    parse_ranking,
    shorten,
)

TOLERANCE = 1e-6  # percent points: a recomputed score is the engine's own arithmetic, so an honest one is exact
RESULT_NAME = "results.json"
# The other modes' results of one ``evaluate --output`` run (``lookbench.engine.results.mode_file``).
_OTHER_MODES = frozenset(mode_file(mode) for mode in MODES)
MAX_FOLDERS = 10_000  # folders walked looking for the one submission below PATH
MAX_FILES = 64  # files in one submission folder (a result, four rankings, a card)
MAX_OTHER_BYTES = 1024 * 1024  # any other file of a submission but a ranking (its README)
MAX_REASONS = 20  # problems kept per verdict (the table of claimed scores lists every difference)
_NOT_SCORES = ("ci95", "per_query", "per_release", "per_category", "self_matches_removed", "attribute_errors")  # checked apart, or no score
_SHOWN = 10  # problems named per subset
# What a killed write leaves beside its target (lookbench.files.new_sibling): never part of a submission.
_STALE = re.compile(r"\..+\.[a-z]+-[0-9a-f]+(\.previous)?")
# The fields of provenance.dataset the data itself gives, compared one by one.
_DATA_FIELDS = ("name", "key", "revision", "commit", "releases")


SEALED = "sealed: scored by the leaderboard (the release's labels are withheld until it is unsealed)"
UNSEALED = "unsealed"  # a sealed-era submission scored with the labels its release published since


class UnknownData(EvaluationError):
    """The data a result names is not one the verifier was allowed to load (the board's allow-list)."""


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


def _walk(path: Path):
    """os.walk below ``path``, links to folders not entered, the stale work of killed writes left out."""
    for visited, (root, folders, names) in enumerate(os.walk(path)):
        if visited > MAX_FOLDERS:
            raise ValueError(f"{path} holds more than {MAX_FOLDERS} folders; name the submission folder itself")
        folders[:] = sorted(f for f in folders if not _STALE.fullmatch(f))
        yield Path(root), folders, sorted(n for n in names if not _STALE.fullmatch(n))


def locate(path) -> tuple[Path, str]:
    """(folder, file name) of the result JSON: ``path`` itself, its ``results.json``, or the one ``results.json`` below
    it (the output of ``submit --dry-run``, laid out as the results repo). Symlinked folders are not entered; a JSON
    above the submission is refused (it would be a second result)."""
    path = Path(path)
    if not path.is_dir():
        return path.parent, path.name
    if os.path.lexists(path / RESULT_NAME):
        return path, RESULT_NAME
    found, strays = [], []
    for root, folders, names in _walk(path):
        if RESULT_NAME in names:
            found.append(root)
            folders.clear()
        else:
            strays += [root / n for n in names if n.endswith(".json")]
    if len(found) != 1:
        listed = ": " + ", ".join(sorted(clip(f.relative_to(path), 60) for f in found)[:5]) if found else ""
        raise ValueError(f"{path} holds {len(found) or 'no'} submission(s) ({RESULT_NAME}){listed}; "
                         "name one submission folder")
    stray = [s for s in strays if found[0].is_relative_to(s.parent)]
    if stray:
        raise ValueError(f"{shorten(str(stray[0].relative_to(path)))} lies above the submission "
                         f"{shorten(str(found[0].relative_to(path)))}: a submission is one result, nothing else is")
    return found[0], RESULT_NAME


def submission_files(folder: Path, name: str = RESULT_NAME) -> list[str]:
    """Every file of the submission in ``folder`` (relative, sorted). A second JSON, a link or anything but a regular
    file is refused by name: a submission holds exactly one result, and nothing in it is left unhashed. Beside a
    ``results.json``, the other modes' results ``evaluate --output`` writes with it (``results-<mode>.json``) are
    hashed like any file and never read as the result (nor shown: ``load_store`` skips a JSON beside a submission)."""
    files = []
    for root, folders, names in _walk(folder):
        for entry in [*folders, *names]:
            full = root / entry
            relative = full.relative_to(folder).as_posix()
            if full.is_symlink():
                raise ValueError(f"{shorten(relative)} is a link; a submission holds its own files only")
            if entry in names:
                if not full.is_file():
                    raise ValueError(f"{shorten(relative)} is not a regular file")
                if relative.endswith(".json") and relative != name and not (name == RESULT_NAME and relative in _OTHER_MODES):
                    raise ValueError(f"{shorten(relative)} is a second JSON beside {name}: a submission holds exactly "
                                     "one result")
                files.append(relative)
                if len(files) > MAX_FILES:
                    raise ValueError(f"the submission holds more than {MAX_FILES} files")
    if name not in files:
        raise ValueError(f"{shorten(name)} is not a regular file of the submission")
    return sorted(files)


def _key(hashes: dict[str, str]) -> str:
    """The submission's key: sha256 over every file's name and sha256, and the verifier's version (a new lookbench
    judges again)."""
    lines = "".join(f"{name}\0{digest}\n" for name, digest in sorted(hashes.items()))
    return hashlib.sha256(f"lookbench {__version__}\n{lines}".encode()).hexdigest()


def _read(folder: Path, relative: str, name: str, hashes: dict) -> bytes:
    """One file of the submission, read once within its kind's limit (the result, a ranking, anything else) and its
    sha256 recorded in ``hashes``: verify and ``snapshot`` hash alike, so their keys agree."""
    limit = (MAX_RESULT_BYTES if relative == name else
             MAX_RANKING_BYTES if relative.endswith(".parquet") else MAX_OTHER_BYTES)
    content = read_regular(folder / relative, limit, relative)
    hashes[relative] = hashlib.sha256(content).hexdigest()
    return content


def read_submission(folder, name: str = RESULT_NAME, keep=lambda relative: False) -> tuple[str, bytes, dict]:
    """(key, result bytes, {relative: bytes} of the files ``keep`` names) of the submission in ``folder`` as its files
    are now: every byte hashed (no size or time shortcut), and every byte returned exactly as hashed."""
    folder = Path(folder)
    hashes, result, kept = {}, b"", {}
    for relative in submission_files(folder, name):
        content = _read(folder, relative, name, hashes)
        result = content if relative == name else result
        if keep(relative):
            kept[relative] = content
    return _key(hashes), result, kept


def snapshot(folder, name: str = RESULT_NAME) -> tuple[str, bytes]:
    """(key, result bytes) of the submission in ``folder``, so what a board shows is what its key names."""
    key, result, _ = read_submission(folder, name)
    return key, result


def ranking_rows(blocks: dict, subset: str) -> int:
    """The most rows a subset's ranking may hold: its claimed queries times the deepest K the result reports."""
    return min(MAX_RANKING_ROWS, _claimed_queries(blocks[subset]) * _deepest_k(blocks))


def named_data(dataset: dict, allowed=None):
    """The data a result names, as ``--data`` takes it: ``None`` for the embedded LookBench-Mini (rebuilt), a Hub
    dataset at the commit it recorded, or (only without ``allowed``) a local folder that is here. ``allowed``: the Hub
    dataset ids that may be loaded (the board's allow-list; ``None``: any). Other data is an ``EvaluationError`` —
    ``UnknownData`` when the allow-list keeps it out —, as data ``load_benchmark`` cannot load is: the submission is
    not at fault."""
    label, commit = dataset.get("data"), dataset.get("commit")
    if label == EMBEDDED_MINI:
        return None
    if isinstance(label, str) and isinstance(commit, str) and looks_like_hub_id(label):
        repo = label.partition("@")[0]
        if allowed is not None and repo not in allowed:
            raise UnknownData(f"unknown data {shorten(repo, 60)}: the board judges only {', '.join(sorted(allowed))} "
                              "and the embedded LookBench-Mini")
        return f"{repo}@{commit}"
    if allowed is not None:
        raise UnknownData(f"unknown data {shorten(label, 60)}: the board judges only its own dataset repos")
    if isinstance(label, str) and Path(label).is_dir():
        return label
    raise EvaluationError(f"the result's data {shorten(label, 300)} is neither the embedded LookBench-Mini, a Hub "
                          "dataset at a recorded commit, nor a folder here: give --data")


def _deepest_k(blocks: dict) -> int:
    """The deepest K any claimed score of the result names (20, the default's, when none does)."""
    from lookbench.metric.fine_recall.judging import DEFAULT_K

    ks = [int(at[1:]) for block in blocks.values() for scores in block.values() if isinstance(scores, dict)
          for at in scores if isinstance(at, str) and re.fullmatch(r"@\d{1,6}", at)]
    return max(ks, default=max(DEFAULT_K))


def _claimed_queries(block: dict) -> int:
    count = block.get("num_queries")
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


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
    from lookbench.metric.fine_recall.judging import DEFAULT_K
    from lookbench.settings import METRICS

    def block(flat):
        return {**{m: {f"@{k}": flat[f"{m}@{k}"] for k in DEFAULT_K} for m in METRICS.values()},
                "num_queries": int(flat["num_queries"])}

    return {**{name: block(j.scores) for name, j in judged.subsets.items()}, "overall": block(judged.overall)}


def is_sealed(result: dict) -> bool:
    """A result made on a sealed release (the data's own provenance says so): it claims no score."""
    dataset = result.get("provenance", {}).get("dataset") if isinstance(result.get("provenance"), dict) else None
    return isinstance(dataset, dict) and isinstance(dataset.get("sealed"), dict)


def verify_submission(path, data=None, allowed=None, labels=None) -> Verification:
    """Re-judge the submission at ``path`` (a submission folder, a folder holding one, or a stored result with
    rankings) on ``data`` (default: the data the result names; ``allowed`` limits which, see ``named_data``).
    ``labels``: a sealed release's labels (``engine.data.with_labels``); without them a sealed release is not scored
    here (``SEALED``). Bad input is a ``ValueError`` naming the file relative to the submission."""
    folder, name = locate(path)
    files = submission_files(folder, name)
    hashes = {}
    raw = _read(folder, name, name, hashes)
    try:
        result = parse_json(raw)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None
    provenance, blocks, settings = result_parts(result, name)
    saved, rankings, kmax = provenance.get("saved_predictions"), {}, _deepest_k(blocks)
    for subset in blocks:  # every file is read and checked before any data is loaded
        relative = f"{predictions_folder(Path(name)).name}/{subset}.parquet"
        if not isinstance(saved, list) or subset not in saved or relative not in files:
            raise ValueError(f"{name} has no saved ranking of {subset} ({relative}); a result is verified from its "
                             "rankings")
        content = _read(folder, relative, name, hashes)
        rankings[subset] = (relative, parse_ranking(content, relative, max_rows=ranking_rows(blocks, subset)))
        del content
    for relative in files:  # the rest of the submission (its card): hashed, never parsed
        if relative not in hashes:
            _read(folder, relative, name, hashes)
    key = _key(hashes)
    text_form = settings.queries.removeprefix("text-") if settings.queries.startswith("text-") else None
    sealed = is_sealed(result)
    bench = _benchmark(named_data(provenance["dataset"], allowed) if data is None else data, settings, text_form, labels)
    label, revision = bench.provenance["data"], bench.provenance["revision"]
    verdict = Verification(False, [], result=str(folder / name), data=f"{label} (revision {revision})", key=key,
                           claims=result, sealed=sealed or bench.unlabelled)
    if bench.unlabelled:  # placed as it would be, so submit can check the data; scored by the leaderboard
        verdict.reasons.append(SEALED)
        verdict.placement = _placement(bench, settings, [])
        return verdict
    verdict.reasons += _data_differences(provenance, bench.provenance, text_form)
    if sealed and not isinstance(bench.provenance.get("sealed"), dict):
        verdict.reasons.append(f"provenance.dataset says {label} is sealed; the data it names is not")
    if verdict.reasons:
        return verdict
    if set(blocks) != set(bench.subsets) or sorted(provenance["subsets"]) != sorted(bench.subsets):
        verdict.reasons.append(f"the result scores {', '.join(sorted(blocks))} (provenance.subsets "
                               f"{shorten(provenance['subsets'], 60)}); with its settings {label} has "
                               f"{', '.join(bench.subsets)}")
        return verdict
    matrices, noise = {}, _column(bench.noise, "item_id") if bench.noise is not None else []
    for subset, splits in bench.subsets.items():
        relative, ranking = rankings[subset]
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
        verdict.judged = None if sealed else Judged(bench, matrices, judged, settings.mode)
        if sealed:  # which labels scored it: the board re-checks what it scored while sealed once they are public
            verdict.placement["labels"] = UNSEALED if bench.provenance["sealed"]["labels"]["public"] else "withheld"
    return verdict


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


def _data_differences(provenance: dict, truth: dict, text_form: str | None) -> list[str]:
    """Where the result's description of its data differs from the data judged: every field a leaderboard groups by."""
    claimed = provenance["dataset"]
    problems = [f"provenance.dataset.{f} is {shorten(claimed.get(f), 60)}; the data judged gives "
                f"{shorten(truth.get(f), 60)}" for f in _DATA_FIELDS if claimed.get(f) != truth.get(f)]
    if text_form is not None and provenance.get("text_queries") != truth.get("text_queries"):
        problems.append(f"provenance.text_queries is {shorten(provenance.get('text_queries'), 60)}; the data's text "
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
            "subsets": sorted(bench.subsets), "k": ks,
            "synthetic": "synthetic" in sources or any(r.startswith("mini-") for r in data["releases"])}


def result_parts(result, name: str) -> tuple[dict, dict, Settings]:
    """The provenance, the subsets' blocks and the settings of a result, or a ValueError saying what is malformed."""
    from lookbench.schema import TEST_SUBSETS
    from lookbench.settings import MODES, TEXT_FORMS

    if not isinstance(result, dict) or not isinstance(result.get("provenance"), dict):
        raise ValueError(f"{name} is not a LookBench result: it has no provenance")
    provenance = result["provenance"]
    if not isinstance(provenance.get("dataset"), dict):
        raise ValueError(f"{name}: provenance.dataset is {shorten(provenance.get('dataset'))}, not the data's description")
    blocks = {key: block for key, block in result.items() if key not in ("overall", "provenance")}
    bad = next((key for key, block in blocks.items() if not isinstance(block, dict)), None)
    if bad is not None or not blocks:
        raise ValueError(f"{name}: {shorten(bad) if bad is not None else 'no subset'} is not a block of scores")
    foreign = next((key for key in blocks if key not in TEST_SUBSETS), None)
    if foreign is not None:
        raise ValueError(f"{name}: {shorten(foreign)} is not a LookBench subset ({', '.join(TEST_SUBSETS)})")
    try:
        if not isinstance(provenance.get("subsets"), list) or not all(isinstance(s, str) for s in provenance["subsets"]):
            raise TypeError(f"subsets is {shorten(provenance.get('subsets'))}, not a list of names")
        settings = Settings.of(provenance)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{name}: the provenance's settings cannot be read ({shorten(str(err), 120)})") from None
    if settings.mode not in MODES:
        raise ValueError(f"{name}: provenance.mode is {shorten(settings.mode)}, not one of {', '.join(MODES)}")
    kinds = ["image", *(f"text-{form}" for form in TEXT_FORMS)]
    if settings.queries not in kinds:
        raise ValueError(f"{name}: provenance.queries is {shorten(settings.queries)}, not one of {', '.join(kinds)}")
    return provenance, blocks, settings


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


def _rejudge(bench, matrices: dict, mode: str):
    """The one judge on these rankings, as the engine ran it: each subset's gallery followed by the noise gallery."""
    from lookbench.metric.fine_recall.records import GalleryColumns
    from lookbench.results.judge import combine, gallery_columns, judge_subset, query_columns

    noise = None if bench.noise is None else GalleryColumns(bench.noise)
    judged = {}
    for name, matrix in matrices.items():
        queries = bench.subsets[name]["query"]
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
                           "scored": verdict.scored, "reasons": verdict.reasons, "scores": [
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
