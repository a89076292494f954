"""Score model folders, and the distillation teacher, on a training run's validation split.

A recipe is chosen against its rivals on held-out products, never on a test release: this rebuilds the run's
split from its `OUT/train_args.json` (the same --data folders, --validation-fraction and, unless overridden,
--validation-distractors) and prints one JSON line of scores (`holdout.REPORTED`, overall and per training set)
per model folder, and for EfficientNet-Lite0 computed on the same images with `--teacher`.

    python -m lookbench.training.score_validation --run OUT [--validation-distractors DIR] [--model DIR ...] [--teacher]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lookbench.errors import report_errors

from lookbench.models.gr_lite import GrLiteModel, processor_for
from lookbench.training import teacher_features
from lookbench.training.training_data import TEACHER, TrainData


def run_args(run: Path, distractors: str | None) -> argparse.Namespace:
    """The run's own arguments (what its data and split were), with the distractors overridden if asked."""
    path = run / "train_args.json"
    if not path.is_file():
        raise FileNotFoundError(f"--run {run} has no train_args.json (expected an OUT folder of train_gr_lite).")
    args = argparse.Namespace(**json.loads(path.read_text()))
    if not getattr(args, "validation_fraction", 0):
        raise ValueError(f"--run {run} held out no products (--validation-fraction 0): it has no validation split.")
    args.validation_distractors = distractors or getattr(args, "validation_distractors", None)
    # the split depends on neither the teacher nor the ArcFace classes: skip loading and checking every training row's
    # feature (and read the runs from before per-set weights and classes, whose --distill-weight is one number)
    args.teacher_features, args.distill_weight, args.arcface_classes = None, [0.0], ["attributes"]
    return args


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", type=Path, required=True, help="a train_gr_lite OUT folder")
    p.add_argument("--validation-distractors", metavar="DIR", help="a `lookbench build` folder whose noise gallery joins the gallery")
    p.add_argument("--model", nargs="*", default=[], help="GR-Lite model folders to score")
    p.add_argument("--teacher", action="store_true", help=f"score {TEACHER}'s features as well")
    args = p.parse_args(argv)
    if not args.model and not args.teacher:
        p.error("name at least one --model folder, or --teacher")
    models = {}  # every folder loaded before the split is built and scored: a bad one fails at once, not after minutes
    for folder in args.model:
        try:
            models[folder] = GrLiteModel.from_pretrained(folder).eval()
        except (OSError, ValueError) as err:
            raise ValueError(f"--model {folder} is not a GR-Lite model folder: {str(err).splitlines()[0]}") from err
    validation = TrainData.load(run_args(args.run, args.validation_distractors)).validation
    split = {"queries": len(validation.queries), "gallery": len(validation.gallery), "distractors": validation.distractors}
    lines = [{"model": folder, **split, **validation.score(model, processor_for(model.config))} for folder, model in models.items()]
    if args.teacher:
        features = teacher_features.compute(validation.ds)
        lines.append({"model": f"{TEACHER} (ImageNet)", **split,
                      **validation.score_embeddings(features[validation.queries], features[validation.gallery])})
    for line in lines:
        print(json.dumps(line))
    return lines


if __name__ == "__main__":
    sys.exit(report_errors("score_validation", main))
