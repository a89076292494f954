"""train_gr_lite: training runs that learn and resume exactly (one process, two, with distillation and validation),
the CLI's flag checks, the model card, and every model script's one-line errors."""
from __future__ import annotations

import json
import shutil
import sys

import datasets
import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from lookbench.models.gr_lite import GrLiteConfig, GrLiteModel, register_auto_classes
from lookbench.training import holdout, score_validation, teacher_features
from lookbench.training.train_gr_lite import model_config, parse_args, write_card
from lookbench.training.training_data import load_teacher_features
from tests.gr_lite.hostile import WritesMarker
from tests.helpers.batch import Script, run_scripts
from tests.helpers.gr_lite import CODE_FILES, GR_LITE_DIR, TRAIN_ARGS, clean_env, run_script, train


@pytest.mark.slow
def test_training_single_process_learns_and_resumes_exactly(tmp_path, train_folder):
    log = train(tmp_path, train_folder, tmp_path / "run", "--max-steps", "24", "--save-every", "10")
    assert [r["step"] for r in log] == [4, 8, 12, 16, 20, 24] and {r["world_size"] for r in log} == {1}
    losses = [r["loss"] for r in log]
    assert np.mean(losses[-2:]) < 0.8 * np.mean(losses[:2]), losses
    final = tmp_path / "run" / "model"
    summary = json.loads((final / "training_summary.json").read_text())
    assert summary["num_classes"] == 6 and summary["num_images"] == 96 and summary["steps"] == 24
    for name in CODE_FILES:  # save_pretrained copies the code: the folder loads wherever it is copied
        assert not (final / name).is_symlink() and (final / name).read_bytes() == (GR_LITE_DIR / name).read_bytes(), name
    card = (final / "README.md").read_text()
    assert "library_name: transformers" in card and "6 ArcFace classes" in card and "24 steps" in card
    assert "{{" not in card and "{%" not in card  # the template is filled completely

    # the trained embedding separates the ArcFace classes far better than the same network at random init
    from transformers import AutoImageProcessor, AutoModel

    register_auto_classes()
    model, processor = AutoModel.from_pretrained(final).eval(), AutoImageProcessor.from_pretrained(final)
    torch.manual_seed(0)
    untrained = GrLiteModel(model.config).eval()
    ds = datasets.load_dataset(str(train_folder), split="train")
    pixels = processor(list(ds["image"]), return_tensors="pt")
    labels = np.array([f"{c}/{a[0]['value']}" for c, a in zip(list(ds["category"]), list(ds["attributes"]))])
    same = torch.from_numpy(labels[:, None] == labels[None, :])

    def class_gap(m) -> float:  # mean cosine within a class minus mean cosine across classes
        with torch.no_grad():
            e = m(**pixels).image_embeds
        sims = e @ e.T
        return (sims[same].mean() - sims[~same].mean()).item()

    trained_gap, random_gap = class_gap(model), class_gap(untrained)
    assert trained_gap > 0.5 and trained_gap > 2 * random_gap, (trained_gap, random_gap)

    # interrupt after the mid-epoch checkpoint at step 10 (6 steps/epoch) and resume: identical weights
    resumed = tmp_path / "resumed"
    shutil.copytree(tmp_path / "run", resumed, ignore=shutil.ignore_patterns("model", "step-000020", "step-000024"))
    log2 = train(tmp_path, train_folder, resumed, "--max-steps", "24", "--save-every", "10", "--resume", "latest")
    assert [r["step"] for r in log2] == [4, 8, 12, 16, 20, 24]
    a, b = load_file(final / "model.safetensors"), load_file(resumed / "model" / "model.safetensors")
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.slow
def test_training_two_cpu_processes_with_accelerate_launch(tmp_path, train_folder, accelerate_two_cpu_processes):
    log = train(tmp_path, train_folder, tmp_path / "run2", "--max-steps", "24", "--save-every", "100",
                launcher=accelerate_two_cpu_processes, env={"ACCELERATE_USE_CPU": "1"})
    assert {r["world_size"] for r in log} == {2}
    losses = [r["loss"] for r in log]
    assert np.mean(losses[-2:]) < 0.8 * np.mean(losses[:2]), losses
    summary = json.loads((tmp_path / "run2" / "model" / "training_summary.json").read_text())
    assert summary["samples_per_rank_this_session"] == [24 * 8, 24 * 8]  # both ranks ran every step on half batches
    assert (tmp_path / "run2" / "model" / "model.safetensors").exists()
    # the last checkpoint holds each process's RNG states, so it resumes only with as many processes
    checkpoint = tmp_path / "run2" / "checkpoints" / "step-000024"
    assert sorted(p.name for p in checkpoint.iterdir()) == [
        "model.safetensors", "optimization.pt", "rng_state_0.pt", "rng_state_1.pt", "trainer_state.json"]
    proc = run_script([sys.executable, "-m", "lookbench.training.train_gr_lite", "--data", str(train_folder),
                       "--output", str(tmp_path / "run2"), *TRAIN_ARGS, "--max-steps", "30", "--resume", "latest"], tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"train_gr_lite: error: Checkpoint {checkpoint} was written by 2 process(es); resume it with as many, not 1."], proc.stderr[-3000:]


