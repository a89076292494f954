"""What the Space's page shows, as text, tables and figures: the gallery's line, a query's annotation, each model's
results table, the leaderboard's tables and plot, and the page's CSS (docs/architecture.md §5).

Kept apart from ``app.py``'s handlers; each fix here was checked in a real browser screenshot (issue 38 item 6).
"""
from __future__ import annotations

import base64
from html import escape

from lookbench import terminal
from lookbench.terminal import markdown_safe
from lookbench.report.style import CSS as STYLE, MARKS, legend, picture, tile
from lookbench.schema import NOISE, TEST_SUBSETS

# The results tables at full width with whole words in their headers; the query image filling its box; the second
# panel hidden while empty; leaderboard tables whole (no scroll box); on a phone the panels stack and the tables' first
# columns (rank, mark, why not fine) stay in view. The tiles, legend and worst-query rows are the report's (``STYLE``).
CSS = STYLE + """
#details-a table, #details-b table { width: 100%; }
#details-a th, #details-b th, #details-a td:first-child, #details-b td:first-child {
    word-break: keep-all; overflow-wrap: normal; white-space: nowrap; }
#column-b:not(:has(.panel)) { display: none; }
#query-image img { width: 100%; height: 100%; object-fit: contain; }
.panel h3 { margin: 0 0 .3em; font-size: .95em; }
#gallery-info, #intro p { font-size: .85em; line-height: 1.35; }
#intro h3 { margin-bottom: .2em; }
.panel .note { margin: 0 0 .4em; font-size: .85em; }
.board-wrap { overflow-x: auto; }
.board-table { width: 100%; border-collapse: collapse; font-size: .9em; }
.board-table th, .board-table td { padding: 3px 6px; border-bottom: 1px solid var(--border-color-primary); }
.board-table td.num, .board-table th.num { text-align: right; font-variant-numeric: tabular-nums; }
@media (max-width: 600px) {
  .tiles { grid-template-columns: repeat(auto-fill, minmax(96px, 1fr)); }
  #details-a table, #details-b table, .board-table { font-size: .75em; }
  #details-a th, #details-b th { white-space: normal; }
}
"""


def pairs(attributes) -> str:
    return ", ".join(f"{a['name']}={a['value']}" for a in attributes or []) or "none"


def annotation_markdown(query) -> str:
    a = query.annotation
    if a is None:
        return f"**Query:** {query.label} — no annotation, so results are not marked."
    outfit = f" · outfit {a['outfit_id']}" if a.get("outfit_id") else ""
    return (f"**Query {query.label}:** category **{a['category']}**, main attribute **{a['main_attribute']}**{outfit}  \n"
            f"attributes: {pairs(a['attributes'])}")


def _sign(hit: bool) -> str:
    return "✓" if hit else "✗"


def details_markdown(result, k: int, gallery: str) -> str:
    """The model's results as a table, the mark and what each result lacks first (kept on a phone's width)."""
    lines = [f"### {result.model} · {gallery}"]
    if result.fine_hit is not None:
        lines.append(f"Fine hit@{k} {_sign(result.fine_hit)} · Coarse hit@{k} {_sign(result.coarse_hit)} · "
                     f"nDCG@{k} {result.ndcg:.1f} (strict mode, lookbench/fine_recall)")
    if result.self_matches_removed:
        lines.append(f"{result.self_matches_removed} gallery image(s) identical to the query dropped (the query's own "
                     "image), as the benchmark does.")
    if not result.hits:
        return "\n\n".join(lines + ["No result in this gallery."])
    rows = ["| # | mark | why not fine | score | category | main attribute | subset |",
            "|---:|---|---|---:|---|---|---|"]
    for h in result.hits:
        rows.append(f"| {h.rank} | {MARKS[h.mark][0]} | {', '.join(c.text for c in h.chips)} | {h.score:.3f} | "
                    f"{h.category} | {h.main_attribute} | {h.subset} |")
    return "\n\n".join(lines + ["\n".join(rows)])


