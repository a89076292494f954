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
import io
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from lookbench import terminal
from lookbench.dataset_builder.decisions import LABEL, SKIP, UNDO, DecisionStore, ReviewError, check_reviewer, current
from lookbench.dataset_builder.review.items import Item
from lookbench.dataset_builder.review.plan import Plan, queue
from lookbench.dataset_builder.reviewed_labels import verdicts
from lookbench.dataset_builder.sources import read_contained
from lookbench.dataset_builder.taxonomy import Taxonomy
from lookbench.leaderboard.render import markdown_safe

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
                       if item.key in shared or item.key not in self.claims]
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

    def pictures(self, item: Item) -> tuple[Image.Image | None, Image.Image | None]:
        """The crop, and for a street look its street photo with the crop's box drawn on it."""
        shown = []
        for field in ("image", "raw_image"):
            try:
                data = self._bytes(item, field)
                shown.append(None if data is None else Image.open(io.BytesIO(data)).convert("RGB"))
            except (ValueError, OSError):
                shown.append(None)  # the header names it: "image unreadable"
        image, street = shown
        box = item.record.get("bbox")
        if street is not None and isinstance(box, list) and len(box) == 4:
            ImageDraw.Draw(street).rectangle([float(v) for v in box], outline=(255, 0, 64), width=max(2, street.width // 150))
        return image, street

    def decide(self, reviewer: str, key: str, category: str, values: list) -> None:
        """Write the reviewer's label of ``key``: the category and every attribute of it, each a value or "not
        applicable" (never the main attribute); refused in one line naming what is missing or not allowed."""
        if not isinstance(category, str) or category not in self.taxonomy.categories:
            raise ReviewError(f"choose a category (got {str(category)[:60]!r})")
        entry = self.taxonomy.categories[category]
        attributes = dict(zip(entry.attributes, values))
        for name, value in attributes.items():
            if value is None or value == "":
                raise ReviewError(f"{name}: choose a value or {self.taxonomy.not_applicable!r}")
            if not isinstance(value, str):
                raise ReviewError(f"{name}: {str(value)[:60]!r} is not a value")
            if not self.taxonomy.allows(category, name, value):
                raise ReviewError(f"{name}: {value!r} is not a value of {category!r} in {self.taxonomy.label}")
        if attributes[entry.main_attribute] == self.taxonomy.not_applicable:
            raise ReviewError(f"{entry.main_attribute} is {category!r}'s main attribute; it needs a value")
        item = self.item(key)
        self.store.add(reviewer, LABEL, item.key, category=category, attributes=attributes,
                       image_sha256=self.image_sha256(item))


def prefill(review: Review, item: Item, reviewer: str) -> tuple[str | None, dict]:
    """The category and attribute values the form opens with: the reviewer's own latest label when they come back
    to an item (after an undo: the label taken back, to correct), else the proposals."""
    own = [e for e in review.store.events(reviewer) if e.item == item.key and e.action == LABEL]
    if own:
        return own[-1].category, dict(own[-1].attributes)
    proposals = item.proposals
    category = (proposals.get("category") or {}).get("value")
    values = {n: (e or {}).get("value") for n, e in (proposals.get("attributes") or {}).items()}
    return category, values


def _confidence(entry) -> str:
    if not isinstance(entry, dict) or entry.get("value") is None:
        return "not proposed"
    confidence = entry.get("confidence")
    shown = f" ({confidence:.2f})" if isinstance(confidence, (int, float)) else ""
    return f"proposed {entry['value']}{shown}"


def build_app(review: Review, reviewer: str | None = None):
    """The Blocks app; its events are also the API (``/begin``, ``/accept``, ``/skip``, ``/undo``, ``/category``)."""
    import gradio as gr

    def fields(item: Item | None, category: str | None, values: dict):
        """The category dropdown and the attribute dropdowns for ``category``."""
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
            out.append(gr.update(choices=choices, value=value, visible=True,
                                 label=f"{slot + 1}. {name}{main} — {_confidence((proposals.get('attributes') or {}).get(name))}"))
        return out

    def view(state: dict, message: str = ""):
        name = state.get("reviewer")
        item = review.item(state["key"]) if state.get("key") else None
        if name is None:
            header = "Enter your reviewer name and press **Start**."
        elif item is None:
            header = (f"### Nothing left for {name}\nEvery item assigned to you is decided, or open on another reviewer's "
                      "page (press Start again later). Thank you!")
        else:
            record = item.record
            # A crawl's words are anyone's: escaped, never a link, an image or markup on the reviewer's page.
            words = " · ".join(markdown_safe(record[k]) for k in ("title", "description", "shop_category") if record.get(k))
            proposer = record.get("proposer") or {}
            header = (f"### {markdown_safe(item.key)}\n{markdown_safe(item.file)} line {item.line} · proposer "
                      f"{markdown_safe(proposer.get('name'))} ({markdown_safe(proposer.get('revision'))})"
                      + (f"\n\n{words}" if words else "") + dispute(item.key, name))
        image, street = review.pictures(item) if item is not None else (None, None)
        if item is not None and image is None:
            header += f"\n\n**image unreadable**: {markdown_safe(repr(item.record.get('image')))}"  # still decidable: skip it
        category, values = prefill(review, item, name) if item is not None else (None, {})
        return [state, header, progress(name), gr.update(value=image, visible=item is not None),
                gr.update(value=street, visible=street is not None), *fields(item, category, values), message]

    def dispute(key: str, name: str) -> str:
        """The other reviewers' labels of an item this reviewer labelled differently (shown once, to settle it)."""
        verdict = verdicts(review.store).get(key)
        if verdict is None or name not in verdict.labels or verdict.agreed:
            return ""
        own = verdict.labels[name]
        others = []
        for other, event in sorted(verdict.labels.items()):
            if other != name:
                fields = [f"category {event.category!r}"] if event.category != own.category else []
                fields += [f"{n} {v!r}" for n, v in event.attributes.items() if own.attributes.get(n) != v]
                others.append(f"{other} chose {', '.join(fields)}")
        return "\n\n**Disputed** — " + "; ".join(others) + ". Keep your label or change it."

    def progress(name: str | None) -> str:
        if name is None:
            return ""
        events = review.store.all_events()
        mine = current(events.get(name, []))
        labelled = {k for evs in events.values() for k, e in current(evs).items() if e.action == LABEL}
        left = len(queue(review.plan, review.items, review.store, name))
        done = sum(e.action == LABEL for e in mine.values())
        skipped = sum(e.action == SKIP for e in mine.values())
        return (f"**{name}**: {done} labelled, {skipped} skipped, {left} to go · release: {len(labelled)} of "
                f"{len(review.items)} items labelled · shared sample: {len(review.plan.shared)} items, "
                f"{review.plan.overlap} reviewer(s) each")

    def begin(name, state):
        try:
            name = check_reviewer((name or "").strip())
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
        return act(state, do, f"Saved {state.get('key')}." if state else "")

    def skip(state):
        def do(state):
            if not state.get("key"):
                raise ReviewError("nothing to skip")
            review.store.add(state["reviewer"], SKIP, state["key"])
        return act(state, do, f"Skipped {state.get('key')}; it comes back after the others." if state else "")

    def undo(state):
        def do(state):
            event = review.store.add(state["reviewer"], UNDO)
            return review.item(event.item)
        return act(state, do, "Undone: your last decision is taken back; decide this item again.")

    def on_category(category, state):
        item = review.item(state["key"]) if state and state.get("key") else None
        if item is None:
            return fields(None, None, {})[1:]
        values = {n: (e or {}).get("value") for n, e in (item.proposals.get("attributes") or {}).items()}
        return fields(item, category, values)[1:]

    with gr.Blocks(title=f"LookBench review — {review.raw.name}") as app:
        state = gr.State({})
        with gr.Row():
            name = gr.Textbox(value=reviewer or "", label="reviewer", scale=3)
            start = gr.Button("Start", scale=1)
        gr.Markdown(HELP)
        status = gr.Markdown()
        header = gr.Markdown()
        with gr.Row():
            image = gr.Image(label="item", type="pil", height=520, elem_id="review-image", interactive=False)
            street = gr.Image(label="street photo", type="pil", height=520, elem_id="review-street", interactive=False,
                              visible=False)
        with gr.Column(elem_id="review-fields"):
            # Values are checked against the taxonomy when a decision is made (``Review.decide``), not against the
            # choices a field last showed: a category changed a moment before "accept" must not be refused.
            category = gr.Dropdown(label="category", choices=list(review.taxonomy.categories), visible=False,
                                   allow_custom_value=True)
            slots = [gr.Dropdown(label=f"attribute {i + 1}", visible=False, allow_custom_value=True)
                     for i in range(review.slots)]
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


def open_review(raw, overlap: int | None = None, shared: int | None = None) -> tuple[Review, list[str]]:
    """The release under review and the rows that cannot be reviewed (one line each); refused in one line when the
    release has no taxonomy or no proposals (it was not made by ``lookbench annotate``)."""
    from lookbench.dataset_builder.review.items import read_items
    from lookbench.dataset_builder.sources import RawSource

    raw = Path(raw)
    taxonomy = RawSource(raw).taxonomy()
    if taxonomy is None:
        raise ReviewError(f"{raw} has no taxonomy.json; review an annotated release (lookbench annotate --out RAW)")
    items, problems = read_items(raw)
    if not items or not any(item.proposals for item in items):
        raise ReviewError(f"{raw} has no rows with proposals; review an annotated release (lookbench annotate --out RAW)")
    plan = Plan.open(raw, items, overlap, shared)
    return Review(raw, items, taxonomy, plan, DecisionStore(raw)), problems


def serve(raw, reviewer=None, overlap=None, shared=None, host="127.0.0.1", port=None, **launch_kwargs):
    """Open the release, say what cannot be reviewed, and serve the app (gradio prints ``Running on …``)."""
    if reviewer is not None:
        check_reviewer(reviewer)
    review, problems = open_review(raw, overlap, shared)
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
