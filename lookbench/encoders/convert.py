"""A registered Hub entry's snapshot at its pinned commit, and the published checkpoints that are not transformers
folders (open_clip, GR-Lite) converted into one, once per commit, under ``$HF_HOME/lookbench/converted-models``.

Only the files an entry needs are fetched (offline: read from the cache). The open_clip renaming is
``lookbench.encoders.open_clip``'s; the GR-Lite one is models/gr_lite/convert_gr_lite_checkpoint.py's.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from lookbench.encoders.base import EncoderError, read_model_json, resolve_model_folder
from lookbench.encoders.meta import ModelMeta
from lookbench.encoders.text import TOKENIZER_FILES
from lookbench.errors import one_line
from lookbench.files import folder_lock, new_sibling, replace_folder
from lookbench.paths import converted_models_dir

# What each kind of entry fetches beside its weights, and which weights formats it takes (the first one present).
_PATTERNS = {"open_clip": ("open_clip_config.json", *TOKENIZER_FILES), "gr-lite": ("*.json", "README.md")}
# What a conversion writes, versioned: a converted folder of an earlier version is never loaded (open_clip 2: both
# towers and the tokenizer, where 1 kept the image tower alone).
_VERSIONS = {"open_clip": 2, "gr-lite": 1}
_WEIGHTS = {"open_clip": ("open_clip_model.safetensors", "open_clip_pytorch_model.bin"),
            "gr-lite": ("*.safetensors", "*.pt", "*.pth", "*.bin")}


def hub_snapshot(meta: ModelMeta) -> tuple[Path, str]:
    """(transformers model folder, commit sha) of a Hub entry: its pinned snapshot, converted if it is not one."""
    patterns = _PATTERNS.get(meta.convert, ("*.json", "*.py", "*.txt", "README.md"))
    weights = _WEIGHTS.get(meta.convert, ("*.safetensors", "*.bin"))
    try:
        folder, sha = resolve_model_folder(meta.hub_id, meta.hub_revision, patterns, weights)
    except EncoderError as err:
        raise EncoderError(f"{meta.name}: {err}") from err
    return (_converted(meta, folder, sha) if meta.convert else folder), sha


def _converted(meta: ModelMeta, snapshot: Path, sha: str) -> Path:
    """The snapshot converted to a transformers folder, once per commit (and conversion version)."""
    version = _VERSIONS[meta.convert]
    target = converted_models_dir() / meta.hub_id.replace("/", "--") / (sha if version == 1 else f"{sha}.v{version}")
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with folder_lock(target, wait=True):  # a second evaluation converting the same commit waits for the first
        if (target / "config.json").is_file():
            return target
        _convert_into(meta, snapshot, sha, target)
    return target


def _convert_into(meta: ModelMeta, snapshot: Path, sha: str, target: Path) -> None:
    """Written whole into a new sibling (never a predictable name a link could be planted at), then swapped in."""
    staged = new_sibling(target, "converting", folder=True)
    try:
        if meta.convert == "open_clip":
            from lookbench.encoders.open_clip import convert_open_clip

            convert_open_clip(snapshot, staged)
        else:
            _convert_gr_lite(snapshot, staged)
        replace_folder(staged, target)
    except (ValueError, KeyError, OSError) as err:
        shutil.rmtree(staged, ignore_errors=True)
        raise EncoderError(f"{meta.name}: cannot convert {meta.hub_id}@{sha[:12]}: {one_line(err)}") from err


def _convert_gr_lite(snapshot: Path, output: Path) -> None:
    """The published checkpoint through models/gr_lite/convert_gr_lite_checkpoint.py; backbone sizes the snapshot's
    config.json states win over the gr-lite preset's. The folder keeps the preset's 336 px (GrLiteConfig wants a
    multiple of the patch size); the entry's transform feeds the harness's 518 px, of which the patch embedding
    uses the first 512 rows and columns, as in the harness."""
    from lookbench.models.gr_lite import GrLiteConfig
    from lookbench.models.gr_lite.convert_gr_lite_checkpoint import PRESETS, convert

    checkpoints = [p for kind in _WEIGHTS["gr-lite"] for p in sorted(snapshot.glob(kind))]
    if not checkpoints:
        raise ValueError(f"no checkpoint (*.safetensors, *.pt, *.pth, *.bin) in {snapshot}")
    stated = read_model_json(snapshot / "config.json") if (snapshot / "config.json").exists() else {}
    stated = stated.get("vision_config") or stated.get("backbone_config") or stated
    if not isinstance(stated, dict):
        raise ValueError(f"{snapshot / 'config.json'}: key vision_config / backbone_config is not an object")
    backbone = {**PRESETS["gr-lite"]["vision_config"], **{k: stated[k] for k in PRESETS["gr-lite"]["vision_config"] if k in stated}}
    config = GrLiteConfig(vision_config=backbone, image_size=PRESETS["gr-lite"]["image_size"])
    convert(checkpoints[0], output, config)
