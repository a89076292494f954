"""``lookbench reproduce-submission``: a submission's model re-run at its pinned commit on the same data with the
engine, and its rankings compared with the submitted ones (docs/submitting.md: what ``trust.REPRODUCED`` proves).

The comparison is one function (``compare``) that both the command and the leaderboard call: per-query top-1
agreement and top-10 overlap from the two ranking files as ``lookbench.results.rankings`` parses them, and every
claimed score against the re-run's 95 % interval, drawn again (``lookbench.results.stats``) from the re-run's
per-query outcomes once they give the re-run's own scores (``outcomes.check_result``). A reproduction record lives in
the results repo under ``reproductions/``, mirroring the submission's folder::

    reproductions/<owner>/<name>/<commit>/<data>/<settings>/<device>-<precision>/
        reproduction.json                   device, precision, library versions, the submission's key, the figures
        README.md                           the same in words (the pull request's description)
        rerun/results.json                  the re-run, as ``evaluate --output`` writes it, its rankings beside it
        signature.json                      ``--sign``: a maintainer's signature (``lookbench.submissions.signing``)

``rerun/`` is laid out as a submission, so ``lookbench verify <record>/rerun`` re-judges the re-run from its rankings.
The leaderboard counts a record only when a key its card lists signed it and it contradicts nothing the submission
says (``contradictions``), and never takes its typed figures: it recomputes them from both rankings for the
submission's current key.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from lookbench.errors import shorten
from lookbench.files import contained_file, digest, read_regular
from lookbench.results.folder import RESULT_NAME, ResultFolder, Submitted, files_digest, read_submitted
from lookbench.results.rankings import MAX_RANKING_BYTES, Ranking
from lookbench.results.provenance import Provenance, named_data, result_parts
from lookbench.results.store import MAX_RESULT_BYTES, parse_json
from lookbench.results.trust import REPRODUCED
from lookbench.submissions.submit import RECORDS

RECORD = "reproduction.json"
RERUN = "rerun"  # the re-run's result and rankings, a submission-shaped folder inside the record
RECORD_FORMAT = 1
TOP1 = 98.0  # percent of queries whose first item must agree (devices and precisions move a few near-ties)
OVERLAP_K = 10
TOLERANCE = 1e-6  # percent points around an interval's ends
MAX_RECORD_BYTES = 1024 * 1024
MAX_REASONS = 12
MAX_RECORD_FILES = 16  # a record, its README, the re-run and its rankings
MAX_CHECKED = 10_000  # records judged and kept by the board (one per submission a copy can hold)
RECORDED_DATA = ("name", "key", "revision", "commit")  # the data as reproduction.json names it
RERUN_DATA = ("data", "name", "key", "revision", "commit", "releases", "sealed")  # what the re-run must share
LIBRARIES = ("lookbench", "torch", "transformers", "datasets", "faiss-cpu", "numpy", "huggingface_hub")


@dataclass
class Reproduction:
    """The comparison of a submission with a re-run: ``agreement`` per subset and ``overall`` (queries, top-1 agreement
    and top-10 overlap in percent), ``claims`` (name, claimed, lo, hi, inside) and the ``reasons`` against;
    ``reproduced`` only when none stands."""

    agreement: dict = field(default_factory=dict)
    claims: list = field(default_factory=list)
    reasons: list = field(default_factory=list)

    @property
    def reproduced(self) -> bool:
        return not self.reasons

    def figures(self) -> str:
        """The agreement in one line: what every verdict names."""
        total = self.agreement.get("overall")
        if not total:
            return "no agreement measured"
        outside = sum(not c["inside"] for c in self.claims)
        return (f"top-1 agreement {total['top1']:.2f}% of {total['queries']} queries (needs {TOP1:g}%), top-{OVERLAP_K} "
                f"overlap {total['top10']:.2f}%, {len(self.claims) - outside} of {len(self.claims)} claimed scores inside "
                "the re-run's 95% interval")

    def to_json(self) -> dict:
        return {"reproduced": self.reproduced, "agreement": self.agreement, "claims": self.claims,
                "reasons": self.reasons[:MAX_REASONS]}


def _tops(ranking: Ranking, queries: int, k: int) -> np.ndarray:
    """queries x k gallery rows (-1 where a query ranks fewer), by the 1-based query and rank the file gives; rows
    outside 1..queries or 1..k are not read."""
    out = np.full((queries, k), -1, dtype=np.int64)
    keep = (ranking.query >= 1) & (ranking.query <= queries) & (ranking.rank >= 1) & (ranking.rank <= k)
    out[ranking.query[keep] - 1, ranking.rank[keep] - 1] = ranking.gallery_index[keep]
    return out


def agreement(submitted: Ranking, rerun: Ranking, queries: int) -> dict:
    """Per-query agreement of two rankings of the same ``queries``: the share whose first item is the same gallery row
    (top-1) and the mean share of the submitted top-10 the re-run also ranks in its top-10, in percent."""
    a, b = _tops(submitted, queries, OVERLAP_K), _tops(rerun, queries, OVERLAP_K)
    top1 = (a[:, 0] >= 0) & (a[:, 0] == b[:, 0])
    listed = a >= 0
    shared = ((a[:, :, None] == b[:, None, :]) & listed[:, :, None]).any(axis=2)
    overlap = shared.sum(axis=1) / np.maximum(listed.sum(axis=1), 1)
    return {"queries": queries, "top1_agreeing": int(top1.sum()), "top1": 100.0 * top1.mean() if queries else 0.0,
            "top10": 100.0 * overlap.mean() if queries else 0.0}


def _queries(result: dict, subset: str) -> int:
    count = result.get(subset, {}).get("num_queries") if isinstance(result.get(subset), dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


def compare(claims: dict, submitted: dict[str, Ranking], rerun_result: dict, rerun: dict[str, Ranking]) -> Reproduction:
    """The one comparison of a submission (its result ``claims`` and rankings) with a re-run (its result and
    rankings): the re-run's intervals are drawn again from its outcomes, which must give its own scores."""
    from lookbench.results.outcomes import check_result
    from lookbench.results.stats import intervals

    out = Reproduction()
    if sorted(submitted) != sorted(rerun):
        out.reasons.append(f"the re-run ranks {', '.join(sorted(rerun)) or 'no subset'}; the submission "
                           f"{', '.join(sorted(submitted))}")
        return out
    counts = {}
    for subset in sorted(submitted):
        n = _queries(claims, subset)
        if n != _queries(rerun_result, subset):
            out.reasons.append(f"{subset}: the re-run has {_queries(rerun_result, subset)} queries, the submission {n}")
            return out
        counts[subset] = agreement(submitted[subset], rerun[subset], n)
    total = sum(c["queries"] for c in counts.values())
    agreeing = sum(c["top1_agreeing"] for c in counts.values())
    out.agreement = {**counts, "overall": {
        "queries": total, "top1_agreeing": agreeing, "top1": 100.0 * agreeing / total if total else 0.0,
        "top10": sum(c["top10"] * c["queries"] for c in counts.values()) / total if total else 0.0}}
    try:
        bounds = intervals(check_result(rerun_result, "the re-run"))
    except ValueError as err:
        out.reasons.append(shorten(str(err), 300).strip("'\""))
        return out
    for block, drawn in bounds.items():
        given = claims.get(block) if isinstance(claims.get(block), dict) else {}
        for name, (lo, hi) in sorted(drawn.items()):
            metric, _, at = name.partition("@")
            value = given.get(metric, {}).get(f"@{at}") if isinstance(given.get(metric), dict) else None
            if value is None:
                continue
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            inside = number and lo - TOLERANCE <= value <= hi + TOLERANCE
            out.claims.append({"name": f"{block} {name}", "claimed": value if number else None, "lo": round(lo, 4),
                               "hi": round(hi, 4), "inside": bool(inside)})
    overall = out.agreement["overall"]
    if overall["top1"] < TOP1:
        out.reasons.append(f"top-1 agreement {overall['top1']:.2f}% ({overall['top1_agreeing']} of {overall['queries']} "
                           f"queries) is below {TOP1:g}%")
    for claim in (c for c in out.claims if not c["inside"]):
        out.reasons.append(f"{claim['name']} claimed {claim['claimed']}, outside the re-run's 95% interval "
                           f"[{claim['lo']}, {claim['hi']}]")
    if not out.claims:
        out.reasons.append("no claimed score has a re-run interval to be compared with")
    return out


