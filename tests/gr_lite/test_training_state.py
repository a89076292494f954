"""training_state: a checkpoint restores weights, optimizer, schedule and every generator exactly, and a tampered,
damaged, truncated, incomplete or older-format one is refused with a message naming the file — never executed."""
from __future__ import annotations

import json
import pickle
import random

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from lookbench.training import training_state
from tests.gr_lite.hostile import WritesMarker


def build(seed: int = 0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 / (step + 1))
    return model, optimizer, scheduler


def train(model, optimizer, scheduler, steps: int) -> None:
    for _ in range(steps):
        model(torch.randn(8, 4)).square().mean().backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()


def draws() -> tuple:
    return random.random(), random.gauss(0, 1), float(np.random.rand()), torch.rand(2).tolist()


def checkpoint(folder, model, optimizer, scheduler, rank: int = 0):
    training_state.write(folder, model.state_dict(), optimizer, scheduler, rank)
    training_state.write_trainer_state(folder, {"step": 3, "train_seconds": 1.5})
    return folder


@pytest.fixture
def saved(tmp_path):
    """A model trained 3 steps, checkpointed; returns the folder and what the run then does."""
    model, optimizer, scheduler = build()
    train(model, optimizer, scheduler, 3)
    random.seed(5), random.gauss(0, 1), np.random.seed(6), torch.manual_seed(7)  # gauss caches its second draw
    folder = checkpoint(tmp_path / "step-000003", model, optimizer, scheduler)
    following = draws()
    train(model, optimizer, scheduler, 2)
    return folder, following, {k: v.clone() for k, v in model.state_dict().items()}, scheduler.get_last_lr()


def restore(folder, rank: int = 0):
    model, optimizer, scheduler = build(seed=1)  # other weights than the checkpoint's
    training_state.restore(folder, model, model.state_dict(), optimizer, scheduler, rank)
    return model, optimizer, scheduler


def test_restores_weights_optimizer_schedule_and_generators_exactly(saved):
    folder, following, trained, last_lr = saved
    random.seed(99), np.random.seed(99), torch.manual_seed(99)
    model, optimizer, scheduler = restore(folder)
    assert draws() == following  # Python (with its cached gauss), numpy and torch continue where they were saved
    train(model, optimizer, scheduler, 2)
    for key, value in trained.items():
        assert torch.equal(model.state_dict()[key], value), key
    assert scheduler.get_last_lr() == last_lr and scheduler.last_epoch == 5
    assert training_state.read_trainer_state(folder, {"train_seconds": float}) == {
        "format": training_state.FORMAT, "step": 3, "train_seconds": 1.5}
    assert sorted(p.name for p in folder.iterdir()) == ["model.safetensors", "optimization.pt", "rng_state_0.pt", "trainer_state.json"]


@pytest.mark.parametrize("name", ["optimization.pt", "rng_state_0.pt"])
def test_a_pickle_that_would_run_code_is_refused_unexecuted(saved, tmp_path, name):
    folder = saved[0]
    marker = tmp_path / "marker"
    torch.save({"optimizer": WritesMarker(marker), "scheduler": {}, "python": WritesMarker(marker)}, folder / name)
    with pytest.raises(ValueError) as err:
        restore(folder)
    assert str(folder / name) in str(err.value) and "a pickle that would run code" in str(err.value), err.value
    assert "\n" not in str(err.value) and not marker.exists()
    with pytest.raises(ValueError):  # a plain pickle (not torch's zip file) is refused the same way
        (folder / name).write_bytes(pickle.dumps(WritesMarker(marker)))
        restore(folder)
    assert not marker.exists()


@pytest.mark.parametrize("name", ["model.safetensors", "optimization.pt", "rng_state_0.pt"])
def test_a_truncated_file_is_refused(saved, name):
    folder = saved[0]
    data = (folder / name).read_bytes()
    (folder / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=rf"Checkpoint file {folder / name} is damaged or truncated \(.*\); refusing"):
        restore(folder)


