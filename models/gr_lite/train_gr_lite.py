"""Attribute-supervised GR-Lite training (the paper's recipe, docs/architecture.md §1) on `accelerate`.

Every (category, full attribute set) combination in the train split is one ArcFace class, so images that a
strict Fine Recall query would accept as matches are pulled together and everything else is pushed apart by
an additive angular margin. Full fine-tuning of the whole backbone; augmentations are PIL-only (random
resized crop, horizontal flip, brightness/contrast jitter — no hue/saturation, so colour attributes stay true).

    python -m lookbench.models.gr_lite.train_gr_lite --data DIR --output OUT [--preset gr-lite-mini]
    ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu --num_processes 2 --num_machines 1 \\
        -m lookbench.models.gr_lite.train_gr_lite --data DIR --output OUT

OUT/model is the final model folder (AutoModel-loadable, with processor, code files and a model card),
OUT/train_log.jsonl the loss log, OUT/checkpoints/step-N the resumable states (`--resume latest`).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import re
import shlex
import sys
import time
from pathlib import Path

import datasets
import numpy as np
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, set_seed
from PIL import Image, ImageEnhance, ImageOps
from torch import nn
from tqdm.auto import tqdm
from transformers.image_transforms import convert_to_rgb

from . import GrLiteConfig, GrLiteModel, GrLiteImageProcessor, processor_for
from .configuration_gr_lite import PRESETS

CARD_TEMPLATE = Path(__file__).with_name("README.md")
_TRAINING_BLOCK = re.compile(r"<!-- training:begin -->.*?<!-- training:end -->", re.S)


def class_key(category: str, attributes: list[dict]) -> str:
    """The ArcFace class of a record: its category plus its whole attribute set (order-free)."""
    pairs = sorted(f"{a['name']}={a['value']}" for a in attributes)
    return category + "|" + ";".join(pairs)


def build_labels(ds: datasets.Dataset) -> tuple[list[int], list[str], np.ndarray, dict[str, list[str]]]:
    """Labels read from the annotation columns only.

    Returns the ArcFace class per row and the sorted class names, plus the attribute supervision: a
    (rows × heads) matrix holding, for the category and for every attribute name, the row's value index
    (-100 where the row's category has no such attribute) and each head's sorted values.
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
        keys.append(class_key(row["category"], attributes))
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
    """(pixel_values, label) pairs: decode, augment, then the model's own processor (resize, normalise).

    The augmentation of sample i in epoch e depends only on (seed, e, i), not on the number of processes or on
    how far a data loader prefetched, so a resumed run sees exactly the images the uninterrupted run would.
    """

    def __init__(self, ds: datasets.Dataset, labels: list[int], facet_labels: np.ndarray, processor: GrLiteImageProcessor,
                 augment: Augment, seed: int):
        self.ds, self.labels, self.processor, self.augment = ds.select_columns(["image"]), labels, processor, augment
        self.facet_labels = torch.from_numpy(facet_labels)
        self.seed, self.epoch = seed, 0

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        image = self.augment(self.ds[i]["image"], random.Random(f"{self.seed}/{self.epoch}/{i}"))
        pixels = self.processor(image, return_tensors="pt")["pixel_values"][0]
        return pixels, self.labels[i], self.facet_labels[i]


class ArcFaceHead(nn.Module):
    """Additive angular margin softmax (Deng et al. 2019): logit_y = s·cos(θ_y + m), others s·cos θ_j."""

    def __init__(self, dim: int, num_classes: int, scale: float, margin: float):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_classes, dim) * 0.01)
        self.scale, self.margin = scale, margin

    def forward(self, embeds: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        cos = F.linear(F.normalize(embeds.float(), dim=-1), F.normalize(self.weight.float(), dim=-1))
        cos = cos.clamp(-1 + 1e-7, 1 - 1e-7)
        target = cos.gather(1, labels[:, None])
        with_margin = torch.cos(torch.acos(target) + self.margin)
        # beyond θ > π − m, cos(θ + m) stops decreasing; use the linear fallback so the margin keeps penalising
        with_margin = torch.where(target > math.cos(math.pi - self.margin), with_margin, target - self.margin * math.sin(self.margin))
        logits = cos.scatter(1, labels[:, None], with_margin) * self.scale
        return F.cross_entropy(logits, labels)


class AttributeHeads(nn.Module):
    """One cosine classifier per facet (category, colour, pattern, sleeve …) on the embedding.

    Each attribute is supervised on its own, so the embedding separates every attribute the strict Fine Recall
    checks, even for (category, attribute set) classes with few images.
    """

    def __init__(self, dim: int, sizes: list[int], scale: float):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(dim, n, bias=False) for n in sizes)
        self.scale = scale

    def forward(self, embeds: torch.Tensor, facet_labels: torch.Tensor) -> torch.Tensor:
        unit = F.normalize(embeds.float(), dim=-1)
        losses = []
        for j, head in enumerate(self.heads):  # every head stays in the graph (DDP), even with no labelled row here
            target = facet_labels[:, j]
            logits = self.scale * F.linear(unit, F.normalize(head.weight.float(), dim=-1))
            losses.append(F.cross_entropy(logits, target, ignore_index=-100, reduction="sum") / (target >= 0).sum().clamp(min=1))
        return torch.stack(losses).mean()