def test_card_names_each_sets_distillation_weight_and_classes(tmp_path):
    """Per-set flags read as prose in the card, one value as a plain number (the committed run's facts, varied)."""
    from lookbench.encoders.entries import gr_lite_mini_folder

    facts = json.loads((gr_lite_mini_folder() / "training_summary.json").read_text())
    facts["distillation"] = {**facts["distillation"], "weight": {"mini/train": 100.0, "photos/train": 10.0}}
    facts["arcface_classes"] = {"mini/train": "attributes", "photos/train": "category"}
    write_card(tmp_path, facts)
    card = (tmp_path / "README.md").read_text()
    assert "similarity loss, weight 100.0 on `mini/train`, 10.0 on `photos/train`\n" in card
    assert "ArcFace classes (`mini/train`: category × full attribute set; `photos/train`: category alone)" in card
    facts["distillation"]["weight"], facts["arcface_classes"] = 100.0, "category"
    write_card(tmp_path, facts)
    card = (tmp_path / "README.md").read_text()
    assert "similarity loss, weight 100.0\n" in card and "ArcFace classes (category alone)" in card


def test_architecture_and_distillation_flags():
    config = model_config(parse_args(["--data", "d", "--output", "o", "--width", "256", "--depth", "8", "--image-size", "160"]))
    vision = config.vision_config
    assert (vision.hidden_size, vision.intermediate_size, vision.num_attention_heads, vision.num_hidden_layers) == (256, 1024, 4, 8)
    assert config.image_size == 160 and vision.num_register_tokens == 4
    assert model_config(parse_args(["--data", "d", "--output", "o"])).to_dict() == GrLiteConfig.from_preset("gr-lite-mini").to_dict()
    for bad in (["--width", "200"], ["--distill-weight", "1"], ["--teacher-features", "t.safetensors"], ["--init", "m", "--depth", "2"]):
        with pytest.raises(SystemExit):
            parse_args(["--data", "d", "--output", "o", *bad])


