"""Gold items: items whose labels are known, mixed unmarked into every reviewer's queue (CVAT's practice, 5–15 %),
so a careless reviewer shows in the audit and is held out of the build.

The gold file (docs/building-a-release.md, "Gold items") is JSONL: rows of the raw release format (``item_id``,
``image`` relative to the file's folder, ``proposals`` and ``proposer`` as ``lookbench annotate`` writes them) that
also carry their known ``category`` and ``attributes`` (the release row's form: a list of ``{"name", "value"}``; an
attribute of the category left out is "not applicable"). Its path, sha256, rate and threshold are fixed in the review
plan at first use, so every reviewer meets the same gold; a gold file changed since is refused.

A reviewer is *flagged* when the upper bound of the 95 % Wilson interval of their item-level gold accuracy is below
the threshold: flagged on evidence, never on one unlucky item. A flagged reviewer's labels are held out of the
verdicts (``reviewed_labels``) and their items go back into the other reviewers' queues (``review.plan.queue``).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from lookbench.errors import shown
from lookbench.files import json_lines, read_regular

from lookbench.metric.fine_recall.bootstrap import wilson

from lookbench.dataset_builder.decisions import LABEL, Event, ReviewError, current, plan_data
from lookbench.dataset_builder.taxonomy import Taxonomy

GOLD = "gold"  # the plan's key for the gold settings
CATEGORY = "category"
DEFAULT_RATE = 0.10
DEFAULT_THRESHOLD = 0.70  # item-level gold accuracy a reviewer's interval must reach: 0 of 1 is no flag (upper 79 %), 0 of 2 is
MAX_GOLD_BYTES = 64 << 20


def rate(hits: int, n: int) -> dict:
    """A proportion with its 95 % Wilson interval, in percent (``None`` on no observation)."""
    if n == 0:
        return {"hits": 0, "n": 0, "percent": None, "ci95": None}
    lo, hi = wilson(hits / n, n)
    return {"hits": hits, "n": n, "percent": 100 * hits / n, "ci95": [100 * lo, 100 * hi]}


@dataclass(frozen=True)
class GoldSettings:
    file: str  # the gold JSONL, an absolute path
    sha256: str  # its bytes when the plan fixed it
    rate: float  # the share of a reviewer's queue that is gold
    threshold: float  # flagged below this item-level accuracy (upper bound of the 95 % interval)
    prefix: str  # "<Config>/<split>": a gold item's key is "<prefix>/<item_id>", like any item's

    @classmethod
    def of(cls, file, rate: float | None, threshold: float | None, prefix: str) -> "GoldSettings":
        rate = DEFAULT_RATE if rate is None else rate
        threshold = DEFAULT_THRESHOLD if threshold is None else threshold
        if not 0 < rate <= 0.5:
            raise ReviewError(f"--gold-rate {rate}: a share of the queue above 0 and at most 0.5")
        if not 0 <= threshold <= 1:
            raise ReviewError(f"--gold-threshold {threshold}: an accuracy between 0 and 1")
        path = Path(file).resolve()
        return cls(str(path), hashlib.sha256(_read(path)).hexdigest(), float(rate), float(threshold), prefix)

    @classmethod
    def from_plan(cls, raw) -> "GoldSettings | None":
        data = (plan_data(raw) or {}).get(GOLD)
        if data is None:
            return None
        try:
            return cls(str(data["file"]), str(data["sha256"]), float(data["rate"]), float(data["threshold"]),
                       str(data["prefix"]))
        except (KeyError, TypeError, ValueError) as err:
            raise ReviewError(f"{Path(raw) / 'reviews' / 'plan.json'}: its gold settings are damaged ({err})") from None

    @property
    def block(self) -> int:
        """One gold item in each block of this many queue places."""
        return max(2, round(1 / self.rate))


@dataclass(frozen=True)
class Truth:
    """A gold item's known labels: its category and every attribute of it (a value or "not applicable")."""

    category: str
    attributes: dict


def _read(path: Path) -> bytes:
    try:
        return read_regular(path, MAX_GOLD_BYTES)
    except (OSError, ValueError) as err:
        raise ReviewError(f"gold file {path}: {err}") from None


