"""``lookbench compare``: is result A better than result B on the same queries, and how sure is that?

Per subset and overall: the paired difference A − B in points with its paired, outfit-clustered bootstrap interval;
the exact McNemar p-value for a hit rate (Fine / Coarse Recall@K) or the paired bootstrap p-value for nDCG@K; and
``p_holm``, Holm-adjusted across the subsets (the overall row is one test of its own: ``p_holm = p``). Both results
must be on the same data, mode, distractors, cutoff and queries; anything else is refused with the difference named.
Each result's outcomes are checked first (``outcomes.check_result``): tampered or damaged ones are refused, never compared.
Reads result JSON only (numpy; no torch). docs/architecture.md §5.
"""
from __future__ import annotations

import json

import numpy as np

from lookbench import terminal
from lookbench.paths import result_file
from lookbench.results import stats
from lookbench.results.outcomes import Outcomes, check_result
from lookbench.results.provenance import Provenance
from lookbench.results.store import normalise_cutoff, read_json
from lookbench.settings import METRICS

FORMATS = ("table", "json")


def read_result(path) -> dict:
    """A result JSON: a file, or a folder holding ``results.json`` (``lookbench evaluate --output``). Read as the
    store reads one (regular, size-capped, non-blocking), so a FIFO or a huge file is refused, never waited on."""
    path = result_file(path)
    try:
        data = read_json(path, "it")
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("provenance"), dict):
        raise ValueError(f"{path} is not a LookBench result (no provenance)")
    data["_path"] = str(path)
    return data


def _check_comparable(a: dict, b: dict, oa: dict, ob: dict) -> None:
    """One line naming what differs, if anything does."""
    pa, pb = Provenance(a["provenance"]), Provenance(b["provenance"])
    da, db = pa.dataset, pb.dataset
    facts = (("data", da.key or da.revision, db.key or db.revision),
             ("data revision", da.revision, db.revision),
             ("queries", pa.queries, pb.queries),
             ("mode", pa.mode, pb.mode),
             ("distractors", pa.distractors, pb.distractors),
             ("cutoff", normalise_cutoff(pa.cutoff), normalise_cutoff(pb.cutoff)),
             ("subsets", sorted(oa), sorted(ob)))
    for what, x, y in facts:
        if x != y:
            raise ValueError(f"A and B differ in {what} ({x} vs {y}): a paired comparison needs the same data and queries")
    for name in oa:
        qa, qb = oa[name].item_id, ob[name].item_id
        if qa != qb:
            at = next((i for i, (x, y) in enumerate(zip(qa, qb)) if x != y), min(len(qa), len(qb)))
            raise ValueError(f"A and B scored different queries in {name}: {len(qa)} vs {len(qb)} queries, first "
                             f"difference at query {at + 1}")


