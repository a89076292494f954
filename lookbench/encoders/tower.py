"""An image tower that is another registered model exactly shares that model's cached image embeddings.

GR-Lite-mini-text's image tower is GR-Lite-mini, frozen (locked-image tuning): its image embeddings are GR-Lite-mini's,
so a gallery GR-Lite-mini encoded need not be encoded again for it. A registry entry says so (``ModelMeta.image_tower``)
and the claim is checked before the cache is keyed by it: the same tensors under the tower's prefix, the same
preprocessing, and the same embeddings of a probe batch. A claim that does not hold costs only the sharing.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def _weights(folder: Path, prefix: str = "") -> dict:
    """The folder's safetensors tensors whose names start with ``prefix``, by the name after it."""
    from safetensors.torch import load_file

    found = {}
    for path in sorted(folder.glob("*.safetensors")):
        found.update({name[len(prefix):]: tensor for name, tensor in load_file(path).items() if name.startswith(prefix)})
    return found


def _probe(encoder) -> np.ndarray:
    """A fixed batch of two drawn images as ``encoder`` embeds them."""
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 256, (40 + 17 * i, 32, 3), dtype=np.uint8)) for i in range(2)]
    return encoder.encode_batch([encoder.preprocess(image) for image in images])


def image_key(encoder) -> str | None:
    """What keys ``encoder``'s image embeddings in the cache: the fingerprint of the registered model its image tower
    is claimed to be (``image_tower``) when the claim holds — its weights under the prefix are that model's exactly,
    its preprocessing and a probe's embeddings the same — else its own ``fingerprint``."""
    if getattr(encoder, "image_tower", None) is None or encoder.fingerprint is None:
        return encoder.fingerprint
    import torch
    from safetensors import SafetensorError

    from lookbench.encoders.base import EncoderError
    from lookbench.encoders.registry import load_encoder

    name, prefix = encoder.image_tower
    try:
        other = load_encoder(name).to(encoder.device, encoder.precision)
        if other.preprocessing != encoder.preprocessing or other.fingerprint is None:
            return encoder.fingerprint
        ours, theirs = _weights(encoder.folder, prefix), _weights(other.folder)
        if not theirs or ours.keys() != theirs.keys() or not all(torch.equal(ours[k], theirs[k]) for k in theirs):
            return encoder.fingerprint
        same = np.array_equal(_probe(encoder), _probe(other))
    except (EncoderError, OSError, SafetensorError):
        # a weight file that cannot be read or a model that cannot run: nothing is shared, and the model's own
        # encoding reports its own fault as it would without a tower
        return encoder.fingerprint
    return other.fingerprint if same else encoder.fingerprint
