"""Locked-image tuning of GR-Lite-text: GR-Lite-mini's image tower frozen, a small text tower trained to meet it.

The image tower's embedding of every training image is computed once and cached (`training_texts`); each step then
encodes a batch of texts (both forms of `text_queries` of every training row) and pulls each text towards the
embeddings of the images it describes, away from the rest of the batch: a symmetric InfoNCE loss (text → image and
image → text) whose positives are all the batch's pairs of the same category and attribute set, so two views of one
product, or two products the words cannot tell apart, are never pushed apart. The tokenizer is trained on the
training texts at the start of a run (`tokenizer.py`). Only training sets are read (`lookbench build ... --train-out`;
check them with `python -m lookbench.training.check_disjoint`); `--validation-fraction` holds out whole
products and scores text → image retrieval on them, for choosing hyper-parameters.

    python -m lookbench.training.train_gr_lite_text --data MINI_TRAIN FMNIST_TRAIN --output OUT [--resume latest]

OUT/model is the final model folder (AutoModel-loadable, with tokenizer, image processor, code files and a model
card), OUT/train_log.jsonl the loss log, OUT/validation.jsonl the validation scores, OUT/checkpoints/step-N the
resumable states (`--resume latest` continues exactly where the newest stopped; written and checked by
`lookbench.training.training_state`, no pickled objects), OUT/image_embeddings the cache.
"""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from huggingface_hub import ModelCard, ModelCardData
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from lookbench.citation import BIBTEX
from lookbench.dataset_builder.text_queries import FORMS, TEMPLATE_VERSION
from lookbench.errors import report_errors
from lookbench.models.gr_lite import GrLiteConfig, GrLiteModel, GrLiteTextConfig, GrLiteTextModel, processor_for
from lookbench.models.gr_lite.configuration_gr_lite_text import TEXT_PRESET
from lookbench.training import training_state
from lookbench.training.train_gr_lite import build_optimizer, warmup_cosine
from lookbench.training.tokenizer import MAX_LENGTH, train_tokenizer
from lookbench.training.training_texts import TextPairs

CARD_TEMPLATE = Path(__file__).with_name("gr_lite_text_card_template.md")
MAX_LOGIT_SCALE = float(np.log(100.0))  # CLIP's cap on the inverse temperature


def default_image_tower() -> Path:
    from lookbench.encoders.entries import gr_lite_mini_folder

    return gr_lite_mini_folder()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, nargs="+",
                   help="training set folder(s) written by `lookbench build ... --train-out` (never a test release)")
    p.add_argument("--split", default="train")
    p.add_argument("--output", required=True)
    p.add_argument("--image-tower", type=Path, help="the GR-Lite model folder whose image tower is frozen (default: the committed gr-lite-mini)")
    p.add_argument("--width", type=int, help=f"text tower width (default {TEXT_PRESET['hidden_size']}; heads of 32, MLP 4x)")
    p.add_argument("--depth", type=int, help=f"text tower layers (default {TEXT_PRESET['num_hidden_layers']})")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=float, default=3.0)
    p.add_argument("--max-steps", type=int, help="overrides --epochs")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--warmup-steps", type=int, default=100)
    p.add_argument("--data-repeat", type=int, nargs="+",
                   help="how often each --data folder's rows appear in an epoch, in order (default 1 each)")
    p.add_argument("--max-rows", type=int, nargs="+",
                   help="read only the first N rows of each --data folder (one N for all, or one per folder, in order; 0 = "
                        "all): every row read costs one forward pass of the image tower")
    p.add_argument("--validation-fraction", type=float, default=0.0,
                   help="hold out this fraction of the products (by item id) and score text → image retrieval on them")
    p.add_argument("--validate-every", type=int, default=500, help="score the validation split every N steps (and at the end)")
    p.add_argument("--save-every", type=int, default=200, help="checkpoint every N steps (and at the end)")
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--resume", help="checkpoint folder, or 'latest' for the newest in OUT/checkpoints (none yet: start at step 0)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.data_repeat and (len(args.data_repeat) != len(args.data) or min(args.data_repeat) < 1):
        p.error(f"--data-repeat needs one integer >= 1 per --data folder ({len(args.data)}), got {args.data_repeat}")
    if args.max_rows and (len(args.max_rows) not in (1, len(args.data)) or min(args.max_rows) < 0):
        p.error(f"--max-rows needs one count >= 0, or one per --data folder ({len(args.data)}), got {args.max_rows}")
    if args.width is not None and (args.width <= 0 or args.width % 32):
        p.error(f"--width must be a positive multiple of 32, got {args.width}")
    return args


