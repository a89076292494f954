"""The ``vlm:HUB_ID`` proposer: a transformers image-text-to-text model asked, with the taxonomy in its prompt, to
answer JSON; every answer is checked against the taxonomy before anything is proposed.

Why checked and never repaired: a VLM's answer is free text, and an answer outside the taxonomy (a category it made
up, "navy" where the taxonomy says "blue", broken JSON) would otherwise become a label nobody chose. A part that is
not valid is "not proposed" (value null), and each answer with any such part is counted (``invalid``), so a run
says how often the model strayed. The model loads through the real Hub path (``AutoProcessor``,
``AutoModelForImageTextToText``; a Hub id at a revision from the Hub or its cache, or a local folder), generates
greedily, and its confidence is the geometric mean of the answer's token probabilities (one number per answer: a
generated answer has no per-field probability to speak of).
"""
from __future__ import annotations

import json

import numpy as np

from lookbench.annotate.proposers import NOT_PROPOSED, Proposer, proposal
from lookbench.dataset_builder.taxonomy import Taxonomy
from lookbench.files import hash_files

FILES = ("*.json", "*.txt", "*.jinja", "*.model", "README.md")  # config, processor, tokenizer, chat template
PROMPTS_VERSION = 1  # the prompt below: part of the proposer's revision


def prompt(taxonomy: Taxonomy) -> str:
    """The instruction: the answer's JSON shape, then every category with its attributes and their values."""
    lines = ["Label the fashion item in the image. Answer with JSON only, in this form:",
             '{"category": "<category>", "attributes": {"<attribute>": "<value>", ...}}',
             f"Give every attribute of the category. Use only the values listed; if an attribute does not apply to "
             f"this item or cannot be seen, answer \"{taxonomy.not_applicable}\".", "Categories and their attributes:"]
    for name, category in taxonomy.categories.items():
        listed = "; ".join(f"{attribute}: {' | '.join(values)}" for attribute, values in category.attributes.items())
        lines.append(f"- {name}: {listed}")
    return "\n".join(lines)


def parse_answer(text: str, taxonomy: Taxonomy) -> tuple[str | None, dict[str, str | None], bool]:
    """(category or None, attribute -> value or None, whether every part was valid) of one answer."""
    start, end = text.find("{"), text.rfind("}")
    try:
        answer = json.loads(text[start:end + 1]) if 0 <= start < end else None
    except json.JSONDecodeError:
        answer = None
    category = answer.get("category") if isinstance(answer, dict) else None
    if not isinstance(category, str) or category.strip().lower() not in taxonomy.categories:
        return None, {}, False
    category = category.strip().lower()
    given = answer.get("attributes") if isinstance(answer.get("attributes"), dict) else {}
    values, valid = {}, isinstance(answer.get("attributes"), dict)
    for name in taxonomy.categories[category].attributes:
        value = given.get(name)
        ok = isinstance(value, str) and taxonomy.allows(category, name, value)
        values[name] = value if ok else None
        valid = valid and ok
    return category, values, valid and set(given) <= set(values)


def longest_answer(taxonomy: Taxonomy) -> str:
    """The longest valid answer (each category with its longest values, "not applicable" where longer): what the
    generation budget must hold, so a valid answer is never cut."""
    answers = [json.dumps({"category": c, "attributes": {n: max([*v, taxonomy.not_applicable], key=len)
                                                           for n, v in cat.attributes.items()}})
               for c, cat in taxonomy.categories.items()]
    return max(answers, key=len)


class Vlm(Proposer):
    conditions = False  # one generation answers the category and its attributes together

    def __init__(self, taxonomy: Taxonomy, hub_id: str, device: str | None = None):
        super().__init__(taxonomy)
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        from lookbench.encoders.base import resolve_model_folder

        folder, commit = resolve_model_folder(hub_id, patterns=FILES)
        weights = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
        try:
            self.processor = AutoProcessor.from_pretrained(folder)
            self.model = AutoModelForImageTextToText.from_pretrained(folder).eval()
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"--proposer vlm:{hub_id}: not a transformers image-text-to-text model "
                             f"({' '.join(str(err).split())[:200]})") from None
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)
        self.processor.tokenizer.padding_side = "left"  # generation continues every prompt from its own last token
        self.name = f"vlm:{hub_id}"
        self.revision = f"{commit or 'sha256:' + hash_files(weights)[:16]}+prompts-{PROMPTS_VERSION}"
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt(taxonomy)}]}]
        self.text = self.processor.apply_chat_template(messages, add_generation_prompt=True)
        # Room for the longest valid answer with spacing and a little preamble; an answer cut short is invalid.
        self.max_new_tokens = 2 * len(self.processor.tokenizer(longest_answer(taxonomy))["input_ids"]) + 16

    def propose(self, items, images, given=None) -> list[dict]:
        """``given``: its attributes count only where its category is the one given (a generated answer is of the
        category it chose; asking again for another would be a second generation)."""
        import torch

        inputs = self.processor(images=list(images), text=[self.text] * len(images), return_tensors="pt",
                                padding=True).to(self.device)
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      return_dict_in_generate=True, output_scores=True)
        answers = out.sequences[:, inputs["input_ids"].shape[1]:]
        texts = self.processor.batch_decode(answers, skip_special_tokens=True)
        logprobs = self.model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True).float().cpu().numpy()
        pad = self.processor.tokenizer.pad_token_id
        proposals = []
        for i, (text, tokens, scores) in enumerate(zip(texts, answers.cpu().numpy(), logprobs)):
            kept = scores[tokens != pad] if pad is not None else scores
            confidence = float(np.exp(np.mean(kept))) if len(kept) else 0.0
            category, values, valid = parse_answer(text, self.taxonomy)
            self.invalid += not valid
            of = given[i] if given and given[i] is not None else category
            if of != category:
                values = dict.fromkeys(self.taxonomy.categories[of].attributes)
            if category is None:
                proposals.append(proposal(None, 0.0, {name: dict(NOT_PROPOSED) for name in values}))
                continue
            proposals.append(proposal(category, confidence, {
                name: {"value": v, "confidence": confidence} if v is not None else dict(NOT_PROPOSED)
                for name, v in values.items()}))
        return proposals
