"""``lookbench review RAW``: a Gradio app where each invited reviewer accepts or corrects each item's proposals.

One item at a time, made for keys (``page.KEYS``): the image large beside the form (for a street look, the crop beside
its street photo with the box drawn), the category and every attribute of it prefilled with the proposal and its
confidence, Accept in view at 1280×800. Every call says who it is through ``identity`` (an invitation's token, or a
Hub login on a Space) and acts only as that reviewer; no request names one. Each decision is written at once
(``dataset_builder.decisions``) before the next item is shown; the queue is recomputed from the store at every step
(``plan.queue``), so reviewers working at once see each other's progress and one who comes back resumes. An item is
claimed while its page is open (a heartbeat) and released when the page closes or falls silent.
"""
import functools

import gradio as gr

from lookbench import terminal
from lookbench.errors import one_line
from lookbench.dataset_builder.decisions import LABEL, SKIP, UNDO, ReviewError, current
from lookbench.dataset_builder.review.items import GoldItem
from lookbench.dataset_builder.review.plan import queue
from lookbench.terminal import markdown_safe

from lookbench.space.review import bulk
from lookbench.space.review.identity import Identity, read_invites
from lookbench.space.review.form import field_updates, item_form
from lookbench.space.review.page import HELP, header_of, launch
from lookbench.space.review.session import Review, kept, open_review, prefill


def build_app(review: Review, identity: Identity):
    """The Blocks app; its events are also the API (``/begin``, ``/accept``, ``/skip``, ``/undo``, ``/category``, and
    the bulk tab's ``/bulk_preview``, ``/bulk_accept``), each refused without a reviewer's token or login."""
    def reviewer(request) -> str:
        try:
            return identity.reviewer_of(request)
        except ReviewError as err:
            raise gr.Error(str(err), print_exception=False) from None

    fields = functools.partial(field_updates, review)

    def view(state: dict, name: str, message: str = ""):
        item = review.item(state["key"]) if state.get("key") else None
        image = street = None
        if item is None:
            header = (f"### Nothing left for {name}\nEvery item assigned to you is decided, or open on another reviewer's "
                      "page (reload the page later). Thank you!")
            form = fields(None, None, {})
        else:
            try:
                image, street, problems = review.pictures(item)
                header = header_of(review, item, name, problems)
                category, values = prefill(review, item, name)
                form = fields(item, category, values)
                state = {**state, "category": category}
            except Exception as err:  # noqa: BLE001 - no item stops the queue: it is shown as one line, to skip
                header = (f"### {markdown_safe(item.key)}\n**this item cannot be shown**: "
                          f"{markdown_safe(one_line(err, 200))}; skip it (s)")
                form = fields(None, None, {})
        return [state, header, progress(name), gr.update(value=image, visible=item is not None),
                gr.update(value=street, visible=street is not None), *form, message]

    def progress(name: str) -> str:
        events = review.store.all_events()
        mine = current(events.get(name, []))
        release = {item.key for item in review.items if not isinstance(item, GoldItem)}  # gold stays unmarked
        labelled = {k for evs in events.values() for k, e in current(evs).items() if e.action == LABEL} & release
        left = len(queue(review.plan, review.items, review.store, name))
        done = sum(e.action == LABEL for e in mine.values())
        skipped = sum(e.action == SKIP for e in mine.values())
        return (f"**{name}**: {done} labelled, {skipped} skipped, {left} to go · release: {len(labelled)} of "
                f"{len(release)} items labelled · shared sample: {len(review.plan.shared)} items, "
                f"{review.plan.overlap} reviewer(s) each")

    def begin(state, request: gr.Request):
        name = reviewer(request)
        try:
            review.store.check_folder(name)
        except ReviewError as err:
            raise gr.Error(str(err), print_exception=False) from None
        item = review.next_for(name, request.session_hash)
        return view({"key": item.key if item else None}, name)

    def act(state, request, do, message):
        name = reviewer(request)
        try:
            back = do(name, state or {})
        except ReviewError as err:
            raise gr.Error(str(err), print_exception=False) from None
        following = back or review.next_for(name, request.session_hash)
        return view({"key": following.key if following else None}, name, message)

    def accept(request: gr.Request, state, category, *values):
        def do(name, state):
            if not state.get("key"):
                raise ReviewError("nothing to accept: every item assigned to you is decided")
            review.decide(name, state["key"], category, list(values))
        return act(state, request, do, f"Saved {markdown_safe((state or {}).get('key'))}.")

    def checked(state, category, *values):
        """Each field's own refusal beside it (the others keep their values and look): the accept is not run."""
        found = review.problems(category, list(values))
        return [gr.validate(True, ""), *(gr.validate(i not in found, found.get(i, "")) for i in range(len(values) + 1))]

    def skip(state, request: gr.Request):
        def do(name, state):
            if not state.get("key"):
                raise ReviewError("nothing to skip")
            review.store.add(name, SKIP, state["key"])
        return act(state, request, do, f"Skipped {markdown_safe((state or {}).get('key'))}; it comes back after the others.")

    def undo(state, request: gr.Request):
        def do(name, state):
            return review.item(review.store.add(name, UNDO).item)  # the caller's own latest decision, never another's
        return act(state, request, do, "Undone: your last decision is taken back; decide this item again.")

    def on_category(request: gr.Request, category, state, *values):
        reviewer(request)
        item = review.item(state["key"]) if state and state.get("key") else None
        if item is None:
            return [state, *fields(None, None, {})[1:]]
        before = state.get("category")
        names = list(review.taxonomy.categories[before].attributes) if before in review.taxonomy.categories else []
        valid = category if category in review.taxonomy.categories else None
        return [{**state, "category": valid}, *fields(item, valid, kept(review, item, valid, names, list(values)))[1:]]

    def beat(state, request: gr.Request):
        review.beat(reviewer(request), (state or {}).get("key"), request.session_hash)

    def closed(request: gr.Request):
        review.release(request.session_hash)

    with gr.Blocks(title=f"LookBench review — {review.raw.name}") as app:
        state = gr.State({})
        if identity.hub:
            gr.LoginButton()
        with gr.Tab("Review"):
            form = item_form(review, [("Accept (a)", "review-accept"), ("Skip (s)", "review-skip"),
                                      ("Undo (u)", "review-undo")], HELP)
            header, status, message, category, slots = form.header, form.status, form.message, form.category, form.slots
            accept_button, skip_button, undo_button = form.buttons
        with gr.Tab("Bulk accept"):
            bulk.tab(review, reviewer)
        outputs = [state, header, status, form.image, form.street, category, *slots, message]
        app.load(begin, [state], outputs, api_name="begin")
        accept_button.click(accept, [state, category, *slots], outputs, api_name="accept", validator=checked)
        skip_button.click(skip, [state], outputs, api_name="skip")
        undo_button.click(undo, [state], outputs, api_name="undo")
        category.input(on_category, [category, state, *slots], [state, *slots], api_name="category")
        gr.Timer(review.claim_seconds / 3).tick(beat, [state], None, api_name=False, show_progress="hidden")
        app.unload(closed)
    return app