class MetricLearner(nn.Module):
    """Model + ArcFace head (+ attribute heads) as one module, so DDP synchronises all of them."""

    def __init__(self, model: GrLiteModel, head: ArcFaceHead, attribute_heads: AttributeHeads | None, attribute_weight: float):
        super().__init__()
        self.model, self.head, self.attribute_heads, self.attribute_weight = model, head, attribute_heads, attribute_weight

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor, facet_labels: torch.Tensor) -> torch.Tensor:
        embeds = self.model(pixel_values=pixel_values).image_embeds
        loss = self.head(embeds, labels)
        if self.attribute_heads is not None:
            loss = loss + self.attribute_weight * self.attribute_heads(embeds, facet_labels)
        return loss


def load_train_split(data: str, config_name: str | None, split: str) -> datasets.Dataset:
    path = Path(data)
    if not path.exists():
        raise FileNotFoundError(f"--data {data} does not exist (expected a folder written by `lookbench build`).")
    ds = datasets.load_dataset(str(path), config_name, split=split)
    if len(ds) == 0:
        raise ValueError(f"{data} split {split!r} is empty.")
    return ds


def latest_checkpoint(checkpoint_dir: Path) -> Path:
    found = sorted(checkpoint_dir.glob("step-*"), key=lambda p: int(p.name.split("-")[1]))
    if not found:
        raise FileNotFoundError(f"--resume latest: no checkpoints in {checkpoint_dir}.")
    return found[-1]