def test_a_missing_rng_state_is_refused_not_skipped(saved):
    folder = saved[0]
    with pytest.raises(ValueError, match=rf"{folder / 'rng_state_1.pt'} is missing \(the checkpoint is incomplete"):
        restore(folder, rank=1)  # a process whose generator states were never written
    (folder / "rng_state_0.pt").unlink()
    with pytest.raises(ValueError, match="rng_state_0.pt is missing"):
        restore(folder)


def tamper(folder, name, change):
    state = torch.load(folder / name, weights_only=True)
    change(state)
    torch.save(state, folder / name)


@pytest.mark.parametrize("name, change, message", [
    ("rng_state_0.pt", lambda s: s.pop("numpy"), r"rng: keys \['numpy'\] differ"),
    ("rng_state_0.pt", lambda s: s.update(torch=torch.zeros(7, dtype=torch.uint8)), r"rng.torch: expected torch.uint8 \(5056,\), got torch.uint8 \(7,\)"),
    ("rng_state_0.pt", lambda s: s["python"]["state"].__setitem__(0, -1), r"rng: values out of range"),
    ("rng_state_0.pt", lambda s: s["numpy"].update(pos=10_000), r"rng: values out of range"),
    ("rng_state_0.pt", lambda s: s["numpy"].update(pos="0"), r"rng.numpy.pos: expected int, got str"),
    ("optimization.pt", lambda s: s["scheduler"].update(last_epoch=2.5), r"scheduler.last_epoch: expected int, got float"),
    ("optimization.pt", lambda s: s["scheduler"].update(optimizer="x"), r"scheduler: keys \['optimizer'\] differ"),
    ("optimization.pt", lambda s: s["optimizer"]["state"][0].update(exp_avg=torch.zeros(9)), r"optimizer.state\[0\]: not tensors of parameter 0's shape \(3, 4\)"),
    ("optimization.pt", lambda s: s["optimizer"]["state"].update({7: {}}), r"optimizer.state: not a dict of this optimizer's parameter ids"),
    ("optimization.pt", lambda s: s["optimizer"]["param_groups"][0].update(params=[3, 2, 1, 0]), r"optimizer.param_groups: parameter ids differ"),
    ("optimization.pt", lambda s: s["optimizer"]["param_groups"][0].update(lr="0.1"), r"optimizer.param_groups\[0\].lr: expected float, got str"),
    ("optimization.pt", lambda s: s.pop("scheduler"), r"top level: keys \['scheduler'\] differ"),
])
def test_unexpected_keys_types_and_shapes_are_refused(saved, name, change, message):
    folder = saved[0]
    tamper(folder, name, change)
    with pytest.raises(ValueError, match=rf"Checkpoint file {folder / name} is not a state of this run \({message}"):
        restore(folder)


def test_weights_of_another_shape_or_keys_are_refused(saved):
    folder = saved[0]
    weights = {"0.weight": torch.zeros(3, 5), "0.bias": torch.zeros(3), "1.weight": torch.zeros(3), "1.bias": torch.zeros(3)}
    save_file(weights, folder / "model.safetensors")
    with pytest.raises(ValueError, match=r"weights.0.weight: expected torch.float32 \(3, 4\), got torch.float32 \(3, 5\)"):
        restore(folder)
    save_file({"0.weight": torch.zeros(3, 4)}, folder / "model.safetensors")
    with pytest.raises(ValueError, match=r"model.safetensors is not a state of this run \(weights: keys \['0.bias', '1.bias', '1.weight'\] differ"):
        restore(folder)


def test_nothing_changes_when_a_later_file_is_bad(saved):
    folder = saved[0]
    (folder / "rng_state_0.pt").write_bytes(b"not a checkpoint")
    model, optimizer, scheduler = build(seed=1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match="rng_state_0.pt is damaged or truncated"):
        training_state.restore(folder, model, model.state_dict(), optimizer, scheduler, 0)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items()) and optimizer.state_dict()["state"] == {}


