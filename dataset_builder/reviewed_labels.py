"""The reviewed labels of an annotated raw release: what a build takes as a row's labels (docs/building-a-release.md).

Only reviewed labels are labels. Each reviewer's latest label of an item counts (``decisions.current``); an item two
reviewers labelled differently is *disputed* and gets no label until they agree (one changes their decision), so a
release never holds a label that was contested; an item nobody labelled, whose image changed since it was
reviewed, or whose label records no ``image_sha256`` (so could never be found stale), gets none either. A build refuses such rows, or with ``--skip-invalid`` leaves them out and counts them.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from lookbench.dataset_builder.decisions import LABEL, REVIEWS, DecisionStore, Event, current
from lookbench.dataset_builder.taxonomy import Taxonomy


@dataclass(frozen=True)
class Verdict:
    """Every reviewer's label in force for one item."""

    key: str
    labels: dict[str, Event]  # reviewer -> their label

    @property
    def agreed(self) -> bool:
        return len({event.labels for event in self.labels.values()}) == 1

    @property
    def reviewers(self) -> str:
        return ", ".join(sorted(self.labels))


def verdicts(store: DecisionStore) -> dict[str, Verdict]:
    """Item key -> the labels in force, for every item at least one reviewer labelled."""
    found: dict[str, dict[str, Event]] = {}
    for reviewer, events in store.all_events().items():
        for key, event in current(events).items():
            if event.action == LABEL:
                found.setdefault(key, {})[reviewer] = event
    return {key: Verdict(key, labels) for key, labels in found.items()}


def reviewed_fields(verdict: Verdict | None, image: bytes | None, taxonomy: Taxonomy) -> tuple[dict, str | None]:
    """The row's ``category``, ``main_attribute`` and ``attributes`` from its verdict, or why it has none.

    An attribute decided "not applicable" is not part of the item's attribute set A (the record compares A as a set
    of name/value pairs), so it is left out of ``attributes``; the decision file keeps it."""
    if verdict is None:
        return {}, "not reviewed (no reviewer has labelled it; lookbench review)"
    if not verdict.agreed:
        return {}, f"reviewers disagree ({verdict.reviewers}); see lookbench audit — it has no label until they agree"
    unbound = sorted(name for name, event in verdict.labels.items() if not isinstance(event.image_sha256, str))
    if unbound:  # a label that names no image could never go stale: it is no label
        return {}, (f"the label of {', '.join(unbound)} records no image_sha256 ({REVIEWS}/{unbound[0]}/"
                    f"{verdict.labels[unbound[0]].seq:08d}.json); review it again")
    digest = hashlib.sha256(image).hexdigest() if image is not None else None
    stale = sorted(name for name, event in verdict.labels.items() if event.image_sha256 != digest)
    if stale:
        return {}, f"its image changed since {', '.join(stale)} reviewed it; review it again"
    event = next(iter(verdict.labels.values()))
    category = taxonomy.categories.get(event.category)
    main = event.attributes.get(category.main_attribute) if category else None
    attributes = [{"name": n, "value": v} for n, v in sorted(event.attributes.items()) if v != taxonomy.not_applicable]
    return {"category": event.category, "main_attribute": main, "attributes": attributes}, None