@pytest.mark.slow
def test_distillation_training_learns_validates_and_resumes_exactly(tmp_path, train_folder):
    teacher = tmp_path / "teacher.safetensors"
    teacher_features.main(["--data", str(train_folder), "--output", str(teacher)])
    extra = ["--max-steps", "24", "--save-every", "10", "--teacher-features", str(teacher), "--distill-weight", "100",
             "--distill-loss", "similarity", "--validation-fraction", "0.25", "--validate-every", "12", "--width", "128", "--depth", "3"]
    log = train(tmp_path, train_folder, tmp_path / "run", *extra, "--resume", "latest")  # no checkpoint yet: step 0
    distill = [r["distill_loss"] for r in log]  # in-batch similarities approach the teacher's (a 3-layer ViT at 64 px)
    assert np.mean(distill[-2:]) < 0.9 * np.mean(distill[:2]), distill
    for r in log:
        assert r["loss"] == pytest.approx(r["arcface_loss"] + r["attributes_loss"] + 100 * r["distill_loss"], rel=1e-5)
    validation = [json.loads(line) for line in (tmp_path / "run" / "validation.jsonl").read_text().splitlines()]
    assert [v["step"] for v in validation] == [12, 24] and all(0 < v["coarse_recall@1"] <= 100 for v in validation)
    summary = json.loads((tmp_path / "run" / "model" / "training_summary.json").read_text())
    assert summary["num_images"] < 96 and summary["validation"]["scores"] == validation[-1]
    assert summary["architecture"]["width"] == 128 and summary["distillation"]["loss"] == "similarity"
    card = (tmp_path / "run" / "model" / "README.md").read_text()
    assert "Distillation from efficientnet-lite0" in card and f"strict Fine R@1 {validation[-1]['fine_recall@1']}" in card
    from lookbench.encoders.base import card_training_cutoff

    # the card declares the date its training data ends, which `lookbench evaluate --cutoff model` reads
    assert summary["training_cutoff"] == "2025-06-01" == card_training_cutoff(tmp_path / "run" / "model")

    # the run's split rebuilt from train_args.json scores its model as training did, and the teacher as its features say
    model_line, teacher_line = score_validation.main(["--run", str(tmp_path / "run"), "--model", str(tmp_path / "run" / "model"), "--teacher"])
    assert {key: model_line[key] for key in holdout.REPORTED} == {key: validation[-1][key] for key in holdout.REPORTED}
    ds = datasets.load_dataset(str(train_folder), split="train")
    held = holdout.split_rows(ds, 0.25)[1]
    stored = load_teacher_features(teacher, ds, "the fixture").numpy()[held]
    split = holdout.RetrievalValidation(ds.select(held))
    expected = split.score_embeddings(stored[split.queries], stored[split.gallery])
    assert {key: teacher_line[key] for key in holdout.REPORTED} == {key: expected[key] for key in holdout.REPORTED}
    assert teacher_line["distractors"] == 0 and teacher_line["queries"] == len(split.queries)

    # killed while writing step 20: that checkpoint has no trainer_state.json yet, so `latest` is step 10
    resumed = tmp_path / "resumed"
    shutil.copytree(tmp_path / "run", resumed, ignore=shutil.ignore_patterns("model", "trainer_state.json", "step-000024"))
    shutil.copy(tmp_path / "run" / "checkpoints" / "step-000010" / "trainer_state.json", resumed / "checkpoints" / "step-000010")
    train(tmp_path, train_folder, resumed, *extra, "--resume", "latest")
    a, b = load_file(tmp_path / "run" / "model" / "model.safetensors"), load_file(resumed / "model" / "model.safetensors")
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert (resumed / "validation.jsonl").read_text() == (tmp_path / "run" / "validation.jsonl").read_text()


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory, train_folder):
    """A 2-step run of a tiny model, checkpointed at step 2, and the flags that would resume it for 2 steps more."""
    out = tmp_path_factory.mktemp("checkpointed") / "run"
    tiny = ["--width", "64", "--depth", "2", "--save-every", "2"]
    train(out.parent, train_folder, out, *tiny, "--max-steps", "2")
    return out, [*tiny, "--max-steps", "4"]


TAMPERED = [
    ("custom_checkpoint_0.pkl", "payload", "is in an unsafe older format (custom_checkpoint_0.pkl: pickles that can run code"),
    ("optimization.pt", "payload", "optimization.pt holds objects other than tensors and plain values (a pickle that would run code"),
    ("rng_state_0.pt", "remove", "rng_state_0.pt is missing (the checkpoint is incomplete or damaged)"),
    ("model.safetensors", "truncate", "model.safetensors is damaged or truncated"),
]
PAST = [
    ("trainer_state.json", "step", "trainer_state.json is at step 1000000000000000000000000000000, past this run's last step 4"),
    ("optimization.pt", "last_epoch", "optimization.pt is not a state of this run (scheduler.last_epoch "
                                      "1000000000000000000000000000000 is not the step 2 of trainer_state.json)"),
]
BAD_INPUT = [
    ("training", "train_gr_lite", ["--data", "{missing}", "--output", "{tmp}/run"]),
    ("training", "teacher_features", ["--data", "{missing}", "--output", "{tmp}/teacher.safetensors"]),
    ("training", "score_validation", ["--run", "{missing}", "--teacher"]),
    ("training", "check_disjoint", ["--train", "{missing}", "--test", "{tmp}"]),
    ("models.gr_lite", "convert_gr_lite_checkpoint", ["--checkpoint", "{missing}", "--output", "{tmp}/model"]),
]


def _damage(target, damage, marker) -> None:
    """``target`` made what ``damage`` names: a pickle payload that would write ``marker``, removed, truncated, or its
    step (trainer_state.json) or schedule (optimization.pt) moved to step 10**30."""
    if damage == "payload":
        torch.save({"lr_lambdas": [WritesMarker(marker)]}, target)
    elif damage == "remove":
        target.unlink(missing_ok=True)
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:100])
    elif damage == "step":
        target.write_text(json.dumps({**json.loads(target.read_text()), "step": 10**30}))
    else:
        state = torch.load(target, weights_only=True)
        state["scheduler"]["last_epoch"] = 10**30
        torch.save(state, target)


