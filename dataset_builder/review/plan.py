"""Who reviews which item: a shared sample that ``overlap`` reviewers each decide (their agreement is the audit's
κ), every other item once, and where each reviewer resumes.

The plan is ``<RAW>/reviews/plan.json``, written once by the first ``lookbench review`` (exclusively, so two first
runs cannot draw two samples) and read by every later one, so every reviewer works to the same sample.
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

from lookbench.files import new_sibling, read_regular

from lookbench.dataset_builder.decisions import LABEL, PLAN, SKIP, DecisionStore, ReviewError, current
from lookbench.dataset_builder.review.items import Item

# The shared sample's default size: a tenth of the items, at least this many (all of a smaller release).
MIN_SHARED = 20
SEED = 0


@dataclass(frozen=True)
class Plan:
    overlap: int  # how many reviewers decide each item of the shared sample
    shared: tuple[str, ...]  # the shared sample's item keys

    @classmethod
    def read(cls, raw: Path) -> "Plan | None":
        path = Path(raw) / "reviews" / PLAN
        if not path.exists():
            return None
        try:
            data = json.loads(read_regular(path, 64 << 20).decode("utf-8"))
            return cls(int(data["overlap"]), tuple(str(k) for k in data["shared"]))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
            raise ReviewError(f"{path}: not a review plan ({err})") from None

    @classmethod
    def open(cls, raw: Path, items: list[Item], overlap: int | None = None, shared: int | None = None) -> "Plan":
        """The release's plan; the first call draws it (``overlap`` default 2, ``shared`` default a tenth of the
        items, at least ``MIN_SHARED``). A later call that asks for another overlap or sample size is refused."""
        plan = cls.read(raw)
        if plan is None:
            if overlap is not None and overlap < 1:
                raise ReviewError(f"--overlap {overlap}: at least 1 reviewer decides each item")
            if shared is not None and shared < 0:
                raise ReviewError(f"--shared {shared}: the shared sample cannot have fewer than 0 items")
            size = shared if shared is not None else max(MIN_SHARED, math.ceil(len(items) / 10))
            keys = sorted(item.key for item in items)
            sample = tuple(random.Random(SEED).sample(keys, min(max(size, 0), len(keys))))
            plan = cls(2 if overlap is None else overlap, sample)
            plan = plan._write(Path(raw) / "reviews" / PLAN)
        if overlap is not None and overlap != plan.overlap or shared is not None and shared != len(plan.shared):
            raise ReviewError(f"the review of {raw} was planned with --overlap {plan.overlap} and a shared sample of "
                              f"{len(plan.shared)} items ({Path(raw) / 'reviews' / PLAN}); every reviewer works to one plan")
        return plan

    def _write(self, path: Path) -> "Plan":
        """Written once: a temporary file linked to ``plan.json`` (which fails if another run linked its plan first,
        whose plan is then the one)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = new_sibling(path, "tmp", folder=False)
        try:
            tmp.write_text(json.dumps({"overlap": self.overlap, "shared": list(self.shared)}, indent=1) + "\n")
            os.link(tmp, path)
        except FileExistsError:
            return Plan.read(path.parent.parent)
        finally:
            tmp.unlink(missing_ok=True)
        return self


def queue(plan: Plan, items: list[Item], store: DecisionStore, reviewer: str) -> list[Item]:
    """What ``reviewer`` sees next, in order: shared items fewer than ``overlap`` others have decided; items they
    labelled that another reviewer labelled differently, once (to keep or change their label, the others' in view);
    items nobody has decided (in an order of the reviewer's own, so reviewers working at once rarely meet); then the
    reviewer's skipped ones. Anything else the reviewer has labelled is done."""
    events = store.all_events()
    labels: dict[str, dict[str, tuple]] = {}
    for name, own_events in events.items():
        for key, event in current(own_events).items():
            if event.action == LABEL:
                labels.setdefault(key, {})[name] = event.labels
    mine = current(events.get(reviewer, []))
    times = Counter(e.item for e in events.get(reviewer, []) if e.action == LABEL)
    shared = set(plan.shared)
    first, disputed, then, last = [], [], [], []
    for item in items:
        own, others = mine.get(item.key), {n: v for n, v in labels.get(item.key, {}).items() if n != reviewer}
        if own is not None and own.action == LABEL:
            if times[item.key] == 1 and any(v != own.labels for v in others.values()):
                disputed.append(item)
            continue
        if len(others) >= (plan.overlap if item.key in shared else 1):
            continue
        if own is not None and own.action == SKIP:
            last.append(item)
        else:
            (first if item.key in shared else then).append(item)
    then.sort(key=lambda item: hashlib.sha256(f"{reviewer}\0{item.key}".encode()).digest())
    return first + disputed + then + last