@dataclass
class Session:
    """One training session: the data, tokenizer and model it builds, and the progress its steps advance."""

    args: argparse.Namespace
    pairs: TextPairs
    tokenizer: PreTrainedTokenizerFast
    token_ids: torch.Tensor  # (texts × length) every training text, tokenized once
    token_mask: torch.Tensor
    model: GrLiteTextModel
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    max_steps: int
    image_tower: Path
    step: int = 0
    elapsed_before: float = 0.0
    started: float = field(default_factory=time.time)
    running: list[float] = field(default_factory=list)
    first_loss: float | None = None
    last_loss: float = float("nan")

    @property
    def out(self) -> Path:
        return Path(self.args.output)

    @property
    def steps_per_epoch(self) -> int:
        return len(self.pairs) // self.args.batch_size

    def train_seconds(self) -> float:
        return self.elapsed_before + time.time() - self.started


def tokenizer_for(out: Path, texts: list[str], resuming: bool) -> PreTrainedTokenizerFast:
    """OUT/tokenizer: trained on the run's texts when a run starts, read back when it resumes a checkpoint (so the ids
    never move)."""
    folder = out / "tokenizer"
    if resuming:
        if not (folder / "tokenizer.json").is_file():
            raise FileNotFoundError(f"{folder} holds no tokenizer.json: the checkpoint to resume has lost its tokenizer.")
        return AutoTokenizer.from_pretrained(folder)
    tokenizer = train_tokenizer(texts)
    tokenizer.save_pretrained(folder)
    return tokenizer


