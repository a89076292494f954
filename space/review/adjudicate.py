"""``lookbench review RAW --adjudicate``: a Gradio app where an adjudicator settles each disputed item.

Each open dispute in turn: the picture, every reviewer's values side by side (the fields they differ on marked), and
the review form (``form.field_updates``) prefilled with the majority's value of each field (the first reviewer's on a
tie). Accept writes an ``adjudicate`` event in the adjudicator's own folder of the decision store, the reviewers'
labels kept beside it; the item's verdict is then the adjudicator's labels (``reviewed_labels``), so a build takes it.

Who adjudicates comes from the call, as in the review app (``identity``: an invitation's token, a Hub login, or the
maintainer's own ``--reviewer`` link), and only a reviewer marked adjudicator (``--invite NAME --adjudicator``) is let
in. The usual rule holds: a third person settles a dispute, so an adjudicator never settles one they labelled
themselves (those are left to another adjudicator and counted on the page). Undo takes back the adjudicator's own
latest decision only.
"""
from collections import Counter
from pathlib import Path

from lookbench import terminal
from lookbench.errors import clip, one_line
from lookbench.dataset_builder.decisions import ADJUDICATE, UNDO, ReviewError
from lookbench.dataset_builder.gold import CATEGORY
from lookbench.dataset_builder.review.items import GoldItem
from lookbench.dataset_builder.review.plan import Plan, held_reviewers
from lookbench.dataset_builder.reviewed_labels import Verdict, verdicts
from lookbench.terminal import markdown_safe

from lookbench.space.review.form import field_updates, item_form
from lookbench.space.review.identity import Identity, IdentityError
from lookbench.space.review.page import launch
from lookbench.space.review.session import Review, open_review

HELP = ("Each item reviewers disagree on, with every reviewer's values (fields they differ on marked **≠**). The form "
        "holds the majority's values; correct what is wrong and **Accept** (a): your decision settles the item, the "
        "reviewers' labels are kept beside it. **u** undoes your last decision. You never settle an item you labelled "
        "yourself.")


def open_disputes(review: Review) -> dict[str, Verdict]:
    """Item key -> verdict of every release item still disputed (the labels of reviewers the gold flags held out, as
    the build holds them out)."""
    events = review.store.all_events()
    release = {item.key for item in review.items if not isinstance(item, GoldItem)}
    found = verdicts(review.store, held_reviewers(review.plan, review.items, events))
    return {key: v for key, v in sorted(found.items()) if key in release and v.disputed}


def waiting(review: Review, name: str) -> tuple[list[Verdict], int]:
    """The disputes ``name`` may settle, and how many others are left to another adjudicator (``name`` labelled them)."""
    disputes = list(open_disputes(review).values())
    mine = [v for v in disputes if name not in v.labels]
    return mine, len(disputes) - len(mine)


def majority(verdict: Verdict) -> tuple[str, dict]:
    """The form's prefill: the category most reviewers chose, then each of its attributes' most chosen value among
    them; a tie goes to the first reviewer (by name)."""
    labels = [verdict.labels[name] for name in sorted(verdict.labels)]

    def most(values):
        counts = Counter(values)
        return max(values, key=lambda v: (counts[v], -values.index(v)))

    category = most([e.category for e in labels])
    chose = [e for e in labels if e.category == category]
    names = list(dict.fromkeys(n for e in chose for n in e.attributes))
    return category, {n: most([e.attributes[n] for e in chose if n in e.attributes]) for n in names}


