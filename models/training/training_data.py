"""What a GR-Lite training run reads: its sets, their labels, augmented samples, teacher features, held-out products.

One module for the data, so the scripts around the training loop (`teacher_features`, `score_validation`) read a
run's data exactly as `train_gr_lite` does, without importing the loop. Labels come from the annotation columns
only: every (category, full attribute set) combination is one ArcFace class, and every facet (the category and each
attribute name) one attribute head's target. The teacher features of a set live in one safetensors file beside it,
with the sha256 of every row's image bytes, so a file never silently serves features of other images.
"""
from __future__ import annotations

import argparse
import hashlib
import math
import random
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np
import pyarrow.compute as pc
import torch
from PIL import Image, ImageEnhance, ImageOps
from safetensors import safe_open
from safetensors.torch import save_file
from transformers.image_transforms import convert_to_rgb

from lookbench.models.gr_lite import GrLiteImageProcessor
from lookbench.schema import NOISE
from lookbench.training import holdout

TEACHER = "efficientnet-lite0"  # the distillation teacher: `teacher_features` computes its features, every file names it


def class_key(category: str, attributes: list[dict]) -> str:
    """The ArcFace class of a record: its category plus its whole attribute set (order-free)."""
    pairs = sorted(f"{a['name']}={a['value']}" for a in attributes)
    return category + "|" + ";".join(pairs)


def build_labels(ds: datasets.Dataset, by_category: list[bool] | None = None) -> tuple[list[int], list[str], np.ndarray, dict[str, list[str]]]:
    """Labels read from the annotation columns only.

    Returns the ArcFace class per row and the sorted class names, plus the attribute supervision: a
    (rows × heads) matrix holding, for the category and for every attribute name, the row's value index
    (-100 where the row's category has no such attribute) and each head's sorted values. A row marked in
    ``by_category`` (its set's `--arcface-classes category`) has its category alone as ArcFace class; its
    attributes are still supervised by their heads.
    """
    missing = {"category", "attributes", "image"} - set(ds.column_names)
    if missing:
        raise ValueError(f"Train data lacks the LookBench column(s) {sorted(missing)}; it has {ds.column_names}.")
    annotations = ds.select_columns(["category", "attributes"])
    keys, facets = [], []
    for i, row in enumerate(annotations):
        if not row["category"]:
            raise ValueError(f"Train row {i} has an empty category.")
        attributes = row["attributes"] or []
        keys.append(class_key(row["category"], [] if by_category and by_category[i] else attributes))
        facets.append({"category": row["category"], **{a["name"]: a["value"] for a in attributes}})
    classes = sorted(set(keys))
    index = {k: i for i, k in enumerate(classes)}
    vocab = {name: sorted({f[name] for f in facets if name in f}) for name in sorted({n for f in facets for n in f})}
    lookup = {name: {v: j for j, v in enumerate(values)} for name, values in vocab.items()}
    facet_labels = np.array([[lookup[n].get(f.get(n), -100) for n in vocab] for f in facets], dtype=np.int64)
    return [index[k] for k in keys], classes, facet_labels, vocab


class Augment:
    """Random resized crop + horizontal flip + brightness/contrast jitter, in PIL; the processor then resizes."""

    def __init__(self, min_scale: float = 0.6, jitter: float = 0.2):
        self.min_scale, self.jitter = min_scale, jitter

    def __call__(self, image: Image.Image, rng: random.Random) -> Image.Image:
        image = Image.fromarray(convert_to_rgb(image, return_numpy=True))
        w, h = image.size
        for _ in range(10):
            area = w * h * rng.uniform(self.min_scale, 1.0)
            ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
            cw, ch = round(math.sqrt(area * ratio)), round(math.sqrt(area / ratio))
            if 0 < cw <= w and 0 < ch <= h:
                x0, y0 = rng.randint(0, w - cw), rng.randint(0, h - ch)
                image = image.crop((x0, y0, x0 + cw, y0 + ch))
                break
        if rng.random() < 0.5:
            image = ImageOps.mirror(image)
        image = ImageEnhance.Brightness(image).enhance(rng.uniform(1 - self.jitter, 1 + self.jitter))
        return ImageEnhance.Contrast(image).enhance(rng.uniform(1 - self.jitter, 1 + self.jitter))