def serve(raw, reviewer=None, overlap=None, shared=None, host="127.0.0.1", port=None, adjudicator=False, gold=None,
          gold_rate=None, gold_threshold=None, **launch_kwargs):
    """Open the release, say what cannot be reviewed, and serve the app (gradio prints ``Running on …``); with
    ``reviewer``, a link for them valid while this server runs (the maintainer reviewing on their own machine)."""
    review, problems = open_review(raw, overlap, shared, gold, gold_rate, gold_threshold)
    identity = Identity.from_environment(raw)
    if reviewer is not None:
        review.store.check_folder(reviewer)
    for line in problems:
        terminal.say(f"not reviewable: {line}")
    if problems:
        terminal.say(f"{len(problems)} row(s) cannot be reviewed (above); a build refuses them or leaves them out")
    terminal.say(f"{len(review.items)} items, taxonomy {review.taxonomy.label}; shared sample {len(review.plan.shared)} items "
                 f"x {review.plan.overlap} reviewers; decisions in {review.store.folder}")
    invited = sorted(read_invites(raw))
    terminal.say(f"invited: {', '.join(invited) or 'nobody'} (lookbench review RAW --invite NAME)"
                 + (f"; Hub users mapped: {len(identity.hub)}" if identity.hub else ""))
    launch(build_app(review, identity), identity, host, port, reviewer, adjudicator, **launch_kwargs)