def comparison(verdict: Verdict) -> str:
    """Every reviewer's values side by side, as an escaped Markdown table; a field they differ on is marked ≠."""
    names = sorted(verdict.labels)
    labels = [verdict.labels[n] for n in names]
    fields = [CATEGORY, *dict.fromkeys(a for e in labels for a in e.attributes)]
    rows = ["| | field | " + " | ".join(markdown_safe(n) for n in names) + " |", "|---|---|" + "---|" * len(names)]
    for field in fields:
        values = [e.category if field == CATEGORY else e.attributes.get(field, "—") for e in labels]
        differ = len(set(values)) > 1
        cells = [f"**{markdown_safe(clip(v))}**" if differ else markdown_safe(clip(v)) for v in values]
        rows.append(f"| {'≠' if differ else ''} | {markdown_safe(clip(field))} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def adjudicate(review: Review, name: str, key: str, category: str, values: list) -> None:
    """Settle the dispute on ``key`` as ``name``: refused in one line when it is no open dispute (settled meanwhile,
    or never disputed) or ``name`` labelled it; the values are checked as a reviewer's are (``Review.decide``)."""
    verdict = open_disputes(review).get(key)
    if verdict is None:
        raise ReviewError(f"{key} is no open dispute (settled meanwhile, or its reviewers agree)")
    if name in verdict.labels:
        raise ReviewError(f"{name} labelled {key}: a dispute is settled by a third person; another adjudicator settles it")
    review.decide(name, key, category, values, action=ADJUDICATE)


def adjudicator_of(identity: Identity, request) -> str:
    """The calling adjudicator's name; refused in one line for anyone who is not a reviewer marked adjudicator."""
    who = identity.who(request)
    if not who.adjudicator:
        raise IdentityError(f"{who.name} is not an adjudicator of this release; the maintainer invites one with "
                            "lookbench review RAW --invite NAME --adjudicator")
    return who.name


def build_adjudication_app(review: Review, identity: Identity):
    """The Blocks app; every call names its adjudicator through ``identity``. Its events are also the API
    (``/begin``, ``/accept``, ``/undo``, ``/category``)."""
    import gradio as gr

    def adjudicator(request: gr.Request) -> str:
        try:
            name = adjudicator_of(identity, request)
            review.store.check_folder(name)
        except ReviewError as err:
            raise gr.Error(str(err), print_exception=False) from None
        return name

    def view(name: str, message: str = ""):
        disputes, others = waiting(review, name)
        verdict = disputes[0] if disputes else None
        item = review.item(verdict.key) if verdict else None
        status = (f"**{markdown_safe(name)}** adjudicating: {len(disputes)} dispute(s) to settle"
                  + (f" · {others} you labelled yourself, left to another adjudicator" if others else ""))
        image = street = None
        if item is None:
            header, form = "### No dispute left to settle\nEvery disputed item is settled (or was labelled by you).", field_updates(review, None, None, {})
        else:
            try:
                image, street, problems = review.pictures(item)
            except Exception as err:  # noqa: BLE001 - the values can still be settled without the picture
                problems = [f"pictures unreadable: {one_line(err, 200)}"]
            header = (f"### {markdown_safe(item.key)}\n{markdown_safe(item.file)} line {item.line} · reviewers "
                      f"{markdown_safe(verdict.reviewers)}\n\n{comparison(verdict)}"
                      + "".join(f"\n\n**{markdown_safe(line)}**" for line in problems))
            form = field_updates(review, item, *majority(verdict))
        return [{"key": item.key if item else None}, header, status, gr.update(value=image, visible=item is not None),
                gr.update(value=street, visible=street is not None), *form, message]

    def begin(request: gr.Request):
        return view(adjudicator(request))

    def accept(request: gr.Request, state, category, *values):
        name = adjudicator(request)
        key = (state or {}).get("key")
        try:
            if not key:
                raise ReviewError("nothing to settle: no dispute is shown")
            adjudicate(review, name, key, category, list(values))
        except ReviewError as err:
            raise gr.Error(str(err), print_exception=False) from None
        return view(name, f"Settled {markdown_safe(key)}.")

    def undo(request: gr.Request, state):
        name = adjudicator(request)
        try:
            event = review.store.add(name, UNDO)
        except ReviewError as err:
            raise gr.Error(str(err), print_exception=False) from None
        return view(name, f"Undone: your decision on {markdown_safe(event.item)} is taken back.")

    def on_category(request: gr.Request, category, state):
        adjudicator(request)
        item = review.item(state["key"]) if state and state.get("key") else None
        if item is None:
            return field_updates(review, None, None, {})[1:]
        return field_updates(review, item, category, {})[1:]

    with gr.Blocks(title=f"LookBench adjudication — {review.raw.name}") as app:
        state = gr.State({})
        if identity.hub:
            gr.LoginButton()
        form = item_form(review, [("Accept: settle it (a)", "review-accept"), ("Undo (u)", "review-undo")], HELP)
        accept_button, undo_button = form.buttons
        category, slots = form.category, form.slots
        outputs = [state, form.header, form.status, form.image, form.street, category, *slots, form.message]
        app.load(begin, None, outputs, api_name="begin")
        accept_button.click(accept, [state, category, *slots], outputs, api_name="accept")
        undo_button.click(undo, [state], outputs, api_name="undo")
        category.input(on_category, [category, state], slots, api_name="category")
    return app


def serve_adjudication(raw, reviewer=None, host="127.0.0.1", port=None, **launch_kwargs):
    """Open the release and serve the adjudication app to its invited adjudicators; with ``reviewer``, an
    adjudicator's link for them valid while this server runs (the maintainer adjudicating on their own machine)."""
    if Plan.read(Path(raw)) is None:
        raise ReviewError(f"{raw} has not been reviewed yet (no {Path(raw) / 'reviews' / 'plan.json'}): nothing to adjudicate")
    review, _ = open_review(Path(raw))
    identity = Identity.from_environment(raw)
    if reviewer is not None:
        review.store.check_folder(reviewer)
    disputes = open_disputes(review)
    terminal.say(f"{len(disputes)} open dispute(s) in {review.raw}; decisions in {review.store.folder}")
    launch(build_adjudication_app(review, identity), identity, host, port, reviewer, adjudicator=True,
           action="Adjudicate", **launch_kwargs)