def read_gold(settings: GoldSettings, taxonomy: Taxonomy) -> list[tuple[str, int, dict, Truth]]:
    """(key, line, row, truth) of every gold item; refused in one line naming the file and line of a row that is no
    gold item of this taxonomy, or when the file changed since the plan fixed it."""
    data = _read(Path(settings.file))
    if hashlib.sha256(data).hexdigest() != settings.sha256:
        raise ReviewError(f"gold file {settings.file} changed since the review plan fixed it; restore it (its sha256 "
                          f"was {settings.sha256[:12]}…)")
    found, seen = [], set()
    for line, row in json_lines(data.splitlines(keepends=True)):
        where = f"gold file {settings.file} line {line}"
        if not isinstance(row, dict):
            raise ReviewError(f"{where}: {row}")
        item_id = row.get("item_id")
        if not isinstance(item_id, str) or not item_id or "/" in item_id or item_id in seen:
            raise ReviewError(f"{where}: item_id {shown(item_id)} is not a new name without '/'")
        seen.add(item_id)
        found.append((f"{settings.prefix}/{item_id}", line, row, _truth(row, taxonomy, where)))
    if not found:
        raise ReviewError(f"gold file {settings.file} has no rows")
    return found


def _truth(row: dict, taxonomy: Taxonomy, where: str) -> Truth:
    category, given = row.get("category"), row.get("attributes")
    if not isinstance(category, str) or category not in taxonomy.categories:
        raise ReviewError(f"{where}: category {shown(category)} is not one of {taxonomy.label}")
    if not isinstance(row.get("image"), str) or not isinstance(row.get("proposals"), dict):
        raise ReviewError(f"{where}: a gold item needs an image and proposals, as an annotated row has")
    if not isinstance(given, list) or not all(isinstance(a, dict) and isinstance(a.get("name"), str) for a in given):
        raise ReviewError(f"{where}: attributes are not a list of {{\"name\", \"value\"}}")
    values = {a["name"]: a.get("value") for a in given}
    entry = taxonomy.categories[category]
    for name, value in values.items():
        if not isinstance(value, str) or not taxonomy.allows(category, name, value):
            raise ReviewError(f"{where}: {shown(name)} {shown(value)} is not an attribute value of {category!r}")
    if values.get(entry.main_attribute) in (None, taxonomy.not_applicable):
        raise ReviewError(f"{where}: the main attribute {entry.main_attribute!r} needs a value")
    return Truth(category, {name: values.get(name, taxonomy.not_applicable) for name in entry.attributes})


def scores(truths: dict[str, Truth], events: dict[str, list[Event]], threshold: float) -> dict[str, dict]:
    """Per reviewer who labelled gold: item-level accuracy (category and every attribute right), accuracy per field,
    each with its Wilson interval, and whether they are flagged (the interval's upper bound below ``threshold``)."""
    out = {}
    for reviewer, own in sorted(events.items()):
        labelled = [(truths[k], e) for k, e in current(own).items() if e.action == LABEL and k in truths]
        if not labelled:
            continue
        whole, fields = 0, {}
        for truth, event in labelled:
            same = event.category == truth.category
            hits = {CATEGORY: same, **{n: same and event.attributes.get(n) == v for n, v in truth.attributes.items()}}
            whole += all(hits.values())
            for name, hit in hits.items():
                tally = fields.setdefault(name, [0, 0])
                tally[0], tally[1] = tally[0] + hit, tally[1] + 1
        items = rate(whole, len(labelled))
        out[reviewer] = {"items": items, "fields": {n: rate(*fields[n]) for n in sorted(fields, key=lambda n: (n != CATEGORY, n))},
                         "flagged": items["ci95"][1] < 100 * threshold}
    return out


def flagged(truths: dict[str, Truth], events: dict[str, list[Event]], threshold: float) -> frozenset[str]:
    return frozenset(r for r, s in scores(truths, events, threshold).items() if s["flagged"])


def held_out(raw, events: dict[str, list[Event]], taxonomy: Taxonomy | None) -> frozenset[str]:
    """The reviewers whose labels a build holds out of ``raw``: those its gold flags (none without gold)."""
    settings = GoldSettings.from_plan(raw)
    if settings is None or taxonomy is None:
        return frozenset()
    truths = {key: truth for key, _, _, truth in read_gold(settings, taxonomy)}
    return flagged(truths, events, settings.threshold)