# ------------------------------------------------------------------------------------------ the submission's side

def pinned_model(provenance: Provenance) -> tuple[str, str, str]:
    """(what to load, Hub id, commit): the submission's model at its pinned commit — the registered name when the
    registry pins that very repo and commit (its preprocessing is the harness's), else ``owner/name@commit``."""
    from lookbench.encoders.registry import REGISTRY
    from lookbench.hub import check_commit, check_hub_id
    from lookbench.submissions.submit import hub_model

    submitted = provenance.submission
    if submitted is not None:
        what = "provenance.submission"
        hub_id = check_hub_id(submitted.model, what)
        commit = check_commit(hub_id, submitted.revision, what)
    else:
        hub_id, commit = hub_model(provenance.model, None)
    name = provenance.model.name
    meta = REGISTRY.get(name) if isinstance(name, str) else None
    if meta is not None and meta.hub_id == hub_id and meta.hub_revision == commit:
        return name, hub_id, commit
    return f"{hub_id}@{commit}", hub_id, commit


def versions() -> dict:
    """The installed versions of the libraries a re-run's numbers depend on."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def rerun(submission: Submitted, work: Path, device: str | None = None, precision: str | None = None,
          trust_remote_code: bool = False, quiet: bool = True):
    """The engine's evaluation of the submission's model at its commit with the submission's own settings, written
    into ``work`` (``results.json`` + rankings); returns (result dict, what was loaded)."""
    from lookbench.engine import evaluate
    from lookbench.engine.data import as_recorded
    from lookbench.errors import EvaluationError

    provenance = submission.provenance
    settings = provenance.settings
    model, hub_id, commit = pinned_model(provenance)
    text = settings.queries.startswith("text-")
    result = evaluate(model, data=as_recorded(named_data(provenance.dataset), provenance.dataset),
                      subsets=list(settings.subsets) if settings.chosen_subsets else None, cutoff=settings.cutoff,
                      distractors=settings.distractors, mode=settings.mode, precision=precision or settings.precision,
                      device=device, index=settings.index, output_dir=work, save_predictions=True, quiet=quiet,
                      use_cache=False,  # a re-run runs the model: no embedding another run left here is read
                      trust_remote_code=trust_remote_code, queries="text" if text else "image",
                      **({"text_form": settings.queries.removeprefix("text-")} if text else {}))
    loaded = result.meta.model.revision
    if loaded != commit:
        raise EvaluationError(f"the re-run loaded {hub_id} at {shorten(loaded, 60)}, not the pinned commit {commit}")
    return json.loads((work / RESULT_NAME).read_text()), model


def rankings_of(folder: Path, result: dict, where: str) -> dict[str, Ranking]:
    """A result's saved rankings beside its ``results.json`` in ``folder``, parsed as verify parses a submission's."""
    _, blocks, _ = result_parts(result, where)
    return {subset: ranking for subset, _, _, ranking in
            ResultFolder(folder).rankings(blocks, blocks, shown=lambda relative: f"{where}/{relative}")}


# ------------------------------------------------------------------------------------------ the record

def record_folder(submission: Submitted, device: str, precision: str) -> str:
    """The record's folder in the results repo: the submission's own folder under ``reproductions/``, then
    ``<device>-<precision>``."""
    from lookbench.hub import printable_name
    from lookbench.submissions.submit import folder_of

    provenance = submission.provenance
    _, hub_id, commit = pinned_model(provenance)
    run = printable_name(re.sub(r"[^A-Za-z0-9._-]+", "-", f"{device}-{precision}").strip("-"), "the device")
    return f"{folder_of(provenance, hub_id, commit, str(submission.folder), root=RECORDS)}/{run}"


def record(submission: Submitted, rerun_result: dict, loaded: str, found: Reproduction) -> dict:
    """The reproduction record: what ran where, the submission it is bound to (its key), and the figures."""
    provenance = Provenance(rerun_result["provenance"])
    _, hub_id, commit = pinned_model(submission.provenance)
    return {"record_format": RECORD_FORMAT, "submission_key": submission.key,
            "model": {"id": hub_id, "commit": commit, "loaded_as": loaded,
                      "weights_sha256": provenance.model.weights_sha256},
            "device": provenance.device, "precision": provenance.precision, "versions": versions(),
            "data": {f: getattr(provenance.dataset, f) for f in RECORDED_DATA},
            "ran_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), **found.to_json()}


def files_of(folder: str, made: dict, work: Path) -> dict[str, bytes]:
    """The record's files at their paths in the results repo: the record, its README and the re-run."""
    files = {f"{folder}/{RECORD}": json.dumps(made, indent=2).encode(), f"{folder}/README.md": readme(made).encode()}
    files.update({f"{folder}/{RERUN}/{relative}": (work / relative).read_bytes() for relative in rerun_files(work)})
    return files


