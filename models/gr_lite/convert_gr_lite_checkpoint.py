"""Convert a published GR-Lite checkpoint into a GR-Lite model folder loadable by `AutoModel`.

The published backbone is a DINOv3 state dict whose transformer blocks are named `layer.N.*`, where
transformers' `DINOv3ViTModel` names them `model.layer.N.*`; every other key (`embeddings.*`, `norm.*`) already
matches. Accepts `.safetensors` or a PyTorch `.pt/.pth/.bin` state dict (read with `weights_only=True`: tensors
only, never arbitrary pickled objects). Missing or unexpected keys are listed and stop the conversion unless
`--allow-missing` / `--allow-unexpected` say otherwise.

    python -m lookbench.models.gr_lite.convert_gr_lite_checkpoint --checkpoint gr_lite.safetensors --output gr-lite
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import torch

from lookbench.errors import report_errors

from lookbench.models.gr_lite import GrLiteConfig, GrLiteModel, processor_for
from lookbench.models.gr_lite.configuration_gr_lite import PRESETS

_BLOCK = re.compile(r"^layer\.(\d+)\.")
# Wrappers that training scripts commonly put around a state dict in a .pt file.
_STATE_DICT_WRAPPERS = ("state_dict", "model", "model_state_dict")


def load_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """Read tensors from safetensors or a weights-only torch file; unwrap a {'state_dict': ...} container."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Checkpoint {path} does not exist.")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises UnpicklingError for anything that is not plain tensors/containers
        raise ValueError(f"{path} is not a weights-only PyTorch state dict (refusing full unpickling): {err}") from err
    for key in _STATE_DICT_WRAPPERS:
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
            break
    if not isinstance(obj, dict) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise ValueError(f"{path} does not hold a flat name → tensor state dict.")
    return obj


def rename_published_keys(state_dict: dict[str, torch.Tensor], strip_prefix: str = "") -> dict[str, torch.Tensor]:
    """Published DINOv3 layout → `GrLiteModel` keys: `layer.N.*` → `backbone.model.layer.N.*`, rest under `backbone.`.

    Keys already in our layout (`backbone.*`, `projection.*`) pass through, so a converted folder converts again.
    """
    renamed = {}
    for key, tensor in state_dict.items():
        if strip_prefix and key.startswith(strip_prefix):
            key = key[len(strip_prefix):]
        if key.startswith(("backbone.", "projection.")):
            new = key
        elif _BLOCK.match(key):
            new = "backbone.model." + key
        else:
            new = "backbone." + key
        renamed[new] = tensor
    return renamed


def convert(
    checkpoint: str | Path,
    output: str | Path,
    config: GrLiteConfig | None = None,
    strip_prefix: str = "",
    allow_missing: bool = False,
    allow_unexpected: bool = False,
) -> GrLiteModel:
    """Load `checkpoint` into a GrLiteModel of `config` (default: the gr-lite preset) and save it to `output`."""
    config = config or GrLiteConfig.from_preset("gr-lite")
    state_dict = rename_published_keys(load_state_dict(checkpoint), strip_prefix)
    model = GrLiteModel(config)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(expected))
    mismatched = [
        f"{k}: checkpoint {tuple(state_dict[k].shape)} vs model {tuple(expected[k].shape)}"
        for k in sorted(set(expected) & set(state_dict))
        if state_dict[k].shape != expected[k].shape
    ]
    if mismatched:
        raise ValueError(f"{checkpoint}: {len(mismatched)} shape mismatches (wrong preset/config?):\n  " + "\n  ".join(mismatched))
    problems = []
    if missing and not allow_missing:
        problems.append(f"{len(missing)} missing keys (pass --allow-missing to keep them randomly initialised):\n  " + "\n  ".join(missing))
    if unexpected and not allow_unexpected:
        problems.append(f"{len(unexpected)} unexpected keys (pass --allow-unexpected to drop them):\n  " + "\n  ".join(unexpected))
    if problems:
        raise ValueError(f"Refusing a partial load of {checkpoint}: " + "\n".join(problems))
    for label, keys in (("missing (left randomly initialised)", missing), ("unexpected (dropped)", unexpected)):
        if keys:
            print(f"{len(keys)} {label}: {', '.join(keys)}")
    model.load_state_dict({k: v for k, v in state_dict.items() if k in expected}, strict=False)
    model.eval()
    output = Path(output)
    model.save_pretrained(output)
    processor_for(config).save_pretrained(output)
    write_converted_card(output, Path(checkpoint).name)
    return model


DINOV3_LICENSE = "https://ai.meta.com/resources/models-and-libraries/dinov3-license/"


def write_converted_card(output: Path, checkpoint_name: str) -> None:
    """GR-Lite weights derive from DINOv3: the converted folder carries the DINOv3 licence, not Apache-2.0."""
    from huggingface_hub import ModelCard, ModelCardData

    data = ModelCardData(
        library_name="transformers", pipeline_tag="image-feature-extraction", license="other",
        license_name="dinov3-license", license_link=DINOV3_LICENSE, base_model="facebook/dinov3-vitl16-pretrain-lvd1689m",
        tags=["fashion", "image-retrieval", "dinov3", "lookbench"],
    )
    body = (
        "# GR-Lite (converted)\n\nGR-Lite, the open fashion-retrieval encoder of LookBench (Gao et al., 2026, "
        "arXiv:2601.14706): DINOv3 ViT-L/16 fine-tuned with an attribute-supervised ArcFace loss; embedding = "
        f"L2-normalised CLS token. Converted from `{checkpoint_name}` by `convert_gr_lite_checkpoint.py` "
        "(published `layer.N.*` keys renamed to `DINOv3ViTModel`'s `model.layer.N.*`).\n\n## Licence\n\n"
        "The weights are a derivative of Meta's DINOv3 and are distributed under the "
        f"[DINOv3 License]({DINOV3_LICENSE}); the code that loads them is Apache-2.0.\n"
    )
    ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}").save(output / "README.md")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="published .safetensors or .pt/.pth/.bin state dict")
    parser.add_argument("--output", required=True, help="model folder to write")
    parser.add_argument("--preset", default="gr-lite", choices=sorted(PRESETS))
    parser.add_argument("--config", help="config.json of a GrLiteConfig, instead of --preset")
    parser.add_argument("--image-size", type=int, help="override the preset's input size (e.g. 518)")
    parser.add_argument("--strip-prefix", default="", help="prefix to remove from every key first, e.g. 'backbone.'")
    parser.add_argument("--allow-missing", action="store_true")
    parser.add_argument("--allow-unexpected", action="store_true")
    args = parser.parse_args(argv)
    overrides = {"image_size": args.image_size} if args.image_size else {}
    if args.config:
        config = GrLiteConfig.from_dict({**json.loads(Path(args.config).read_text()), **overrides})
    else:
        config = GrLiteConfig.from_preset(args.preset, **overrides)
    convert(args.checkpoint, args.output, config, args.strip_prefix, args.allow_missing, args.allow_unexpected)
    print(f"Wrote {args.output}")


if __name__ == "__main__":
    sys.exit(report_errors("convert_gr_lite_checkpoint", main))
