"""The review app's bulk accept (Argilla's bulk view): the items of one subset and proposed category whose every
proposal is at least a confidence, previewed, then accepted as the calling reviewer — each a normal label event, as
if accepted one by one. Shared-sample and gold items are never among them: agreement and gold accuracy are measured on
labels chosen one by one."""
import gradio as gr

from lookbench.dataset_builder.decisions import LABEL, ReviewError, current
from lookbench.dataset_builder.review.items import Item
from lookbench.terminal import markdown_safe

from lookbench.space.review.session import Review

ALL = "(all)"
PREVIEW = 5  # items named in the preview


def lowest_confidence(item: Item) -> float:
    """The least confident of the item's proposals (category and every attribute); one without a confidence is 0."""
    attributes = item.proposals.get("attributes")
    entries = [item.proposals.get("category"), *(attributes.values() if isinstance(attributes, dict) else [])]
    found = [e.get("confidence") if isinstance(e, dict) else None for e in entries]
    return min((float(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else 0.0) for c in found)


def candidates(review: Review, reviewer: str, subset: str, category: str, minimum: float) -> list[Item]:
    """What the reviewer's bulk accept takes: items open to them (not decided by them, not on another's page), never
    a shared-sample or gold item, in ``subset`` with ``category`` proposed (``ALL``: any), every proposal at least
    ``minimum``."""
    mine = {k for k, e in current(review.store.events(reviewer)).items() if e.action == LABEL}
    found = []
    for item in review.open_to(reviewer):
        proposed = item.proposals.get("category")
        proposed = proposed.get("value") if isinstance(proposed, dict) else None
        if review.per_reviewer(item) or item.key in mine or subset not in (ALL, item.config) \
                or category not in (ALL, proposed) or lowest_confidence(item) < minimum:
            continue
        found.append(item)
    return found


def accept_all(review: Review, reviewer: str, items: list[Item]) -> tuple[int, list[str]]:
    """Each item's proposals accepted as ``reviewer`` (one label event each); the ones the taxonomy refuses, one line
    each."""
    done, refused = 0, []
    for item in items:
        proposed = item.proposals.get("category")
        category = proposed.get("value") if isinstance(proposed, dict) else None
        names = review.taxonomy.categories[category].attributes if category in review.taxonomy.categories else {}
        try:
            review.decide(reviewer, item.key, category, [item.proposed_values.get(n) for n in names])
            done += 1
        except ReviewError as err:
            refused.append(f"{item.key}: {err}")
    return done, refused


def tab(review: Review, reviewer) -> None:
    """The tab's controls, inside the app's Blocks; ``reviewer(request)`` names the caller or refuses them."""
    def minimum_of(value) -> float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise gr.Error(f"minimum confidence {value!r} is not a number", print_exception=False) from None

    def preview(subset, category, minimum, request: gr.Request):
        found = candidates(review, reviewer(request), subset, category, minimum_of(minimum))
        names = "\n".join(f"- {markdown_safe(i.key)} (lowest confidence {lowest_confidence(i):.2f})" for i in found[:PREVIEW])
        return f"**{len(found)} item(s)** would be accepted as proposed" + (f", among them:\n{names}" if found else ".")

    def accept(subset, category, minimum, request: gr.Request):
        name = reviewer(request)
        done, refused = accept_all(review, name, candidates(review, name, subset, category, minimum_of(minimum)))
        lines = "".join(f"\n- {markdown_safe(line)}" for line in refused)
        return f"**{done} item(s) accepted** as {name}" + (f"; {len(refused)} refused:{lines}" if refused else ".")

    gr.Markdown("Accept the proposals of many items at once, as you: each becomes your label, as if accepted one by "
                "one. Items of the shared sample are never accepted in bulk.")
    with gr.Row():
        subset = gr.Dropdown([ALL, *sorted({i.config for i in review.items})], value=ALL, label="subset")
        category = gr.Dropdown([ALL, *review.taxonomy.categories], value=ALL, label="proposed category")
        minimum = gr.Slider(0, 1, value=0.9, step=0.05, label="every proposal's confidence at least")
    with gr.Row():
        preview_button = gr.Button("Preview", elem_id="bulk-preview")
        accept_button = gr.Button("Accept them all", variant="primary", elem_id="bulk-accept")
    found = gr.Markdown(elem_id="bulk-found")
    preview_button.click(preview, [subset, category, minimum], found, api_name="bulk_preview")
    accept_button.click(accept, [subset, category, minimum], found, api_name="bulk_accept")
