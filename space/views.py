"""What the Space's page shows, as text, tables and figures: the gallery's line, a query's annotation, each model's
results table, the leaderboard's tables and plot, and the page's CSS (docs/architecture.md §5).

Kept apart from ``app.py``'s handlers; each fix here was checked in a real browser screenshot (issue 38 item 6).
"""
from __future__ import annotations

from lookbench.schema import NOISE, TEST_SUBSETS

# The results tables at full width with whole words in their headers; each thumbnail's caption whole, below it
# (gradio cuts it to one line over the image); leaderboard headers broken only between words.
CSS = """
#details-a table, #details-b table { width: 100%; }
#details-a th, #details-b th { word-break: keep-all; overflow-wrap: normal; white-space: nowrap; }
.results .thumbnail-item { aspect-ratio: auto; height: auto; display: flex; flex-direction: column; }
.results .thumbnail-item img { aspect-ratio: 1 / 1; height: auto; object-fit: contain; }
.results .caption-label { position: static; max-width: 100%; white-space: normal; overflow: visible;
                          text-overflow: clip; border: none; border-radius: 0; opacity: 1; }
.board.board .virtual-row, .board.board .virtual-row *, .board.board th, .board.board th * {
    font-family: var(--font); word-break: normal; overflow-wrap: normal; hyphens: none; }
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


def details_markdown(result, k: int, gallery: str) -> str:
    lines = [f"### {result.model} · {gallery}"]
    if result.fine_hit is not None:
        sign = {True: "✓", False: "✗"}
        lines.append(f"Fine hit@{k} {sign[result.fine_hit]} · Coarse hit@{k} {sign[result.coarse_hit]} · "
                     f"nDCG@{k} {result.ndcg:.1f} (strict mode, lookbench/fine_recall)")
    if result.self_matches_removed:
        lines.append(f"{result.self_matches_removed} gallery image(s) identical to the query dropped (the query's own "
                     "image), as the benchmark does.")
    if not result.hits:
        return "\n\n".join(lines + ["No result in this gallery."])
    rows = ["| # | score | subset | category | main attribute | mark | lacks | has otherwise |", "|---:|---:|---|---|---|---|---|---|"]
    for h in result.hits:
        mark = {"fine": "fine ✓", "coarse": "coarse ✓", "miss": "✗", None: "-"}[h.mark]
        lacks = ", ".join(f"{n}={v}" for n, v in h.lacks) or ""
        differs = ", ".join(f"{n}: {v} → {'/'.join(w)}" for n, v, w in h.differs) or ""
        if h.mark == "miss":
            lacks, differs = "other category", ""
        rows.append(f"| {h.rank} | {h.score:.3f} | {h.subset} | {h.category} | {h.main_attribute} | {mark} | {lacks} | {differs} |")
    return "\n\n".join(lines + ["\n".join(rows)])


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
