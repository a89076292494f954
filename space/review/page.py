"""What the review page shows beside its fields: the keys (JavaScript), the layout's CSS, the help line, and each item's
header — a crawl's words escaped, never a link."""
from __future__ import annotations

from lookbench import terminal
from lookbench.errors import clip, shown
from lookbench.dataset_builder.crawl import MAX_TEXT
from lookbench.dataset_builder.review.items import Item
from lookbench.dataset_builder.reviewed_labels import verdicts
from lookbench.terminal import markdown_safe

from lookbench.space.review.identity import Identity, link
from lookbench.space.review.session import Review

# Keys anywhere on the Review tab: a / s / u press Accept, Skip, Undo; a digit opens that field with its text selected,
# so what is typed next replaces it and filters the choices (Enter picks the first). The first item on the page takes
# the focus to the form (its Accept), so the first key already counts.
KEYS = """
() => {
  const click = (id) => document.querySelector(`#${id}`)?.click();
  const shown = (el) => el && el.offsetParent !== null;
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey || !shown(document.querySelector("#review-accept"))) return;
    const typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA");
    if (typing && (!target.closest("#review-fields") || target.getAttribute("aria-expanded") === "true")) return;
    const key = event.key.toLowerCase();
    if (key === "a") { click("review-accept"); event.preventDefault(); }
    else if (key === "s") { click("review-skip"); event.preventDefault(); }
    else if (key === "u") { click("review-undo"); event.preventDefault(); }
    else if (/^[0-9]$/.test(key)) {
      const box = [...document.querySelectorAll("#review-fields input")].filter(shown)[Number(key)];
      if (box) { box.focus(); box.select(); event.preventDefault(); }
    }
  });
  const first = setInterval(() => {
    if (document.querySelector("#review-header h3") && shown(document.querySelector("#review-accept"))) {
      document.querySelector("#review-accept").focus();
      clearInterval(first);
    }
  }, 100);
}
"""
CSS = """
#review-image img, #review-street img {max-height: calc(100vh - 190px); object-fit: contain}
#review-fields > .form {display: grid !important; grid-template-columns: 1fr 1fr}
#review-header h3 {margin: 0}
"""
HELP = ("Keys: **a** accept all as shown · **s** skip (it comes back last) · **u** undo your last decision · **0** the "
        "category, **1–9** an attribute: type the start of a value (it replaces the field's value), **Enter** picks "
        "it. Each field opens with the proposal; its label shows the confidence (and which proposer gave it).")


def launch(app, identity: Identity, host: str, port, reviewer: str | None = None, adjudicator: bool = False,
           action: str = "Review", **launch_kwargs) -> None:
    """Serve ``app`` with the page's keys and layout and say where; with ``reviewer``, a link for them valid while this
    server runs (the maintainer on their own machine), printed next: "<action> as NAME: …"."""
    token = identity.for_this_run(reviewer, adjudicator) if reviewer is not None else None
    app.launch(server_name=host, server_port=port, js=KEYS, css=CSS, show_error=True, quiet=True,
               prevent_thread_lock=True, **launch_kwargs)
    url = app.local_url.rstrip("/")
    terminal.say(f"Running on {url}")
    if token is not None:
        terminal.say(f"{action} as {reviewer}: {link(*url.removeprefix('http://').rsplit(':', 1), token)}")
    app.block_thread()


def unlinked(markdown: str) -> str:
    """Escaped Markdown (``markdown_safe``) in which no bare URL or e-mail address becomes a link: gradio's Markdown
    auto-links them GFM-style, and its renderer (marked) never does inside an ``<a>``, so the text sits in an anchor
    without ``href`` — a placeholder, not a link."""
    return f'<a class="lookbench-text">{markdown}</a>'


def header_of(review: Review, item: Item, name: str, problems: list[str] = ()) -> str:
    """The item's header on a reviewer's page: its key and place, the proposer, the crawl's own words, what could
    not be shown, and the other reviewers' labels when they differ from this reviewer's."""
    record = item.record
    # A crawl's words are anyone's: escaped, never a link, an image or markup on the reviewer's page.
    words = " · ".join(markdown_safe(clip(record[k], MAX_TEXT)) for k in ("title", "description", "shop_category")
                       if isinstance(record.get(k), str) and record[k])
    proposer = record.get("proposer") if isinstance(record.get("proposer"), dict) else {}
    header = (f"### {markdown_safe(item.key)}\n{markdown_safe(item.file)} line {item.line} · proposer "
              f"{markdown_safe(clip(proposer.get('name')))} ({markdown_safe(clip(proposer.get('revision')))})"
              + (f"\n\n{unlinked(words)}" if words else "") + _dispute(review, item.key, name))
    for line in problems:  # still decidable: skip it
        header += f"\n\n**{markdown_safe(line)}**"
    return header


def _dispute(review: Review, key: str, name: str) -> str:
    """The other reviewers' labels of an item this reviewer labelled differently (shown once, to settle it), as
    text: a decision file's values are escaped and cut like any other input."""
    verdict = verdicts(review.store).get(key)
    if verdict is None or name not in verdict.labels or verdict.agreed:
        return ""
    own = verdict.labels[name]
    others = []
    for other, event in sorted(verdict.labels.items()):
        if other != name:
            fields = [f"category {shown(event.category)}"] if event.category != own.category else []
            fields += [f"{clip(n)} {shown(v)}" for n, v in event.attributes.items() if own.attributes.get(n) != v]
            others.append(markdown_safe(f"{other} chose {', '.join(fields)}"))
    return "\n\n**Disputed** — " + "; ".join(others) + ". Keep your label or change it."


def confidence(entry) -> str:
    """A field's proposal for its label: the value, its confidence and, from a layered run (``annotate.layered``),
    the proposer it came from."""
    if not isinstance(entry, dict) or entry.get("value") is None:
        return "not proposed"
    confidence, source = entry.get("confidence"), entry.get("source")
    level = [f"{confidence:.2f}"] if isinstance(confidence, (int, float)) else []
    level += [f"by {clip(source, 40)}"] if isinstance(source, str) and source else []
    return f"proposed {clip(entry['value'])}" + (f" ({', '.join(level)})" if level else "")