def panel_title(result, k: int) -> str:
    """A panel's title: the model and this query's hit@k (a query without annotation: unmarked)."""
    if result.fine_hit is None:
        return f"{result.model} — top {k}, unmarked"
    return (f"{result.model} — fine hit@{k} {_sign(result.fine_hit)} · coarse hit@{k} {_sign(result.coarse_hit)} · "
            f"nDCG@{k} {result.ndcg:.1f}")


def panel_html(result, k: int) -> str:
    """One model's results as tiles: each bordered in its mark's colour, with rank, score, category and main
    attribute, and what it lacks or has otherwise as chips. Thumbnails inline (data URIs): no file is served."""
    parts = [f"<section class='panel' data-model='{escape(result.model)}'><h3>{escape(panel_title(result, k))}</h3>"]
    if result.self_matches_removed:
        parts.append(f"<p class='note'>{result.self_matches_removed} gallery image(s) identical to the query dropped "
                     "(the query's own image), as the benchmark does.</p>")
    if not result.hits:
        parts.append("<p class='note'>No result in this gallery.</p>")
    parts.append("<div class='tiles'>")
    for h in result.hits:
        image = picture(f"data:image/webp;base64,{base64.b64encode(h.thumb).decode()}", f"#{h.rank} {h.category}")
        parts.append(tile(h.mark, h.rank, image, f"{h.category} · {h.main_attribute}", h.score, h.chips))
    return "".join(parts + ["</div></section>"])


def worst_html(queries, images: dict, mode: str) -> str:
    """The "Your results" tab's worst queries: the legend of their ``mode`` once, then each query's row as the report
    draws it."""
    from lookbench.report.html import query_row

    if not queries:
        return "<p>No worst query matches these filters.</p>"
    return legend(mode) + "".join(query_row(w, images) for w in queries)


def board_frame(section):
    """A leaderboard section's table as both boards show it (the demo's Leaderboard tab and the leaderboard Space),
    and the line under it: the verified column beside the model, where a reader looks first; the 95 % interval in
    one column, written as every interval is (``terminal.bounds``, ``[lo, hi]``); its method and the query counts in
    the line (as columns they pushed the table past the page's width)."""
    frame = section.frame()
    frame.insert(frame.columns.get_loc("model") + 1, "verified", frame.pop("verified"))
    at = frame.columns.get_loc("ci95_lo")
    lo, hi = frame.pop("ci95_lo"), frame.pop("ci95_hi")
    frame.insert(at, "95% interval", [terminal.bounds((a, b), 2) if a == a and b == b and a is not None else ""
                                      for a, b in zip(lo, hi)])
    facts = []
    for column, label in (("ci_method", "intervals"), ("queries", "queries")):
        if column in frame:
            values = [str(v) for v in dict.fromkeys(frame.pop(column)) if v == v and v is not None]
            facts += [f"{label}: {', '.join(values)}"] if values else []
    return frame, " · ".join(facts)


def board_html(section) -> tuple[str, str]:
    """A leaderboard section as an HTML table with every row (no inner scroll box) and two decimals throughout
    (whole numbers stay whole) — one in a row scored while its release is sealed, which is all the board shows of
    it — and the line under it (``board_frame``'s)."""
    from lookbench.results.trust import SCORED_SEALED

    frame, facts = board_frame(section)
    verified = list(frame.columns).index("verified") if "verified" in frame.columns else None

    def cell(value, places: int) -> str:
        if isinstance(value, float):
            return "" if value != value else f"{value:.{places}f}"
        return escape(str(value)) if value is not None else ""

    def places(row) -> int:
        return 1 if verified is not None and str(row[verified]).startswith(SCORED_SEALED) else 2

    numeric = [str(frame[c].dtype).startswith(("float", "int")) for c in frame.columns]
    head = "".join(f"<th class='{'num' if n else ''}'>{escape(str(c))}</th>" for c, n in zip(frame.columns, numeric))
    body = "".join("<tr>" + "".join(f"<td class='{'num' if n else ''}'>{cell(v, places(row))}</td>"
                                    for v, n in zip(row, numeric))
                   + "</tr>" for row in frame.itertuples(index=False))
    return (f"<div class='board-wrap'><table class='board-table'><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>"), facts


