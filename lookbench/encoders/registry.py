"""What callers use: ``load_encoder``, the one way in from a name to an encoder, the lookups of the registered models
(``find``, ``BY_PUBLISHED_NAME``) and ``describe_models``, the listing ``lookbench models`` prints. The entries
themselves are data in ``lookbench.encoders.entries``; a Hub entry's snapshot comes from ``lookbench.encoders.convert``.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path

from lookbench.encoders.base import Encoder, EncoderError, ObjectEncoder, TransformersEncoder, folder_fingerprint
from lookbench.encoders.convert import hub_snapshot
from lookbench.encoders.entries import DEFAULT_MODEL, REGISTRY
from lookbench.encoders.meta import ModelMeta
from lookbench.hub import looks_like_hub_id, split_revision
from lookbench.settings import DEFAULT_PRECISION

# Published leaderboard row name → registry entry.
BY_PUBLISHED_NAME: dict[str, ModelMeta] = {m.published_name: m for m in REGISTRY.values() if m.published_name}


def find(name: str) -> ModelMeta:
    """A registry entry by name or published name; an unknown one names the close matches."""
    if name in REGISTRY:
        return REGISTRY[name]
    if name in BY_PUBLISHED_NAME:
        return BY_PUBLISHED_NAME[name]
    raise EncoderError(f"Unknown model {name!r}.{_suggest(name)} Registered: {', '.join(REGISTRY)}")


def text_models() -> list[str]:
    """The registered models with a text tower (what ``--queries text`` can read with)."""
    return [meta.name for meta in REGISTRY.values() if meta.text is not None]


def _suggest(name: str) -> str:
    choices = {n.lower(): n for n in [*REGISTRY, *BY_PUBLISHED_NAME]}
    close = difflib.get_close_matches(name.lower(), list(choices), n=3, cutoff=0.5)
    return f" Did you mean {', '.join(repr(choices[c]) for c in close)}?" if close else ""


def _build(meta: ModelMeta, trust_remote_code: bool) -> Encoder:
    """A registered entry's encoder, or an ``EncoderError`` saying what it needs (packages, files, the trust flag)."""
    if meta.unavailable:
        raise EncoderError(f"Registered model {meta.name!r} is unavailable: {meta.unavailable}")
    if meta.missing():
        raise EncoderError(f"Registered model {meta.name!r} needs {', '.join(meta.missing())} "
                           f"(imported by its code); install {' '.join(meta.missing())}")
    if meta.hub_id is None:
        if not meta.available():
            raise EncoderError(f"Registered model {meta.name!r} is not available in this installation ({meta.source})")
        encoder = meta.build(meta)
        encoder.training_cutoff, encoder.training_datasets = meta.training_cutoff, meta.training_datasets
        return encoder
    if meta.remote_code and not trust_remote_code:
        raise EncoderError(f"Registered model {meta.name!r} ({meta.hub_id}) runs its own code from the Hub; "
                           "pass --trust-remote-code (trust_remote_code=True) if you trust it")
    return TransformersEncoder(meta.hub_id, meta, trust_remote_code=trust_remote_code, snapshot=hub_snapshot(meta))


def check_model(model) -> None:
    """What can be told of a model before anything is loaded, so a run refuses at once rather than after loading the
    data: a registered model that cannot run here (its ``status``: not cached with no Hub reachable, packages
    missing, unavailable), and a Hub id whose revision is not a ref (``split_revision``)."""
    name = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
    if name in REGISTRY or name in BY_PUBLISHED_NAME:
        meta = find(name)
        ready, needs = meta.status()
        if not ready:
            raise EncoderError(f"Registered model {meta.name!r} cannot run here: {needs}")
    elif name and not Path(name).expanduser().exists() and looks_like_hub_id(name):
        split_revision(name)


