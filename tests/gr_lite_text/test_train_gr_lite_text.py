"""train_gr_lite_text: the loss (CLIP's InfoNCE when every pair is its own class; positives of one attribute set alike),
a tiny run that learns, validates, writes a loadable folder and card and resumes exactly, the CLI's flag checks and
its one-line errors."""
from __future__ import annotations

import json
import shutil

import datasets
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from lookbench.dataset_builder.text_queries import FORMS, record_text
from lookbench.training.train_gr_lite_text import contrastive_loss, main, parse_args
from tests.gr_lite.hostile import WritesMarker
from tests.helpers.batch import Script, run_scripts
from tests.helpers.gr_lite import GR_LITE_DIR, clean_env

TEXT_CODE_FILES = ("configuration_gr_lite_text.py", "modeling_gr_lite_text.py", "configuration_gr_lite.py", "modeling_gr_lite.py",
                   "image_processing_gr_lite.py")
TINY = ["--width", "64", "--depth", "2", "--batch-size", "32", "--lr", "5e-3", "--warmup-steps", "4", "--log-every", "4"]


def test_loss_is_clips_when_every_pair_is_its_own_class_and_treats_positives_alike():
    torch.manual_seed(0)
    text, image = F.normalize(torch.randn(6, 8), dim=-1), F.normalize(torch.randn(6, 8), dim=-1)
    scale = torch.tensor(2.0)
    logits = scale.exp() * text @ image.T
    clip = (F.cross_entropy(logits, torch.arange(6)) + F.cross_entropy(logits.T, torch.arange(6))) / 2
    torch.testing.assert_close(contrastive_loss(text, image, torch.arange(6), scale), clip)
    classes = torch.tensor([0, 0, 1, 2, 3, 4])  # rows 0 and 1 describe the same attribute set
    swapped = image[[1, 0, 2, 3, 4, 5]]
    torch.testing.assert_close(contrastive_loss(text, image, classes, scale), contrastive_loss(text, swapped, classes, scale))
    aligned = contrastive_loss(image, image, torch.arange(6), torch.tensor(4.0))
    assert aligned < contrastive_loss(text, image, torch.arange(6), torch.tensor(4.0))


def run(tmp_path, out, *extra):
    return main(["--output", str(out), *TINY, *extra])


