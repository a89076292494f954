"""Attribute-supervised GR-Lite training (the paper's recipe, docs/architecture.md §1) on `accelerate`.

Every (category, full attribute set) combination in the train split is one ArcFace class, so images that a
strict Fine Recall query would accept as matches are pulled together and everything else is pushed apart by
an additive angular margin. Full fine-tuning of the whole backbone; augmentations are PIL-only (random
resized crop, horizontal flip, brightness/contrast jitter — no hue/saturation, so colour attributes stay true).
GR-Lite starts from a pretrained backbone; GR-Lite-mini instead distils an ImageNet encoder's features
(`--teacher-features`, `--distill-weight`, written once by `teacher_features.py`). `--validation-fraction`
holds out whole products and scores retrieval on them (`holdout.py`), for choosing hyper-parameters. What a run
reads is `training_data.py`, the losses are `heads.py`; this module is the loop, its checkpoints, the CLI and the card.

    python -m lookbench.training.train_gr_lite --data DIR --output OUT [--preset gr-lite-mini]
    ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu --num_processes 2 --num_machines 1 \\
        -m lookbench.training.train_gr_lite --data DIR --output OUT

OUT/model is the final model folder (AutoModel-loadable, with processor, code files and a model card),
OUT/train_log.jsonl the loss log, OUT/validation.jsonl the validation scores, OUT/checkpoints/step-N the
resumable states (`--resume latest`; `training_state.py`: safetensors and tensors only, never accelerate's pickles).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, set_seed
from huggingface_hub import ModelCard, ModelCardData
from torch import nn
from tqdm.auto import tqdm

from lookbench.citation import BIBTEX
from lookbench.dataset_builder import fashion_mnist
from lookbench.errors import report_errors
from lookbench.models.gr_lite import GrLiteConfig, GrLiteImageProcessor, GrLiteModel, processor_for
from lookbench.models.gr_lite.configuration_gr_lite import PRESETS
from lookbench.training import training_state
from lookbench.training.heads import ArcFaceHead, AttributeHeads, Distillation, MetricLearner
from lookbench.training.training_data import TEACHER, Augment, TrainData, TrainImages

CARD_TEMPLATE = Path(__file__).with_name("gr_lite_card_template.md")


def write_card(folder: Path, facts: dict) -> None:
    """The model card of a trained folder: the template, with the training facts of this run filled in."""
    data = ModelCardData(
        library_name="transformers", pipeline_tag="image-feature-extraction", license="apache-2.0",
        tags=["fashion", "image-retrieval", "dinov3", "lookbench"], metrics=["lookbench/fine_recall"],
        # what `lookbench evaluate --cutoff model` reads; a date, so the YAML says 2023-12-31, not a quoted string
        training_cutoff=facts["training_cutoff"] and datetime.date.fromisoformat(facts["training_cutoff"]),
    )
    ModelCard.from_template(data, template_path=str(CARD_TEMPLATE), citation=BIBTEX.strip(), **facts).save(folder / "README.md")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, nargs="+",
                   help="dataset folder(s) written by `lookbench build` (several: trained on together, e.g. Mini and Fashion-MNIST)")
    p.add_argument("--data-config", default=None, help="dataset config name, if the folder has several")
    p.add_argument("--split", default="train")
    p.add_argument("--output", required=True)
    p.add_argument("--preset", default="gr-lite-mini", choices=sorted(PRESETS))
    p.add_argument("--init", help="start from this GR-Lite model folder instead of a random --preset")
    p.add_argument("--image-size", type=int, help="override the preset's input size")
    p.add_argument("--width", type=int, help="override the preset's backbone width (a multiple of 64: heads of 64; MLP 4x)")
    p.add_argument("--depth", type=int, help="override the preset's number of transformer layers")
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
    p.add_argument("--category-weight", type=float, default=0.0,
                   help="the category head's loss once more, with this weight (needs --attribute-weight > 0): "
                        "what Coarse Recall checks, beside the mean over all heads")
    p.add_argument("--arcface-classes", nargs="+", default=["attributes"], choices=["attributes", "category"],
                   help="what one ArcFace class is, for all --data folders or one per folder, in order: 'attributes' = "
                        "category × full attribute set (what strict Fine Recall matches); 'category' = the category alone "
                        "(what Coarse Recall matches: a set whose attributes split its categories finely)")
    p.add_argument("--data-repeat", type=int, nargs="+",
                   help="how often each --data folder's rows appear in an epoch, in order (default 1 each): "
                        "weights a small set up beside a large one")
    p.add_argument("--teacher-features", nargs="+",
                   help="file(s) written by `python -m lookbench.training.teacher_features`, one per --data folder, in order")
    p.add_argument("--distill-weight", type=float, nargs="+", default=[0.0],
                   help="weight of the distillation loss (needs --teacher-features): one for all --data folders, or one "
                        "per folder, in order (an image pair of two sets weighs the geometric mean of theirs)")
    p.add_argument("--distill-loss", default="cosine", choices=["cosine", "similarity"],
                   help="cosine: a linear map of the embedding regresses the teacher feature; similarity: match in-batch cosines")
    p.add_argument("--validation-fraction", type=float, default=0.0,
                   help="hold out this fraction of the products (by item id) and score retrieval on them; 0 = train on all")
    p.add_argument("--validation-distractors", metavar="DIR",
                   help="a folder written by `lookbench build` whose noise gallery joins the validation gallery, as the "
                        "benchmark's noise joins every subset's (build it apart from any test release, e.g. "
                        "`lookbench build --source mini --seed 1 --subsets noise`)")
    p.add_argument("--validate-every", type=int, default=500, help="score the validation split every N steps (and at the end)")
    p.add_argument("--save-every", type=int, default=200, help="checkpoint every N steps (and at the end)")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--resume", help="checkpoint folder, or 'latest' for the newest in OUT/checkpoints (none yet: start at step 0, "
                                    "so one command starts and restarts a run)")
    p.add_argument("--mixed-precision", default="no", choices=["no", "bf16"])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if len(args.distill_weight) not in (1, len(args.data)) or min(args.distill_weight) < 0:
        p.error(f"--distill-weight needs one weight >= 0, or one per --data folder ({len(args.data)}), got {args.distill_weight}")
    if len(args.arcface_classes) not in (1, len(args.data)):
        p.error(f"--arcface-classes needs one value, or one per --data folder ({len(args.data)}), got {args.arcface_classes}")
    if (max(args.distill_weight) > 0) != bool(args.teacher_features):
        p.error("--distill-weight > 0 and --teacher-features go together")
    if args.data_repeat and (len(args.data_repeat) != len(args.data) or min(args.data_repeat) < 1):
        p.error(f"--data-repeat needs one integer >= 1 per --data folder ({len(args.data)}), got {args.data_repeat}")
    if args.teacher_features and len(args.teacher_features) != len(args.data):
        p.error(f"--teacher-features names {len(args.teacher_features)} file(s) for {len(args.data)} --data folder(s); give one per folder")
    if args.category_weight < 0:
        p.error(f"--category-weight must be >= 0, got {args.category_weight}")
    if args.category_weight and args.attribute_weight <= 0:
        p.error("--category-weight needs --attribute-weight > 0 (the category head is one of the attribute heads)")
    if args.validation_distractors and not args.validation_fraction:
        p.error("--validation-distractors needs --validation-fraction > 0 (they join the held-out products' gallery)")
    if args.init and (args.image_size or args.width or args.depth):
        p.error("--image-size, --width and --depth cannot change an --init model")
    if args.width is not None and (args.width <= 0 or args.width % 64):
        p.error(f"--width must be a positive multiple of 64, got {args.width}")
    return args


def per_set_fact(values: list, folders: list[str]):
    """A per-folder flag as the summary records it: the value, or a folder → value dict when they differ."""
    return values[0] if len(values) == 1 else dict(zip(folders, values))


@dataclass
class Session:
    """One training session: what `start_session` builds, and the progress the steps below advance."""

    args: argparse.Namespace
    accelerator: Accelerator
    data: TrainData
    processor: GrLiteImageProcessor
    train_images: TrainImages
    learner: nn.Module  # prepared (DDP-wrapped when there are several processes)
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    loader: torch.utils.data.DataLoader
    max_steps: int
    step: int = 0
    elapsed_before: float = 0.0  # training seconds of the earlier sessions this one resumes
    started: float = field(default_factory=time.time)
    samples_seen: int = 0
    running: list[dict[str, float]] = field(default_factory=list)  # the loss terms of each step since the last log line
    first_loss: float | None = None
    last_loss: float = float("nan")

    @property
    def out(self) -> Path:
        return Path(self.args.output)

    @property
    def checkpoint_dir(self) -> Path:
        return self.out / "checkpoints"

    @property
    def log_path(self) -> Path:
        return self.out / "train_log.jsonl"

    @property
    def validation_path(self) -> Path:
        return self.out / "validation.jsonl"

    @property
    def steps_per_epoch(self) -> int:
        return len(self.loader)

    def train_seconds(self) -> float:
        return self.elapsed_before + time.time() - self.started


def model_config(args: argparse.Namespace) -> GrLiteConfig:
    """The `--preset` with the `--image-size`, `--width` and `--depth` overrides (heads of 64 channels, MLP 4x)."""
    preset = PRESETS[args.preset]
    vision = dict(preset["vision_config"])
    if args.width:
        vision.update(hidden_size=args.width, intermediate_size=4 * args.width, num_attention_heads=args.width // 64)
    if args.depth:
        vision.update(num_hidden_layers=args.depth)
    return GrLiteConfig.from_preset(args.preset, vision_config=vision, image_size=args.image_size or preset["image_size"])


def build_learner(args: argparse.Namespace, data: TrainData) -> MetricLearner:
    """The model (random `--preset` or `--init` folder) with its ArcFace, attribute and distillation heads."""
    model = GrLiteModel.from_pretrained(args.init) if args.init else GrLiteModel(model_config(args))
    # the mask token only serves masked-image pre-training; freezing it keeps DDP from waiting for its gradient
    model.backbone.embeddings.mask_token.requires_grad_(False)
    dim = model.config.embedding_dim
    attribute_heads = (
        AttributeHeads(dim, [len(v) for v in data.vocab.values()], args.arcface_scale) if args.attribute_weight > 0 else None
    )
    head = ArcFaceHead(dim, len(data.classes), args.arcface_scale, args.arcface_margin)
    distillation = Distillation(dim, data.teacher.shape[1], args.distill_loss) if data.teacher is not None else None
    return MetricLearner(model, head, attribute_heads, args.attribute_weight, distillation,
                         list(data.vocab).index("category"), args.category_weight)


def build_optimizer(learner: nn.Module, args: argparse.Namespace) -> torch.optim.Optimizer:
    """AdamW with weight decay on matrices only (not on norms, biases, tokens)."""
    params = [p for p in learner.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": args.weight_decay},
        {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=args.lr)


def warmup_cosine(warmup_steps: int, max_steps: int):
    """Learning-rate factor: linear warm-up, then cosine decay to 0 at `max_steps`."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / max(1, max_steps - warmup_steps)))

    return factor


