"""The report drawn as one self-contained HTML page: thumbnails and the attribute chart inline (data URIs), the
filters a few lines of script, nothing fetched — it opens from disk. Written whole through ``lookbench.files``."""
from __future__ import annotations

import base64
import io
import json
from html import escape
from pathlib import Path

from lookbench.files import replacing, writable_file
from lookbench.report.records import Report, WorstQuery, image_key
from lookbench.report.style import CSS, legend, picture, tile

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1500px}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.5em}
table.scores td,table.scores th{padding:2px 10px;text-align:right} table.scores th{text-align:left}
.filters{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ddd;z-index:1}
.filters label{margin-right:1.2em}
.errors{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
""" + CSS

_SCRIPT = """
const IMAGES = %s;
document.querySelectorAll('img[data-key]').forEach(img => {
  const src = IMAGES[img.dataset.key];
  if (src) { img.src = src; return; }
  img.outerHTML = %s;
});
function apply() {
  const want = id => document.getElementById(id).value;
  let shown = 0;
  document.querySelectorAll('.query').forEach(q => {
    const ok = (!want('subset') || q.dataset.subset === want('subset'))
      && (!want('category') || q.dataset.category === want('category'))
      && (!want('attribute') || JSON.parse(q.dataset.attributes).includes(want('attribute')));
    q.style.display = ok ? '' : 'none';
    shown += ok;
  });
  document.getElementById('shown').textContent = shown;
}
document.querySelectorAll('.filters select').forEach(s => s.addEventListener('change', apply));
apply();
"""


def render(report: Report, images: dict[str, str | None]) -> str:
    """The page: headline, attribute error chart and table, filters, and each worst query with its results."""
    errors = report.attribute_errors.get("overall")
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(report.title)}</title>"
             f"<style>{_STYLE}</style></head><body>",
             f"<h1>LookBench report: {escape(report.title)}</h1>",
             f"<p>{escape(str(report.path.name))} — {report.evaluated} queries evaluated; scores with their 95% intervals.</p>",
             "<table class='scores'><tr>" + "".join(f"<th>{escape(k)}</th>" for k, _ in report.headline) + "</tr><tr>"
             + "".join(f"<td>{escape(v)}</td>" for _, v in report.headline) + "</tr></table>",
             "<h2>Attribute errors at top-1</h2>"]
    if errors:
        parts += ["<p>Of the queries with the attribute whose top-1 item is of their category, the % whose top-1 lacks "
                  "the query's value, with its 95% Wilson interval; the most frequent confusions beside it.</p>",
                  f"<div class='errors'><img alt='attribute error chart' src='{_chart(errors, report.title)}'>"
                  f"{_error_table(errors)}</div>"]
    else:
        parts.append("<p>Not in this result (written before attribute errors were kept; evaluate again with "
                     "--overwrite).</p>" if errors is None else "<p>No query with attributes has a top-1 item of its "
                     "category.</p>")
    parts += [f"<h2>The worst queries ({len(report.queries)} shown)</h2>",
              "<p>Fine misses first, by how far the first fine hit is; each query beside its top results, each result "
              "bordered by its mark, with why it is not a fine hit.</p>", legend(report.mode),
              _filters(report), *(query_row(w) for w in report.queries),
              f"<script>{_SCRIPT % (script_json(images), script_json(picture(None)))}</script></body></html>"]
    return "\n".join(parts)


_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def script_json(value) -> str:
    """``value`` as a literal for an inline ``<script>``: JSON (ASCII, so U+2028/2029 are \\u escapes too) with
    ``<``, ``>`` and ``&`` as \\u escapes. ``json.dumps`` leaves ``</script>`` and ``<!--`` as they are, so a
    hostile item id in the thumbnail map would close the script and run its own (issue 53)."""
    return json.dumps(value).translate(_SCRIPT_SAFE)


def _chart(errors: dict, title: str) -> str:
    """The evaluate plot's attribute figure (``attribute_figure``) as a PNG data URI."""
    from lookbench.results.plots import attribute_figure

    buffer = io.BytesIO()
    attribute_figure(errors, f"{title}: attribute error rate@1").savefig(buffer, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _error_table(errors: dict) -> str:
    rows = []
    for name, block in sorted(errors.items(), key=lambda item: -item[1]["rate"]):
        lo, hi = block["ci95"]
        confused = ", ".join(f"{q} → {t if t is not None else 'missing'} ×{c}" for q, t, c in block["confusions"][:3])
        rows.append(f"<tr><th>{escape(name)}</th><td>{block['rate']:.1f} [{lo:.1f}, {hi:.1f}]</td><td>{escape(str(block['n']))}</td>"
                    f"<td style='text-align:left'>{escape(confused) or '-'}</td></tr>")
    return ("<table class='scores'><tr><th>attribute</th><th>error %</th><th>queries</th><th>most confused</th></tr>"
            + "".join(rows) + "</table>")


def _filters(report: Report) -> str:
    def select(name, values):
        options = "".join(f"<option value='{escape(v, quote=True)}'>{escape(v)}</option>" for v in values)
        return f"<label>{name} <select id='{name}'><option value=''>all</option>{options}</select></label>"

    subsets = list(dict.fromkeys(w.subset for w in report.queries))
    categories = sorted({w.category for w in report.queries})
    attributes = sorted({a for w in report.queries for a in w.attribute_names()})
    return (f"<div class='filters'>{select('subset', subsets)}{select('category', categories)}"
            f"{select('attribute', attributes)}<span><span id='shown'>{len(report.queries)}</span> queries shown</span></div>")


def _image(key: str, images: dict | None) -> str:
    """An image by its key: filled in by the page's script (``images`` None), else inline, or said to be unreadable."""
    return picture(None, key=key) if images is None else picture(images.get(key))


def query_row(w: WorstQuery, images: dict | None = None) -> str:
    """One worst query beside its results, each the one result tile (``style.tile``): the report's row, and the
    demo's "Your results" tab's (``images``: ``{key: data URI}`` inline, as ``records.thumbnails`` gives them)."""
    found = (f"first fine hit at rank {w.first_fine}" if w.first_fine else f"no fine hit in the top {w.depth}") + "; " + (
        f"first coarse hit at rank {w.first_coarse}" if w.first_coarse else f"no coarse hit in the top {w.depth}")
    attributes = ", ".join(f"{n}={v}" for n, v in w.attributes) or "(none)"
    words = f"<div class='text'>“{escape(w.text)}” (a text query; its image:)</div>" if w.text else ""
    head = (f"<div class='card q'><b>{escape(w.subset)} query {w.number}</b>{words}{_image(image_key(w.subset, 'query', w.item_id), images)}"
            f"<div>{escape(w.item_id)} · {escape(w.category)}</div><div>{escape(attributes)}</div><div>{escape(found)}</div></div>")
    tiles = [tile(r.mark, r.rank, _image(image_key(w.subset, "gallery", r.gallery_index), images),
                  f"{r.item_id} · {r.category}", r.score, r.chips) for r in w.results]
    return (f"<div class='query' data-subset='{escape(w.subset, quote=True)}' data-category='{escape(w.category, quote=True)}' "
            f"data-attributes='{escape(json.dumps(w.attribute_names()), quote=True)}'>{head}"
            f"<div class='results tiles'>{''.join(tiles)}</div></div>")


def write(report: Report, images: dict, out) -> Path:
    """The page written whole to ``out``: a new file, or a regular one (replaced), in an existing folder."""
    path = writable_file(Path(out))
    with replacing(path) as tmp:
        Path(tmp).write_text(render(report, images), encoding="utf-8")
    return path
