"""``lookbench explain``: one query of a result with saved rankings, and what each of its top results gets wrong.

Reads the Parquet written by ``lookbench evaluate --save-predictions`` (docs/architecture.md §5); the fine and
coarse hits in it are the metric's own judgement, and so is what a result lacks (``attribute_differences``).
"""
from __future__ import annotations

import json
from pathlib import Path


def register(sub) -> None:
    ex = sub.add_parser("explain", help="show one query of a stored result and the attributes its top results lack or differ in")
    ex.add_argument("result", type=Path, metavar="RESULT", help="a result written with --save-predictions (results store "
                                                                "file, or an --output folder)")
    ex.add_argument("--subset", required=True, help="paper name or alias of the subset")
    ex.add_argument("--query", type=int, required=True, metavar="N",
                    help="1-based number of the query among the subset's evaluated queries (column 'query' of the Parquet)")
    ex.add_argument("--top", type=int, default=10, help="how many of its results to show (at most the 20 saved)")
    ex.set_defaults(run=run)


def differences(query_attributes, item_attributes) -> str:
    """``lacks sleeve; colour green (query red)``: the query's attributes the item lacks or has differently, as the
    metric's ``attribute_differences`` compares them."""
    from lookbench.metric.fine_recall.records import attribute_differences

    gaps = attribute_differences({"category": "-", "attributes": query_attributes},
                                 {"category": "-", "attributes": item_attributes})
    parts = ([f"lacks {', '.join(name for name, _ in gaps['lacks'])}"] if gaps["lacks"] else []) + [
        f"{name} {'/'.join(values)} (query {value})" for name, value, values in gaps["differs"]]
    return "; ".join(parts) or "all query attributes match"


def explain(result: Path, subset: str, query: int, top: int = 10) -> str:
    import pyarrow.compute as pc

    from lookbench import terminal
    from lookbench.engine.predictions import read
    from lookbench.paths import result_file
    from lookbench.schema import resolve_subset
    from lookbench.results.store import predictions_folder, read_json

    result = result_file(result)
    try:
        provenance = read_json(result)["provenance"]
        mode, saved = provenance["mode"], provenance.get("saved_predictions") or ()
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{result} is not a LookBench result JSON ({type(err).__name__}: {err})") from None
    subset = resolve_subset(subset)
    path = predictions_folder(result) / f"{subset}.parquet"
    if subset not in saved or not path.is_file():
        raise ValueError(f"{result} has no saved rankings for {subset} ({path} is missing); "
                         "evaluate again with --save-predictions")
    if top < 1:
        raise ValueError(f"--top must be at least 1, got {top}")
    table = read(path)
    count = pc.max(table["query"]).as_py() or 0
    if not 1 <= query <= count:
        raise ValueError(f"{subset} of {result} has queries 1..{count}; there is no query {query}")
    rows = table.filter(pc.equal(table["query"], query)).sort_by("rank").to_pylist()
    if not rows:
        raise ValueError(f"{path}: column query has no row for query {query}")
    q = rows[0]
    attrs = ", ".join(f"{a['name']}={a['value']}" for a in q["query_attributes"]) or "(none)"
    first = {kind: next((r["rank"] for r in rows if r[f"{kind}_hit"]), None) for kind in ("fine", "coarse")}
    found = ", ".join(f"first {kind} hit at rank {rank}" if rank else f"no {kind} hit in the top {len(rows)}"
                      for kind, rank in first.items())
    head = [f"{subset} query {query} of {count} (item {q['query_item_id']}), {mode} mode: {found}",
            f"category {q['query_category']}, main attribute {q['query_main_attribute']}; attributes: {attrs}",
            *([f"text query: {q['query_text']}"] if q.get("query_text") else [])]
    cells = []
    for r in rows[:top]:
        diff = (f"category {r['category']} (query {q['query_category']})" if not r["coarse_hit"]
                else differences(q["query_attributes"], r["attributes"]))
        if mode == "leaderboard" and r["coarse_hit"]:
            diff = f"main attribute {r['main_attribute']}; " + diff
        cells.append([str(r["rank"]), f"{r['score']:.3f}", "yes" if r["fine_hit"] else "no",
                      "yes" if r["coarse_hit"] else "no", str(r["item_id"]), r["category"], diff])
    lines = [line for i, text in enumerate(head) for line in terminal.paragraph(("  " if i else "") + text, indent="    ")]
    lines += terminal.table(["rank", "score", *(terminal.Column(c, "left") for c in
                                                ("fine", "coarse", "item_id", "category", "what differs"))],
                            cells, drop_order=["category"])  # a category that differs is in "what differs"
    return "\n".join(lines)


def run(args) -> int:
    print(explain(args.result, args.subset, args.query, args.top))
    return 0
