"""The entries the leaderboard ranks: the published figures shipped as data (``published/<name>.json``) and the
results a store or a folder of submissions holds, each with the group it was measured on and what was verified.

Results files come from outside: every value the table shows is type-checked, and one unreadable file is skipped
with its reason, never a stop. A readable result whose scores fail a check is kept, marked failed (``trust.FAILED``
and the reason), so the table can show it apart from the verified rows instead of hiding it. What each mark proves:
``lookbench.results.trust``.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from lookbench.hub import UPSTREAM
from lookbench.leaderboard.render import terminal_safe
from lookbench.metric.fine_recall.judging import combine_subsets
from lookbench.results.halves import HELD, SHOWN
from lookbench.results.provenance import UNSEALED
from lookbench.results.trust import (CONSISTENT, FAILED, NOT_CHECKED, PLACED, PUBLISHED, REPRODUCED, SCORED_SEALED,
                                     verdict_status)
from lookbench.schema import LOOKBENCH_DATA, RELEASE_PATTERN
from lookbench.settings import DEFAULT_REFERENCE, METRICS

# Names of the published benchmark.json for the metrics of ``METRICS``.
_PUBLISHED_METRICS = {"Fine Recall": "fine_recall", "Coarse Recall": "coarse_recall", "nDCG": "ndcg"}
MAX_VERDICT_BYTES = 4096  # a stored verdict, whatever the submission held
_REASON_CHARS = 300  # of a verdict's text


@dataclass(frozen=True)
class Verdict:
    """One submission's verdict: ``text`` as the verified column shows it, ``key`` the sha256 of the files it was
    given for (``lookbench.results.folder.snapshot``) and, when verified, ``placement``: the fields that place its
    row, as verify recomputed them from the data."""

    text: str
    key: str = ""
    placement: dict | None = None
    scores: dict | None = None  # SCORED_SEALED: per subset and overall, the scores the leaderboard computed
    halves: dict | None = None  # SCORED_SEALED: the headline on the shown and the held half (``results.halves``)
    submitter: str | None = None  # SCORED_SEALED: the namespace its folder is in, whose cap it counts against

    @property
    def status(self) -> str:
        """Its text as one word (``trust.verdict_status``)."""
        return verdict_status(self.text)

    @property
    def scored_while_sealed(self) -> bool:
        """Scored against the withheld labels, not yet re-checked against the labels published at unsealing."""
        return self.text == SCORED_SEALED and (self.placement or {}).get("labels") != UNSEALED

    @property
    def headline(self) -> dict | None:
        """What a SCORED_SEALED row shows and is ranked by: the shown half's headline while sealed, the held half's once
        unsealed (Kaggle's public and private leaderboard)."""
        if self.text != SCORED_SEALED:
            return None
        return self.halves[SHOWN if self.scored_while_sealed else HELD]

    def to_json(self) -> dict:
        """At most ``MAX_VERDICT_BYTES`` as JSON: the text cut, a placement that would not fit dropped (and the
        verdict with it: a row is never placed by fields that were not kept)."""
        from lookbench.errors import clip

        text = clip(self.text, _REASON_CHARS)
        out = {"text": text, "key": self.key[:64], "placement": self.placement,
               **{name: value for name in ("scores", "halves", "submitter")
                  if (value := getattr(self, name)) is not None}}
        if len(json.dumps(out)) > MAX_VERDICT_BYTES:
            out = {"text": f"{NOT_CHECKED}: its placement is too large to keep", "key": self.key[:64], "placement": None}
        return out

    @classmethod
    def from_json(cls, raw) -> "Verdict":
        """A kept verdict; a ``ValueError`` for anything that is not one (the store is the board's own memo)."""
        if not isinstance(raw, dict) or not isinstance(raw.get("text"), str) or not isinstance(raw.get("key"), str):
            raise ValueError("not a verdict")
        placement, scores, halves, submitter = (raw.get(k) for k in ("placement", "scores", "halves", "submitter"))
        if placement is not None and not isinstance(placement, dict) or (raw["text"] in PLACED) != bool(placement):
            raise ValueError("a verdict's placement does not match its text")
        sealed = raw["text"] == SCORED_SEALED
        if sealed != isinstance(scores, dict) or sealed != (isinstance(halves, dict) and all(
                isinstance(halves.get(h), dict) for h in (SHOWN, HELD))):
            raise ValueError("a sealed verdict without its scores and halves, or scores without one")
        if submitter is not None and not isinstance(submitter, str):
            raise ValueError("a verdict's submitter is no name")
        return cls(raw["text"], raw["key"], placement, scores, halves, submitter)

def references() -> list[str]:
    """Names of the published leaderboards shipped with the package (e.g. ``release_v2601``)."""
    folder = resources.files("lookbench.leaderboard") / "published"
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


@dataclass(frozen=True)
class Group:
    """What a score was measured on; only rows of one group are comparable."""

    data: str = field(compare=False)  # human label, e.g. "LookBench (srpone/look-bench v20251201)"
    key: str  # identity of the data: its content revision, or the published snapshot it was converted from
    mode: str
    distractors: bool
    cutoff: str | None
    queries: str = "image"  # or "text-<form>": text queries are a section of their own (docs/text-to-image.md)

    @property
    def label(self) -> str:
        cut = f", queries after {self.cutoff}" if self.cutoff else ""
        noise = "with" if self.distractors else "without"
        kind = "" if self.queries == "image" else f"text queries ({self.queries.removeprefix('text-')} form), "
        return f"{self.data} — {kind}{self.mode} mode, {noise} distractors{cut}"


@dataclass
class Entry:
    """One model's scores in one group: subset -> metric -> "@K" -> percent (+ num_queries per subset)."""

    model: str
    group: Group
    subsets: dict
    origin: str  # the reference name or the result file
    extra: dict = field(default_factory=dict)
    verified: str = NOT_CHECKED  # a level's name (``lookbench.results.trust``), FAILED or NOT_CHECKED + …
    # A sealed submission's only scores (``Verdict.headline``): overall, metric -> "@K" -> percent, and num_queries.
    headline: dict | None = None
    overall: dict | None = None  # a score claimed only overall (a Hub community row: ``hub_rows``), metric -> "@K"

    def queries(self, names) -> int:
        """The number of queries behind its scores on the subsets ``names`` (a headline's own)."""
        if self.headline is not None:
            return int(self.headline.get("num_queries") or 0)
        return sum(int(self.subsets.get(s, {}).get("num_queries") or 0) for s in names)

    def score(self, metric: str, k: int, subset: str | None = None, over=None) -> float | None:
        """One subset's score, or the query-weighted overall over the subsets ``over`` (default: its own) with the
        metric's combine_subsets; ``None`` when one of them is missing (``overall``, when claimed, is the overall).
        A headline has its overall only."""
        if self.headline is not None:
            return None if subset is not None else self.headline.get(metric, {}).get(f"@{k}")
        if subset is not None:
            return self.subsets.get(subset, {}).get(metric, {}).get(f"@{k}")
        if self.overall is not None:
            return self.overall.get(metric, {}).get(f"@{k}")
        flat = {}
        for name in over or self.subsets:
            scores = self.subsets.get(name, {})
            value = scores.get(metric, {}).get(f"@{k}")
            if value is None or not scores.get("num_queries"):
                return None
            flat[name] = {f"{metric}@{k}": value, "num_queries": int(scores["num_queries"])}
        return combine_subsets(flat)[f"{metric}@{k}"] if flat else None

    def outcomes(self, names) -> dict | None:
        """The per-query outcomes of the subsets ``names`` (``lookbench.results.outcomes``), or ``None`` when any of them
        has none (a published row, or a result written before they were kept)."""
        from lookbench.results.outcomes import Outcomes

        if self.headline is not None or any(not isinstance(self.subsets.get(s, {}).get("per_query"), dict) for s in names):
            return None
        try:
            return {s: Outcomes.from_json(self.subsets[s]["per_query"], f"{self.origin}: {s}") for s in names}
        except ValueError:
            return None

    def releases(self) -> list[str]:
        """The releases this result scored separately (its subsets' ``per_release``; a headline none), oldest first."""
        if self.headline is not None:
            return []
        return sorted({r for scores in self.subsets.values() for r in scores.get("per_release") or {}})

    def on_release(self, release: str) -> "Entry":
        """The same model on one release's queries only: each subset's ``per_release`` block of that release."""
        blocks = {name: scores["per_release"][release] for name, scores in self.subsets.items()
                  if release in (scores.get("per_release") or {})}
        key = self.extra.get("key")
        extra = {**self.extra, "key": f"{key}@{release}" if key else None}  # other outcomes, another memo key
        return Entry(self.model, self.group, blocks, self.origin, extra, self.verified)


def load_reference(name: str = DEFAULT_REFERENCE) -> tuple[list[Entry], str]:
    """The published leaderboard ``name`` as entries, with its source line."""
    path = resources.files("lookbench.leaderboard") / "published" / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"Unknown published leaderboard {name!r}; shipped: {', '.join(references())}")
    raw = json.loads(path.read_text())
    group = Group(raw["dataset"]["label"], raw["dataset"]["key"], raw["dataset"]["mode"], raw["dataset"]["distractors"], None)
    models: dict[str, dict] = {}
    for published, per_model in raw["results"].items():
        subset = raw["subset_names"][published]
        for model, metrics in per_model.items():
            scores = {_PUBLISHED_METRICS[m]: dict(v) for m, v in metrics.items()}
            scores["num_queries"] = raw["query_counts"][subset]
            models.setdefault(model, {})[subset] = scores
    return [Entry(model, group, subsets, f"published {name}", {"zero_shot": zero_shot_shown(model, [LOOKBENCH_DATA])},
                  verified=PUBLISHED) for model, subsets in models.items()], raw["source"]