@pytest.mark.slow
def test_training_learns_validates_writes_a_loadable_folder_and_resumes_exactly(tmp_path, train_folder, tower_folder):
    extra = ["--data", str(train_folder), "--image-tower", str(tower_folder), "--max-steps", "24", "--save-every", "10",
             "--validation-fraction", "0.25", "--validate-every", "12", "--resume", "latest"]  # no checkpoint yet: step 0
    final = run(tmp_path, tmp_path / "run", *extra)
    log = [json.loads(line) for line in (tmp_path / "run" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [4, 8, 12, 16, 20, 24]
    losses = [r["loss"] for r in log]
    assert np.mean(losses[-2:]) < 0.8 * np.mean(losses[:2]), losses
    validation = [json.loads(line) for line in (tmp_path / "run" / "validation.jsonl").read_text().splitlines()]
    assert [v["step"] for v in validation] == [12, 24] and set(validation[-1]) == {"step", "short", "long"}
    summary = json.loads((final / "training_summary.json").read_text())
    assert summary["steps"] == 24 and summary["validation"]["scores"] == validation[-1] and summary["training_cutoff"] == "2025-06-01"
    assert summary["sets"][0]["trained_rows"] < 96 and summary["architecture"]["text_width"] == 64
    for name in TEXT_CODE_FILES:  # the folder loads wherever it is copied
        assert not (final / name).is_symlink() and (final / name).read_bytes() == (GR_LITE_DIR / name).read_bytes(), name
    card = (final / "README.md").read_text()
    assert "library_name: transformers" in card and "24 steps of batch 32" in card and "{{" not in card and "{%" not in card
    assert f"short {validation[-1]['short']['fine_recall@1']}" in card

    # the saved folder is the model (AutoModel + AutoTokenizer), its image tower the tower's, untouched; its texts find
    # an image of their own (category, colour) far above chance (1 in 6) among the training images
    from transformers import AutoModel, AutoTokenizer

    from lookbench.models.gr_lite import GrLiteModel, register_auto_classes

    register_auto_classes()
    model, tokenizer = AutoModel.from_pretrained(final).eval(), AutoTokenizer.from_pretrained(final)
    tower = GrLiteModel.from_pretrained(tower_folder)
    for key, value in tower.state_dict().items():
        assert torch.equal(model.vision_model.state_dict()[key], value), key
    records = datasets.load_dataset(str(train_folder), split="train").select_columns(["category", "attributes"]).to_list()
    classes = np.array([(r["category"], r["attributes"][0]["value"]) for r in records], dtype=object)
    texts = [record_text(r, form) for r in records for form in FORMS]
    images = load_file(next((tmp_path / "run" / "image_embeddings").iterdir()))["embeddings"]
    with torch.no_grad():
        found = (model.get_text_features(**tokenizer(texts, padding=True, return_tensors="pt")) @ images.T).argmax(1).numpy()
    hits = [tuple(classes[i]) == tuple(classes[j // len(FORMS)]) for j, i in enumerate(found)]
    assert np.mean(hits) > 2 / 6, np.mean(hits)

    # killed while writing step 20: that checkpoint has no trainer_state.json yet, so `latest` is step 10
    resumed = tmp_path / "resumed"
    shutil.copytree(tmp_path / "run", resumed, ignore=shutil.ignore_patterns("model", "trainer_state.json", "step-000024"))
    shutil.copy(tmp_path / "run" / "checkpoints" / "step-000010" / "trainer_state.json", resumed / "checkpoints" / "step-000010")
    run(tmp_path, resumed, *extra)
    a, b = load_file(final / "model.safetensors"), load_file(resumed / "model" / "model.safetensors")
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert (resumed / "validation.jsonl").read_text() == (tmp_path / "run" / "validation.jsonl").read_text()
    assert [json.loads(line)["loss"] for line in (resumed / "train_log.jsonl").read_text().splitlines()] == losses


def test_a_checkpoint_of_other_data_is_refused(tmp_path, train_folder, single_view_folder, tower_folder):
    base = ["--image-tower", str(tower_folder), "--save-every", "4", "--resume", "latest"]
    run(tmp_path, tmp_path / "run", "--data", str(train_folder), "--max-steps", "4", *base)
    with pytest.raises(ValueError, match="was trained on 192 pairs of 12 texts; --data .* gives 288 of 18 now"):
        run(tmp_path, tmp_path / "run", "--data", str(train_folder), str(single_view_folder), "--max-steps", "8", *base)


@pytest.mark.parametrize("name, damage, refusal", [
    ("state.pt", "payload", "is in an unsafe older format (state.pt: pickles that can run code when read)"),
    ("state.pt", "truncate", "is in an unsafe older format (state.pt: pickles"),
    ("optimization.pt", "payload", "optimization.pt holds objects other than tensors and plain values (a pickle that would run code"),
    ("optimization.pt", "truncate", "optimization.pt is damaged or truncated"),
    ("model.safetensors", "truncate", "model.safetensors is damaged or truncated"),
    ("rng_state_0.pt", "remove", "rng_state_0.pt is missing (the checkpoint is incomplete or damaged)"),
])
def test_a_tampered_or_damaged_checkpoint_is_refused(tmp_path, train_folder, tower_folder, name, damage, refusal):
    """The checkpoint's files are read as tensors and plain values only and checked first: a tampered, truncated or
    missing one (or the earlier single state.pt) ends the run with one message naming it, and nothing runs."""
    base = ["--data", str(train_folder), "--image-tower", str(tower_folder), "--save-every", "2", "--resume", "latest"]
    run(tmp_path, tmp_path / "run", *base, "--max-steps", "2")
    folder = tmp_path / "run" / "checkpoints" / "step-000002"
    target, marker = folder / name, tmp_path / "marker"
    if name == "state.pt":  # the earlier format's file, beside (or instead of) the new ones
        torch.save({"model": {}, "optimizer": {}, "scheduler": {}}, target)
    if damage == "payload":
        torch.save({"optimizer": WritesMarker(marker), "scheduler": {}}, target)
    elif damage == "remove":
        target.unlink(missing_ok=True)
    else:
        target.write_bytes(target.read_bytes()[:100])
    log = (tmp_path / "run" / "train_log.jsonl").read_text()
    with pytest.raises(ValueError) as err:
        run(tmp_path, tmp_path / "run", *base, "--max-steps", "4")
    message = str(err.value)
    assert refusal in message and str(folder if name == "state.pt" else target) in message and "\n" not in message, message
    assert not marker.exists() and (tmp_path / "run" / "train_log.jsonl").read_text() == log


def test_a_checkpoint_past_the_runs_last_step_is_refused(tmp_path, train_folder, tower_folder):
    """Issue 53: a checkpoint at step 10**30 resumed into a run that ended at once and saved its model."""
    base = ["--data", str(train_folder), "--image-tower", str(tower_folder), "--save-every", "2", "--resume", "latest"]
    run(tmp_path, tmp_path / "run", *base, "--max-steps", "2")
    (tmp_path / "run" / "model").rename(tmp_path / "first")
    state = tmp_path / "run" / "checkpoints" / "step-000002" / "trainer_state.json"
    state.write_text(json.dumps({**json.loads(state.read_text()), "step": 10**30}))
    with pytest.raises(ValueError, match=rf"^Checkpoint file {state} is at step 10{{30}}, past this run's last step 4 "):
        run(tmp_path, tmp_path / "run", *base, "--max-steps", "4")
    assert not (tmp_path / "run" / "model").exists()


@pytest.mark.parametrize("bad, message", [
    (["--width", "48"], "--width must be a positive multiple of 32, got 48"),
    (["--data-repeat", "1", "2"], "--data-repeat needs one integer >= 1 per --data folder (1)"),
    (["--max-rows", "5", "6"], "--max-rows needs one count >= 0, or one per --data folder (1), got [5, 6]"),
])
def test_flag_checks(bad, message, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--data", "d", "--output", "o", *bad])
    assert message in capsys.readouterr().err


BAD_INPUT = ("data", "image-tower", "resume")


@pytest.fixture(scope="module")
def bad_input_runs(tmp_path_factory, train_folder) -> dict:
    """Each bad input's run of the script, as ``python -m`` runs it, the three one after the other in one fresh process
    (tests/helpers/batch.run_scripts: a start of torch, datasets and accelerate is ~5 CPU-s a case); by case: (its
    folder, the run)."""
    folders, scripts = {}, []
    for what in BAD_INPUT:
        folder = folders[what] = tmp_path_factory.mktemp(what)
        missing = folder / "missing"
        (folder / "clip").mkdir()
        (folder / "clip" / "config.json").write_text('{"model_type": "clip"}')
        data = missing if what == "data" else train_folder
        tower = folder / "clip" if what == "image-tower" else GR_LITE_DIR / "gr-lite-mini"
        extra = ("--resume", str(missing)) if what == "resume" else ()
        scripts.append(Script("lookbench.training.train_gr_lite_text", ("--data", str(data), "--output", str(folder / "run"),
                                                                        "--image-tower", str(tower), *extra), folder))
    return {what: (folders[what], ran) for what, ran in zip(BAD_INPUT, run_scripts(scripts, clean_env()), strict=True)}


@pytest.mark.slow
@pytest.mark.parametrize("what", BAD_INPUT)
def test_bad_input_is_one_line(bad_input_runs, what):
    """As `lookbench` does: the user sees the cause and the path, exit 2, no traceback."""
    folder, proc = bad_input_runs[what]
    missing = folder / "missing"
    named = {"data": missing, "image-tower": f"{folder / 'clip'} is a 'clip' model folder, not a GR-Lite one",
             "resume": f"--resume {missing} is not a complete checkpoint (no trainer_state.json)"}[what]
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("train_gr_lite_text: error: ") and str(named) in lines[0], proc.stderr[-2000:]