def compare(a, b, metric: str = "fine", k: int = 1, *, resamples: int = stats.RESAMPLES, seed: int = stats.SEED) -> list[dict]:
    """Rows (each subset, then ``overall``) of ``subset, a, b, diff, ci95, p, p_holm, n_queries, a_only, b_only``.

    ``a`` and ``b`` are result paths or result dicts. ``a_only`` / ``b_only``: the queries that only A / only B gets
    right (a hit metric), or that score higher under A / under B (nDCG)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    a, b = (x if isinstance(x, dict) else read_result(x) for x in (a, b))
    a.setdefault("_path", "A")
    b.setdefault("_path", "B")
    oa, ob = check_result(a, a["_path"]), check_result(b, b["_path"])
    _check_comparable(a, b, oa, ob)
    ks = next(iter(oa.values())).k
    if isinstance(k, bool) or k not in ks:
        raise ValueError(f"k must be one of {', '.join(map(str, ks))} (the cut-offs the results keep), got {k!r}")
    key = f"{METRICS[metric]}@{k}"
    paired = stats.paired(oa, ob, key, resamples=resamples, seed=seed)
    rows = []
    for name in [*oa, "overall"]:
        va, vb = _pooled(oa, key, name), _pooled(ob, key, name)
        a_only, b_only = int(np.sum(va > vb)), int(np.sum(vb > va))
        p = stats.mcnemar(a_only, b_only) if metric != "ndcg" else paired[name]["p"]
        rows.append({"subset": name, "a": float(va.mean()), "b": float(vb.mean()), "diff": paired[name]["diff"],
                     "ci95": list(paired[name]["ci95"]), "p": p, "p_holm": p, "n_queries": int(va.size),
                     "a_only": a_only, "b_only": b_only})
    for row, adjusted in zip(rows, stats.holm([r["p"] for r in rows[:-1]])):
        row["p_holm"] = adjusted
    return rows


def compare_attributes(a, b, *, resamples: int = stats.RESAMPLES, seed: int = stats.SEED) -> list[dict]:
    """Per attribute (over every subset's queries), the attribute error rate@1 of A and of B on the queries both
    count (each has the attribute and a top-1 of its category in both results), the paired difference A − B with
    its outfit-clustered bootstrap interval, the exact McNemar p of the queries only A / only B gets wrong
    (``a_only`` / ``b_only``) and ``p_holm`` across the attributes. Rows: ``attribute, a, b, diff, ci95, p, p_holm,
    n_queries, a_only, b_only``."""
    a, b = (x if isinstance(x, dict) else read_result(x) for x in (a, b))
    a.setdefault("_path", "A")
    b.setdefault("_path", "B")
    oa, ob = check_result(a, a["_path"]), check_result(b, b["_path"])
    _check_comparable(a, b, oa, ob)
    older = [r["_path"] for r, o in ((a, oa), (b, ob)) if any(x.attributes_at_1 is None for x in o.values())]
    if older:
        raise ValueError(f"{', '.join(older)} keeps no attribute errors (written before they were kept): evaluate it "
                         "again (--overwrite) to compare attribute by attribute")
    names = sorted({n for o in (oa, ob) for x in o.values() for m in x.attributes_at_1 for n in (m or {})})
    rows = []
    for attribute in names:
        diffs, wrong = {}, []
        for subset in oa:
            both = [(ma[attribute] is not None, mb[attribute] is not None, outfit)
                    for ma, mb, outfit in zip(oa[subset].attributes_at_1, ob[subset].attributes_at_1, oa[subset].outfit_id)
                    if attribute in (ma or {}) and attribute in (mb or {})]
            if both:
                ea, eb = (100.0 * np.array([q[i] for q in both]) for i in (0, 1))
                diffs[subset] = (ea - eb, [q[2] for q in both])
                wrong.append((ea, eb))
        if not diffs:
            continue
        ea, eb = (np.concatenate([w[i] for w in wrong]) for i in (0, 1))
        paired = stats.paired_differences(diffs, resamples=resamples, seed=seed)["overall"]
        a_only, b_only = int(np.sum(ea > eb)), int(np.sum(eb > ea))
        p = stats.mcnemar(a_only, b_only)
        rows.append({"attribute": attribute, "a": float(ea.mean()), "b": float(eb.mean()), "diff": paired["diff"],
                     "ci95": list(paired["ci95"]), "p": p, "p_holm": p, "n_queries": int(ea.size),
                     "a_only": a_only, "b_only": b_only})
    for row, adjusted in zip(rows, stats.holm([r["p"] for r in rows])):
        row["p_holm"] = adjusted
    return rows


def _pooled(outcomes: dict[str, Outcomes], key: str, name: str) -> np.ndarray:
    """Each query's share of score ``key`` in one subset, or in all of them (``overall``: the query-weighted mean)."""
    names = list(outcomes) if name == "overall" else [name]
    return np.concatenate([outcomes[s].scores()[key] for s in names])


def same_queries(a: dict[str, Outcomes], b: dict[str, Outcomes]) -> bool:
    return list(a) == list(b) and all(a[s].item_id == b[s].item_id for s in a)


def paired_p(a: dict[str, Outcomes], b: dict[str, Outcomes], key: str) -> float:
    """The p-value ``compare`` gives the overall of these subsets: exact McNemar for a hit rate, else the paired
    bootstrap (both results on the same queries)."""
    if key.startswith("ndcg@"):
        return stats.paired(a, b, key)["overall"]["p"]
    va, vb = _pooled(a, key, "overall"), _pooled(b, key, "overall")
    return stats.mcnemar(int(np.sum(va > vb)), int(np.sum(vb > va)))


def render(rows: list[dict], fmt: str, a_label: str = "A", b_label: str = "B", metric: str = "fine", k: int = 1) -> str:
    """The rows of ``compare`` or, when they are ``compare_attributes``' (``metric`` "attributes"), those."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "json":
        return json.dumps(rows, indent=2)
    if metric == "attributes":
        header = ("Attribute error rate@1 (lower is better) on the queries both results count: A−B in points with its "
                  "95% paired bootstrap interval (outfits resampled whole); p: exact McNemar; holm: p Holm-adjusted "
                  "across the attributes; A+ / B+: queries only A / only B gets wrong")
        first = "attribute"
    else:
        test = "exact McNemar" if metric != "ndcg" else "paired bootstrap"
        right = "get right" if metric != "ndcg" else "score higher on"
        header = (f"{METRICS[metric]}@{k}: A−B in points with its 95% paired bootstrap interval (outfits resampled "
                  f"whole); p: {test}; holm: p Holm-adjusted across the subsets; A+ / B+: queries only A / only B {right}")
        first = "subset"
    # A hit rate's p (exact McNemar) and its interval (bootstrap) are two methods: marked where they disagree.
    split = [metric != "ndcg" and disagree(r) for r in rows]
    at = terminal.width()
    lines = [*terminal.paragraph(f"A = {a_label}", at, "    "), *terminal.paragraph(f"B = {b_label}", at, "    ")]
    return "\n".join(lines + terminal.table(
        [terminal.Column(first, "left"), "A", "B", "A−B [95% interval]", "p", "holm", "n", "A+", "B+"],
        [[r[first], f"{r['a']:.1f}", f"{r['b']:.1f}", terminal.score(r["diff"], r["ci95"], signed=True),
          f"{r['p']:.2g}" + ("*" if mark else ""), f"{r['p_holm']:.2g}", str(r["n_queries"]), str(r["a_only"]),
          str(r["b_only"])] for r, mark in zip(rows, split)],
        title=header, footnotes=[METHODS_NOTE] if any(split) else [], drop_order=["B+", "A+", "n", "p"], at=at))


METHODS_NOTE = ("* the interval and p disagree (one excludes 0, the other is not below 0.05): they are two methods. "
                "The interval is a bootstrap over outfits, approximate and narrow when few queries differ; p is exact "
                "McNemar on the queries where the two differ. Decide by p (rank groups do).")


def disagree(row: dict) -> bool:
    """Whether a row's 95% interval and its p-value say different things about a difference of 0."""
    lo, hi = row["ci95"]
    return (lo > 0 or hi < 0) != (row["p"] < 0.05)


def zero_shot_warning(a: dict, b: dict) -> str | None:
    """A warning when one result is zero-shot and the other in-distribution (its model trained on the data's source):
    their difference then measures what the training data gave as much as the models."""
    za, zb = (Provenance(r.get("provenance") or {}).zero_shot for r in (a, b))
    if {za.value, zb.value} != {True, False}:
        return None
    zero, trained, claim = ("A", "B", zb) if za.value else ("B", "A", za)
    return (f"warning: {zero} is zero-shot, {trained} in-distribution ({claim.reason}): the difference mixes "
            "what the training data gave with what the models do")


def label(result: dict) -> str:
    """``model, <kind> queries (file)`` of a result, for the table's header."""
    provenance = Provenance(result.get("provenance") or {})
    return f"{provenance.model.name or '?'}, {provenance.queries} queries ({result.get('_path', '?')})"