def rerun_files(work: Path) -> list[str]:
    """The re-run's files in ``work`` (its ``results.json`` and rankings), relative to it, sorted."""
    rerun = ResultFolder(work)
    found = (p.relative_to(work).as_posix() for p in work.rglob("*") if p.is_file())
    return sorted(relative for relative in found if relative == RESULT_NAME or rerun.is_ranking(relative))


def signed_files(files: dict[str, bytes], folder: str, key, submission_key: str) -> dict[str, bytes]:
    """The record's ``files`` (``files_of``) with the signature of ``key`` (``signing.private_key``) beside them, over
    their ``record_digest`` and the submission's key: what the board trusts when the card lists the key."""
    from lookbench.submissions.signing import SIGNATURE, sign

    hashes = [(Path(name).relative_to(folder).as_posix(), hashlib.sha256(content).hexdigest())
              for name, content in files.items()]
    return {**files, f"{folder}/{SIGNATURE}": sign(key, record_digest(hashes), submission_key)}


def said(reproduced: bool) -> str:
    """A reproduction's verdict in words: the trust level it earns a submission, or not."""
    return REPRODUCED if reproduced else f"not {REPRODUCED}"


def readme(made: dict) -> str:
    model, overall = made["model"], made["agreement"].get("overall") or {}
    verdict = said(made["reproduced"])
    lines = [f"# LookBench reproduction: {model['id']} at {model['commit']}", "",
             f"**{verdict}** on {made['device']} ({made['precision']}): top-1 agreement "
             f"{overall.get('top1', 0):.2f}% of {overall.get('queries', 0)} queries, top-{OVERLAP_K} overlap "
             f"{overall.get('top10', 0):.2f}%; {sum(c['inside'] for c in made['claims'])} of {len(made['claims'])} "
             "claimed scores inside the re-run's 95% interval.", "",
             f"Bound to the submission whose files hash to `{made['submission_key']}` (`lookbench verify`'s key).",
             f"Libraries: {', '.join(f'{k} {v}' for k, v in made['versions'].items() if v)}.", ""]
    lines += [f"- {reason}" for reason in made["reasons"]]
    return "\n".join(lines) + "\n"