def as_registered(encoder: TransformersEncoder, trust_remote_code: bool = False) -> Encoder:
    """A local model folder that holds a registered model — the same weights fingerprint, preprocessing, text tower
    and declared training cutoff — is that model, so its results are stored and ranked under one name: the registered
    encoder, with the folder it was given recorded as ``provenance["loaded_from"]``. A Hub copy (a snapshot at a
    commit) stays that Hub id at that commit, which is what a submission names and a reproduction re-runs; the
    registered name is kept as ``provenance["registered_as"]`` (the board's facts and zero-shot column read it) with
    the registered model's declared training data. A folder whose card declares another cutoff makes another claim
    (``--cutoff model`` reads it), so it stays its own, as does anything else. Registered models whose folder is on
    disk (not a Hub download) are compared."""
    for meta in REGISTRY.values():
        folder = _installed_folder(meta)
        if folder is None or folder_fingerprint(folder) != encoder.fingerprint:
            continue
        twin = _build(meta, trust_remote_code)
        if (twin.preprocessing, twin.text_fingerprint, twin.training_cutoff) != (
                encoder.preprocessing, encoder.text_fingerprint, encoder.training_cutoff):
            continue
        if encoder.provenance.get("revision") is not None:  # resolved in the Hub cache: its commit is known
            encoder.provenance["registered_as"] = twin.name
            encoder.training_datasets = twin.training_datasets
            return encoder
        twin.provenance["loaded_from"] = str(Path(encoder.source).expanduser().resolve())
        return twin
    return encoder


def _installed_folder(meta: ModelMeta) -> Path | None:
    """The transformers folder a registered model is built from when it ships with an installation."""
    if meta.hub_id or meta.weights is None or meta.unavailable or meta.missing() or not meta.available():
        return None
    folder = meta.weights().parent
    return folder if (folder / "config.json").is_file() else None


def load_encoder(model=None, device: str | None = None, precision: str = DEFAULT_PRECISION,
                 trust_remote_code: bool = False) -> Encoder:
    """Registered name (or published name), local folder, Hub id (``owner/name[@revision]``), an ``Encoder``, or
    any object with ``encode`` and ``name``. Code from a Hub repo runs only with ``trust_remote_code``."""
    model = DEFAULT_MODEL if model is None else model
    if isinstance(model, Encoder):
        encoder = model
    elif isinstance(model, (str, os.PathLike)):
        name = os.fspath(model)
        if name in REGISTRY or name in BY_PUBLISHED_NAME:
            encoder = _build(find(name), trust_remote_code)
        elif Path(name).expanduser().exists() or looks_like_hub_id(name):
            encoder = as_registered(TransformersEncoder(name, trust_remote_code=trust_remote_code), trust_remote_code)
        else:
            close = _suggest(name)  # with a close match, the 20 registered names would only bury it
            raise EncoderError(
                f"Unknown model {name!r}.{close} Use a registered name "
                f"({'`lookbench models` lists them' if close else ', '.join(REGISTRY)}), "
                "a local transformers model folder, or a Hub id such as owner/name[@revision]."
            )
    elif callable(getattr(model, "encode", None)) and hasattr(model, "name"):
        encoder = ObjectEncoder(model)
    else:
        raise EncoderError(
            f"model must be a name, a path, a Hub id or an object with encode(list_of_PIL_images) and name; "
            f"got {type(model).__name__}"
        )
    return encoder.to(device, precision)


def describe_models() -> list[dict]:
    """One row per registered encoder, for ``lookbench models``: typed values (``None`` where a fact is unknown or
    does not apply; ``lookbench models`` prints those as "-" or "unknown")."""
    rows = []
    for meta in REGISTRY.values():
        ready, needs = meta.status()
        if meta.hub_id or meta.unavailable:
            revision, params = meta.hub_revision or ("unpinned" if meta.hub_id else None), meta.n_parameters
        else:
            revision, params = (meta.revision, meta.n_parameters) if ready else (None, None)
        rows.append({
            "name": meta.name,
            "default": meta.name == DEFAULT_MODEL,
            "published_name": meta.published_name,
            "hub_id": meta.hub_id,
            "revision": revision,
            "dim": meta.embed_dim,
            "input": meta.image_size,
            "params": params,
            "license": meta.license,
            "released": meta.release_date,
            "training_cutoff": meta.training_cutoff,
            "training_datasets": meta.training_datasets,
            "available": bool(ready),
            "needs": None if needs == "-" else needs,
            "description": meta.description,
            "preprocessing": meta.preprocessing,
            "text": meta.text_preprocessing,
            "note": meta.note,
        })
    return rows
