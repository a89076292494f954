"""The item and its form, as both review pages lay them out (the review app and the adjudication view): the pictures
large on the left; on the right the item's header, the buttons, the category and every attribute field (each labelled
with its proposal, confidence and, from a layered run, the proposer it came from), a message and the status line."""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from lookbench.dataset_builder.review.items import Item

from lookbench.space.review.page import confidence
from lookbench.space.review.session import Review

PICTURE_HEIGHT = "calc(100vh - 170px)"


@dataclass
class Form:
    image: gr.Image
    street: gr.Image
    header: gr.Markdown
    buttons: list[gr.Button]
    category: gr.Dropdown
    slots: list[gr.Dropdown]
    message: gr.Markdown
    status: gr.Markdown


def item_form(review: Review, buttons: list[tuple[str, str]], help_text: str) -> Form:
    """The layout, made in the Blocks being built; ``buttons``: (label, elem_id) each, the first the primary one."""
    with gr.Row(equal_height=False):
        with gr.Column(scale=5):
            with gr.Row():
                image = gr.Image(label="item", type="pil", height=PICTURE_HEIGHT, elem_id="review-image",
                                 interactive=False, show_label=False)
                street = gr.Image(label="street photo", type="pil", height=PICTURE_HEIGHT, elem_id="review-street",
                                  interactive=False, visible=False, show_label=False)
        with gr.Column(scale=4, elem_id="review-form"):
            header = gr.Markdown(elem_id="review-header")
            with gr.Row():
                made = [gr.Button(label, variant="primary" if i == 0 else "secondary", elem_id=elem_id, min_width=80)
                        for i, (label, elem_id) in enumerate(buttons)]
            with gr.Column(elem_id="review-fields"):
                # Values are checked against the taxonomy when a decision is made (``Review.problems``), not against
                # the choices a field last showed: a category changed a moment before accepting.
                category = gr.Dropdown(label="category", choices=list(review.taxonomy.categories), visible=False,
                                       allow_custom_value=True)
                slots = [gr.Dropdown(label=f"attribute {i + 1}", visible=False, allow_custom_value=True)
                         for i in range(review.slots)]
            message = gr.Markdown()
            status = gr.Markdown()
            gr.Markdown(help_text)
    return Form(image, street, header, made, category, slots, message, status)


def field_updates(review: Review, item: Item | None, category: str | None, values: dict) -> list:
    """The category dropdown and the attribute dropdowns for ``category``, prefilled with ``values`` (gradio updates)."""
    if item is None:
        return [gr.update(visible=False)] + [gr.update(visible=False)] * review.slots
    proposals = item.proposals
    category = category if isinstance(category, str) and category in review.taxonomy.categories else None
    names = list(review.taxonomy.categories[category].attributes) if category is not None else []
    out = [gr.update(choices=list(review.taxonomy.categories), value=category, visible=True,
                     label=f"category — {confidence(proposals.get('category'))}")]
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
                             f"{confidence(proposed.get(name) if isinstance(proposed, dict) else None)}"))
    return out
