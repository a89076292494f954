"""``lookbench explain``: a stored result's attribute errors; one query of it, with saved rankings, and what each of
its top results gets wrong; or (``--report OUT.html``) its worst queries as one self-contained page.

Reads the Parquet written by ``lookbench evaluate --save-predictions`` (docs/architecture.md §5); the fine and
coarse hits in it are the metric's own judgement, and so is what a result lacks (``lookbench.report.records.chips``).
"""
from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    ex = sub.add_parser("explain", help="a stored result's attribute errors at top-1; one query of it and what its top "
                                        "results lack or differ in; or its worst queries as an HTML report")
    ex.add_argument("result", type=Path, metavar="RESULT", help="a result (results store file, or an --output folder); "
                                                                "--query and --report need one written with --save-predictions")
    ex.add_argument("--subset", help="with --query: paper name or alias of the subset")
    ex.add_argument("--query", type=int, metavar="N",
                    help="1-based number of the query among the subset's evaluated queries (column 'query' of the Parquet)")
    ex.add_argument("--top", type=int, default=10, help="how many of its results to show (at most the 20 saved)")
    ex.add_argument("--report", type=Path, metavar="OUT.html",
                    help="write the worst queries, each beside its top results' thumbnails, as one self-contained HTML file")
    ex.add_argument("--worst", type=int, default=100, metavar="N", help="with --report: how many of the worst queries")
    ex.add_argument("--data", help="with --report: where the images are, as `evaluate --data` takes it (default: the "
                                   "data the result names)")
    ex.set_defaults(run=run)


def explain(result: Path, subset: str, query: int, top: int = 10) -> str:
    import pyarrow.compute as pc

    from lookbench import terminal
    from lookbench.paths import result_file
    from lookbench.report.records import chips
    from lookbench.results.folder import ResultFolder
    from lookbench.results.provenance import Provenance
    from lookbench.results.store import read_json
    from lookbench.schema import resolve_subset

    result = result_file(result)
    try:
        data = read_json(result)
        provenance = Provenance(data["provenance"])
        mode, saved = provenance.need("mode"), provenance.saved()
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{result} is not a LookBench result JSON ({type(err).__name__}: {err})") from None
    subset = resolve_subset(subset)
    stored = ResultFolder.of(result)
    path = stored.folder / stored.ranking(subset)
    if subset not in saved or not path.is_file():
        raise ValueError(f"{result} has no saved rankings for {subset} ({path} is missing); "
                         "evaluate again with --save-predictions")
    if top < 1:
        raise ValueError(f"--top must be at least 1, got {top}")
    blocks = {name: block for name, block in data.items() if name != "provenance" and isinstance(block, dict)}
    if subset not in blocks:
        raise ValueError(f"{result} has no scores of {subset} beside its saved ranking")
    # bounded as the report's reader is
    ((_, _, _, table),) = stored.rankings([subset], blocks, saved=True, shown=lambda relative: str(stored.folder / relative))
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
    query = {"category": q["query_category"], "main_attribute": q["query_main_attribute"],
             "attributes": q["query_attributes"]}
    # A fine hit has no reason to show, but in leaderboard mode it may still lack attributes: its attributes are
    # compared as strict mode compares them.
    cells = [[str(r["rank"]), f"{r['score']:.3f}", "yes" if r["fine_hit"] else "no", "yes" if r["coarse_hit"] else "no",
              str(r["item_id"]), r["category"],
              "; ".join(c.text for c in chips(query, r, "strict" if r["fine_hit"] else mode, r["coarse_hit"]))
              or "all query attributes match"] for r in rows[:top]]
    lines = [line for i, text in enumerate(head) for line in terminal.paragraph(("  " if i else "") + text, indent="    ")]
    lines += terminal.table(["rank", "score", *(terminal.Column(c, "left") for c in
                                                ("fine", "coarse", "item_id", "category", "what differs"))],
                            cells, drop_order=["category"])  # a category that differs is in "what differs"
    return "\n".join(lines)


def attributes(result: Path, width: int | None = None) -> str:
    """A result's headline and its attribute error block (the evaluate table's)."""
    from lookbench import terminal
    from lookbench.results.table import attribute_lines
    from lookbench.results.comparison import read_result
    from lookbench.results.outcomes import check_result
    from lookbench.results.provenance import Provenance

    data = read_result(result)
    check_result(data, data["_path"])
    width = width or terminal.width()
    p = Provenance(data["provenance"])
    blocks = {name: block.get("attribute_errors") for name, block in data.items()
              if name not in ("provenance", "_path") and isinstance(block, dict)}
    head = terminal.terminal_safe(f"{data['_path']}: {p.model.name or '?'} on {p.dataset.title}, {p.mode} mode")
    return "\n".join([head, *attribute_lines({**{n: b for n, b in blocks.items() if n != "overall"},
                                                "overall": blocks.get("overall")}, width)[1:]])


def run(args) -> int:
    """Every text the file gives (a model's or data's name, a key a refusal quotes) reaches the terminal as
    ``terminal.terminal_safe`` writes it, as ``leaderboard``, ``compare`` and ``verify`` print them: a name's escape
    sequences cannot retitle the window, clear the screen or hide a link."""
    from lookbench import terminal

    try:
        return _run(args)
    except ValueError as err:
        raise ValueError(terminal.terminal_safe(err)) from None


def _run(args) -> int:
    if (args.subset is None) != (args.query is None):
        raise ValueError("--subset and --query name one query together: give both, or neither")
    if args.report is None and (args.data is not None or args.worst != 100):
        raise ValueError("--data and --worst choose what the report shows: give them with --report")
    if args.report is not None:
        from lookbench.files import writable_file
        from lookbench.report import html, records

        writable_file(args.report)  # checked before the data is read
        report = records.worst_queries(args.result, args.top, args.worst)
        path = html.write(report, records.thumbnails(report, args.data), args.report)
        print(f"report: {path} ({path.stat().st_size / 1e6:.1f} MB; {len(report.queries)} worst of "
              f"{report.evaluated} queries, top {args.top} results each)")
        return 0
    if args.query is None:
        print(attributes(args.result))
        return 0
    print(explain(args.result, args.subset, args.query, args.top))
    return 0
