"""``lookbench review RAW``: a Gradio app on loopback where a reviewer accepts or corrects each item's proposals.

One item at a time: the image large (for a street look, the crop beside its street photo with the box drawn), the
category and every attribute of it prefilled with the proposal and its confidence, "not applicable" among the
choices. Keys: ``a`` accept what is shown, ``s`` skip, ``u`` undo, ``0`` the category, ``1``–``9`` an attribute. Each
decision is written at once (``dataset_builder.decisions``) before the next item is shown; the queue is
recomputed from the store at every step (``plan.queue``), so reviewers working at once see each other's progress
and a reviewer who comes back resumes where they stopped.
"""
from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from lookbench import terminal
from lookbench.errors import clip, one_line, shown
from lookbench.dataset_builder.crawl import MAX_TEXT
from lookbench.dataset_builder.decisions import LABEL, SKIP, UNDO, DecisionStore, ReviewError, check_reviewer, current
from lookbench.dataset_builder.review.items import GoldItem, Item, gold_items
from lookbench.dataset_builder.review.plan import Plan, queue
from lookbench.dataset_builder.reviewed_labels import verdicts
from lookbench.dataset_builder.sources import read_contained
from lookbench.dataset_builder.taxonomy import Taxonomy
from lookbench.dataset_builder.validation import bbox_problems, open_image
from lookbench.terminal import markdown_safe

KEYS = """
() => {
  const click = (id) => document.querySelector(`#${id}`)?.click();
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA") && !target.closest("#review-fields")) return;
    if (target && target.closest("#review-fields") && target.getAttribute("aria-expanded") === "true") return;
    const key = event.key.toLowerCase();
    if (key === "a") { click("review-accept"); event.preventDefault(); }
    else if (key === "s") { click("review-skip"); event.preventDefault(); }
    else if (key === "u") { click("review-undo"); event.preventDefault(); }
    else if (/^[0-9]$/.test(key)) {
      const boxes = document.querySelectorAll("#review-fields input");
      const box = boxes[Number(key)];
      if (box) { box.focus(); event.preventDefault(); }
    }
  });
}
"""
CSS = "#review-image img, #review-street img {max-height: 70vh; object-fit: contain}"
# How long an item shown to one reviewer is kept from the others on this server (unless it is in the shared sample).
CLAIM_SECONDS = 15 * 60
HELP = ("Keys: **a** accept all as shown · **s** skip (it comes back last) · **u** undo your last decision · **0** the "
        "category · **1–9** an attribute. Every field is prefilled with the proposal; the label shows its confidence.")


