"""What the Space's page shows, as text, tables and figures: the gallery's line, a query's annotation, each model's
results table, the leaderboard's tables and plot, and the page's CSS (docs/architecture.md §5).

Kept apart from ``app.py``'s handlers; each fix here was checked in a real browser screenshot (issue 38 item 6).
"""
from __future__ import annotations

import base64
from html import escape

from lookbench.schema import NOISE, TEST_SUBSETS

# The results tables at full width with whole words in their headers; the query image filling its box; result tiles
# bordered in their mark's colour; the second panel hidden while empty; leaderboard tables whole (no scroll box);
# on a phone the panels stack and the tables' first columns (rank, mark, what it lacks) stay in view.
CSS = """
#details-a table, #details-b table { width: 100%; }
#details-a th, #details-b th, #details-a td:first-child, #details-b td:first-child {
    word-break: keep-all; overflow-wrap: normal; white-space: nowrap; }
#column-b:not(:has(.panel)) { display: none; }
#query-image img { width: 100%; height: 100%; object-fit: contain; }
.legend { display: flex; flex-wrap: wrap; gap: .4em 1.2em; font-size: .9em; margin: 0; }
.legend span::before { content: ""; display: inline-block; width: .9em; height: .9em; margin-right: .35em;
                       vertical-align: -.1em; border: 3px solid var(--mark); border-radius: 3px; }
.panel h3 { margin: 0 0 .3em; font-size: .95em; }
#gallery-info, #intro p { font-size: .85em; line-height: 1.35; }
#intro h3 { margin-bottom: .2em; }
.panel .note { margin: 0 0 .4em; font-size: .85em; }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(100px, 1fr)); gap: 8px; }
.tile { margin: 0; border: 4px solid var(--mark); border-radius: 6px; padding: 3px; background: var(--block-background-fill);
        display: flex; flex-direction: column; gap: 2px; font-size: .78em; line-height: 1.25; }
.tile img { width: 100%; aspect-ratio: 1 / 1; object-fit: contain; background: #fff; border-radius: 3px; }
.tile .head { display: flex; justify-content: space-between; font-weight: 600; }
.tile .what { overflow-wrap: anywhere; }
.chip { display: inline-block; margin: 1px 2px 0 0; padding: 0 5px; border-radius: 9px; font-size: .92em;
        background: #fde8e8; color: #8a1c1c; overflow-wrap: anywhere; }
.chip.differs { background: #fff3d6; color: #6b4a00; }
.board-wrap { overflow-x: auto; }
.board-table { width: 100%; border-collapse: collapse; font-size: .9em; }
.board-table th, .board-table td { padding: 3px 6px; border-bottom: 1px solid var(--border-color-primary); }
.board-table td.num, .board-table th.num { text-align: right; font-variant-numeric: tabular-nums; }
#your-queries .query { display: flex; gap: 10px; padding: 8px 0; border-bottom: 1px solid var(--border-color-primary); }
#your-queries .results { display: flex; flex-wrap: wrap; gap: 6px; }
#your-queries .card { width: 100px; font-size: .75em; line-height: 1.25; overflow-wrap: anywhere; }
#your-queries .card.q { width: 150px; font-size: .8em; }
#your-queries .card img, #your-queries .card .none { width: 100%; aspect-ratio: 1 / 1; object-fit: contain; display: flex;
    align-items: center; justify-content: center; background: #fff; border: 4px solid var(--mark, #333); border-radius: 6px;
    box-sizing: border-box; color: #777; }
#your-queries .chip.category { background: #eee; color: #333; }
#your-queries .text { font-style: italic; }
@media (max-width: 600px) {
  .tiles { grid-template-columns: repeat(auto-fill, minmax(96px, 1fr)); }
  #details-a table, #details-b table, .board-table { font-size: .75em; }
  #details-a th, #details-b th { white-space: normal; }
  .wide-only { display: none; }
}
"""

# A result's mark: its label and colour (colour-blind safe: blue / orange / grey-red, and a word on each tile).
MARKS = {"fine": ("fine ✓", "#1f6feb"), "coarse": ("coarse ✓", "#d97706"), "miss": ("miss ✗", "#b42318"),
         None: ("unmarked", "#8c959f")}
LEGEND = {"fine": "fine: same category, every attribute", "coarse": "coarse: same category only",
          "miss": "miss: another category", None: "unmarked: a query without annotation"}
