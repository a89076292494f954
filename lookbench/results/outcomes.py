"""Per-query outcomes: what each query of a subset contributed to its scores, kept in every result.

The rank of a query's first fine hit and first coarse hit, and its nDCG@K and AP@K, are enough to recompute every
mean score (``judging.query_scores``), so intervals and paired tests need neither the saved rankings nor a re-run.
Each query keeps its ``item_id``, ``outfit_id`` (street-look queries of one photo are resampled together) and
``release`` (so a result can be split by snapshot). Numpy only (docs/architecture.md §5).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lookbench.metric.fine_recall.judging import combine_subsets, query_scores, summarise

_DIGITS = 6  # nDCG and AP are stored to 1e-6 (of a fraction), far below any interval
# A claimed score (percent) agrees with its outcomes when it is within one stored unit of a fraction: the scores
# are means of the unrounded values, the outcomes keep them rounded to 1e-6.
TOLERANCE = 100 * 10.0 ** -_DIGITS
_LARGEST = 2 ** 53  # integers up to this are exact as floats; a larger rank or K is no outcome a search gives


@dataclass
class Outcomes:
    """One subset's queries, in evaluation order. ``first_fine`` / ``first_coarse`` are 0-based ranks, ``inf`` for
    no hit in the ranking; ``ndcg`` and ``ap`` are queries x len(k) fractions."""

    k: tuple[int, ...]
    item_id: list
    outfit_id: list
    release: list
    first_fine: np.ndarray
    first_coarse: np.ndarray
    ndcg: np.ndarray
    ap: np.ndarray
    # Each query's top-1 held against its attributes (``attributes.marks``); None in results written before them
    attributes_at_1: list | None = None

    def __len__(self) -> int:
        return len(self.first_fine)

    @classmethod
    def of(cls, per_query: dict, annotations, attributes_at_1: list | None = None) -> "Outcomes":
        """From the metric's ``score_queries`` output, the annotation records of the same queries and their
        ``attributes.marks``."""
        columns = annotations.column_names if hasattr(annotations, "column_names") else None
        size = len(per_query["first_fine"])

        def column(name):
            if columns is not None:
                return list(annotations[name]) if name in columns else [None] * size
            return [record.get(name) for record in annotations]

        return cls(tuple(per_query["k"]), column("item_id"), column("outfit_id"), column("release"),
                   np.asarray(per_query["first_fine"], dtype=np.float64),
                   np.asarray(per_query["first_coarse"], dtype=np.float64),
                   np.round(np.asarray(per_query["ndcg"], dtype=np.float64), _DIGITS),
                   np.round(np.asarray(per_query["ap"], dtype=np.float64), _DIGITS), attributes_at_1)

    def to_json(self) -> dict:
        """Columns: ranks 1-based (``null``: no hit), nDCG and AP per "@K", and ``attributes_at_1`` when kept."""
        def ranks(first):
            return [None if np.isinf(r) else int(r) + 1 for r in first]

        return {
            "k": list(self.k), "item_id": self.item_id, "outfit_id": self.outfit_id, "release": self.release,
            "first_fine_rank": ranks(self.first_fine), "first_coarse_rank": ranks(self.first_coarse),
            "ndcg": {f"@{v}": self.ndcg[:, j].tolist() for j, v in enumerate(self.k)},
            "ap": {f"@{v}": self.ap[:, j].tolist() for j, v in enumerate(self.k)},
            **({} if self.attributes_at_1 is None else {"attributes_at_1": self.attributes_at_1}),
        }

    @classmethod
    def from_json(cls, data: dict, where: str) -> "Outcomes":
        """The outcomes stored in a result: a ValueError naming ``where`` and the key unless every rank is an integer
        >= 1 or null, every nDCG and AP a finite fraction, and every column holds one value per query."""
        if not isinstance(data, dict):
            raise ValueError(f"{where} per_query is {type(data).__name__}, not a mapping of columns")
        k = data.get("k")
        if not isinstance(k, list) or not k or not all(_is_count(v) for v in k) or sorted(set(k)) != k:
            raise ValueError(f"{where} per_query.k is {k!r}, not increasing cut-offs K >= 1")
        item_id = _column(data, "item_id", where, _is_text, "a string or null")
        size = len(item_id)
        if not size:
            raise ValueError(f"{where} per_query holds no queries")
        text = _column(data, "outfit_id", where, _is_text, "a string or null", size), \
            _column(data, "release", where, _is_text, "a string or null", size)
        ranks = [_column(data, name, where, lambda v: v is None or _is_count(v),
                         "a rank (an integer >= 1, or null)", size) for name in ("first_fine_rank", "first_coarse_rank")]
        for i, (fine, coarse) in enumerate(zip(*ranks)):
            if fine is not None and (coarse is None or coarse > fine):
                raise ValueError(f"{where} per_query query {i + 1}: first fine hit at rank {fine}, first coarse hit at "
                                 f"rank {coarse} (a fine hit is a coarse hit)")
        fractions = []
        for name in ("ndcg", "ap"):
            columns = data.get(name)
            wanted = [f"@{v}" for v in k]
            if not isinstance(columns, dict) or list(columns) != wanted:
                found = ", ".join(map(str, columns)) if isinstance(columns, dict) else repr(columns)
                raise ValueError(f"{where} per_query.{name} has {found}, not {', '.join(wanted)}")
            fractions.append([_column(columns, at, where, _is_fraction, "a fraction in [0, 1]", size,
                                      f"per_query.{name}.{at}") for at in wanted])

        def zero_based(values):
            return np.array([np.inf if r is None else r - 1 for r in values], dtype=np.float64)

        def per_k(values):
            return np.array(values, dtype=np.float64).T.reshape(size, len(k))

        marks = data.get("attributes_at_1")
        if marks is not None:
            from lookbench.results.attributes import check_marks

            check_marks(marks, size, where)
        return cls(tuple(k), item_id, *text, *map(zero_based, ranks), *map(per_k, fractions), marks)

    def select(self, keep) -> "Outcomes":
        """The outcomes of the queries where ``keep`` (a boolean mask) is true, e.g. one release's."""
        keep = np.asarray(keep, dtype=bool)
        pick = np.flatnonzero(keep)
        return Outcomes(self.k, [self.item_id[i] for i in pick], [self.outfit_id[i] for i in pick],
                        [self.release[i] for i in pick], self.first_fine[keep], self.first_coarse[keep],
                        self.ndcg[keep], self.ap[keep],
                        None if self.attributes_at_1 is None else [self.attributes_at_1[i] for i in pick])

    def per_query(self) -> dict:
        """The columns the metric's ``query_scores`` and ``bootstrap_intervals`` read."""
        return {"k": self.k, "first_fine": self.first_fine, "first_coarse": self.first_coarse, "ndcg": self.ndcg,
                "ap": self.ap, "outfit_id": self.outfit_id}

    def scores(self) -> dict[str, np.ndarray]:
        """Each query's share of every mean score, in percent (the metric's ``query_scores``)."""
        return query_scores(self.per_query())


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _LARGEST