class TrainImages(torch.utils.data.Dataset):
    """Training samples: the augmented image through the model's own processor, its labels, its teacher feature.

    The augmentation of sample i in epoch e depends only on (seed, e, i), not on the number of processes or on
    how far a data loader prefetched, so a resumed run sees exactly the images the uninterrupted run would.
    """

    def __init__(self, data: "TrainData", processor: GrLiteImageProcessor, augment: Augment, seed: int):
        self.ds, self.labels, self.processor, self.augment = data.ds.select_columns(["image"]), data.labels, processor, augment
        self.facet_labels = torch.from_numpy(data.facet_labels)
        self.teacher, self.distill_weights = data.teacher, data.distill_weights
        self.order = data.epoch_rows
        self.seed, self.epoch = seed, 0

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        """Sample i of an epoch is row `order[i]`: a repeated row's copies are augmented apart (seeded by i)."""
        row = int(self.order[i])
        image = self.augment(self.ds[row]["image"], random.Random(f"{self.seed}/{self.epoch}/{i}"))
        sample = {
            "pixel_values": self.processor(image, return_tensors="pt")["pixel_values"][0],
            "labels": torch.tensor(self.labels[row]),
            "facet_labels": self.facet_labels[row],
        }
        if self.teacher is not None:
            sample["teacher"], sample["distill_weight"] = self.teacher[row], self.distill_weights[row]
        return sample


def load_train_split(data: str, config_name: str | None, split: str) -> datasets.Dataset:
    path = Path(data)
    if not path.exists():
        raise FileNotFoundError(f"--data {data} does not exist (expected a folder written by `lookbench build`).")
    ds = datasets.load_dataset(str(path), config_name, split=split)
    if len(ds) == 0:
        raise ValueError(f"{data} split {split!r} is empty.")
    return ds


def load_distractors(folder: str) -> datasets.Dataset:
    """The noise gallery of a `lookbench build` folder, for the validation gallery."""
    what = f"--validation-distractors {folder}"
    if not Path(folder).is_dir():
        raise FileNotFoundError(f"{what} does not exist (expected a folder written by `lookbench build`).")
    if NOISE not in datasets.get_dataset_config_names(folder):
        raise ValueError(f"{what} has no {NOISE!r} config (build one with `lookbench build --source mini --seed 1 --subsets noise`).")
    return datasets.load_dataset(folder, NOISE, split="gallery")


def image_hashes(ds: datasets.Dataset) -> np.ndarray:
    """(rows × 32) uint8: sha256 of each row's stored image bytes, read without decoding."""
    raw = ds.select_columns(["image"]).cast_column("image", datasets.Image(decode=False))
    return np.stack([np.frombuffer(hashlib.sha256(row["image"]["bytes"]).digest(), dtype=np.uint8) for row in raw])


def save_teacher_features(path: Path, features: np.ndarray, hashes: np.ndarray, source: str) -> None:
    metadata = {"teacher": TEACHER, "rows": str(len(features)), "source": source}
    save_file({"features": torch.from_numpy(features), "image_sha256": torch.from_numpy(hashes)}, str(path), metadata=metadata)


def load_teacher_features(path: str | Path, ds: datasets.Dataset, what: str) -> torch.Tensor:
    """The features of `ds`'s rows from `path`, after checking they were computed from exactly these images.

    `what` names the data in errors (e.g. "--data DIR split train").
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"--teacher-features {path} does not exist (write it with `python -m lookbench.training.teacher_features`).")
    with safe_open(str(path), framework="pt") as f:
        keys, metadata = set(f.keys()), f.metadata() or {}
        if not {"features", "image_sha256"} <= keys or metadata.get("teacher") != TEACHER:
            raise ValueError(f"{path} is not a {TEACHER} teacher-feature file of this module (keys {sorted(keys)}).")
        features, stored = f.get_tensor("features"), f.get_tensor("image_sha256").numpy()
    if len(features) != len(ds):
        raise ValueError(f"{path} holds teacher features of {len(features)} images but {what} has {len(ds)} rows.")
    differ = np.flatnonzero((stored != image_hashes(ds)).any(axis=1))
    if len(differ):
        raise ValueError(
            f"{path} was computed from other images than {what}: {len(differ)} of {len(ds)} rows differ "
            f"(first: row index {differ[0]}); recompute it for this data."
        )
    return features.float()


def per_set(values: list, sets: int) -> list:
    """A per-folder flag's values, one per --data folder (one value given: the same for all)."""
    return values * sets if len(values) == 1 else values