def board_section(section) -> None:
    """One section drawn into the page being rendered (a ``gr.render`` of either board): its title, its table
    (``board_html``) and the line under it with its source."""
    import gradio as gr

    gr.Markdown(f"### {markdown_safe(section.title)}")
    table, facts = board_html(section)
    if section.rows:
        gr.HTML(table, elem_classes="board")
    else:
        gr.Markdown("No row of this table passes the filters.")
    gr.Markdown("  \n".join([*([markdown_safe(facts)] if facts else []), f"Source: {markdown_safe(section.source)}"]))


KS = (1, 5, 10, 20)  # the K choices of both boards' pages (the demo's tab and the leaderboard Space)
OVERALL = "overall"  # the subset choice of every subset together


def leaderboard_tab(board, note: str = "") -> None:
    """The demo's leaderboard tab: metric, K, subset and zero-shot controls over ``board(metric, k, subset,
    zero_shot)``, its tables drawn as the leaderboard Space draws them (``board_page``); ``note`` under them."""
    import gradio as gr

    from lookbench.leaderboard.render import GROUPS_NOTE, ZERO_SHOT_NOTE
    from lookbench.settings import METRICS
    from lookbench.space.requests import refused

    with gr.Row():
        metric = gr.Radio(list(METRICS), value="fine", label="Metric")
        k = gr.Dropdown(list(KS), value=1, label="K")
        subset = gr.Dropdown([OVERALL, *TEST_SUBSETS], value=OVERALL, label="Subset")
        zero_shot = gr.Checkbox(False, label="Zero-shot only", elem_id="board-zero-shot")

    @gr.render(inputs=[metric, k, subset, zero_shot])
    def _board(*controls):
        try:
            ranked = board(*controls)
        except ValueError as err:
            gr.Markdown(f"⚠️ {markdown_safe(refused(err))}")
            return
        board_page(ranked, f"{GROUPS_NOTE}\n\n{ZERO_SHOT_NOTE}{note}")


def board_page(ranked, notes: str) -> None:
    """A ranked leaderboard (``lookbench.leaderboard.ranking.Leaderboard``) drawn into the page being rendered, as both
    boards draw it: each section (``board_section``), the ``notes`` under them, the files skipped, and the plot."""
    import gradio as gr

    for section in ranked.sections:
        board_section(section)
    gr.Markdown(notes)
    for line in ranked.skipped:
        gr.Markdown(f"Skipped: {markdown_safe(line)}")
    if ranked.sections:  # drawn in memory
        gr.Plot(fitted(ranked.figure()), label="The ranked score with its 95% interval", elem_id="board-plot")


def fitted(figure):
    """The figure with every panel's title wrapped to the panel's width (a long section title ran past the figure's
    edge and was cut off)."""
    import textwrap

    for ax in figure.axes:
        width = ax.get_position().width * figure.get_figwidth() * 72 / 6  # characters of about 6 pt at fontsize 9
        ax.set_title(textwrap.fill(ax.get_title(), max(30, int(width))), fontsize=9)
    figure.tight_layout()
    return figure


def gallery_markdown(assets) -> str:
    """What the page says about a gallery: its name, origin, size, subsets, releases and licence."""
    data, ranges = assets.manifest["data"], assets.manifest["ranges"]
    subsets = [s for s in TEST_SUBSETS if s in ranges]
    noise = f" ({ranges[NOISE][1] - ranges[NOISE][0]:,} of them noise distractors)" if NOISE in ranges else ""
    return (f"**Gallery: {data['name']}** — {data['origin']}  \n{len(assets.gallery):,} gallery images{noise} and "
            f"{len(assets.queries):,} benchmark queries in {', '.join(subsets)} · releases {', '.join(data['releases'])} · "
            f"licence {data['license']}")
