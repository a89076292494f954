"""Who reviews which item: a shared sample that ``overlap`` reviewers each decide (their agreement is the audit's
κ), every other item once, gold items mixed into every reviewer's queue at the plan's rate, and where each reviewer
resumes.

The plan is ``<RAW>/reviews/plan.json``, written once by the first ``lookbench review`` (exclusively, so two first
runs cannot draw two samples) and read by every later one, so every reviewer works to the same sample and gold.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from lookbench.files import new_sibling

from lookbench.dataset_builder.decisions import ADJUDICATE, LABEL, PLAN, SKIP, DecisionStore, ReviewError, current, in_force, plan_data
from lookbench.dataset_builder.gold import GOLD, GoldSettings, flagged
from lookbench.dataset_builder.review.items import GoldItem, Item

# The shared sample's default size: a tenth of the items, at least this many (all of a smaller release).
MIN_SHARED = 20
SEED = 0


@dataclass(frozen=True)
class Plan:
    overlap: int  # how many reviewers decide each item of the shared sample
    shared: tuple[str, ...]  # the shared sample's item keys
    gold: GoldSettings | None = None  # the gold items and their rate, fixed at first use

    @classmethod
    def read(cls, raw: Path) -> "Plan | None":
        data = plan_data(raw)
        if data is None:
            return None
        try:
            return cls(int(data["overlap"]), tuple(str(k) for k in data["shared"]), GoldSettings.from_plan(raw))
        except (ValueError, KeyError, TypeError) as err:
            raise ReviewError(f"{Path(raw) / 'reviews' / PLAN}: not a review plan ({err})") from None

    @classmethod
    def open(cls, raw: Path, items: list[Item], overlap: int | None = None, shared: int | None = None,
             gold=None, gold_rate: float | None = None, gold_threshold: float | None = None) -> "Plan":
        """The release's plan; the first call draws it (``overlap`` default 2, ``shared`` default a tenth of the
        items, at least ``MIN_SHARED``; ``gold``: the gold file, mixed in at ``gold_rate``). A later call that asks
        for another overlap, sample size or gold is refused."""
        plan = cls.read(raw)
        if plan is None:
            if overlap is not None and overlap < 1:
                raise ReviewError(f"--overlap {overlap}: at least 1 reviewer decides each item")
            if shared is not None and shared < 0:
                raise ReviewError(f"--shared {shared}: the shared sample cannot have fewer than 0 items")
            size = shared if shared is not None else max(MIN_SHARED, math.ceil(len(items) / 10))
            keys = sorted(item.key for item in items)
            sample = tuple(random.Random(SEED).sample(keys, min(max(size, 0), len(keys))))
            settings = (GoldSettings.of(gold, gold_rate, gold_threshold, f"{items[0].config}/{items[0].split}")
                        if gold is not None else None)
            plan = cls(2 if overlap is None else overlap, sample, settings)
            plan = plan._write(Path(raw) / "reviews" / PLAN)
        if overlap is not None and overlap != plan.overlap or shared is not None and shared != len(plan.shared):
            raise ReviewError(f"the review of {raw} was planned with --overlap {plan.overlap} and a shared sample of "
                              f"{len(plan.shared)} items ({Path(raw) / 'reviews' / PLAN}); every reviewer works to one plan")
        asked = (None if gold is None else str(Path(gold).resolve()), gold_rate, gold_threshold)
        fixed = (plan.gold.file, plan.gold.rate, plan.gold.threshold) if plan.gold else (None, None, None)
        if any(a is not None and a != f for a, f in zip(asked, fixed)):
            fixed = (f"--gold {plan.gold.file} --gold-rate {plan.gold.rate} --gold-threshold {plan.gold.threshold}"
                     if plan.gold else "no gold items")
            raise ReviewError(f"the review of {raw} was planned with {fixed} ({Path(raw) / 'reviews' / PLAN}); every "
                              "reviewer works to one plan")
        return plan

    def _write(self, path: Path) -> "Plan":
        """Written once: a temporary file linked to ``plan.json`` (which fails if another run linked its plan first,
        whose plan is then the one)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = new_sibling(path, "tmp", folder=False)
        body = {"overlap": self.overlap, "shared": list(self.shared)}
        if self.gold is not None:
            body[GOLD] = vars(self.gold)
        try:
            tmp.write_text(json.dumps(body, indent=1) + "\n")
            os.link(tmp, path)
        except FileExistsError:
            return Plan.read(path.parent.parent)
        finally:
            tmp.unlink(missing_ok=True)
        return self