def start_session(args: argparse.Namespace) -> Session:
    """Build the learner, its data loader, optimizer and schedule, prepared by `accelerate` (no resume yet)."""
    accelerator = Accelerator(
        mixed_precision=args.mixed_precision, dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True)
    )
    world = accelerator.num_processes
    if args.batch_size % world:
        raise ValueError(f"--batch-size {args.batch_size} is not divisible by the {world} processes.")
    set_seed(args.seed, device_specific=True)
    data = TrainData.load(args)
    learner = build_learner(args, data)
    processor = processor_for(learner.model.config)
    train_images = TrainImages(data, processor, Augment(), args.seed)
    loader = torch.utils.data.DataLoader(train_images, batch_size=args.batch_size // world, shuffle=True, drop_last=True)
    if len(loader) == 0:
        raise ValueError(f"{len(data.ds)} training images are fewer than one batch of {args.batch_size}.")
    learner, optimizer, loader = accelerator.prepare(learner, build_optimizer(learner, args), loader)
    max_steps = args.max_steps or max(1, round(args.epochs * len(loader)))
    # stepped once per optimizer step by us (a prepared scheduler would advance once per process); checkpointed by
    # `training_state`, not registered with accelerate, whose load_state unpickles registered objects
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(args.warmup_steps, max_steps))
    return Session(args, accelerator, data, processor, train_images, learner, optimizer, scheduler, loader, max_steps)