def _is_count(value) -> bool:
    return _is_int(value) and value >= 1


def _is_text(value) -> bool:
    return value is None or isinstance(value, str)


def _is_number(value) -> bool:
    return isinstance(value, float) and math.isfinite(value) or _is_int(value)


def _is_fraction(value) -> bool:
    return _is_number(value) and 0 <= value <= 1


def _column(data: dict, key: str, where: str, valid, what: str, size: int | None = None, label=None) -> list:
    """``data[key]``, a list of values that are all ``valid`` (and ``size`` of them), else a ValueError naming it
    (as ``label``, default ``per_query.<key>``)."""
    values = data.get(key)
    name = f"{where} {label or 'per_query.' + key}"
    if not isinstance(values, list):
        raise ValueError(f"{name} is {type(values).__name__}, not a list")
    bad = next((i for i, v in enumerate(values) if not valid(v)), None)
    if bad is not None:
        raise ValueError(f"{name}[{bad}] is {values[bad]!r}, not {what}")
    if size is not None and len(values) != size:
        raise ValueError(f"{name} has {len(values)} values for {size} queries")
    return values


def keeps_outcomes(result: dict) -> bool:
    """Does the result keep per-query outcomes at all (results written before they were kept do not)?"""
    return any(isinstance(block, dict) and "per_query" in block for block in result.values())


