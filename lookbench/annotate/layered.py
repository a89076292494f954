"""Several proposers in one run (``--proposer A --proposer B``), merged field by field.

Why layered and not voted: proposers differ in how often they answer and in how often they are right when they
do (``metadata`` is taken at the item's word but answers for few items; ``zero-shot`` answers every field, less
precisely), so a field takes the answer of the most precise proposer that gave one, and the others fill in where it
gave none. Which is more precise is the maintainer's knowledge (``lookbench audit`` measures it per proposer), so the
rule is the order given: **the first named is the more precise**. A field's answer is the first proposer's that is
not "not proposed" ("not applicable" is an answer).

The category is merged first, layer by layer: each proposer is told the category decided so far (``given``), so
its attributes are of that category; a proposer that was asked before any category was decided and proposed none
itself is asked again for the attributes of the category a later one decided (unless it cannot condition on a
category, ``conditions = False``: the VLM, whose answer is one generation). Every merged field keeps its source and
every proposer's own answer, so the review app and the audit can show them::

    {"value": "red", "confidence": 1.0, "source": "metadata",
     "by": {"metadata": {"value": "red", "confidence": 1.0}, "zero-shot:gr-lite-mini-text": {"value": "blue", ...}}}

``source`` is None when no proposer answered (then ``value`` is None and ``confidence`` 0). A run with one proposer
writes its proposals as they are (no ``source``, no ``by``).
"""
from __future__ import annotations

from lookbench.annotate.proposers import NOT_PROPOSED, Proposer, proposal

SEPARATOR = " > "  # between the proposers' names and revisions in a row's ``proposer``: the first is the more precise


def merged_field(answers: dict[str, dict]) -> dict:
    """One field from each proposer's answer (name -> {value, confidence}, in the layers' order)."""
    source = next((name for name, answer in answers.items() if answer["value"] is not None), None)
    taken = answers[source] if source is not None else NOT_PROPOSED
    return {**taken, "source": source, "by": {name: dict(answer) for name, answer in answers.items()}}


class Layered(Proposer):
    def __init__(self, taxonomy, layers: list[Proposer]):
        self.taxonomy = taxonomy  # no count of its own: ``invalid`` is the layers'
        names = [layer.name for layer in layers]
        if len(set(names)) != len(names):
            repeated = next(name for name in names if names.count(name) > 1)
            raise ValueError(f"--proposer {repeated} is given twice; name each proposer once, the more precise first")
        self.layers = layers
        self.name = SEPARATOR.join(names)
        self.revision = SEPARATOR.join(layer.revision for layer in layers)

    @property
    def invalid(self) -> int:
        return sum(layer.invalid for layer in self.layers)

    def propose(self, items, images, given=None) -> list[dict]:
        n = len(items)
        decided = list(given) if given else [None] * n
        asked, answers = [], []
        for layer in self.layers:
            asked.append(list(decided))
            answers.append(layer.propose(items, images, decided))
            decided = [d if d is not None else a["category"]["value"] for d, a in zip(decided, answers[-1])]
        for k, layer in enumerate(self.layers):
            again = [i for i in range(n) if asked[k][i] is None and answers[k][i]["category"]["value"] is None
                     and decided[i] is not None]
            if again and layer.conditions:
                for i, answer in zip(again, layer.propose([items[i] for i in again], [images[i] for i in again],
                                                          [decided[i] for i in again])):
                    answers[k][i] = {"category": answers[k][i]["category"], "attributes": answer["attributes"]}
        return [self._merge(decided[i], [(layer.name, answers[k][i]) for k, layer in enumerate(self.layers)])
                for i in range(n)]

    def _merge(self, category: str | None, answers: list[tuple[str, dict]]) -> dict:
        merged = proposal(None, 0.0)
        merged["category"] = merged_field({name: answer["category"] for name, answer in answers})
        if category is not None:
            merged["attributes"] = {
                name: merged_field({layer: answer["attributes"].get(name, NOT_PROPOSED) for layer, answer in answers})
                for name in self.taxonomy.categories[category].attributes}
        return merged
