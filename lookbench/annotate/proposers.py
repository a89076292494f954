"""The proposers of `lookbench annotate`: each turns a batch of crawl items into proposals against a taxonomy.

A proposer has a ``name`` and a ``revision`` (what a row's ``proposer`` records: the model's weights and the prompt
or rule version, so two runs that could differ never share one) and ``propose(items, images) -> [proposal]``, a
proposal being the row contract's ``proposals`` (lookbench/annotate/__init__.py). ``invalid`` counts answers that
were not valid against the taxonomy (made "not proposed"). ``propose`` may be told a category per item (``given``,
None where none is known yet): the proposal's attributes are then that category's, its category answer still its
own, so a later proposer fills in the attributes behind an earlier one's category (``lookbench.annotate.layered``).
Three kinds, named as ``--proposer`` takes them:

- ``zero-shot:MODEL``: CLIP-style zero-shot with any registered model that has a text tower — the image against
  prompts made from the taxonomy in the words its text tower was trained on (``text_queries.query_text``: "striped
  top", "red top"), one prompt per (category, attribute, value). A category scores the mean over its attributes of
  the log-sum-exp over their values' similarities (each attribute's marginal; a bare "top" prompt reads worse, as
  the tower was trained on described items: benchmarks/RESULTS.md); then each of its attributes takes its best
  value. Confidence is the softmax over the choices at the model's own logit scale. An attribute that may be "not
  applicable" (every one but the main attribute) also scores an absence prompt, "top with no collar"
  (``absence_text``), among its values: "not applicable" is proposed when its probability beats every value's.
  The absence prompt is not part of the category score (a category is judged by what its items have).
- ``vlm:HUB_ID``: a transformers image-text-to-text model asked for JSON (``lookbench.annotate.vlm``).
- ``metadata``: values the item's own title, description and shop category state, matched as whole words; "not
  applicable" where the words say the item has none of the attribute ("sleeveless", "no collar": ``absence_words``).
"""
from __future__ import annotations

import re

import numpy as np

from lookbench.dataset_builder.taxonomy import Taxonomy
from lookbench.dataset_builder.text_queries import NOUN_VALUES, NOUNS, WORDS, query_text

PROMPTS_VERSION = 2  # the zero-shot prompts and the metadata rules (2: "not applicable"): part of their revisions
NOT_PROPOSED = {"value": None, "confidence": 0.0}


def proposal(category: str | None, confidence: float, attributes: dict[str, dict] | None = None) -> dict:
    return {"category": {"value": category, "confidence": float(confidence)}, "attributes": attributes or {}}


class Proposer:
    name = "proposer"
    revision = ""
    conditions = True  # its attributes can be asked for a given category (``propose(..., given)``)

    def __init__(self, taxonomy: Taxonomy):
        self.taxonomy = taxonomy
        self.invalid = 0  # answers refused against the taxonomy (made "not proposed")

    def propose(self, items, images, given=None) -> list[dict]:  # pragma: no cover - interface
        raise NotImplementedError


def absence_text(category: str, name: str) -> str:
    """The zero-shot prompt for an item of ``category`` without the attribute ``name``: "top with no collar"."""
    return f"{query_text(category, {})} with no {name.replace('_', ' ')}"


def _attribute_words(name: str) -> set[str]:
    """The words that name the thing an attribute describes: "sleeve_length" -> {"sleeve length", "sleeve"}."""
    spoken = name.replace("_", " ").lower()
    return {spoken, spoken.split()[0]}


def absence_words(name: str) -> set[str]:
    """Phrases that say an item has none of the attribute ``name``: "no collar", "without sleeves", "sleeveless"."""
    out = set()
    for word in _attribute_words(name):
        for form in (word, _plural(word)):
            out |= {f"no {form}", f"without {form}", f"without a {form}"}
        if " " not in word:
            out.add(f"{word}less")
    return out


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def _logsumexp(logits: np.ndarray) -> np.ndarray:
    top = logits.max(axis=-1, keepdims=True)
    return (top + np.log(np.exp(logits - top).sum(axis=-1, keepdims=True)))[..., 0]