def build_model(args: argparse.Namespace, tower: GrLiteModel, vocab_size: int) -> GrLiteTextModel:
    """A random text tower of the `--width`/`--depth` asked beside the frozen image tower's exact weights."""
    text = dict(TEXT_PRESET, vocab_size=vocab_size, max_position_embeddings=MAX_LENGTH)
    if args.width:
        text.update(hidden_size=args.width, intermediate_size=4 * args.width, num_attention_heads=args.width // 32)
    if args.depth:
        text.update(num_hidden_layers=args.depth)
    model = GrLiteTextModel(GrLiteTextConfig(vision_config=tower.config.to_dict(), text_config=text))
    model.vision_model.load_state_dict(tower.state_dict())
    model.vision_model.requires_grad_(False)
    return model


def start_session(args: argparse.Namespace, resuming: bool) -> Session:
    """Load the data (computing the image embeddings on first use), the tokenizer (read back when `resuming` a
    checkpoint) and the model (its weights not yet resumed)."""
    from lookbench.encoders.base import read_config
    from lookbench.encoders.registry import load_encoder

    tower_folder = args.image_tower or default_image_tower()
    model_type = read_config(tower_folder).get("model_type")
    if model_type != GrLiteConfig.model_type:
        raise ValueError(f"--image-tower {tower_folder} is a {model_type!r} model folder, not a GR-Lite one ({GrLiteConfig.model_type!r}).")
    pairs = TextPairs.load(args, load_encoder(str(tower_folder), device="cpu"))
    if len(pairs) < args.batch_size:
        raise ValueError(f"{len(pairs)} training pairs are fewer than one batch of {args.batch_size}.")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = tokenizer_for(out, pairs.texts, resuming)
    tokens = tokenizer(pairs.texts, padding=True, truncation=True, return_tensors="pt")
    torch.manual_seed(args.seed)
    model = build_model(args, GrLiteModel.from_pretrained(tower_folder), len(tokenizer))
    optimizer = build_optimizer(model, args)
    max_steps = args.max_steps or max(1, round(args.epochs * (len(pairs) // args.batch_size)))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(args.warmup_steps, max_steps))
    return Session(args, pairs, tokenizer, tokens["input_ids"], tokens["attention_mask"], model, optimizer, scheduler,
                   max_steps, Path(tower_folder))


def trained_state(model: GrLiteTextModel) -> dict[str, torch.Tensor]:
    """The weights training changes: everything but the frozen image tower."""
    return {k: v for k, v in model.state_dict().items() if not k.startswith("vision_model.")}


def save_checkpoint(session: Session) -> None:
    """OUT/checkpoints/step-N (`training_state`): text tower, optimizer, schedule and RNG states, then
    trainer_state.json (written last: complete)."""
    folder = session.out / "checkpoints" / f"step-{session.step:06d}"
    training_state.write(folder, trained_state(session.model), session.optimizer, session.scheduler, rank=0)
    training_state.write_trainer_state(folder, {
        "step": session.step, "train_seconds": session.train_seconds(), "texts": len(session.pairs.texts),
        "samples": len(session.pairs), "running": session.running, "first_loss": session.first_loss})


def checkpoint_to_resume(args: argparse.Namespace) -> Path | None:
    """The checkpoint `--resume` names (`latest`: the newest complete one in OUT/checkpoints, if any)."""
    if not args.resume:
        return None
    if args.resume == "latest":
        return training_state.latest_checkpoint(Path(args.output) / "checkpoints")
    if not (Path(args.resume) / "trainer_state.json").is_file():
        raise FileNotFoundError(f"--resume {args.resume} is not a complete checkpoint (no trainer_state.json).")
    return Path(args.resume)


def resume(session: Session, folder: Path | None) -> None:
    """Load the checkpoint `folder`: text tower, optimizer, schedule, RNG, step and the losses since the last log
    line, each file checked first (`training_state`): a bad one ends the run in one line naming it."""
    args = session.args
    if folder is None:
        print(f"--resume latest: no checkpoint in {session.out / 'checkpoints'} yet, starting at step 0")
        return
    state = training_state.read_trainer_state(folder, {"train_seconds": float, "texts": int, "samples": int,
                                                       "running": list[float], "first_loss": (float, type(None))},
                                              last_step=session.max_steps)
    now = {"texts": len(session.pairs.texts), "samples": len(session.pairs)}
    if {key: state[key] for key in now} != now:
        raise ValueError(f"Checkpoint {folder} was trained on {state['samples']} pairs of {state['texts']} texts; "
                         f"--data {' '.join(args.data)} gives {now['samples']} of {now['texts']} now.")
    # a text tower of another --width/--depth is refused by its weights' keys or shapes
    training_state.restore(folder, session.model, trained_state(session.model), session.optimizer, session.scheduler, rank=0,
                           step=state["step"])
    session.step, session.elapsed_before = state["step"], state["train_seconds"]
    session.running, session.first_loss = state["running"], state["first_loss"]  # the next log line averages what it would have
    print(f"Resumed from {folder} at step {session.step}")


def open_logs(session: Session) -> None:
    """Record the arguments and drop log entries written after the checkpoint being resumed."""
    for log in (session.out / "train_log.jsonl", session.out / "validation.jsonl"):
        if session.args.resume and log.exists():
            kept = [line for line in log.read_text().splitlines() if json.loads(line)["step"] <= session.step]
            log.write_text("".join(line + "\n" for line in kept))
    (session.out / "train_args.json").write_text(json.dumps(vars(session.args), indent=2, default=str))


def contrastive_loss(text: torch.Tensor, image: torch.Tensor, classes: torch.Tensor, logit_scale: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE over a batch of unit-length (text, image) pairs; pairs of one class are each other's positives
    (each row's target spreads evenly over its positives)."""
    logits = logit_scale.exp() * text @ image.T
    positives = (classes[:, None] == classes[None, :]).float()
    targets = positives / positives.sum(1, keepdim=True)  # symmetric positives: the same targets serve both directions
    text_to_image = -(targets * logits.log_softmax(1)).sum(1).mean()
    image_to_text = -(targets * logits.T.log_softmax(1)).sum(1).mean()
    return (text_to_image + image_to_text) / 2


def batch_samples(session: Session, step: int) -> np.ndarray:
    """The sample indices of a step: a slice of its epoch's permutation, which depends only on (seed, epoch)."""
    epoch, offset = divmod(step, session.steps_per_epoch)
    order = np.random.default_rng([session.args.seed, epoch]).permutation(len(session.pairs))
    return order[offset * session.args.batch_size:(offset + 1) * session.args.batch_size]


def encode_texts(session: Session, text_indices: np.ndarray) -> torch.Tensor:
    """Unit-length embeddings of training texts by index, each distinct text encoded once, trimmed to its batch's longest."""
    unique, inverse = np.unique(text_indices, return_inverse=True)
    mask = session.token_mask[unique]
    length = int(mask.sum(1).max())
    return session.model.get_text_features(session.token_ids[unique, :length], mask[:, :length])[torch.from_numpy(inverse)]


def train_step(session: Session) -> None:
    args, pairs = session.args, session.pairs
    samples = batch_samples(session, session.step)
    # dropout depends only on (seed, step), so a resumed run draws what the uninterrupted one drew
    torch.manual_seed(args.seed * 1_000_003 + session.step)
    text = encode_texts(session, pairs.sample_text[samples])
    image = pairs.embeddings[pairs.sample_row[samples]]
    loss = contrastive_loss(text, image, torch.from_numpy(pairs.sample_class[samples]), session.model.logit_scale)
    loss.backward()
    session.optimizer.step()
    session.scheduler.step()
    session.optimizer.zero_grad()
    with torch.no_grad():
        session.model.logit_scale.clamp_(0, MAX_LOGIT_SCALE)
    session.step += 1
    session.running.append(loss.item())


def log_step(session: Session) -> None:
    session.last_loss = float(np.mean(session.running))
    session.first_loss = session.last_loss if session.first_loss is None else session.first_loss
    session.running = []
    record = {"step": session.step, "epoch": session.step / session.steps_per_epoch, "loss": session.last_loss,
              "logit_scale": session.model.logit_scale.exp().item(), "lr": session.scheduler.get_last_lr()[0],
              "train_seconds": round(session.train_seconds(), 2)}
    with (session.out / "train_log.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")


@torch.no_grad()
def validate(session: Session) -> dict:
    """Text → image retrieval of the held-out products' texts (each form) against their images; appended to
    OUT/validation.jsonl."""
    pairs, model = session.pairs, session.model
    model.eval()
    gallery = pairs.validation_gallery().numpy()
    scores = {"step": session.step}
    for form in FORMS:
        tokens = session.tokenizer(pairs.validation_texts(form), padding=True, truncation=True, return_tensors="pt")
        queries = model.get_text_features(tokens["input_ids"], tokens["attention_mask"]).numpy()
        scores[form] = pairs.validation.score_embeddings(queries, gallery)
    model.train()
    with (session.out / "validation.jsonl").open("a") as f:
        f.write(json.dumps(scores) + "\n")
    print(f"step {session.step} validation: " + json.dumps({form: scores[form]['fine_recall@1'] for form in FORMS}))
    return scores


def write_card(folder: Path, facts: dict) -> None:
    """The model card of a trained folder: the template, with this run's facts filled in."""
    data = ModelCardData(
        library_name="transformers", pipeline_tag="feature-extraction", license="apache-2.0",
        tags=["fashion", "image-retrieval", "text-to-image", "lit", "lookbench"], metrics=["lookbench/fine_recall"],
        training_cutoff=facts["training_cutoff"] and datetime.date.fromisoformat(facts["training_cutoff"]),
    )
    ModelCard.from_template(data, template_path=str(CARD_TEMPLATE), citation=BIBTEX.strip(), **facts).save(folder / "README.md")


def save_model(session: Session, command: str) -> Path:
    """OUT/model: the model, its tokenizer and image processor, a training summary and the filled-in card."""
    final, model, args = session.out / "model", session.model, session.args
    model.eval()
    model.save_pretrained(final)
    session.tokenizer.save_pretrained(final)
    processor_for(model.config.vision_config).save_pretrained(final)
    validation = session.out / "validation.jsonl"
    facts = {
        "command": command, "data": " + ".join(args.data), "split": args.split, "sets": session.pairs.sets,
        "samples_per_epoch": len(session.pairs), "texts": len(session.pairs.texts), "forms": list(FORMS),
        "template_version": TEMPLATE_VERSION, "vocab_size": len(session.tokenizer),
        "image_tower": str(session.image_tower), "training_cutoff": session.pairs.training_cutoff,
        "steps": session.step, "batch_size": args.batch_size, "epochs": session.step / session.steps_per_epoch,
        "lr": args.lr, "weight_decay": args.weight_decay, "warmup_steps": args.warmup_steps,
        "logit_scale": model.logit_scale.exp().item(), "train_seconds": session.train_seconds(),
        "device": f"cpu ({torch.get_num_threads()} threads)", "first_loss": session.first_loss, "final_loss": session.last_loss,
        "architecture": {
            "text_width": model.config.text_config.hidden_size, "text_depth": model.config.text_config.num_hidden_layers,
            "text_heads": model.config.text_config.num_attention_heads, "embedding_dim": model.config.embedding_dim,
            "text_parameters": sum(p.numel() for n, p in model.named_parameters() if not n.startswith("vision_model.")),
            "parameters": model.num_parameters(),
        },
        "validation": None if session.pairs.validation is None else {
            "fraction": args.validation_fraction, "queries": len(session.pairs.validation.queries),
            "gallery": len(session.pairs.validation.gallery),
            "scores": json.loads(validation.read_text().splitlines()[-1]),
        },
    }
    (final / "training_summary.json").write_text(json.dumps(facts, indent=2))
    write_card(final, facts)
    print(f"Saved {final} after {session.step} steps ({facts['train_seconds'] / 60:.1f} min)")
    return final


def main(argv: list[str] | None = None) -> Path:
    args = parse_args(argv)
    checkpoint = checkpoint_to_resume(args)
    session = start_session(args, resuming=checkpoint is not None)
    if args.resume:
        resume(session, checkpoint)
    open_logs(session)
    session.model.train()
    while session.step < session.max_steps:
        train_step(session)
        last = session.step == session.max_steps
        if session.step % args.log_every == 0 or last:
            log_step(session)
        if session.pairs.validation is not None and (session.step % args.validate_every == 0 or last):
            validate(session)
        if session.step % args.save_every == 0 or last:
            save_checkpoint(session)
    command = "python -m lookbench.training.train_gr_lite_text " + shlex.join(sys.argv[1:] if argv is None else argv)
    return save_model(session, command)


if __name__ == "__main__":
    sys.exit(report_errors("train_gr_lite_text", main))