def queue(plan: Plan, items: list[Item], store: DecisionStore, reviewer: str) -> list[Item]:
    """What ``reviewer`` sees next, in order: shared items fewer than ``overlap`` others have decided; items they
    labelled that another reviewer labelled differently, once (to keep or change their label, the others' in view;
    skipped, it comes last); items nobody has decided (in an order of the reviewer's own, so reviewers working at once
    rarely meet); then the reviewer's skipped ones; gold items (``items`` of type ``GoldItem``) mixed in at the plan's
    rate (``mix_gold``). Anything else the reviewer has labelled is done, and so is an item an adjudicator settled.
    The labels of a reviewer the gold flags count for no one else: their items go back to the others."""
    gold = [item for item in items if isinstance(item, GoldItem)]
    events = store.all_events()
    held = held_reviewers(plan, items, events)
    labels: dict[str, dict[str, tuple]] = {}
    settled = set()
    for name, own_events in events.items():
        for key, event in current(own_events).items():
            if event.action == LABEL and name not in held:
                labels.setdefault(key, {})[name] = event.labels
            settled.update([key] if event.action == ADJUDICATE else [])
    mine = current(events.get(reviewer, []))
    latest = {event.item: event for event in in_force(events.get(reviewer, []))}
    times = Counter(e.item for e in events.get(reviewer, []) if e.action == LABEL)
    shared = set(plan.shared)
    first, disputed, then, last = [], [], [], []
    for item in items:
        own, others = mine.get(item.key), {n: v for n, v in labels.get(item.key, {}).items() if n != reviewer}
        if isinstance(item, GoldItem) or item.key in settled or own is not None and own.action == ADJUDICATE:
            continue
        if own is not None and own.action == LABEL:
            if times[item.key] == 1 and any(v != own.labels for v in others.values()):
                (last if latest[item.key].action == SKIP else disputed).append(item)
            continue
        if len(others) >= (plan.overlap if item.key in shared else 1):
            continue
        if own is not None and own.action == SKIP:
            last.append(item)
        else:
            (first if item.key in shared else then).append(item)
    then.sort(key=lambda item: _order(reviewer, item.key))
    return mix_gold(plan, gold, first + disputed + then + last, mine, reviewer)


def held_reviewers(plan: Plan, items: list[Item], events: dict) -> frozenset[str]:
    """The reviewers the gold items among ``items`` flag (``gold.flagged``)."""
    truths = {item.key: item.truth for item in items if isinstance(item, GoldItem)}
    return flagged(truths, events, plan.gold.threshold) if truths and plan.gold else frozenset()


def _order(reviewer: str, key: str) -> bytes:
    return hashlib.sha256(f"{reviewer}\0{key}".encode()).digest()


def mix_gold(plan: Plan, gold: list[GoldItem], waiting: list[Item], mine: dict, reviewer: str) -> list[Item]:
    """``waiting`` with the reviewer's gold items not yet labelled (in an order of their own, skipped ones last) put
    at random places: the reviewer's stream of decisions is cut in blocks of ``round(1 / rate)`` places and one place
    of each block, drawn from the reviewer's name and the block's number, holds a gold item. The place reached is how
    many items the reviewer has labelled, so the queue recomputed at every step keeps the same places."""
    pending = sorted((item for item in gold if getattr(mine.get(item.key), "action", None) != LABEL),
                     key=lambda item: (item.key in mine, _order(reviewer, item.key)))
    if not pending or not waiting:
        return waiting
    block = plan.gold.block
    place = sum(event.action == LABEL for event in mine.values())
    out, rest = [], iter(waiting)
    for item in rest:
        while pending and place % block == int.from_bytes(_order(reviewer, f"gold-block-{place // block}")[:4], "big") % block:
            out.append(pending.pop(0))
            place += 1
        out.append(item)
        place += 1
    return out