@dataclass
class Review:
    """One annotated release under review: its items, taxonomy, plan and decision store."""

    raw: Path
    items: list[Item]
    taxonomy: Taxonomy
    plan: Plan
    store: DecisionStore

    @property
    def slots(self) -> int:
        """How many attribute fields the form has: the most any category has."""
        return max(len(c.attributes) for c in self.taxonomy.categories.values())

    def __post_init__(self):
        self.by_key = {item.key: item for item in self.items}
        self.claims: dict[str, tuple[str, float]] = {}  # item key -> (reviewer it is shown to, when)
        self.lock = threading.Lock()

    def item(self, key: str) -> Item:
        if key not in self.by_key:
            raise ReviewError(f"no item {key!r} in {self.raw}")
        return self.by_key[key]

    def next_for(self, reviewer: str) -> Item | None:
        """The reviewer's next item, claimed for them: reviewers on one server are never shown the same item at
        once outside the shared sample (on separate servers their orders differ; a doubled item is agreement data)."""
        with self.lock:
            now, shared = time.monotonic(), set(self.plan.shared)
            self.claims = {k: c for k, c in self.claims.items() if c[0] != reviewer and now - c[1] < CLAIM_SECONDS}
            waiting = [item for item in queue(self.plan, self.items, self.store, reviewer)
                       if item.key in shared or isinstance(item, GoldItem) or item.key not in self.claims]
            if waiting:
                self.claims[waiting[0].key] = (reviewer, now)
            return waiting[0] if waiting else None

    def image_sha256(self, item: Item) -> str | None:
        data = self._bytes(item, "image")
        return hashlib.sha256(data).hexdigest() if data is not None else None

    def _bytes(self, item: Item, field: str) -> bytes | None:
        relative = item.record.get(field)
        if not isinstance(relative, str) or not relative:
            return None
        return read_contained(self.raw / item.folder, relative)

    def pictures(self, item: Item) -> tuple[Image.Image | None, Image.Image | None, list[str]]:
        """The crop, and for a street look its street photo with the crop's box drawn on it; and what could not be
        shown, one line each. Never raises on an item: a picture that cannot be decoded (a decompression bomb
        included) or a box that is not one inside its photo is left out and named, and the item can still be
        skipped."""
        decoded, problems = [], []
        for field in ("image", "raw_image"):
            try:
                data = self._bytes(item, field)
                decoded.append(None if data is None else open_image(data, shown(item.record.get(field))).convert("RGB"))
            except (ValueError, OSError) as err:
                decoded.append(None)
                problems.append(f"{field} unreadable: {one_line(err, 200)}")
        image, street = decoded
        box = item.record.get("bbox")
        if street is not None and box is not None:
            if found := bbox_problems(box, street.size):
                problems.append(f"bbox not drawn: {found[0]}")
            else:
                ImageDraw.Draw(street).rectangle([float(v) for v in box], outline=(255, 0, 64),
                                                 width=max(2, street.width // 150))
        return image, street, problems

    def decide(self, reviewer: str, key: str, category: str, values: list, action: str = LABEL) -> None:
        """Write the reviewer's label of ``key`` (or, ``action`` ``adjudicate``, an adjudicator's): the category and
        every attribute of it, each a value or "not applicable" (never the main attribute); refused in one line
        naming what is missing or not allowed."""
        if not isinstance(category, str) or category not in self.taxonomy.categories:
            raise ReviewError(f"choose a category (got {shown(category)})")
        entry = self.taxonomy.categories[category]
        attributes = dict(zip(entry.attributes, values))
        for name, value in attributes.items():
            if value is None or value == "":
                raise ReviewError(f"{name}: choose a value or {self.taxonomy.not_applicable!r}")
            if not isinstance(value, str):
                raise ReviewError(f"{name}: {shown(value)} is not a value")
            if not self.taxonomy.allows(category, name, value):
                raise ReviewError(f"{name}: {shown(value)} is not a value of {category!r} in {self.taxonomy.label}")
        if attributes[entry.main_attribute] == self.taxonomy.not_applicable:
            raise ReviewError(f"{entry.main_attribute} is {category!r}'s main attribute; it needs a value")
        item = self.item(key)
        try:
            digest = self.image_sha256(item)
        except ValueError as err:
            digest, why = None, one_line(err, 200)
        else:
            why = "it has no image"
        if digest is None:  # a label binds the image it was given for; without one it could never go stale
            raise ReviewError(f"{item.key} cannot be labelled: {why}; skip it")
        self.store.add(reviewer, action, item.key, category=category, attributes=attributes, image_sha256=digest)


def prefill(review: Review, item: Item, reviewer: str) -> tuple[str | None, dict]:
    """The category and attribute values the form opens with: the reviewer's own latest label when they come back
    to an item (after an undo: the label taken back, to correct), else the proposals."""
    own = [e for e in review.store.events(reviewer) if e.item == item.key and e.action == LABEL]
    if own:
        return own[-1].category, dict(own[-1].attributes)
    category = item.proposals.get("category")
    return category.get("value") if isinstance(category, dict) else None, item.proposed_values


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


def _confidence(entry) -> str:
    if not isinstance(entry, dict) or entry.get("value") is None:
        return "not proposed"
    confidence = entry.get("confidence")
    level = f" ({confidence:.2f})" if isinstance(confidence, (int, float)) else ""
    return f"proposed {clip(entry['value'])}{level}"


def field_updates(review: Review, item: Item | None, category: str | None, values: dict) -> list:
    """The form's category dropdown and attribute dropdowns for ``category``, prefilled with ``values`` (gradio
    updates; the adjudication view shares them)."""
    import gradio as gr

    if item is None:
        return [gr.update(visible=False)] + [gr.update(visible=False)] * review.slots
    proposals = item.proposals
    category = category if isinstance(category, str) and category in review.taxonomy.categories else None
    names = list(review.taxonomy.categories[category].attributes) if category is not None else []
    out = [gr.update(choices=list(review.taxonomy.categories), value=category, visible=True,
                     label=f"category — {_confidence(proposals.get('category'))}")]
    for slot in range(review.slots):
        if slot >= len(names):
            out.append(gr.update(visible=False, value=None, choices=[]))
            continue
        name = names[slot]
        choices = [*review.taxonomy.categories[category].attributes[name], review.taxonomy.not_applicable]
        value = values.get(name) if values.get(name) in choices else None
        main = " (main)" if name == review.taxonomy.categories[category].main_attribute else ""
        proposed = proposals.get("attributes")
        out.append(gr.update(choices=choices, value=value, visible=True, label=f"{slot + 1}. {name}{main} — "
                             f"{_confidence(proposed.get(name) if isinstance(proposed, dict) else None)}"))
    return out


def item_form(review: Review, height: int = 520) -> tuple:
    """The item's pictures and the form's fields (category, attribute slots), made in the Blocks being built (the
    adjudication view shares them)."""
    import gradio as gr

    with gr.Row():
        image = gr.Image(label="item", type="pil", height=height, elem_id="review-image", interactive=False)
        street = gr.Image(label="street photo", type="pil", height=height, elem_id="review-street", interactive=False,
                          visible=False)
    with gr.Column(elem_id="review-fields"):
        # Values are checked against the taxonomy when a decision is made (``Review.decide``), not against the
        # choices a field last showed: a category changed a moment before "accept" must not be refused.
        category = gr.Dropdown(label="category", choices=list(review.taxonomy.categories), visible=False,
                               allow_custom_value=True)
        slots = [gr.Dropdown(label=f"attribute {i + 1}", visible=False, allow_custom_value=True)
                 for i in range(review.slots)]
    return image, street, category, slots


def build_app(review: Review, reviewer: str | None = None):
    """The Blocks app; its events are also the API (``/begin``, ``/accept``, ``/skip``, ``/undo``, ``/category``)."""
    import gradio as gr

    def fields(item: Item | None, category: str | None, values: dict):
        return field_updates(review, item, category, values)

    def view(state: dict, message: str = ""):
        name = state.get("reviewer")
        item = review.item(state["key"]) if state.get("key") else None
        image = street = None
        if name is None:
            header = "Enter your reviewer name and press **Start**."
        elif item is None:
            header = (f"### Nothing left for {name}\nEvery item assigned to you is decided, or open on another reviewer's "
                      "page (press Start again later). Thank you!")
        else:
            try:
                image, street, problems = review.pictures(item)
                header = header_of(review, item, name, problems)
                form = fields(item, *prefill(review, item, name))
            except Exception as err:  # noqa: BLE001 - no item stops the queue: it is shown as one line, to skip
                header = (f"### {markdown_safe(item.key)}\n**this item cannot be shown**: "
                          f"{markdown_safe(one_line(err, 200))}; skip it (s)")
                form = fields(None, None, {})
        if item is None:
            form = fields(None, None, {})
        return [state, header, progress(name), gr.update(value=image, visible=item is not None),
                gr.update(value=street, visible=street is not None), *form, message]

    def progress(name: str | None) -> str:
        if name is None:
            return ""
        events = review.store.all_events()
        mine = current(events.get(name, []))
        release = [item for item in review.items if not isinstance(item, GoldItem)]  # gold stays unmarked
        labelled = {k for evs in events.values() for k, e in current(evs).items() if e.action == LABEL} & {i.key for i in release}
        left = len(queue(review.plan, review.items, review.store, name))
        done = sum(e.action == LABEL for e in mine.values())
        skipped = sum(e.action == SKIP for e in mine.values())
        return (f"**{name}**: {done} labelled, {skipped} skipped, {left} to go · release: {len(labelled)} of "
                f"{len(release)} items labelled · shared sample: {len(review.plan.shared)} items, "
                f"{review.plan.overlap} reviewer(s) each")

    def begin(name, state):
        try:
            name = check_reviewer((name or "").strip() if isinstance(name, str) else name)
            review.store.check_folder(name)
        except ReviewError as err:
            raise gr.Error(str(err)) from None
        item = review.next_for(name)
        return view({"reviewer": name, "key": item.key if item else None})

    def act(state, do, message):
        if not state or not state.get("reviewer"):
            raise gr.Error("enter your reviewer name and press Start first")
        try:
            back = do(state)
        except ReviewError as err:
            raise gr.Error(str(err)) from None
        following = back or review.next_for(state["reviewer"])
        return view({**state, "key": following.key if following else None}, message)

    def accept(state, category, *values):
        def do(state):
            if not state.get("key"):
                raise ReviewError("nothing to accept: every item assigned to you is decided")
            review.decide(state["reviewer"], state["key"], category, list(values))
        return act(state, do, f"Saved {markdown_safe(state.get('key'))}." if state else "")

    def skip(state):
        def do(state):
            if not state.get("key"):
                raise ReviewError("nothing to skip")
            review.store.add(state["reviewer"], SKIP, state["key"])
        return act(state, do, f"Skipped {markdown_safe(state.get('key'))}; it comes back after the others." if state else "")

    def undo(state):
        def do(state):
            event = review.store.add(state["reviewer"], UNDO)
            return review.item(event.item)
        return act(state, do, "Undone: your last decision is taken back; decide this item again.")

    def on_category(category, state):
        item = review.item(state["key"]) if state and state.get("key") else None
        if item is None:
            return fields(None, None, {})[1:]
        return fields(item, category, item.proposed_values)[1:]

    with gr.Blocks(title=f"LookBench review — {review.raw.name}") as app:
        state = gr.State({})
        with gr.Row():
            name = gr.Textbox(value=reviewer or "", label="reviewer", scale=3)
            start = gr.Button("Start", scale=1)
        gr.Markdown(HELP)
        status = gr.Markdown()
        header = gr.Markdown()
        image, street, category, slots = item_form(review)
        with gr.Row():
            accept_button = gr.Button("Accept all as shown (a)", variant="primary", elem_id="review-accept")
            skip_button = gr.Button("Skip (s)", elem_id="review-skip")
            undo_button = gr.Button("Undo (u)", elem_id="review-undo")
        message = gr.Markdown()
        outputs = [state, header, status, image, street, category, *slots, message]
        start.click(begin, [name, state], outputs, api_name="begin")
        name.submit(begin, [name, state], outputs, api_name=False)
        accept_button.click(accept, [state, category, *slots], outputs, api_name="accept")
        skip_button.click(skip, [state], outputs, api_name="skip")
        undo_button.click(undo, [state], outputs, api_name="undo")
        category.input(on_category, [category, state], slots, api_name="category")
        if reviewer:
            app.load(begin, [name, state], outputs, api_name=False)
    return app


def open_review(raw, overlap: int | None = None, shared: int | None = None, gold=None, gold_rate: float | None = None,
                gold_threshold: float | None = None) -> tuple[Review, list[str]]:
    """The release under review (its gold items among its items, unmarked) and the rows that cannot be reviewed (one
    line each); refused in one line when the release has no taxonomy or no proposals (it was not made by ``lookbench
    annotate``)."""
    from lookbench.dataset_builder.review.items import read_items
    from lookbench.dataset_builder.sources import RawSource

    raw = Path(raw)
    taxonomy = RawSource(raw).taxonomy()
    if taxonomy is None:
        raise ReviewError(f"{raw} has no taxonomy.json; review an annotated release (lookbench annotate --out RAW)")
    items, problems = read_items(raw)
    if not items or not any(item.proposals for item in items):
        raise ReviewError(f"{raw} has no rows with proposals; review an annotated release (lookbench annotate --out RAW)")
    plan = Plan.open(raw, items, overlap, shared, gold, gold_rate, gold_threshold)
    extra = gold_items(plan.gold, taxonomy, items) if plan.gold else []
    return Review(raw, items + extra, taxonomy, plan, DecisionStore(raw)), problems


def serve(raw, reviewer=None, overlap=None, shared=None, host="127.0.0.1", port=None, gold=None, gold_rate=None,
          gold_threshold=None, **launch_kwargs):
    """Open the release, say what cannot be reviewed, and serve the app (gradio prints ``Running on …``)."""
    if reviewer is not None:
        check_reviewer(reviewer)
    review, problems = open_review(raw, overlap, shared, gold, gold_rate, gold_threshold)
    if reviewer is not None:
        review.store.check_folder(reviewer)
    for line in problems:
        terminal.say(f"not reviewable: {line}")
    if problems:
        terminal.say(f"{len(problems)} row(s) cannot be reviewed (above); a build refuses them or leaves them out")
    terminal.say(f"{len(review.items)} items, taxonomy {review.taxonomy.label}; shared sample {len(review.plan.shared)} items "
          f"x {review.plan.overlap} reviewers; decisions in {review.store.folder}")
    app = build_app(review, reviewer)
    app.launch(server_name=host, server_port=port, js=KEYS, css=CSS, show_error=True, quiet=True,
               prevent_thread_lock=True, **launch_kwargs)
    terminal.say(f"Running on {app.local_url.rstrip('/')}")
    app.block_thread()
