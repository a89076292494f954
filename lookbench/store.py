"""The results store: every finished evaluation as one JSON file at a path that says what was measured.

``<results>/<model>/<revision or fingerprint>/<data release>-<data revision>/<mode>[-after-<cutoff>][-qualifiers].json``
(docs/architecture.md §5). Each segment is made safe, so a model called ``owner/name`` or ``../x`` never makes
extra folders or leaves the store. An evaluation whose ``Identity`` equals a stored one's is not recomputed.
Files are written to a temporary sibling and moved into place, so a failed write never damages a stored result.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .files import read_regular, regular_file, replacing
from .paths import lookbench_home

# A store file is read only when it is a regular file of at most this size, nested at most this deep.
MAX_RESULT_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 32


def default_root() -> Path:
    """``$HF_HOME/lookbench/results``."""
    return lookbench_home() / "results"


def safe_segment(text) -> str:
    """One path segment: separators and anything unusual become ``_``; never empty, ``.`` or ``..``."""
    segment = re.sub(r"[^A-Za-z0-9._+-]+", "_", str(text)).strip("_") or "_"
    return re.sub(r"^\.", "_", segment)


@dataclass(frozen=True)
class Identity:
    """What decides an evaluation's scores; two evaluations with equal identities give the same result.

    ``model`` (the fingerprint) or ``data`` (the content revision) is ``None`` when it is unknown, and an
    unknown identity is never taken as equal to anything.
    """

    model: str | None
    data: str | None
    mode: str
    distractors: bool
    cutoff: str | None  # normalised to UTC ISO 8601
    subsets: tuple[str, ...]
    index: str
    precision: str

    @property
    def known(self) -> bool:
        return self.model is not None and self.data is not None

    @classmethod
    def of(cls, provenance: dict) -> "Identity":
        """The identity recorded in a result's provenance (KeyError on a file that is not a result)."""
        return cls(provenance["model"]["fingerprint"], provenance["dataset"]["revision"], provenance["mode"],
                   bool(provenance["distractors"]), normalise_cutoff(provenance["cutoff"]),
                   tuple(sorted(provenance["dataset"]["counts"])), provenance["index"], provenance["precision"])


def normalise_cutoff(cutoff) -> str | None:
    from .filtering import to_utc

    return None if cutoff is None else to_utc(cutoff).isoformat()


def result_path(root, *, model: str, revision: str | None, fingerprint: str | None, releases, data_revision,
                mode: str, cutoff=None, distractors: bool = True, index: str = "flat", precision: str = "fp32",
                subsets=None) -> Path:
    """Where a result goes. Settings other than the defaults (no distractors, hnsw, bf16, an explicit subset
    list) add a qualifier to the file name, so different evaluations never share a file."""
    version = revision or (fingerprint.rsplit(":", 1)[-1][:16] if fingerprint else "unversioned")
    # The content revision is part of the data segment: two builds of one release (e.g. LookBench-Mini at two
    # scales, both v20251201) are different data.
    data = "+".join(releases) or "no-release"
    data += f"-{str(data_revision)[:22]}" if data_revision else "-unknown-revision"
    stem = mode + (f"-after-{cutoff}" if cutoff is not None else "")
    stem += "" if distractors else "-no-distractors"
    stem += "" if index == "flat" else f"-{index}"
    stem += "" if precision == "fp32" else f"-{precision}"
    stem += "" if not subsets else "-" + "+".join(sorted(subsets))
    return Path(root) / safe_segment(model) / safe_segment(version) / safe_segment(data) / f"{safe_segment(stem)}.json"


def predictions_folder(result_json) -> Path:
    """The saved rankings of a result: ``<stem>.predictions/<subset>.parquet`` beside its JSON."""
    result_json = Path(result_json)
    return result_json.with_name(result_json.stem + ".predictions")


def find_identical(path: Path, identity: Identity, *, need_predictions=()) -> dict | None:
    """The stored result at ``path`` if it was measured with ``identity`` (and has the requested saved rankings)."""
    if not identity.known or not path.is_file():
        return None
    try:
        stored = read_json(path)
        if Identity.of(stored["provenance"]) != identity:
            return None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # unreadable or foreign: recompute and replace it
    folder = predictions_folder(path)
    saved = stored["provenance"].get("saved_predictions") or ()
    if any(name not in saved or not (folder / f"{name}.parquet").is_file() for name in need_predictions):
        return None
    return stored


def read_json(path, shown=None):
    """A JSON file from a store (or given by a user): a regular file of at most ``MAX_RESULT_BYTES``, read without
    blocking, nested at most ``MAX_DEPTH`` deep. Anything else is a ``ValueError`` saying what is wrong."""
    data = read_regular(regular_file(path, shown), MAX_RESULT_BYTES, shown)
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError(f"not valid JSON: nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise ValueError("not valid JSON: not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"not a LookBench result: nested deeper than {MAX_DEPTH} levels")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return value


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary sibling and ``os.replace`` (the umask decides the mode)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    return path