def resume(session: Session) -> None:
    """Load `--resume` (a checkpoint folder or `latest`): weights, optimizer, schedule, this process's RNG and step,
    each file checked first (`training_state`): a bad one ends the run in one line naming it."""
    args, accelerator = session.args, session.accelerator
    folder = training_state.latest_checkpoint(session.checkpoint_dir) if args.resume == "latest" else Path(args.resume)
    if folder is None:
        accelerator.print(f"--resume latest: no checkpoint in {session.checkpoint_dir} yet, starting at step 0")
        return
    state = training_state.read_trainer_state(folder, {"train_seconds": float, "classes": list, "world_size": int},
                                              last_step=session.max_steps)
    if state["classes"] != session.data.classes:
        raise ValueError(f"Checkpoint {folder} was trained on different classes than {args.data} has now.")
    if state["world_size"] != accelerator.num_processes:  # each process's RNG states are its own
        raise ValueError(f"Checkpoint {folder} was written by {state['world_size']} process(es); resume it with as many, "
                         f"not {accelerator.num_processes}.")
    learner = accelerator.unwrap_model(session.learner)
    training_state.restore(folder, learner, learner.state_dict(), session.optimizer, session.scheduler, accelerator.process_index,
                           step=state["step"])
    session.step, session.elapsed_before = state["step"], state["train_seconds"]
    session.accelerator.print(f"Resumed from {folder} at step {session.step}")