def write_card(folder: Path, facts: dict) -> None:
    """Fill the training block of the model-card template with what this run actually did."""
    lines = [
        "<!-- training:begin -->",
        "## Training run",
        "",
        f"- Command: `{facts['command']}` ({facts['world_size']} process(es))",
        f"- Data: `{facts['data']}` split `{facts['split']}`: {facts['num_images']} images, "
        f"{facts['num_classes']} ArcFace classes (category × full attribute set)",
        f"- Init: {facts['init']}; {facts['steps']} steps of global batch {facts['batch_size']} "
        f"({facts['epochs']:.1f} epochs), AdamW lr {facts['lr']}, ArcFace s={facts['arcface_scale']} m={facts['arcface_margin']}",
        f"- Attribute heads (weight {facts['attribute_weight']}): "
        + ", ".join(f"{n} ({k} values)" for n, k in facts["attribute_heads"].items()),
        f"- Wall time: {facts['train_seconds'] / 60:.1f} min on {facts['device']}; final loss {facts['final_loss']:.4f} "
        f"(first logged {facts['first_loss']:.4f})",
        "<!-- training:end -->",
    ]
    template = CARD_TEMPLATE.read_text(encoding="utf-8")
    if not _TRAINING_BLOCK.search(template):
        raise ValueError(f"{CARD_TEMPLATE} lacks the <!-- training:begin/end --> block.")
    (folder / "README.md").write_text(_TRAINING_BLOCK.sub(lambda _: "\n".join(lines), template), encoding="utf-8")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="dataset folder written by `lookbench build`")
    p.add_argument("--data-config", default=None, help="dataset config name, if the folder has several")
    p.add_argument("--split", default="train")
    p.add_argument("--output", required=True)
    p.add_argument("--preset", default="gr-lite-mini", choices=sorted(PRESETS))
    p.add_argument("--init", help="start from this GR-Lite model folder instead of a random --preset")
    p.add_argument("--image-size", type=int, help="override the preset's input size")
    p.add_argument("--batch-size", type=int, default=64, help="global batch, split across processes")
    p.add_argument("--epochs", type=float, default=10.0)
    p.add_argument("--max-steps", type=int, help="overrides --epochs")
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--weight-decay", type=float, default=0.05)
    p.add_argument("--warmup-steps", type=int, default=50)
    p.add_argument("--arcface-scale", type=float, default=30.0)
    p.add_argument("--arcface-margin", type=float, default=0.2)
    p.add_argument("--attribute-weight", type=float, default=1.0,
                   help="weight of the per-attribute (and category) cosine-softmax heads beside ArcFace; 0 = ArcFace only")
    p.add_argument("--save-every", type=int, default=200, help="checkpoint every N steps (and at the end)")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--resume", help="checkpoint folder, or 'latest' for the newest in OUT/checkpoints")
    p.add_argument("--mixed-precision", default="no", choices=["no", "bf16"])
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    accelerator = Accelerator(
        mixed_precision=args.mixed_precision, dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True)
    )
    world = accelerator.num_processes
    if args.batch_size % world:
        raise ValueError(f"--batch-size {args.batch_size} is not divisible by the {world} processes.")
    set_seed(args.seed, device_specific=True)
    out = Path(args.output)
    checkpoint_dir = out / "checkpoints"

    ds = load_train_split(args.data, args.data_config, args.split)
    labels, classes, facet_labels, vocab = build_labels(ds)
    if args.init:
        model = GrLiteModel.from_pretrained(args.init)
        if args.image_size:
            raise ValueError("--image-size cannot change the input size of an --init model.")
    else:
        overrides = {"image_size": args.image_size} if args.image_size else {}
        model = GrLiteModel(GrLiteConfig.from_preset(args.preset, **overrides))
    # the mask token only serves masked-image pre-training; freezing it keeps DDP from waiting for its gradient
    model.backbone.embeddings.mask_token.requires_grad_(False)
    processor = processor_for(model.config)
    attribute_heads = (
        AttributeHeads(model.config.embedding_dim, [len(v) for v in vocab.values()], args.arcface_scale)
        if args.attribute_weight > 0 else None
    )
    learner = MetricLearner(
        model, ArcFaceHead(model.config.embedding_dim, len(classes), args.arcface_scale, args.arcface_margin),
        attribute_heads, args.attribute_weight,
    )

    train_images = TrainImages(ds, labels, facet_labels, processor, Augment(), args.seed)
    loader = torch.utils.data.DataLoader(train_images, batch_size=args.batch_size // world, shuffle=True, drop_last=True)
    if len(loader) == 0:
        raise ValueError(f"{len(ds)} training images are fewer than one batch of {args.batch_size}.")
    params = [p for p in learner.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay}, {"params": no_decay, "weight_decay": 0.0}], lr=args.lr
    )
    learner, optimizer, loader = accelerator.prepare(learner, optimizer, loader)
    steps_per_epoch = len(loader)
    max_steps = args.max_steps or max(1, round(args.epochs * steps_per_epoch))

    def lr_factor(step: int) -> float:
        if step < args.warmup_steps:
            return (step + 1) / args.warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (step - args.warmup_steps) / max(1, max_steps - args.warmup_steps)))

    # stepped once per optimizer step by us (a prepared scheduler would advance once per process)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    accelerator.register_for_checkpointing(scheduler)

    step, elapsed_before = 0, 0.0
    if args.resume:
        resume = latest_checkpoint(checkpoint_dir) if args.resume == "latest" else Path(args.resume)
        state = json.loads((resume / "trainer_state.json").read_text())
        if state["classes"] != classes:
            raise ValueError(f"Checkpoint {resume} was trained on different classes than {args.data} has now.")
        accelerator.load_state(str(resume))
        step, elapsed_before = state["step"], state["train_seconds"]
        accelerator.print(f"Resumed from {resume} at step {step}")

    log_path = out / "train_log.jsonl"
    if accelerator.is_main_process:
        out.mkdir(parents=True, exist_ok=True)
        if args.resume and log_path.exists():  # drop entries logged after the checkpoint we resume from
            kept = [line for line in log_path.read_text().splitlines() if json.loads(line)["step"] <= step]
            log_path.write_text("".join(line + "\n" for line in kept))
        (out / "train_args.json").write_text(json.dumps(vars(args), indent=2))
    progress = tqdm(total=max_steps, initial=step, disable=not accelerator.is_local_main_process, desc="train")
    learner.train()
    start, samples_seen, running, first_loss, last_loss = time.time(), 0, [], None, float("nan")

    def save_checkpoint() -> None:
        folder = checkpoint_dir / f"step-{step:06d}"
        accelerator.save_state(str(folder))
        if accelerator.is_main_process:
            state = {"step": step, "train_seconds": elapsed_before + time.time() - start, "classes": classes}
            (folder / "trainer_state.json").write_text(json.dumps(state))
        accelerator.wait_for_everyone()

    while step < max_steps:
        epoch, skip = divmod(step, steps_per_epoch)
        loader.set_epoch(epoch)
        train_images.epoch = epoch
        batches = accelerator.skip_first_batches(loader, skip) if skip else loader
        for pixel_values, batch_labels, batch_facets in batches:
            # the model's own randomness (DINOv3's RoPE coordinate jitter) depends only on (seed, step, rank), so
            # a resumed run does not depend on how many RNG draws re-creating the data loader took
            torch.manual_seed(args.seed * 1_000_003 + step * world + accelerator.process_index)
            loss = learner(pixel_values, batch_labels, batch_facets)
            accelerator.backward(loss)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            samples_seen += len(batch_labels)
            running.append(accelerator.reduce(loss.detach(), reduction="mean").item())
            progress.update(1)
            if step % args.log_every == 0 or step == max_steps:
                last_loss = float(np.mean(running))
                first_loss = last_loss if first_loss is None else first_loss
                running = []
                progress.set_postfix(loss=f"{last_loss:.3f}")
                if accelerator.is_main_process:
                    record = {
                        "step": step, "epoch": step / steps_per_epoch, "loss": last_loss,
                        "lr": scheduler.get_last_lr()[0], "world_size": world,
                        "train_seconds": round(elapsed_before + time.time() - start, 2),
                    }
                    with log_path.open("a") as f:
                        f.write(json.dumps(record) + "\n")
            if step % args.save_every == 0 or step == max_steps:
                save_checkpoint()
            if step >= max_steps:
                break
    progress.close()

    per_rank = accelerator.gather(torch.tensor([samples_seen], device=accelerator.device)).tolist()
    accelerator.wait_for_everyone()
    final = out / "model"
    if accelerator.is_main_process:
        trained = accelerator.unwrap_model(learner).model
        trained.eval()
        trained.save_pretrained(final)
        processor.save_pretrained(final)
        train_seconds = elapsed_before + time.time() - start
        facts = {
            "command": "python -m lookbench.models.gr_lite.train_gr_lite " + shlex.join(sys.argv[1:] if argv is None else argv),
            "world_size": world, "data": args.data, "split": args.split, "num_images": len(ds),
            "num_classes": len(classes), "init": args.init or f"random {args.preset}", "steps": step,
            "batch_size": args.batch_size, "epochs": step / steps_per_epoch, "lr": args.lr,
            "arcface_scale": args.arcface_scale, "arcface_margin": args.arcface_margin,
            "attribute_weight": args.attribute_weight, "attribute_heads": {n: len(v) for n, v in vocab.items()},
            "train_seconds": train_seconds, "device": f"{accelerator.device} ({torch.get_num_threads()} threads/process)",
            "final_loss": last_loss, "first_loss": first_loss if first_loss is not None else float("nan"),
            "samples_per_rank_this_session": per_rank,
        }
        (final / "training_summary.json").write_text(json.dumps(facts, indent=2))
        write_card(final, facts)
        accelerator.print(f"Saved {final} after {step} steps ({train_seconds / 60:.1f} min); samples per rank {per_rank}")
    accelerator.end_training()
    return final


if __name__ == "__main__":
    main()