def render(found: Reproduction, made: dict) -> str:
    """The comparison as the command prints it: per subset the agreement, every claim outside its interval, then the
    verdict naming the figures."""
    model = made["model"]
    lines = [f"{model['id']} at {model['commit']} re-run as {model['loaded_as']} on {made['device']} ({made['precision']})",
             f"{'subset':<18} {'queries':>8} {'top-1 agree':>12} {'top-10 overlap':>15}"]
    lines += [f"{name:<18} {a['queries']:>8} {a['top1']:>11.2f}% {a['top10']:>14.2f}%" for name, a in found.agreement.items()]
    lines += [f"- {reason}" for reason in found.reasons[:MAX_REASONS]]
    if len(found.reasons) > MAX_REASONS:
        lines.append(f"- and {len(found.reasons) - MAX_REASONS} more")
    lines.append(f"{said(found.reproduced)}: {found.figures()}")
    return "\n".join(lines)


def as_submission(files: dict[str, bytes], folder: str, made: dict):
    """The record as ``lookbench.submissions.submit`` sends one: a pull request adding its files."""
    from lookbench.submissions.submit import MARK, Submission

    sid = files_digest(files)
    verdict = said(made["reproduced"])
    title = (f"reproduction of {made['model']['id']}@{made['model']['commit'][:12]} on {made['device']} "
             f"{made['precision']}: {verdict} [{MARK} {sid[:16]}]")
    return Submission(folder, files, sid, title)


