"""Teacher features for feature distillation: the ImageNet EfficientNet-Lite0 feature of every training image.

GR-Lite starts from a pretrained backbone (docs/architecture.md §1); GR-Lite-mini cannot, so it distils the
general visual knowledge of the only pretrained image encoder installable offline. The teacher's forward pass
costs more CPU than the student's training step, so it runs once per training image (the clean image, not an
augmented view: the student learns to map each of its augmented views onto it) and is stored in one
safetensors file beside the data, with the sha256 of every row's image bytes so a file never silently serves
features of other images (`training_data` writes and reads that file).

    python -m lookbench.training.teacher_features --data DIR --output FILE.safetensors

The forward passes run inside the engine's ``reuse_freed_memory`` (glibc otherwise page-faults every batch's
activations in again: 2.5x the time at batch 32, ``lookbench.engine.runtime``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import datasets
import numpy as np
from tqdm.auto import tqdm

from lookbench.errors import report_errors
from lookbench.training.training_data import TEACHER, image_hashes, load_train_split, save_teacher_features


def compute(ds: datasets.Dataset, batch_size: int = 64) -> np.ndarray:
    """(rows × 1280) float32, L2-normalised teacher features, in row order."""
    from lookbench.encoders.registry import load_encoder
    from lookbench.engine.runtime import reuse_freed_memory

    teacher = load_encoder(TEACHER, device="cpu")
    images = ds.select_columns(["image"])
    out = []
    with reuse_freed_memory():
        for start in tqdm(range(0, len(ds), batch_size), desc=f"{TEACHER} features"):
            batch = images[start:start + batch_size]["image"]
            out.append(teacher.encode_batch([teacher.preprocess(image) for image in batch]))
    features = np.concatenate(out).astype(np.float32)
    return features / np.linalg.norm(features, axis=1, keepdims=True)


def main(argv: list[str] | None = None) -> Path:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="dataset folder written by `lookbench build` (the training set)")
    p.add_argument("--data-config", default=None)
    p.add_argument("--split", default="train")
    p.add_argument("--output", required=True, help="the .safetensors file to write")
    p.add_argument("--batch-size", type=int, default=64)
    args = p.parse_args(argv)
    ds = load_train_split(args.data, args.data_config, args.split)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_teacher_features(out, compute(ds, args.batch_size), image_hashes(ds), json.dumps({"data": args.data, "split": args.split}))
    print(f"Wrote {out}: {TEACHER} features of {len(ds)} images")
    return out


if __name__ == "__main__":
    sys.exit(report_errors("teacher_features", main))