class ZeroShot(Proposer):
    def __init__(self, taxonomy: Taxonomy, model: str, device: str | None = None):
        super().__init__(taxonomy)
        from lookbench.encoders.registry import load_encoder, text_models

        self.encoder = load_encoder(model, device=device)
        if self.encoder.text_tower is None:
            raise ValueError(f"--proposer zero-shot:{model}: the model has no text tower; use one of "
                             f"{', '.join(text_models())}")
        self.name, self.revision = f"zero-shot:{model}", f"{self.encoder.fingerprint}+prompts-{PROMPTS_VERSION}"
        self.categories = list(taxonomy.categories)
        self.value_vectors = {
            (c, name): self._texts([query_text(c, {name: v}) for v in values])
            for c, cat in taxonomy.categories.items() for name, values in cat.attributes.items()}
        self.absence_vectors = {
            (c, name): self._texts([absence_text(c, name)])
            for c, cat in taxonomy.categories.items() for name in cat.attributes if name != cat.main_attribute}
        scale = getattr(getattr(self.encoder, "module", None), "logit_scale", None)
        self.scale = float(scale.detach().exp()) if scale is not None else 100.0

    def _texts(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self.encoder.encode_text(texts), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def propose(self, items, images, given=None) -> list[dict]:
        vectors = np.asarray(self.encoder.encode_batch([self.encoder.preprocess(im) for im in images]), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        logits = {key: self.scale * (vectors @ values.T) for key, values in self.value_vectors.items()}
        absent = {key: self.scale * (vectors @ values.T) for key, values in self.absence_vectors.items()}
        categories = np.stack([np.mean([_logsumexp(logits[(c, name)]) for name in cat.attributes], axis=0)
                               for c, cat in self.taxonomy.categories.items()], axis=1)
        out = []
        for i, p in enumerate(_softmax(categories)):
            category = self.categories[int(p.argmax())]
            of = given[i] if given and given[i] is not None else category
            attributes = {}
            for name, values in self.taxonomy.categories[of].attributes.items():
                choices = [*values, self.taxonomy.not_applicable] if (of, name) in absent else list(values)
                scores = logits[(of, name)][i]
                q = _softmax(np.concatenate([scores, absent[(of, name)][i]]) if (of, name) in absent else scores)
                attributes[name] = {"value": choices[int(q.argmax())], "confidence": float(q.max())}
            out.append(proposal(category, float(p.max()), attributes))
        return out


def _words(value: str) -> set[str]:
    """The phrases that state ``value`` in a text: itself (``_`` as a space) and the templates' words for it."""
    spoken = value.replace("_", " ").lower()
    return {spoken, spoken.replace("-", " ")}


class Metadata(Proposer):
    """What the item's own words say. A category is proposed when exactly one category (its name, its noun in the
    templates, or the shop category) is named; an attribute when exactly one of its values is; a word that names
    values of several attributes (``white``: a colour and a sole) goes to the main attribute, else to none. "Not
    applicable" when the words say the item has none of an attribute (``absence_words``: "no collar",
    "sleeveless") and name none of its values — or, where one of the attribute's values is such a phrase
    ("sleeveless" in LookBench-Mini), that value ("no sleeves" is "sleeveless" there); never for the main
    attribute. A value denied ("no collar") is not stated. Stated words are taken at their word: confidence 1.
    Told a category (``given``), it reads that category's attributes in the words, whatever category they name."""

    name = "metadata"
    revision = f"rules-{PROMPTS_VERSION}"

    def __init__(self, taxonomy: Taxonomy):
        super().__init__(taxonomy)
        self.category_words = {c: _words(c) | _words(NOUNS.get(c, c)) | ({_plural(c)} if not c.endswith("s") else set())
                               for c in taxonomy.categories}
        self.value_words = {
            (c, name, v): _words(v) | {WORDS.get(name, {}).get(v, v).lower()} | (
                {NOUN_VALUES[name][v].lower()} if v in NOUN_VALUES.get(name, {}) else set())
            for c, cat in taxonomy.categories.items() for name, values in cat.attributes.items() for v in values}
        # (category, attribute) -> (phrases saying "none of it", what they propose): the value among the attribute's
        # own that is such a phrase ("sleeveless"), else "not applicable" (never for the main attribute)
        self.absence = {}
        for c, cat in taxonomy.categories.items():
            for name, values in cat.attributes.items():
                phrases = absence_words(name)
                stated = [v for v in values if self.value_words[(c, name, v)] & phrases]
                if len(stated) == 1 or name != cat.main_attribute:
                    self.absence[(c, name)] = (phrases, stated[0] if len(stated) == 1 else taxonomy.not_applicable)

    @staticmethod
    def _says(text: str, phrases: set[str]) -> bool:
        """Whether ``text`` states one of ``phrases`` as a whole word, and not denied ("no collar": no "collar")."""
        return any(re.search(rf"(?<![\w-])(?<!\bno )(?<!\bwithout )(?<!\bwithout a ){re.escape(p)}(?![\w-])", text)
                   for p in phrases)

    def propose(self, items, images, given=None) -> list[dict]:
        return [self._one(" ".join(item.text().lower().split()), (item.fields.get("shop_category") or "").strip().lower(),
                          given[i] if given else None) for i, item in enumerate(items)]

    def _one(self, text: str, shop: str, given: str | None) -> dict:
        named = [c for c, phrases in self.category_words.items() if shop in phrases or self._says(text, phrases)]
        own = named[0] if len(named) == 1 else None
        category, attributes = given or own, {}
        if category is None:
            return proposal(None, 0.0)
        cat = self.taxonomy.categories[category]
        found = {name: [v for v in values if self._says(text, self.value_words[(category, name, v)])]
                 for name, values in cat.attributes.items()}
        for name, values in found.items():
            shared = [v for v in values if any(v in other for n, other in found.items() if n != name)]
            if shared and name != cat.main_attribute:
                values = [v for v in values if v not in shared]
            if not values and (category, name) in self.absence and self._says(text, self.absence[(category, name)][0]):
                values = [self.absence[(category, name)][1]]
            attributes[name] = {"value": values[0], "confidence": 1.0} if len(values) == 1 else dict(NOT_PROPOSED)
        return proposal(own, 1.0 if own else 0.0, attributes)


def _plural(word: str) -> str:
    return word + ("es" if word.endswith(("s", "sh", "ch", "x")) else "s")