def open_log(session: Session) -> None:
    """Create OUT, record the arguments, and drop log entries written after the checkpoint being resumed."""
    if not session.accelerator.is_main_process:
        return
    session.out.mkdir(parents=True, exist_ok=True)
    for log in (session.log_path, session.validation_path):
        if session.args.resume and log.exists():
            kept = [line for line in log.read_text().splitlines() if json.loads(line)["step"] <= session.step]
            log.write_text("".join(line + "\n" for line in kept))
    (session.out / "train_args.json").write_text(json.dumps(vars(session.args), indent=2))


def log_step(session: Session) -> None:
    """Average the loss terms since the last log line and append them to OUT/train_log.jsonl."""
    means = {key: float(np.mean([terms[key] for terms in session.running])) for key in session.running[0]}
    session.last_loss = means["loss"]
    session.first_loss = session.last_loss if session.first_loss is None else session.first_loss
    session.running = []
    if session.accelerator.is_main_process:
        record = {
            "step": session.step, "epoch": session.step / session.steps_per_epoch, "loss": session.last_loss,
            **{f"{key}_loss": value for key, value in means.items() if key != "loss"},
            "lr": session.scheduler.get_last_lr()[0], "world_size": session.accelerator.num_processes,
            "train_seconds": round(session.train_seconds(), 2),
        }
        with session.log_path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def validate(session: Session) -> None:
    """Score retrieval on the held-out products (main process) and append it to OUT/validation.jsonl."""
    accelerator = session.accelerator
    if accelerator.is_main_process:
        model = accelerator.unwrap_model(session.learner).model
        model.eval()
        scores = session.data.validation.score(model, session.processor)
        model.train()
        with session.validation_path.open("a") as f:
            f.write(json.dumps({"step": session.step, **scores}) + "\n")
        accelerator.print(f"step {session.step} validation: {scores}")
    accelerator.wait_for_everyone()


def save_checkpoint(session: Session) -> None:
    """OUT/checkpoints/step-N (`training_state`): weights, optimizer, schedule, every process's RNG states, then the
    step, time, classes and process count `resume` checks."""
    accelerator = session.accelerator
    folder = session.checkpoint_dir / f"step-{session.step:06d}"
    weights = accelerator.unwrap_model(session.learner).state_dict() if accelerator.is_main_process else None
    training_state.write(folder, weights, session.optimizer, session.scheduler, accelerator.process_index)
    accelerator.wait_for_everyone()  # trainer_state.json marks the folder complete: every process has written its part
    if accelerator.is_main_process:
        training_state.write_trainer_state(folder, {"step": session.step, "train_seconds": session.train_seconds(),
                                                    "classes": session.data.classes, "world_size": accelerator.num_processes})
    accelerator.wait_for_everyone()


def train_epoch(session: Session, progress: tqdm) -> None:
    """Run the rest of the current epoch (all of it unless resuming mid-epoch), up to `max_steps`."""
    args, accelerator = session.args, session.accelerator
    epoch, skip = divmod(session.step, session.steps_per_epoch)
    session.loader.set_epoch(epoch)
    session.train_images.epoch = epoch
    batches = accelerator.skip_first_batches(session.loader, skip) if skip else session.loader
    for batch in batches:
        # the model's own randomness (DINOv3's RoPE coordinate jitter) depends only on (seed, step, rank), so
        # a resumed run does not depend on how many RNG draws re-creating the data loader took
        torch.manual_seed(args.seed * 1_000_003 + session.step * accelerator.num_processes + accelerator.process_index)
        terms = session.learner(**batch)
        accelerator.backward(terms["loss"])
        session.optimizer.step()
        session.scheduler.step()
        session.optimizer.zero_grad()
        session.step += 1
        session.samples_seen += len(batch["labels"])
        session.running.append({key: accelerator.reduce(value.detach(), reduction="mean").item() for key, value in terms.items()})
        progress.update(1)
        last = session.step == session.max_steps
        if session.step % args.log_every == 0 or last:
            log_step(session)
            progress.set_postfix(loss=f"{session.last_loss:.3f}")
        if session.data.validation is not None and (session.step % args.validate_every == 0 or last):
            validate(session)
        if session.step % args.save_every == 0 or last:
            save_checkpoint(session)
        if session.step >= session.max_steps:
            break