@pytest.fixture(scope="module")
def refused(tmp_path_factory, train_folder, checkpointed) -> dict:
    """Every case below prepared in a folder of its own, then run in one fresh process, one script after the other
    (``run_scripts``: a fresh start of torch, datasets and accelerate cost ~7 CPU-s a case). By case: (folder, run)."""
    run, flags = checkpointed
    cases, scripts = {}, []
    for name, damage, _ in TAMPERED + PAST:
        folder = tmp_path_factory.mktemp(f"{damage}-{name}")
        out = folder / "run"
        shutil.copytree(run, out, ignore=shutil.ignore_patterns("model"))
        _damage(out / "checkpoints" / "step-000002" / name, damage, folder / "marker")
        cases[name, damage] = folder
        scripts.append(Script("lookbench.training.train_gr_lite", ("--data", str(train_folder), "--output", str(out),
                                                                   *TRAIN_ARGS, *flags, "--resume", "latest"), folder))
    for package, script, args in BAD_INPUT:
        folder = tmp_path_factory.mktemp(script)
        cases[script] = folder
        scripts.append(Script(f"lookbench.{package}.{script}",
                              tuple(a.format(missing=folder / "missing", tmp=folder) for a in args), folder))
    logs = {key: (folder / "run" / "train_log.jsonl").read_text() for key, folder in cases.items() if isinstance(key, tuple)}
    return {key: (folder, ran, logs.get(key)) for (key, folder), ran in zip(cases.items(), run_scripts(scripts, clean_env()))}


def one_line(ran) -> str:
    """The run's one line of stderr, after exit 2."""
    lines = [line for line in ran.stderr.splitlines() if line.strip()]
    assert ran.returncode == 2 and len(lines) == 1, ran.stderr[-3000:]
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("name, damage, refusal", TAMPERED)
def test_a_tampered_or_damaged_checkpoint_is_refused_in_one_line(refused, name, damage, refusal):
    """`--resume` never runs a checkpoint's pickles (accelerate's load_state unpickled custom_checkpoint_0.pkl) and
    never skips a missing RNG state: the run ends in one line naming the file, before any step."""
    folder, ran, log = refused[name, damage]
    out = folder / "run"
    line = one_line(ran)
    assert line.startswith("train_gr_lite: error: ") and refusal in line, line
    target = out / "checkpoints" / "step-000002" / name
    shown = out / "checkpoints" / "step-000002" if damage == "payload" and name.endswith(".pkl") else target
    assert str(shown) in line
    assert not (folder / "marker").exists() and (out / "train_log.jsonl").read_text() == log and not (out / "model").exists()


@pytest.mark.slow
@pytest.mark.parametrize("name, damage, refusal", PAST)
def test_a_checkpoint_past_what_the_run_can_reach_is_refused_in_one_line(refused, name, damage, refusal):
    """Issue 53: a checkpoint at step 10**30 resumed with exit 0 (the run's loop ended at once and saved the model).
    Its step, and the schedule's, are bounded by the run's last step: one line naming the file, exit 2, no model."""
    folder, ran, _ = refused[name, damage]
    line = one_line(ran)
    target = folder / "run" / "checkpoints" / "step-000002" / name
    assert line.startswith("train_gr_lite: error: ") and refusal in line and str(target) in line, line
    assert not (folder / "run" / "model").exists()


@pytest.mark.slow
@pytest.mark.parametrize("package, script, args", BAD_INPUT)
def test_model_scripts_report_bad_input_in_one_line(refused, package, script, args):
    """As `lookbench` does: the user sees the cause and the path, exit 2, no traceback."""
    folder, ran, _ = refused[script]
    line = one_line(ran)
    assert line.startswith(f"{script}: error: ") and str(folder / "missing") in line, ran.stderr[-2000:]
    assert not (folder / "missing").exists()


@pytest.mark.parametrize("repeat", [["2"], ["0", "1"]])
def test_data_repeat_needs_one_positive_count_per_set(train_folder, single_view_folder, repeat, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--data", str(train_folder), str(single_view_folder), "--output", "o", "--data-repeat", *repeat])
    assert "--data-repeat needs one integer >= 1 per --data folder (2)" in capsys.readouterr().err