@pytest.mark.parametrize("older", ["custom_checkpoint_0.pkl", "random_states_0.pkl", "optimizer.bin", "state.pt"])
def test_an_older_format_is_refused_unread(saved, tmp_path, older):
    folder = saved[0]
    marker = tmp_path / "marker"
    torch.save(WritesMarker(marker), folder / older)
    with pytest.raises(ValueError, match=rf"Checkpoint {folder} is in an unsafe older format \({older}: pickles that can run code"):
        training_state.read_trainer_state(folder, {})
    assert not marker.exists()


@pytest.mark.parametrize("text, message", [
    ('{"step": 3}', "names no 'lookbench-training-state/1'"),
    ('{"format": "lookbench-training-state/1", "step": -1, "train_seconds": 1}', r"has no valid 'step' \(expected int, got -1\)"),
    ('{"format": "lookbench-training-state/1", "step": true, "train_seconds": 1}', r"has no valid 'step'"),
    ('{"format": "lookbench-training-state/1", "step": 3}', r"has no valid 'train_seconds' \(expected float, got None\)"),
    ('{"format": "lookbench-training-state/1", "step": 3, "train_seconds": 1, "running": [1.0, "x"]}', r"has no valid 'running'"),
    ('{"format": "lookbench-training-state/1", "step": ', r"is not JSON \(Expecting value, line 1\)"),
    ('[1, 2]', "names no"),
])
def test_a_bad_trainer_state_is_refused(saved, text, message):
    folder = saved[0]
    (folder / "trainer_state.json").write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        training_state.read_trainer_state(folder, {"train_seconds": float, "running": list[float]})
    assert str(folder) in str(err.value)


def test_latest_checkpoint_is_the_newest_complete_one(tmp_path):
    model, optimizer, scheduler = build()
    for step in (5, 10, 20):
        training_state.write(tmp_path / f"step-{step:06d}", model.state_dict(), optimizer, scheduler, 0)
    for step in (5, 10):  # step 20 was being written when the run was killed
        (tmp_path / f"step-{step:06d}" / "trainer_state.json").write_text(json.dumps({"step": step}))
    assert training_state.latest_checkpoint(tmp_path) == tmp_path / "step-000010"
    assert training_state.latest_checkpoint(tmp_path / "none") is None


@pytest.mark.parametrize("change, message", [
    ({"step": 10**30}, r"is at step 1000000000000000000000000000000, past this run's last step 5 \(--max-steps"),
    ({"step": 6}, r"is at step 6, past this run's last step 5"),
    ({"train_seconds": float("nan")}, r"has no valid 'train_seconds' \(expected float, got nan\)"),
    ({"train_seconds": float("inf")}, r"has no valid 'train_seconds'"),
    ({"running": [1.0, float("-inf")]}, r"has no valid 'running'"),
])
def test_a_step_past_the_run_or_a_number_that_is_not_finite_is_refused(saved, change, message):
    """Issue 53: a checkpoint at step 10**30 resumed into a run that ended at once, exit 0. A resumed step is at most
    the run's own last step; a count or a time is a finite number (JSON's NaN and Infinity are not)."""
    folder = saved[0]
    state = {"format": training_state.FORMAT, "step": 3, "train_seconds": 1.5, "running": [1.0], **change}
    (folder / "trainer_state.json").write_text(json.dumps(state))
    with pytest.raises(ValueError, match=message) as err:
        training_state.read_trainer_state(folder, {"train_seconds": float, "running": list[float]}, last_step=5)
    assert str(folder / "trainer_state.json") in str(err.value) and "\n" not in str(err.value)


def test_a_step_the_run_can_reach_resumes(saved):
    folder = saved[0]
    assert training_state.read_trainer_state(folder, {}, last_step=3)["step"] == 3
    restore(folder)  # the step of trainer_state.json is the schedule's
    model, optimizer, scheduler = build(seed=1)
    training_state.restore(folder, model, model.state_dict(), optimizer, scheduler, 0, step=3)
    assert scheduler.last_epoch == 3