# ------------------------------------------------------------------------------------------ the board's side

def contradictions(made: dict, rerun_result: dict, submission: Submitted) -> list[str]:
    """Why a record can never stand for ``submission``, signed or not, whatever its rankings say: its
    ``reproduction.json`` names another model, commit or data, or its re-run does (``rerun_contradictions``)."""
    reasons = []
    _, hub_id, commit = pinned_model(submission.provenance)
    named = made.get("model") if isinstance(made.get("model"), dict) else {}
    if (named.get("id"), named.get("commit")) != (hub_id, commit):
        reasons.append(f"its {RECORD} names the model {shorten(named.get('id'), 80)} at {shorten(named.get('commit'), 50)}"
                       f", not the submission's {hub_id} at {commit}")
    data = submission.provenance.dataset
    if made.get("data") != {f: getattr(data, f) for f in RECORDED_DATA}:
        reasons.append(f"its {RECORD} names other data than the submission's")
    return reasons + rerun_contradictions(rerun_result, submission)


def rerun_contradictions(rerun_result: dict, submission: Submitted) -> list[str]:
    """Why a re-run is not the submission's model re-run: it ran another model, commit, data or settings (the precision
    aside: a re-run may choose it), or it is no re-run at all (a submitted result, or the submission's own provenance:
    a copy of its files)."""
    _, hub_id, commit = pinned_model(submission.provenance)
    try:
        rerun = Provenance.of(rerun_result)
        ran = pinned_model(rerun)[1:]
        settings = replace(rerun.settings, precision=submission.settings.precision)
    except (KeyError, TypeError, ValueError):
        return ["its re-run's provenance does not say what ran (model, commit, settings)"]
    reasons = []
    if rerun.is_submission or rerun.raw == {k: v for k, v in submission.provenance.raw.items() if k != "submission"}:
        reasons.append("its re-run is the submission's own result (a copy of its files, not a re-run)")
    if ran != (hub_id, commit):
        reasons.append(f"its re-run ran {shorten(ran[0], 80)} at {shorten(ran[1], 50)}, not the submission's model")
    if any(getattr(rerun.dataset, f) != getattr(submission.provenance.dataset, f) for f in RERUN_DATA):
        reasons.append("its re-run ran on other data than the submission's")
    if settings != submission.settings:
        reasons.append("its re-run ran with other settings than the submission's")
    return reasons


def check_record(record: Path, submission: Submitted, keys: dict, signed: str) -> tuple[Reproduction | None, str | None]:
    """A record folder judged again for ``submission`` as it is now: (``None``, ``None``) when the record is not bound
    to the submission's current key (another submission's record) or, signed, says it did not reproduce; (``None``,
    why) when it cannot count — unreadable, not signed by one of ``keys`` (``signing.trusted_keys``) over its digest
    ``signed`` (``record_digest``) and this key, or contradicting the submission (``contradictions``) —; else the
    comparison recomputed from both rankings: the record's typed figures are never read. No reason quotes a figure."""
    from lookbench.submissions.signing import unsigned_reason

    try:
        made = parse_json(read_regular(contained_file(record, RECORD), MAX_RECORD_BYTES, RECORD))
        if not isinstance(made, dict) or made.get("submission_key") != submission.key:
            return None, None
        unsigned = unsigned_reason(record, signed, submission.key, keys)
        if unsigned is not None:
            return None, unsigned
        if made.get("reproduced") is not True:  # its signer's own word: not reproduced, whatever the rankings say
            return None, None
        rerun = f"{RERUN}/{RESULT_NAME}"
        rerun_result = parse_json(read_regular(contained_file(record, rerun), MAX_RESULT_BYTES, rerun))
        against = contradictions(made, rerun_result, submission)
        if against:
            return None, against[0] + (f" (and {len(against) - 1} more)" if len(against) > 1 else "")
        rerun_rankings = rankings_of(record / RERUN, rerun_result, RERUN)
    except ValueError as err:
        return None, f"it cannot be read ({shorten(str(err), 120)})"
    return compare(submission.result, submission.rankings, rerun_result, rerun_rankings), None


