"""score_validation: a run's validation split rebuilt from its train_args.json, and bad runs, models and distractors named."""
from __future__ import annotations

import json

import datasets
import pytest

from lookbench.training import holdout, score_validation
from lookbench.training.train_gr_lite import parse_args
from lookbench.training.training_data import TrainData


def test_score_validation_names_bad_runs_models_and_distractor_schemas(tmp_path, train_folder, distractor_folder):
    with pytest.raises(FileNotFoundError, match=f"--run {tmp_path} has no train_args.json"):
        score_validation.main(["--run", str(tmp_path), "--teacher"])
    run = tmp_path / "run"
    run.mkdir()
    (run / "train_args.json").write_text(json.dumps(vars(parse_args(["--data", str(train_folder), "--output", str(run),
                                                                     "--validation-fraction", "0.25"]))))
    with pytest.raises(ValueError, match=r"--model .*missing is not a GR-Lite model folder"):
        score_validation.main(["--run", str(run), "--model", str(tmp_path / "missing")])
    # a run from before per-set distillation weights recorded one number, and teacher files not needed for the split
    old = run.parent / "old-run"
    old.mkdir()
    recorded = {**json.loads((run / "train_args.json").read_text()), "distill_weight": 100.0, "teacher_features": ["gone.safetensors"]}
    (old / "train_args.json").write_text(json.dumps(recorded))

    rebuilt = TrainData.load(score_validation.run_args(old, None)).validation
    assert rebuilt.ds["item_id"] == TrainData.load(score_validation.run_args(run, None)).validation.ds["item_id"]
    ds = datasets.load_dataset(str(train_folder), split="train")
    noise = datasets.load_dataset(str(distractor_folder), "noise", split="gallery").remove_columns("outfit_id")
    noise = noise.add_column("outfit_id", [1] * len(noise))
    with pytest.raises(ValueError, match=r"distractors' columns \['outfit_id'\] are not the training set's"):
        holdout.RetrievalValidation(ds.select(holdout.split_rows(ds, 0.25)[1]), distractors=noise)