def read_last(log: Path) -> dict:
    return json.loads(log.read_text().splitlines()[-1])


def save_model(session: Session, command: str) -> Path:
    """OUT/model: the trained model, its processor, a training summary and the filled-in model card."""
    accelerator, args, data = session.accelerator, session.args, session.data
    per_rank = accelerator.gather(torch.tensor([session.samples_seen], device=accelerator.device)).tolist()
    accelerator.wait_for_everyone()
    final = session.out / "model"
    if accelerator.is_main_process:
        trained = accelerator.unwrap_model(session.learner).model
        trained.eval()
        trained.save_pretrained(final)
        session.processor.save_pretrained(final)
        facts = {
            "command": command, "world_size": accelerator.num_processes, "data": " + ".join(args.data), "split": args.split,
            "data_repeat": args.data_repeat, "samples_per_epoch": len(data.epoch_rows),
            "num_images": len(data.ds), "num_classes": len(data.classes), "init": args.init or f"random {args.preset}",
            # Zalando's photos (MIT): the card's licence section credits them
            "fashion_mnist_rows": sum(1 for item_id in data.ds["item_id"] if item_id.startswith(fashion_mnist.ID_PREFIX)),
            "training_cutoff": data.training_cutoff,
            "steps": session.step, "batch_size": args.batch_size, "epochs": session.step / session.steps_per_epoch,
            "lr": args.lr, "arcface_scale": args.arcface_scale, "arcface_margin": args.arcface_margin,
            "arcface_classes": per_set_fact(args.arcface_classes, args.data),
            "attribute_weight": args.attribute_weight, "category_weight": args.category_weight, "attribute_heads": {n: len(v) for n, v in data.vocab.items()},
            "train_seconds": session.train_seconds(),
            "device": f"{accelerator.device} ({torch.get_num_threads()} threads/process)",
            "final_loss": session.last_loss, "first_loss": session.first_loss if session.first_loss is not None else float("nan"),
            "samples_per_rank_this_session": per_rank,
            "architecture": {
                "image_size": trained.config.image_size, "width": trained.config.vision_config.hidden_size,
                "depth": trained.config.vision_config.num_hidden_layers,
                "heads": trained.config.vision_config.num_attention_heads, "embedding_dim": trained.config.embedding_dim,
                "parameters": trained.num_parameters(),
            },
            "distillation": None if data.teacher is None else {
                "teacher": TEACHER, "features": " + ".join(args.teacher_features), "loss": args.distill_loss,
                "weight": per_set_fact(args.distill_weight, args.data),
            },
            "validation": None if data.validation is None else {
                "fraction": args.validation_fraction, "queries": len(data.validation.queries),
                "gallery": len(data.validation.gallery), "distractors": data.validation.distractors,
                "scores": read_last(session.validation_path),
            },
        }
        (final / "training_summary.json").write_text(json.dumps(facts, indent=2))
        write_card(final, facts)
        accelerator.print(f"Saved {final} after {session.step} steps ({facts['train_seconds'] / 60:.1f} min); samples per rank {per_rank}")
    return final


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    session = start_session(args)
    if args.resume:
        resume(session)
    open_log(session)
    progress = tqdm(total=session.max_steps, initial=session.step, disable=not session.accelerator.is_local_main_process, desc="train")
    session.learner.train()
    while session.step < session.max_steps:
        train_epoch(session, progress)
    progress.close()
    command = "python -m lookbench.training.train_gr_lite " + shlex.join(sys.argv[1:] if argv is None else argv)
    final = save_model(session, command)
    session.accelerator.end_training()
    return final


if __name__ == "__main__":
    sys.exit(report_errors("train_gr_lite", main))