def check_result(result: dict, where: str) -> dict[str, Outcomes]:
    """Each subset's outcomes of a result, once they are well formed and give every score the result claims
    (subsets, overall, per release, ``attribute_errors``) within ``TOLERANCE``. Anything else is a ValueError
    "<where>: damaged or edited: <what> claimed <score> X, outcomes give Y", or naming the malformed key.
    ``compare``, the leaderboard and ``verify`` read stored outcomes only through it."""
    blocks = {name: block for name, block in result.items() if name not in ("overall", "provenance")
              and isinstance(block, dict)}
    missing = [name for name, block in blocks.items() if "per_query" not in block]
    if not blocks or missing:
        raise ValueError(f"{where} has no per-query outcomes{' for ' + ', '.join(missing) if missing else ''}; "
                         "it was written by an older lookbench: evaluate it again (--overwrite)")
    damaged = f"{where}: damaged or edited:"
    outcomes = {name: Outcomes.from_json(block["per_query"], f"{damaged} {name}") for name, block in blocks.items()}
    if len({o.k for o in outcomes.values()}) > 1:
        raise ValueError(f"{damaged} the subsets' per_query.k differ")
    claims = {**blocks, "overall": result.get("overall")}
    _check_claims(damaged, claims, _scores(outcomes))
    from lookbench.results.attributes import check_claims  # it reads stats, which reads this module

    check_claims(claims, outcomes, damaged, TOLERANCE)
    by_release = {name: block.get("per_release") or {} for name, block in claims.items()}
    for name, blocks_of in by_release.items():
        if not isinstance(blocks_of, dict):
            raise ValueError(f"{damaged} {name} per_release is {type(blocks_of).__name__}, not a mapping of releases")
    for release in {release: None for blocks_of in by_release.values() for release in blocks_of}:
        picked = {}
        for name, o in outcomes.items():
            keep = np.array([r == release for r in o.release], dtype=bool)
            if keep.any():
                picked[name] = o.select(keep)
        claimed = {name: blocks_of.get(release) for name, blocks_of in by_release.items()}
        _check_claims(damaged, claimed, _scores(picked) if picked else {}, release)
    return outcomes


def verdict(result: dict, where: str) -> str | None:
    """``None`` when ``check_result`` passes, else its reason (one line naming the file and the key)."""
    try:
        check_result(result, where)
    except ValueError as err:
        return str(err)
    return None


def _scores(outcomes: dict[str, Outcomes]) -> dict[str, dict]:
    """The scores the outcomes give, per subset and ``overall``, computed as the engine computes a result's."""
    out = {}
    for name, o in outcomes.items():
        columns = {**o.per_query(), "outfit_id": [x or "" for x in o.outfit_id], "category": [""] * len(o)}
        out[name] = summarise(columns)
    out["overall"] = combine_subsets(out)
    return out


def _check_claims(damaged: str, claims: dict, given: dict, release: str | None = None) -> None:
    """Every ``num_queries`` and "metric" -> "@K" score in ``claims`` (name -> block) equals ``given``'s."""
    for name, block in claims.items():
        if block is None and release is not None:
            continue  # this subset has no block for the release
        what = f"{damaged} {name}" + (f" {release}" if release else "")
        if not isinstance(block, dict):
            raise ValueError(f"{what} is {type(block).__name__}, not a block of scores")
        scores = given.get(name, {})
        claimed = [("num_queries", block.get("num_queries"))]
        claimed += [(f"{metric}{at}", value) for metric, values in block.items() if isinstance(values, dict)
                    and values and all(str(at).startswith("@") for at in values)
                    for at, value in values.items()]
        for key, value in claimed:
            truth = scores.get(key)
            if truth is None or not _is_number(value) or abs(value - truth) > TOLERANCE:
                shown = f"{truth:.8g}" if truth is not None else "none"
                raise ValueError(f"{what} claimed {key} {_shown(value)}, outcomes give {shown}")


def _shown(value) -> str:
    return f"{value:.8g}" if _is_number(value) else repr(value)
