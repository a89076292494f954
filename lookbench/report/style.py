"""How a marked result looks, wherever it is shown: the one palette of the marks, the legend, the result tile with its
"why not fine" chips, and their CSS. The HTML report inlines ``CSS``; the demo's Search and "Your results" tabs and
the leaderboard Space add it to their page's, so a mark has one colour everywhere (issue 52 item 4).
"""
from __future__ import annotations

from html import escape

# A result's mark: its label and colour. Colour-blind safe (blue / amber / dark red differ in lightness as well as
# hue), and every tile also says its mark in words.
MARKS = {"fine": ("fine ✓", "#1f6feb"), "coarse": ("coarse ✓", "#d97706"), "miss": ("miss ✗", "#b42318"),
         None: ("unmarked", "#8c959f")}
# What each mark means; fine depends on the mode the results were judged in.
FINE = {"strict": "same category, every attribute", "leaderboard": "same category and main attribute"}
MEANING = {"coarse": "same category only", "miss": "another category", None: "a query without annotation"}

CSS = """
.legend { display: flex; flex-wrap: wrap; gap: .4em 1.2em; font-size: .9em; margin: 0; }
.legend span::before { content: ""; display: inline-block; width: .9em; height: .9em; margin-right: .35em;
                       vertical-align: -.1em; border: 3px solid var(--mark); border-radius: 3px; }
.tiles { display: grid; grid-template-columns: repeat(auto-fill, minmax(100px, 1fr)); gap: 8px; }
.tile { margin: 0; border: 4px solid var(--mark); border-radius: 6px; padding: 3px;
        background: var(--block-background-fill, #fff); display: flex; flex-direction: column; gap: 2px;
        font-size: .78em; line-height: 1.25; }
.tile img, .tile .none { width: 100%; aspect-ratio: 1 / 1; object-fit: contain; background: #fff; border-radius: 3px; }
.none { display: flex; align-items: center; justify-content: center; color: #777; background: #f4f4f4; }
.tile .head { display: flex; flex-wrap: wrap; justify-content: space-between; column-gap: 4px; font-weight: 600; }
.tile .what { overflow-wrap: anywhere; }
.chip { display: inline-block; margin: 1px 2px 0 0; padding: 0 5px; border-radius: 9px; font-size: .92em;
        background: #fde8e8; color: #8a1c1c; overflow-wrap: anywhere; }
.chip.differs { background: #fff3d6; color: #6b4a00; }
.chip.category { background: #eee; color: #333; }
.query { display: flex; gap: 10px; padding: 8px 0; border-bottom: 1px solid var(--border-color-primary, #ddd); }
.query .results { flex: 1; align-content: start; }
.card.q { width: 150px; flex: none; font-size: .8em; line-height: 1.25; overflow-wrap: anywhere; }
.card.q img, .card.q .none { width: 100%; aspect-ratio: 1 / 1; object-fit: contain; display: flex; background: #fff;
                             border: 4px solid #333; border-radius: 6px; box-sizing: border-box; }
.card.q .text { font-style: italic; }
"""


def legend(mode: str = "strict", unmarked: bool = False) -> str:
    """The marks' colours and meanings, said once above the results (``unmarked``: a query may have no annotation)."""
    meaning = {"fine": FINE[mode], **MEANING}
    marks = ["fine", "coarse", "miss", *([None] if unmarked else [])]
    return "<p class='legend'>" + "".join(f"<span style='--mark:{MARKS[m][1]}'>{m or 'unmarked'}: {escape(meaning[m])}"
                                          "</span>" for m in marks) + "</p>"


def picture(src: str | None, alt: str = "", key: str | None = None) -> str:
    """An image inline (``src``, a data URI), or one a page's script fills in by ``key``; neither: said unreadable."""
    if src:
        return f"<img src='{escape(src, quote=True)}' alt='{escape(alt, quote=True)}'>"
    if key is not None:
        return f"<img data-key='{escape(key, quote=True)}' alt='{escape(alt, quote=True)}'>"
    return "<div class='none'>image unreadable</div>"


def tile(mark: str | None, rank: int, image: str, what: str, score: float | None = None, chips=()) -> str:
    """One ranked result: bordered in its mark's colour, its rank, mark and score (``None``: not shown), ``what`` it
    is, and ``chips`` (``records.Chip``: why it is not a fine hit). ``image``: ``picture``'s HTML."""
    label, colour = MARKS[mark]
    shown = "" if score is None else f"<span>{score:.3f}</span>"
    said = "".join(f"<span class='chip {c.kind}'>{escape(c.text)}</span>" for c in chips)
    return (f"<figure class='tile' data-mark='{mark or 'none'}' style='--mark:{colour}'>{image}"
            f"<span class='head'><span>#{rank} · {label}</span>{shown}</span>"
            f"<span class='what'>{escape(what)}</span>{'<span class=chips>' + said + '</span>' if said else ''}</figure>")