def test_an_integer_too_long_to_read_is_refused_naming_the_file(saved):
    folder = saved[0]
    (folder / "trainer_state.json").write_text('{"format": "lookbench-training-state/1", "step": ' + "9" * 5000 + "}")
    with pytest.raises(ValueError, match=rf"Checkpoint file {folder / 'trainer_state.json'} is not JSON \(ValueError: "):
        training_state.read_trainer_state(folder, {}, last_step=5)
    (folder / "trainer_state.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"trainer_state.json is not JSON \(RecursionError: "):
        training_state.read_trainer_state(folder, {}, last_step=5)


@pytest.mark.parametrize("name, change, message", [
    ("optimization.pt", lambda s: s["scheduler"].update(last_epoch=10**18),
     r"scheduler.last_epoch 1000000000000000000 is not the step 3 of trainer_state.json"),
    ("optimization.pt", lambda s: s["optimizer"]["state"][0].update(step=torch.tensor(1e30)),
     r"optimizer.state\[0\].step \[1.0000000150474662e\+30\] is past the step 3 of trainer_state.json"),
    ("optimization.pt", lambda s: s["optimizer"]["state"][0].update(step=torch.tensor(float("nan"))),
     r"optimizer.state\[0\].step \[nan\] is past the step 3"),
    ("optimization.pt", lambda s: s["optimizer"]["param_groups"][0].update(lr=float("inf")),
     r"optimizer.param_groups\[0\].lr: inf is not a finite number"),
    ("rng_state_0.pt", lambda s: s["numpy"].update(cached_gaussian=float("nan")), r"rng.numpy.cached_gaussian: nan is not"),
])
def test_a_schedule_or_optimizer_past_the_checkpoints_step_is_refused(saved, name, change, message):
    folder = saved[0]
    tamper(folder, name, change)
    model, optimizer, scheduler = build(seed=1)
    with pytest.raises(ValueError, match=rf"Checkpoint file {folder / name} is not a state of this run \({message}"):
        training_state.restore(folder, model, model.state_dict(), optimizer, scheduler, 0, step=3)


class RunsCommand:
    """A payload of another kind than ``WritesMarker``: ``os.system`` (a module torch's safe loader blocks by name)."""

    def __reduce__(self):
        import os

        return os.system, ("true",)


@pytest.mark.parametrize("write, calls", [
    (lambda path, marker: path.write_bytes(pickle.dumps(WritesMarker(marker))), "io.open"),  # protocol 5: STACK_GLOBAL
    (lambda path, marker: path.write_bytes(pickle.dumps(WritesMarker(marker), protocol=2)), "io.open"),  # GLOBAL
    (lambda path, marker: torch.save({"optimizer": RunsCommand(), "scheduler": {}}, path), "posix.system"),
    (lambda path, marker: torch.save({"optimizer": WritesMarker(marker)}, path, _use_new_zipfile_serialization=False),
     "io.open"),
])
def test_a_payload_is_named_as_refused_not_as_damaged(saved, tmp_path, write, calls):
    """Issue 53: a code-running payload was called "damaged or truncated" (a bare pickle, or one calling a function of
    a module torch blocks). It is named refused, with what it calls; a truncated file stays damaged."""
    folder = saved[0]
    marker = tmp_path / "marker"
    write(folder / "optimization.pt", marker)
    with pytest.raises(ValueError) as err:
        restore(folder)
    message = str(err.value)
    assert message.startswith(f"Checkpoint file {folder / 'optimization.pt'} holds objects other than tensors and plain "
                              f"values (a pickle that would run code when read: it calls '{calls}'); refused unread by "
                              "the safe loader; refusing to resume from it."), message
    assert "damaged" not in message and not marker.exists()
    checkpoint(folder, *build())  # an honest optimization.pt again; then a truncated RNG file
    data = (folder / "rng_state_0.pt").read_bytes()
    (folder / "rng_state_0.pt").write_bytes(data[:len(data) // 3])
    with pytest.raises(ValueError, match="rng_state_0.pt is damaged or truncated") as err:
        restore(folder)
    assert "run code" not in str(err.value)