def zero_shot_shown(model: str | None, sources: list[str] | None, claim=None, submitted: bool = False) -> str:
    """A row's zero-shot column: ``ZeroShot.judge`` of the registry's declaration for a registered model (by name or
    published name) on data whose sources are known; else the result's own ``claim`` (a ``ZeroShot``), marked
    "(claimed)" when it is a submission's, which nothing here checked."""
    from lookbench.encoders.registry import BY_PUBLISHED_NAME, REGISTRY
    from lookbench.results.provenance import ZeroShot

    meta = REGISTRY.get(model) or BY_PUBLISHED_NAME.get(model) if isinstance(model, str) else None
    derived = ZeroShot.judge(meta.training_datasets, sources) if meta is not None else None
    if derived is not None and derived.value is not None or claim is None:
        return (derived or ZeroShot(None, "")).word
    return claim.word + (" (claimed)" if submitted and claim.value is not None else "")


def _percent(value, what: str, failed: bool = False) -> float | None:
    """``value`` as a percentage; one that is not is a ValueError, or ``None`` (shown as no score) in a result that
    already ``failed`` a check, whose claim its reason names."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 100:
        if failed:
            return None
        raise ValueError(f"{what} is {value!r}, not a percentage (a finite number in [0, 100])")
    return float(value)


def _checked_subset(name: str, scores, failed: bool = False) -> dict:
    """A subset's scores as the leaderboard reads them: every ranked metric "@K" a percentage (``_percent``),
    num_queries a count."""
    if not isinstance(scores, dict):
        raise ValueError(f"{name} is {type(scores).__name__}, not a mapping of scores")
    out = dict(scores)
    for metric in METRICS.values():
        if metric not in scores:
            continue
        if not isinstance(scores[metric], dict):
            raise ValueError(f"{name} {metric} is {type(scores[metric]).__name__}, not a mapping of @K to a score")
        out[metric] = {str(at): _percent(v, f"{name} {metric} {at}", failed) for at, v in scores[metric].items()}
    count = scores.get("num_queries")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise ValueError(f"{name} num_queries is {count!r}, not a count of queries")
    if "per_release" in scores:  # release name -> the same scores on that release's queries
        if not isinstance(scores["per_release"], dict):
            raise ValueError(f"{name} per_release is {type(scores['per_release']).__name__}, not a mapping of releases")
        for release in scores["per_release"]:
            if not isinstance(release, str) or not RELEASE_PATTERN.match(release):
                raise ValueError(f"{name} per_release names {terminal_safe(release)!r}, not a release v<YYYYMMDD>")
        out["per_release"] = {r: _checked_subset(f"{name} {r}", block, failed) for r, block in scores["per_release"].items()}
    return out


def entry_from_result(result: dict, origin: str, verified: str = NOT_CHECKED, placement: dict | None = None,
                      headline: dict | None = None) -> Entry:
    """An entry from a results JSON written by ``lookbench evaluate`` (leaderboard shape plus provenance); every
    value the table shows is type-checked, so a tampered file is a ``ValueError`` naming the field — except a claimed
    score of a result ``verified`` already marks failed, which is shown as no score. ``placement`` (a verified
    submission's, as verify recomputed it) places the row instead of what the file says; ``headline`` (a sealed
    submission's, ``Verdict.headline``) is the only score it shows."""
    from lookbench.results.provenance import Data, Provenance

    provenance = Provenance.of(result)
    measured = provenance.measured(placement)  # every field type-checked there
    label = f"{measured.data} {'+'.join(measured.releases) or '(no release)'}"
    if not measured.key.startswith(f"{UPSTREAM}@"):
        label += f", revision {measured.key[:22]}"
    group = Group(label, measured.key, measured.mode, measured.distractors, measured.cutoff, measured.queries)
    failed = verified.startswith(FAILED)
    subsets = {s: _checked_subset(s, r, failed) for s, r in result.items()
               if s not in ("overall", "provenance") and isinstance(r, dict)}
    model = provenance.shown_model()
    label_model = terminal_safe(model.name + (f"@{model.revision[:12]}" if model.revision and "@" not in model.name
                                              else ""))[:80]
    # What the board's filters read (lookbench.space.board.facts): the model as evaluated, the Hub repo submitted.
    data = Data(placement) if placement is not None else provenance.dataset
    extra = {"training_cutoff": model.training_cutoff, "published_name": model.published_name,
             "evaluated": model.evaluated, "submitted": model.hub_id,
             "zero_shot": zero_shot_shown(model.evaluated, data.sources, provenance.zero_shot,
                                          provenance.is_submission)}
    return Entry(label_model, group, subsets, origin, extra, verified,
                 None if headline is None else _checked_subset("headline", headline))


def load_store(root, verify=None, snapshots: dict | None = None, keys: dict | None = None) -> tuple[list[Entry], list[str]]:
    """Every result JSON under ``root`` — a results store, or a folder of submissions as ``lookbench submit --dry-run``
    writes them — with what was verified, and one line per file not shown and why.

    A folder holding ``results.json`` whose provenance names a submitted model is a submission: exactly one result,
    judged by ``verify`` (``(folder, key) -> Verdict``; default ``judge_submission``) for the bytes its key names, and
    placed by the verdict's placement. Any other JSON inside or above a submission is never a row. Other results (a
    store's) are checked against their own per-query outcomes and never say ``CONSISTENT``. A consistent submission
    with a reproduction record bound to its key that agrees, recomputed from both rankings, is ``REPRODUCED``
    (``reproduction.reproduced``; records live in ``reproductions/`` beside ``submissions/``, never rows) and signed by
    one of ``keys`` (``signing.trusted_keys``: the leaderboard card's; none given, no record counts); a record that
    cannot count, and a ``reproductions/`` folder inside a submission's, is a skipped line saying why. Each file is
    read as
    ``lookbench.results.store.read_json`` reads one (inside the folder, regular, size-capped, non-blocking,
    depth-checked), so no single file can stop, hang or corrupt the table. ``snapshots`` (folder -> (key, result)),
    kept by a caller between calls, spares reading and hashing a submission again: its rows still show exactly the
    bytes that key names."""
    from lookbench.files import contained_file
    from lookbench.results.folder import RESULT_NAME, snapshot
    from lookbench.results.provenance import Provenance, is_sealed
    from lookbench.results.store import parse_json, read_json
    from lookbench.submissions.reproduction import reproduced
    from lookbench.submissions.submit import RECORDS, ROOT as SUBMISSIONS

    entries, skipped = [], []
    snapshots = {} if snapshots is None else snapshots
    root = Path(root)
    repo = root.parent if root.name == SUBMISSIONS else root  # the results repo: reproductions/ beside submissions/
    # os.walk does not follow links to folders: a link to / in the store is not a walk of the whole disk.
    # Every results.json first: a folder's other JSON is refused only beside a submission (or a results.json that
    # could not be read), while an ``evaluate --output`` folder's results-<mode>.json are rows of their own.
    found = []
    for top, folders, names in os.walk(root):
        for inside in (f for f in folders if f == RECORDS and Path(top, f) != repo / RECORDS):
            skipped.append(f"{terminal_safe(str(Path(top, inside).relative_to(root)))[:200]}: not read: a reproduction "
                           f"record lies in the results repo's {RECORDS}/, signed by a maintainer, never in a submission")
        folders[:] = [f for f in folders if f != RECORDS]  # records are read with their submission, from repo/RECORDS
        found += [Path(top) / name for name in names if name.endswith(".json")]
    found.sort(key=lambda p: (p.name != RESULT_NAME, p))
    holders = [p.parent for p in found if p.name == RESULT_NAME]
    plain = set()  # folders whose results.json is a stored result, not a submission
    for path in found:
        shown = terminal_safe(str(path.relative_to(root)))[:200]
        if path.name != RESULT_NAME:
            near = next((h for h in holders if h not in plain and (path.is_relative_to(h) or h.is_relative_to(path.parent))),
                        None)
            if near is not None:
                skipped.append(f"{shown}: not shown: a JSON beside or above the submission "
                               f"{terminal_safe(str(near.relative_to(root)))[:120] or '.'} (a submission is one result)")
                continue
        try:
            raw = None if path.parent in snapshots else read_json(contained_file(root, str(path.relative_to(root))), "it")
        except ValueError as err:
            skipped.append(f"{shown}: {err}")
            continue
        try:
            if raw is not None:
                entry_from_result(raw, str(path), FAILED)  # its shape, before a check reads it
            if raw is None or (path.name == RESULT_NAME and Provenance.of(raw).is_submission):
                if path.parent not in snapshots:
                    key, content = snapshot(path.parent)
                    snapshots[path.parent] = key, parse_json(content)  # the bytes the key names, whatever comes later
                key, raw = snapshots[path.parent]
                judged = (verify or _judged)(path.parent, key)
                unbound = _unbound(raw, path.parent.relative_to(root))
                if unbound and judged.status in PLACED:
                    judged = Verdict(FAILED + unbound, key)
                standing = (reproduced(repo, path.parent, key, keys or {}) if judged.text == CONSISTENT
                            and path.parent.is_relative_to(repo) else None)
                skipped += [terminal_safe(line)[:400] for line in standing.ignored] if standing else []
                trust = REPRODUCED if standing and standing.reproduced else judged.text
                # a sealed row shows only the headline the board computed (a half's), never the file's
                entry = (entry_from_result(raw, str(path), trust, judged.placement, judged.headline)
                         if judged.status in PLACED else _unplaced(raw, path, root, judged.text))
                entry.extra["key"] = key  # what its outcomes are, for the ranking's memo
                entries.append(entry)
            else:
                if is_sealed(raw):  # no score to show: the leaderboard scores it once it is submitted
                    skipped.append(f"{shown}: a run on a sealed release (rankings, no score): `lookbench submit` sends "
                                   "it to be scored")
                else:
                    entries.append(entry_from_result(raw, str(path), check(raw, path)))
                if path.name == RESULT_NAME:  # a stored result (a sealed run's too), not a submission
                    plain.add(path.parent)
        except ValueError as err:  # a score that is no percentage in a result no check could fail
            skipped.append(f"{shown}: not a LookBench result ({terminal_safe(str(err))[:200]})")
    return entries, skipped


def _unbound(raw: dict, folder: Path) -> str | None:
    """Why a submission's row may not carry the model it names: in a results repo (``submissions/<owner>/<name>/
    <commit>/…``, ``lookbench submit``) the Hub id and commit in ``provenance.submission`` must be the folder's, which
    the pull request added, so no row can carry another submitter's model name; ``None`` when they agree or the
    folder is not laid out so."""
    from lookbench.results.provenance import Provenance
    from lookbench.submissions.submit import ROOT

    parts = folder.parts[1:] if folder.parts[:1] == (ROOT,) else folder.parts
    submitted = Provenance.of(raw).submission
    if len(parts) < 5 or submitted is None:
        return None
    claimed = f"{submitted.model}@{submitted.revision}"
    if claimed != f"{parts[0]}/{parts[1]}@{parts[2]}":
        return (f"provenance.submission names {terminal_safe(claimed)[:80]}; its folder is "
                f"{terminal_safe('/'.join(parts[:3]))[:80]}")
    return None


def _unplaced(raw: dict, path: Path, root: Path, verified: str) -> Entry:
    """A submission that is not verified: shown under the name its folder gives (never a model name it claims), in
    the group its file claims, apart from the verified rows. A submission folder is ``<model>/<revision>/<data>/
    <settings>`` (``lookbench submit``), so its row reads ``<model>@<revision[:12]>``; any other folder by its path."""
    from lookbench.submissions.submit import ROOT

    entry = entry_from_result(raw, str(path), verified)
    parts = path.parent.relative_to(root).parts
    parts = parts[1:] if parts[:1] == (ROOT,) else parts
    label = f"{'/'.join(parts[:-3])}@{parts[-3][:12]}" if len(parts) >= 4 else "/".join(parts)
    entry.model = terminal_safe(label)[:80] or entry.model
    entry.extra["published_name"] = None  # never stood beside a published row on its own word
    return entry


def check(result: dict, path: Path) -> str:
    """What ``verified`` says of a stored result that is no submission: checked against its own per-query outcomes
    (``outcomes.verdict``, the check ``compare`` uses): FAILED with "claimed X, outcomes give Y" when they disagree,
    else NOT_CHECKED (its rankings were not re-judged)."""
    from lookbench.results.outcomes import keeps_outcomes, verdict

    damage = verdict(result, str(path)) if keeps_outcomes(result) else None
    return FAILED + damage.removeprefix(f"{path}: ") if damage else NOT_CHECKED


def _judged(folder: Path, key: str) -> Verdict:
    """``judge_submission`` now, for the files ``key`` names (a change in between is not shown as judged)."""
    verdict = judge_submission(folder)
    if verdict.key != key:
        return Verdict(f"{NOT_CHECKED}: its files changed while it was judged", key)
    return verdict


SEALED_HERE = "a sealed release, and its labels are not readable here (no pinned labels repo or no read token)"
NO_HALVES = "a sealed release whose labels hold no key for the shown and held halves (sealed before them)"


def judge_submission(folder: Path, allowed=None, labels=None) -> Verdict:
    """``verify_submission``'s verdict on the submission in ``folder``: CONSISTENT (or SCORED_SEALED) with its placement, or FAILED with the
    first reason (and how many more), or with the one line it gives for files it cannot read; data that cannot be
    loaded here, or that ``allowed`` (Hub dataset ids) keeps out, is NOT_CHECKED with the reason. Every text is cut to
    a few hundred characters and names files relative to the submission."""
    from lookbench.errors import EvaluationError
    from lookbench.results.folder import snapshot
    from lookbench.results.provenance import UnknownData
    from lookbench.submissions.verify import SEALED, verify_submission

    def key_now() -> str:
        try:
            return snapshot(folder)[0]
        except (OSError, ValueError):
            return ""

    try:
        verification = verify_submission(folder, allowed=allowed, labels=labels)
    except UnknownData as err:
        return Verdict(f"{NOT_CHECKED}: {_cut(err)}", key_now())
    except EvaluationError as err:  # the data the result names could not be loaded
        return Verdict(f"{NOT_CHECKED}: its data cannot be loaded here ({_cut(err)})", key_now())
    except ValueError as err:  # the submission's own files
        return Verdict(FAILED + _cut(err), key_now())
    if verification.verified and verification.scored is not None and verification.halves is None:
        return Verdict(f"{NOT_CHECKED}: {NO_HALVES}", verification.key)
    if verification.verified and verification.scored is not None:
        return Verdict(SCORED_SEALED, verification.key, verification.placement, verification.scored, verification.halves)
    if verification.verified:
        return Verdict(CONSISTENT, verification.key, verification.placement)
    if verification.sealed and verification.reasons == [SEALED]:
        return Verdict(f"{NOT_CHECKED}: {SEALED_HERE}", verification.key)
    more = len(verification.reasons) - 1
    return Verdict(FAILED + _cut(verification.reasons[0])
                   + (f" (and {more} more: lookbench verify names them)" if more else ""), verification.key)


def _cut(err) -> str:
    from lookbench.errors import clip

    return clip(" ".join(str(err).split()), 200)
