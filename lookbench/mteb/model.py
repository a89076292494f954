"""Any lookbench encoder as an mteb model: ``encode(DataLoader, task_metadata=…, hf_split=…, hf_subset=…,
prompt_type=…)`` and a filled ``ModelMeta``.

docs/architecture.md §5. The images of a batch go through the engine's own encode stage (``encode_images``): the
encoder's ``preprocess`` turns every PIL mode into RGB with the engine's ``to_rgb``, output is checked as the
engine checks it, and vectors are stored by image content hash — in the persistent embedding cache
(``lookbench/engine/embedding_cache.py``, shared with ``lookbench evaluate``) and in this wrapper's memory. So the noise
gallery, which is in every subset's corpus, is encoded once for all subsets (mteb's own cache wrapper is not
used: it keys by task and prompt type, so it would not share the noise across them). The queries of a text-to-image
task (a DataLoader of ``text``) go through the engine's ``encode_texts``, the model's text tower.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from mteb.models import ModelMeta
from mteb.models.abs_encoder import AbsEncoder

from lookbench.encoders.base import Encoder, TorchEncoder
from lookbench.encoders.registry import load_encoder
from lookbench.engine.encode import encode_images, encode_texts
from lookbench.engine.images import ImageSource
from lookbench.settings import DEFAULT_PRECISION


def _image_dataset(inputs):
    """The ``datasets.Dataset`` behind an mteb DataLoader, its images as an ``Image`` column of encoded bytes.

    mteb's loaders wrap the task's Dataset (``create_dataloader``); a DataLoader of anything else is read batch by
    batch and its PIL images stored as datasets stores them (lossless PNG).
    """
    import datasets

    dataset = getattr(inputs, "dataset", None)
    if not (isinstance(dataset, datasets.Dataset) and "image" in dataset.column_names):
        images = [image for batch in inputs for image in batch["image"]]
        dataset = datasets.Dataset.from_dict({"image": images}, features=datasets.Features({"image": datasets.Image()}))
    if not isinstance(dataset.features["image"], datasets.Image):
        dataset = dataset.cast_column("image", datasets.Image())
    return dataset


def _texts(inputs) -> list[str] | None:
    """The texts of a DataLoader of text queries (mteb's t2i queries: a ``text`` column, no image), else None."""
    import datasets

    dataset = getattr(inputs, "dataset", None)
    if isinstance(dataset, datasets.Dataset):
        columns = dataset.column_names
        return list(dataset["text"]) if "text" in columns and "image" not in columns else None
    batches = list(inputs)
    if batches and "text" in batches[0] and "image" not in batches[0]:
        return [text for batch in batches for text in batch["text"]]
    return None


def _release_date(value) -> str | None:
    """A registry date for mteb (YYYY-MM-DD): a month alone ("2020-03") is read as its first day."""
    if value is None:
        return None
    value = str(value)
    return value if len(value) == 10 else f"{value}-01"


def _model_meta(encoder: Encoder, registered) -> ModelMeta:
    """What mteb records about the model, from the registry entry when there is one, else from the encoder."""
    import typing

    from mteb.types import Licenses

    if registered is not None:
        name, revision = f"lookbench/{registered.name}", registered.revision
        license_ = registered.license.lower() if registered.license.lower() in typing.get_args(Licenses) else None
        release, parameters = _release_date(registered.release_date), registered.n_parameters
    else:  # a Hub id keeps its name (mteb wants owner/name); a local folder or an object is local/<name>
        base = encoder.name.split("@")[0]
        name = base if "/" in base and not Path(base).expanduser().exists() else f"local/{Path(base).name}"
        revision = encoder.provenance.get("revision") or encoder.fingerprint
        license_ = release = parameters = None
    return ModelMeta(
        loader=None, name=name, revision=revision, release_date=release, languages=None, n_parameters=parameters,
        memory_usage_mb=None, max_tokens=None, embed_dim=encoder.embed_dim, license=license_,
        open_weights=True if registered is not None else None, public_training_code=None, public_training_data=None,
        framework=["PyTorch"] if isinstance(encoder, TorchEncoder) else ["NumPy"], reference=None,
        similarity_fn_name="cosine", use_instructions=False, training_datasets=None,
        modalities=["image", "text"] if encoder.text_tower is not None else ["image"],
    )


class LookBenchMtebModel(AbsEncoder):
    """A lookbench ``Encoder`` behind mteb's ``EncoderProtocol``; vectors come back L2-normalised, as the engine
    searches them."""

    def __init__(self, encoder: Encoder, meta: ModelMeta, cache_dir=None, use_cache: bool = True):
        self.model = encoder
        self.mteb_model_meta = meta
        self.cache_dir, self.use_cache = cache_dir, use_cache
        self.vectors: dict[bytes, np.ndarray] = {}  # content hash -> unit vector, for this wrapper's lifetime
        self.forward_images = 0  # images that went through the model (not from a cache)

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs) -> np.ndarray:
        """One unit vector per input image (or text, for a text-to-image task's queries), in input order."""
        texts = _texts(inputs)
        if texts is not None:
            return encode_texts(self.model, texts)
        dataset = _image_dataset(inputs)
        ids = dataset["id"] if "id" in dataset.column_names else list(range(len(dataset)))
        label = f"{task_metadata.name}/{hf_subset}/{getattr(prompt_type, 'value', prompt_type) or 'inputs'}"
        source = ImageSource(label, dataset.select_columns(["image"]).with_format("arrow")[:].column("image"), ids)
        source.hash()
        new = list({h: row for row, h in enumerate(source.hashes) if h not in self.vectors}.values())
        if new:
            todo = ImageSource(label, source.column.take(new), [ids[r] for r in new], [source.hashes[r] for r in new])
            embeddings = encode_images(self.model, [todo], batch_size=kwargs.get("batch_size"), cache_dir=self.cache_dir,
                                       use_cache=self.use_cache).normalised()
            self.forward_images += embeddings.stats.forward_images
            for h, row in embeddings.ids.items():
                self.vectors[h] = embeddings.matrix[row]
        return np.stack([self.vectors[h] for h in source.hashes])


def as_mteb_model(model=None, *, device: str | None = None, precision: str = DEFAULT_PRECISION, cache_dir=None,
                  use_cache: bool = True) -> LookBenchMtebModel:
    """``model`` as ``lookbench evaluate --model`` takes it (a registered name, a transformers folder or Hub id, or
    an object with ``encode(list_of_PIL)`` and ``name``), wrapped for ``mteb.evaluate``."""
    from lookbench.encoders.entries import DEFAULT_MODEL, REGISTRY

    model = DEFAULT_MODEL if model is None else model
    encoder = load_encoder(model, device=device, precision=precision)
    registered = REGISTRY.get(model) if isinstance(model, str) else None
    return LookBenchMtebModel(encoder, _model_meta(encoder, registered), cache_dir=cache_dir, use_cache=use_cache)
