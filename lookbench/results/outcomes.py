"""Per-query outcomes: what each query of a subset contributed to its scores, kept in every result.

The rank of a query's first fine hit and first coarse hit, and its nDCG@K and AP@K, are enough to recompute every
mean score (``judging.query_scores``), so intervals and paired tests need neither the saved rankings nor a re-run.
Each query keeps its ``item_id``, ``outfit_id`` (street-look queries of one photo are resampled together) and
``release`` (so a result can be split by snapshot). Numpy only (docs/architecture.md §5).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lookbench.metric.fine_recall.judging import query_scores

_DIGITS = 6  # nDCG and AP are stored to 1e-6 (of a fraction), far below any interval


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

    def __len__(self) -> int:
        return len(self.first_fine)

    @classmethod
    def of(cls, per_query: dict, annotations) -> "Outcomes":
        """From the metric's ``score_queries`` output and the annotation records of the same queries."""
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
                   np.round(np.asarray(per_query["ap"], dtype=np.float64), _DIGITS))

    def to_json(self) -> dict:
        """Columns: ranks 1-based (``null``: no hit), nDCG and AP per "@K"."""
        def ranks(first):
            return [None if np.isinf(r) else int(r) + 1 for r in first]

        return {
            "k": list(self.k), "item_id": self.item_id, "outfit_id": self.outfit_id, "release": self.release,
            "first_fine_rank": ranks(self.first_fine), "first_coarse_rank": ranks(self.first_coarse),
            "ndcg": {f"@{v}": self.ndcg[:, j].tolist() for j, v in enumerate(self.k)},
            "ap": {f"@{v}": self.ap[:, j].tolist() for j, v in enumerate(self.k)},
        }

    @classmethod
    def from_json(cls, data: dict, where: str) -> "Outcomes":
        """The outcomes stored in a result; a ValueError naming ``where`` if they are malformed."""
        try:
            k = tuple(int(v) for v in data["k"])
            size = len(data["first_fine_rank"])

            def ranks(values):
                return np.array([np.inf if r is None else int(r) - 1 for r in values], dtype=np.float64)

            def per_k(name):
                return np.array([data[name][f"@{v}"] for v in k], dtype=np.float64).T.reshape(size, len(k))

            out = cls(k, list(data["item_id"]), list(data["outfit_id"]), list(data["release"]),
                      ranks(data["first_fine_rank"]), ranks(data["first_coarse_rank"]), per_k("ndcg"), per_k("ap"))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{where}: malformed per-query outcomes ({type(err).__name__}: {err})") from None
        lengths = {len(out.item_id), len(out.outfit_id), len(out.release), len(out.first_coarse)}
        if lengths != {size}:
            raise ValueError(f"{where}: per-query outcome columns of different lengths")
        return out

    def select(self, keep) -> "Outcomes":
        """The outcomes of the queries where ``keep`` (a boolean mask) is true, e.g. one release's."""
        keep = np.asarray(keep, dtype=bool)
        pick = np.flatnonzero(keep)
        return Outcomes(self.k, [self.item_id[i] for i in pick], [self.outfit_id[i] for i in pick],
                        [self.release[i] for i in pick], self.first_fine[keep], self.first_coarse[keep],
                        self.ndcg[keep], self.ap[keep])

    def per_query(self) -> dict:
        """The columns the metric's ``query_scores`` and ``bootstrap_intervals`` read."""
        return {"k": self.k, "first_fine": self.first_fine, "first_coarse": self.first_coarse, "ndcg": self.ndcg,
                "ap": self.ap, "outfit_id": self.outfit_id}

    def scores(self) -> dict[str, np.ndarray]:
        """Each query's share of every mean score, in percent (the metric's ``query_scores``)."""
        return query_scores(self.per_query())