@dataclass
class TrainData:
    """The rows trained on, their supervision (`build_labels`) and teacher features, and the held-out products."""

    ds: datasets.Dataset
    labels: list[int]
    classes: list[str]
    facet_labels: np.ndarray
    vocab: dict[str, list[str]]
    teacher: torch.Tensor | None = None
    distill_weights: torch.Tensor | None = None  # each row's --distill-weight (its set's), beside `teacher`
    validation: holdout.RetrievalValidation | None = None
    training_cutoff: str | None = None  # the date of the newest row read (trained on or held out): the card declares it
    epoch_rows: np.ndarray | None = None  # the rows of `ds` one epoch visits (each set's rows --data-repeat times)

    def __post_init__(self):
        if self.epoch_rows is None:
            self.epoch_rows = np.arange(len(self.ds))

    @classmethod
    def load(cls, args: argparse.Namespace) -> "TrainData":
        """Every --data folder's split with its own teacher features and held-out products, concatenated in order."""
        parts, teachers, groups, train_rows, validation_rows, epoch_rows, row_weights, by_category = [], [], [], [], [], [], [], []
        repeats = args.data_repeat or [1] * len(args.data)
        set_weights, set_classes = per_set(args.distill_weight, len(args.data)), per_set(args.arcface_classes, len(args.data))
        for data, features, repeat, weight, classes in zip(args.data, args.teacher_features or [None] * len(args.data), repeats,
                                                           set_weights, set_classes):
            part = load_train_split(data, args.data_config, args.split)
            what = f"--data {data} split {args.split}"
            teachers.append(load_teacher_features(features, part, what) if features else None)
            kept, held = holdout.split_rows(part, args.validation_fraction) if args.validation_fraction else (range(len(part)), [])
            if args.validation_fraction and not held:
                raise ValueError(f"--validation-fraction {args.validation_fraction} holds out no product of {what}.")
            offset = len(groups)
            epoch_rows += list(range(len(train_rows), len(train_rows) + len(kept))) * repeat
            train_rows += [offset + i for i in kept]
            validation_rows += [offset + i for i in held]
            groups += [data] * len(part)
            row_weights += [weight] * len(part)
            by_category += [classes == "category"] * len(part)
            parts.append(part)
        full = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
        teacher = None if teachers[0] is None else torch.cat(teachers)
        weights = None if teacher is None else torch.tensor(row_weights)
        newest = pc.max(full.data.column("timestamp")) if "timestamp" in full.column_names else None
        cutoff = newest.as_py().date().isoformat() if newest is not None and newest.is_valid else None
        epoch_rows = np.array(epoch_rows, dtype=np.int64)
        if not validation_rows:
            return cls(full, *build_labels(full, by_category), teacher=teacher, distill_weights=weights, training_cutoff=cutoff, epoch_rows=epoch_rows)
        ds = full.select(train_rows)
        distractors = load_distractors(args.validation_distractors) if args.validation_distractors else None
        validation = holdout.RetrievalValidation(full.select(validation_rows), [groups[i] for i in validation_rows], distractors)
        return cls(ds, *build_labels(ds, [by_category[i] for i in train_rows]), teacher=None if teacher is None else teacher[train_rows],
                   distill_weights=None if weights is None else weights[train_rows], validation=validation,
                   training_cutoff=cutoff, epoch_rows=epoch_rows)
