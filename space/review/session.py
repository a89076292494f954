"""One annotated release under review on this server: its items, plan and decision store, who holds which item
(claims), a decision checked field by field, and what a form opens with. ``app.py`` shows it; this module never
imports gradio."""
from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from lookbench.errors import one_line, shown
from lookbench.dataset_builder.decisions import LABEL, DecisionStore, ReviewError
from lookbench.dataset_builder.review.items import GoldItem, Item, gold_items
from lookbench.dataset_builder.review.plan import Plan, queue
from lookbench.dataset_builder.sources import read_contained
from lookbench.dataset_builder.taxonomy import Taxonomy
from lookbench.dataset_builder.validation import bbox_problems, open_image

# How long an item shown to one reviewer is kept from the others on this server without a sign of life from their
# page (its heartbeat comes every third of it; a closed page releases its item at once). A test may shorten it.
CLAIM_SECONDS = 60
CLAIM_SETTING = "LOOKBENCH_REVIEW_CLAIM_SECONDS"


def claim_seconds() -> float:
    value = os.environ.get(CLAIM_SETTING)
    try:
        return min(float(value), CLAIM_SECONDS) if value else CLAIM_SECONDS
    except ValueError:
        raise ReviewError(f"{CLAIM_SETTING}={shown(value)} is not a number of seconds") from None


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
        self.shared = frozenset(self.plan.shared)
        self.claims: dict[str, tuple[str, str | None, float]] = {}  # item key -> (reviewer, page session, last sign)
        self.claim_seconds = claim_seconds()
        self.lock = threading.Lock()

    def item(self, key: str) -> Item:
        if key not in self.by_key:
            raise ReviewError(f"no item {key!r} in {self.raw}")
        return self.by_key[key]

    def _live_claims(self, now: float) -> None:
        self.claims = {k: c for k, c in self.claims.items() if now - c[2] < self.claim_seconds}

    def per_reviewer(self, item: Item) -> bool:
        """Whether each reviewer decides ``item`` on their own, one by one: a shared-sample item (for agreement) or a
        gold item (for accuracy). It is never kept from the others by a claim, nor accepted in bulk."""
        return item.key in self.shared or isinstance(item, GoldItem)

    def open_to(self, reviewer: str) -> list[Item]:
        """The reviewer's queue without the items shown to someone else right now (outside the shared sample)."""
        with self.lock:
            self._live_claims(time.monotonic())
            return [item for item in queue(self.plan, self.items, self.store, reviewer)
                    if self.per_reviewer(item) or self.claims.get(item.key, (reviewer,))[0] == reviewer]

    def next_for(self, reviewer: str, session: str | None = None) -> Item | None:
        """The reviewer's next item, claimed for them: reviewers on one server are never shown the same item at
        once outside the shared sample (on separate servers their orders differ; a doubled item is agreement data)."""
        with self.lock:
            now = time.monotonic()
            self._live_claims(now)
            self.claims = {k: c for k, c in self.claims.items() if c[0] != reviewer}
            waiting = [item for item in queue(self.plan, self.items, self.store, reviewer)
                       if self.per_reviewer(item) or item.key not in self.claims]
            if waiting:
                self.claims[waiting[0].key] = (reviewer, session, now)
            return waiting[0] if waiting else None

    def beat(self, reviewer: str, key: str | None, session: str | None = None) -> None:
        """The reviewer's page is still open on ``key``: their claim on it lives on (or is taken again)."""
        with self.lock:
            self._live_claims(time.monotonic())
            if key in self.by_key and self.claims.get(key, (reviewer,))[0] == reviewer:
                self.claims[key] = (reviewer, session, time.monotonic())

    def release(self, session: str) -> None:
        """A page closed: the item it held goes to the next reviewer who asks."""
        with self.lock:
            self.claims = {k: c for k, c in self.claims.items() if c[1] != session}

    def image_sha256(self, item: Item) -> str | None:
        data = self._bytes(item, "image")
        return hashlib.sha256(data).hexdigest() if data is not None else None

    def _bytes(self, item: Item, field: str) -> bytes | None:
        relative = item.record.get(field)
        if not isinstance(relative, str) or not relative:
            return None
        return read_contained(self.raw / item.folder, relative)

    def pictures(self, item: Item) -> tuple[Image.Image | None, Image.Image | None, list[str]]:
        """The crop, and for a street look its street photo with the crop's box drawn on it; and what could not be
        shown, one line each. Never raises on an item: a picture that cannot be decoded (a decompression bomb
        included) or a box that is not one inside its photo is left out and named, and the item can still be
        skipped."""
        decoded, problems = [], []
        for field in ("image", "raw_image"):
            try:
                data = self._bytes(item, field)
                decoded.append(None if data is None else open_image(data, shown(item.record.get(field))).convert("RGB"))
            except (ValueError, OSError) as err:
                decoded.append(None)
                problems.append(f"{field} unreadable: {one_line(err, 200)}")
        image, street = decoded
        box = item.record.get("bbox")
        if street is not None and box is not None:
            if found := bbox_problems(box, street.size):
                problems.append(f"bbox not drawn: {found[0]}")
            else:
                ImageDraw.Draw(street).rectangle([float(v) for v in box], outline=(255, 0, 64),
                                                 width=max(2, street.width // 150))
        return image, street, problems

    def problems(self, category, values: list) -> dict[int, str]:
        """What stops ``category`` and ``values`` from being a label, by form field (0 the category, ``n`` the n-th
        attribute), one line each: a value missing, not text, or not the category's; the main attribute "not
        applicable"."""
        if not isinstance(category, str) or category not in self.taxonomy.categories:
            return {0: f"choose a category (got {shown(category)})"}
        entry, found = self.taxonomy.categories[category], {}
        for slot, (name, value) in enumerate(zip(entry.attributes, values), start=1):
            if value is None or value == "":
                found[slot] = f"{name}: choose a value or {self.taxonomy.not_applicable!r}"
            elif not isinstance(value, str):
                found[slot] = f"{name}: {shown(value)} is not a value"
            elif not self.taxonomy.allows(category, name, value):
                found[slot] = f"{name}: {shown(value)} is not a value of {category!r} in {self.taxonomy.label}"
            elif name == entry.main_attribute and value == self.taxonomy.not_applicable:
                found[slot] = f"{name} is {category!r}'s main attribute; it needs a value"
        return found

    def decide(self, reviewer: str, key: str, category: str, values: list, action: str = LABEL) -> None:
        """Write the reviewer's label of ``key`` (or, ``action`` ``adjudicate``, an adjudicator's): the category and
        every attribute of it, each a value or "not applicable" (never the main attribute); refused in one line
        naming what is missing or not allowed."""
        if found := self.problems(category, values):
            raise ReviewError(found[min(found)])
        attributes = dict(zip(self.taxonomy.categories[category].attributes, values))
        item = self.item(key)
        try:
            digest = self.image_sha256(item)
        except ValueError as err:
            digest, why = None, one_line(err, 200)
        else:
            why = "it has no image"
        if digest is None:  # a label binds the image it was given for; without one it could never go stale
            raise ReviewError(f"{item.key} cannot be labelled: {why}; skip it")
        self.store.add(reviewer, action, item.key, category=category, attributes=attributes, image_sha256=digest)


def prefill(review: Review, item: Item, reviewer: str) -> tuple[str | None, dict]:
    """The category and attribute values the form opens with: the reviewer's own latest label when they come back
    to an item (after an undo: the label taken back, to correct), else the proposals."""
    own = [e for e in review.store.events(reviewer) if e.item == item.key and e.action == LABEL]
    if own:
        return own[-1].category, dict(own[-1].attributes)
    category = item.proposals.get("category")
    return category.get("value") if isinstance(category, dict) else None, item.proposed_values


def kept(review: Review, item: Item, category: str, names: list[str], values: list) -> dict:
    """The form's values for ``category`` after a change of category: each correction still allowed there (same
    attribute name, a value the new category allows) kept, every other field the proposal."""
    shown_values = dict(zip(names, values))
    out = dict(item.proposed_values)
    for name, value in shown_values.items():
        if isinstance(value, str) and value and review.taxonomy.allows(category, name, value):
            out[name] = value
    return out


def open_review(raw, overlap: int | None = None, shared: int | None = None, gold=None, gold_rate: float | None = None,
                gold_threshold: float | None = None) -> tuple[Review, list[str]]:
    """The release under review (its gold items among its items, unmarked) and the rows that cannot be reviewed (one
    line each); refused in one line when the release has no taxonomy or no proposals (it was not made by ``lookbench
    annotate``)."""
    from lookbench.dataset_builder.review.items import read_items
    from lookbench.dataset_builder.sources import RawSource

    raw = Path(raw)
    taxonomy = RawSource(raw).taxonomy()
    if taxonomy is None:
        raise ReviewError(f"{raw} has no taxonomy.json; review an annotated release (lookbench annotate --out RAW)")
    items, problems = read_items(raw)
    if not items or not any(item.proposals for item in items):
        raise ReviewError(f"{raw} has no rows with proposals; review an annotated release (lookbench annotate --out RAW)")
    plan = Plan.open(raw, items, overlap, shared, gold, gold_rate, gold_threshold)
    extra = gold_items(plan.gold, taxonomy, items) if plan.gold else []
    return Review(raw, items + extra, taxonomy, plan, DecisionStore(raw)), problems


