"""The reviewed labels of an annotated raw release: what a build takes as a row's labels (docs/building-a-release.md).

Only reviewed labels are labels. Each reviewer's latest label of an item counts (``decisions.current``); an item two
reviewers labelled differently is *disputed* and gets no label until they agree (one changes their decision) or an
adjudicator settles it (an ``adjudicate`` event: its labels are the item's, the reviewers' kept beside it), so a
release never holds a label that was contested and left open; an item nobody labelled, whose image changed since it
was reviewed, or whose label records no ``image_sha256`` (so could never be found stale), gets none either. The labels
of a reviewer the gold items flag (``gold.held_out``) are held out until someone else reviews the items. A build
refuses such rows, or with ``--skip-invalid`` leaves them out and counts them.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from lookbench.dataset_builder.decisions import ADJUDICATE, LABEL, REVIEWS, DecisionStore, Event, current
from lookbench.dataset_builder.taxonomy import Taxonomy


@dataclass(frozen=True)
class Verdict:
    """Every reviewer's label in force for one item, the adjudication that settles it (if any), and the reviewers
    whose labels of it are held out (flagged by the gold items)."""

    key: str
    labels: dict[str, Event]  # reviewer -> their label
    adjudication: Event | None = None  # the latest adjudication in force
    held: tuple[str, ...] = ()

    @property
    def agreed(self) -> bool:
        return len({event.labels for event in self.labels.values()}) == 1

    @property
    def settled(self) -> bool:
        """Decided by an adjudicator: the reviewers disagree (or agreed only after), the adjudication decides."""
        return self.adjudication is not None

    @property
    def decided(self) -> bool:
        return self.settled or self.agreed

    @property
    def disputed(self) -> bool:
        return len(self.labels) > 1 and not self.decided

    @property
    def label(self) -> Event:
        """The labels the row takes: the adjudicator's when settled, else the reviewers' agreed ones."""
        return self.adjudication or next(iter(self.labels.values()))

    @property
    def reviewers(self) -> str:
        return ", ".join(sorted(self.labels))


def verdicts(store: DecisionStore, held=frozenset()) -> dict[str, Verdict]:
    """Item key -> the labels in force, for every item at least one reviewer labelled or adjudicated; the labels of
    the reviewers in ``held`` are left out (named in ``Verdict.held``). Of several adjudications of one item the
    latest (by time, then name) settles it."""
    found: dict[str, dict[str, Event]] = {}
    adjudicated: dict[str, Event] = {}
    kept_out: dict[str, list[str]] = {}
    for reviewer, events in store.all_events().items():
        for key, event in current(events).items():
            if event.action == ADJUDICATE:
                if key not in adjudicated or (event.time, reviewer) > (adjudicated[key].time, adjudicated[key].reviewer):
                    adjudicated[key] = event
            elif event.action == LABEL and reviewer in held:
                kept_out.setdefault(key, []).append(reviewer)
            elif event.action == LABEL:
                found.setdefault(key, {})[reviewer] = event
    return {key: Verdict(key, found.get(key, {}), adjudicated.get(key), tuple(sorted(kept_out.get(key, ()))))
            for key in {*found, *adjudicated, *kept_out}}


def reviewed_fields(verdict: Verdict | None, image: bytes | None, taxonomy: Taxonomy) -> tuple[dict, str | None]:
    """The row's ``category``, ``main_attribute`` and ``attributes`` from its verdict, or why it has none.

    An attribute decided "not applicable" is not part of the item's attribute set A (the record compares A as a set
    of name/value pairs), so it is left out of ``attributes``; the decision file keeps it."""
    if verdict is None or not verdict.labels and not verdict.settled:
        held = (f"; the labels of {', '.join(verdict.held)} are held out (under the gold threshold: lookbench audit) "
                "until another reviewer reviews it") if verdict is not None and verdict.held else ""
        return {}, f"not reviewed (no reviewer has labelled it; lookbench review){held}"
    if not verdict.decided:
        return {}, (f"reviewers disagree ({verdict.reviewers}); see lookbench audit — it has no label until they agree "
                    "or an adjudicator settles it (lookbench review RAW --adjudicate)")
    binding = {verdict.adjudication.reviewer: verdict.adjudication} if verdict.settled else verdict.labels
    unbound = sorted(name for name, event in binding.items() if not isinstance(event.image_sha256, str))
    if unbound:  # a label that names no image could never go stale: it is no label
        return {}, (f"the label of {', '.join(unbound)} records no image_sha256 ({REVIEWS}/{unbound[0]}/"
                    f"{binding[unbound[0]].seq:08d}.json); review it again")
    digest = hashlib.sha256(image).hexdigest() if image is not None else None
    stale = sorted(name for name, event in binding.items() if event.image_sha256 != digest)
    if stale:
        return {}, f"its image changed since {', '.join(stale)} reviewed it; review it again"
    event = verdict.label
    category = taxonomy.categories.get(event.category)
    main = event.attributes.get(category.main_attribute) if category else None
    attributes = [{"name": n, "value": v} for n, v in sorted(event.attributes.items()) if v != taxonomy.not_applicable]
    return {"category": event.category, "main_attribute": main, "attributes": attributes}, None