def records_of(root: Path, relative: str) -> list[Path]:
    """The record folders of the submission at ``relative`` (``submissions/…``) in the results repo ``root``; links
    are not followed."""
    parts = Path(relative).parts
    base = Path(root, RECORDS, *(parts[1:] if parts[:1] == ("submissions",) else parts))
    if not base.is_dir() or not base.resolve().is_relative_to(Path(root).resolve()):
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink() and (p / RECORD).is_file())


def record_digest(hashes) -> str:
    """What a signature covers: the one digest (``lookbench.files.digest``) of a record's files, as (path relative to
    the record, sha256) pairs, sorted by path, the signature's own file left out."""
    from lookbench.submissions.signing import SIGNATURE

    return digest(sorted((name, sha) for name, sha in hashes if name != SIGNATURE))


def _hashes(record: Path) -> list | None:
    """(path relative to the record, sha256) of every file of a record, each read within its limit, or ``None`` if
    one cannot be read or there are more than ``MAX_RECORD_FILES``: a check is never kept for bytes that were not
    hashed."""
    hashes = []
    try:
        files = sorted(p for p in record.rglob("*") if p.is_file() and not p.is_symlink())
        if len(files) > MAX_RECORD_FILES:
            return None
        for path in files:
            limit = MAX_RANKING_BYTES if path.suffix == ".parquet" else MAX_RESULT_BYTES
            relative = path.relative_to(record).as_posix()
            hashes.append((relative, hashlib.sha256(read_regular(path, limit, relative)).hexdigest()))
    except (OSError, ValueError):
        return None
    return hashes


_CHECKED: dict = {}  # (submission key, record digest, keys) -> (reproduced, why not): asked again at every new verdict


@dataclass(frozen=True)
class Standing:
    """What the records of one submission earn it: ``reproduced``, and one line per record that was ignored (its
    folder relative to the results repo and why)."""

    reproduced: bool
    ignored: tuple[str, ...] = ()


def reproduced(root: Path, folder: Path, key: str, keys: dict) -> Standing:
    """Whether a record under ``root``/reproductions/ vouches for the submission in ``folder`` (inside ``root``) whose
    files hash to ``key``: bound to that key, signed by one of ``keys`` (the card's), consistent with the submission,
    and agreeing when recomputed from both rankings (``compare``). A record that cannot count is named with why."""
    records = records_of(root, folder.relative_to(root).as_posix())
    submission, ignored, trusted = None, [], tuple(sorted(keys))
    for record in records:
        hashes = _hashes(record)
        shown = record.relative_to(root).as_posix()
        if hashes is None:
            ignored.append(f"{shown}: reproduction record ignored: its files cannot all be read (at most "
                           f"{MAX_RECORD_FILES}, each within its limit)")
            continue
        seen = digest(sorted(hashes))  # every file, the signature's too: a record signed since is judged again
        if (key, seen, trusted) not in _CHECKED:
            try:
                submission = submission or read_submitted(folder)
            except (OSError, ValueError):
                return Standing(False, tuple(ignored))
            if submission.key != key:  # its files changed since the row was read: that row is not shown reproduced
                return Standing(False, tuple(ignored))
            found, why = check_record(record, submission, keys, record_digest(hashes))
            if len(_CHECKED) >= MAX_CHECKED:
                _CHECKED.clear()
            _CHECKED[(key, seen, trusted)] = (found is not None and found.reproduced, why)
        counted, why = _CHECKED[(key, seen, trusted)]
        if counted:
            return Standing(True, tuple(ignored))
        if why is not None:
            ignored.append(f"{shown}: reproduction record ignored: {why}")
    return Standing(False, tuple(ignored))