# "Your results" cards (the report's rows) bordered as the Search tab's tiles
CSS += "".join(f"#your-queries .card.{mark} {{ --mark: {MARKS[mark][1]}; }}\n" for mark in ("fine", "coarse", "miss"))


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
    rows = ["| # | mark | lacks | has otherwise | score | category | main attribute | subset |",
            "|---:|---|---|---|---:|---|---|---|"]
    for h in result.hits:
        lacks, differs = gaps(h)
        rows.append(f"| {h.rank} | {MARKS[h.mark][0]} | {', '.join(lacks)} | {', '.join(differs)} | {h.score:.3f} | "
                    f"{h.category} | {h.main_attribute} | {h.subset} |")
    return "\n\n".join(lines + ["\n".join(rows)])


def gaps(hit) -> tuple[list[str], list[str]]:
    """What a result lacks of the query's attributes, and the attributes it has otherwise (a miss: its category)."""
    if hit.mark == "miss":
        return ["other category"], []
    return [f"{n}={v}" for n, v in hit.lacks], [f"{n}: {v} → {'/'.join(w)}" for n, v, w in hit.differs]


def legend_html() -> str:
    """The marks' colours, said once above the panels."""
    return "<p class='legend'>" + "".join(f"<span style='--mark:{MARKS[m][1]}'>{escape(text)}</span>"
                                           for m, text in LEGEND.items()) + "</p>"


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
        label, colour = MARKS[h.mark]
        lacks, differs = gaps(h)
        chips = "".join(f"<span class='chip lacks'>{escape(c)}</span>" for c in lacks) + \
            "".join(f"<span class='chip differs'>{escape(c)}</span>" for c in differs)
        image = base64.b64encode(h.thumb).decode()
        parts.append(f"<figure class='tile' data-mark='{h.mark or 'none'}' style='--mark:{colour}'>"
                     f"<img src='data:image/webp;base64,{image}' alt='#{h.rank} {escape(h.category)}'>"
                     f"<span class='head'><span>#{h.rank} · {label}</span><span>{h.score:.3f}</span></span>"
                     f"<span class='what'>{escape(h.category)} · {escape(h.main_attribute)}</span>"
                     f"{'<span class=chips>' + chips + '</span>' if chips else ''}</figure>")
    return "".join(parts + ["</div></section>"])


def worst_html(queries, images: dict) -> str:
    """The "Your results" tab's worst queries: the legend once, then each query's row as the report draws it."""
    from lookbench.report.html import query_row

    if not queries:
        return "<p>No worst query matches these filters.</p>"
    return legend_html() + "".join(query_row(w, images) for w in queries)


def board_frame(section):
    """A leaderboard section's table as the tab shows it, and the line under it: the 95 % interval in one column,
    its method and the query counts in the line (as columns they pushed the table past the page's width)."""
    frame = section.frame()
    at = frame.columns.get_loc("ci95_lo")
    lo, hi = frame.pop("ci95_lo"), frame.pop("ci95_hi")
    frame.insert(at, "95% interval", [f"{a:.2f}–{b:.2f}" if a == a and b == b and a is not None else ""
                                      for a, b in zip(lo, hi)])
    facts = []
    for column, label in (("ci_method", "intervals"), ("queries", "queries")):
        if column in frame:
            values = [str(v) for v in dict.fromkeys(frame.pop(column)) if v == v and v is not None]
            facts += [f"{label}: {', '.join(values)}"] if values else []
    return frame, " · ".join(facts)


def board_html(section) -> tuple[str, str]:
    """A leaderboard section as an HTML table with every row (no inner scroll box) and two decimals throughout
    (whole numbers stay whole), and the line under it (``board_frame``'s)."""
    frame, facts = board_frame(section)

    def cell(value) -> str:
        if isinstance(value, float):
            return "" if value != value else f"{value:.2f}"
        return escape(str(value)) if value is not None else ""

    numeric = [str(frame[c].dtype).startswith(("float", "int")) for c in frame.columns]
    head = "".join(f"<th class='{'num' if n else ''}'>{escape(str(c))}</th>" for c, n in zip(frame.columns, numeric))
    body = "".join("<tr>" + "".join(f"<td class='{'num' if n else ''}'>{cell(v)}</td>" for v, n in zip(row, numeric))
                   + "</tr>" for row in frame.itertuples(index=False))
    return (f"<div class='board-wrap'><table class='board-table'><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>"), facts


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
