"""Resumable training checkpoints of GR-Lite and GR-Lite-text, written and read without pickle's code path.

accelerate's `save_state`/`load_state` keep registered objects (the schedule) and the RNG states as pickles and read
them with `torch.load(weights_only=False)`, so a tampered checkpoint ran code on `--resume`, and a damaged RNG file was
skipped silently. Here a checkpoint folder `step-N/` holds

    model.safetensors      the trained weights (safetensors: tensors only)
    optimization.pt        {"optimizer": ..., "scheduler": ...}: tensors and plain values, read with weights_only=True
    rng_state_<rank>.pt    each process's Python, numpy and torch CPU generator states, the same way
    trainer_state.json     step counters and what `resume` checks, written last (its presence marks a complete folder)

and every file is checked against the live run before anything is restored: a missing, damaged, truncated, tampered or
unexpected file is a ValueError naming it (one line through `lookbench.errors.report_errors`), never skipped, never
executed. A pickle that would run code is named refused, with what it calls, apart from a damaged one; a step (and
the schedule's, and each parameter's) past what the run can reach, or a number that is not finite, is refused. A
folder in an older format (accelerate's `*.pkl`/`*.bin`, GR-Lite-text's `state.pt`) is refused unread.
"""
from __future__ import annotations

import io
import json
import math
import pickletools
import random
import types
import zipfile
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from lookbench.errors import clip
from lookbench.files import read_regular, regular_file

FORMAT = "lookbench-training-state/1"
WEIGHTS = "model.safetensors"
OPTIMIZATION = "optimization.pt"
TRAINER_STATE = "trainer_state.json"
OLDER_FORMATS = ("*.pkl", "*.bin", "state.pt")  # accelerate's pickles; GR-Lite-text's earlier single file
MAX_TRAINER_STATE_BYTES = 256 * 2**20  # class names of a large set fit; a runaway file does not
MT_WORDS = 624  # Mersenne Twister state words (Python's and numpy's generator)
MAX_PICKLE_BYTES = 64 * 2**20  # a torch file's data.pkl read to name what it calls: its tensors are stored beside it


def rng_file(rank: int) -> str:
    return f"rng_state_{rank}.pt"


def latest_checkpoint(checkpoint_dir: Path) -> Path | None:
    """The newest complete checkpoint (a run killed while saving leaves one without trainer_state.json), if any."""
    found = sorted((p.parent for p in checkpoint_dir.glob(f"step-*/{TRAINER_STATE}") if p.parent.name[5:].isdecimal()),
                   key=lambda p: int(p.name[5:]))
    return found[-1] if found else None


def rng_state() -> dict:
    """This process's generator states as tensors and plain values (accelerator generators need none: the trainers
    reseed them with `torch.manual_seed` every step)."""
    version, words, gauss = random.getstate()
    _, key, pos, has_gauss, cached = np.random.get_state()
    return {"python": {"version": version, "state": torch.tensor(words, dtype=torch.int64), "has_gauss": int(gauss is not None),
                       "gauss": 0.0 if gauss is None else float(gauss)},  # numpy's own form: a float always
            "numpy": {"key": torch.from_numpy(key.astype(np.int64)), "pos": int(pos), "has_gauss": int(has_gauss),
                      "cached_gaussian": float(cached)},
            "torch": torch.get_rng_state()}


def write(folder: Path, weights: dict[str, torch.Tensor] | None, optimizer, scheduler, rank: int) -> None:
    """This process's part of a checkpoint: its RNG states, and (`weights` given: the main process) the weights,
    optimizer and schedule. `write_trainer_state` completes the folder once every process has written."""
    folder.mkdir(parents=True, exist_ok=True)
    if weights is not None:
        save_file({k: v.detach().cpu().contiguous() for k, v in weights.items()}, folder / WEIGHTS, metadata={"format": "pt"})
        torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, folder / OPTIMIZATION)
    torch.save(rng_state(), folder / rng_file(rank))


def write_trainer_state(folder: Path, state: dict) -> None:
    (folder / TRAINER_STATE).write_text(json.dumps({"format": FORMAT, **state}))


def refuse(path: Path, why: str) -> ValueError:
    return ValueError(f"Checkpoint file {path} {why}; refusing to resume from it.")


def read_trainer_state(folder: Path, fields: dict[str, type | types.GenericAlias | tuple],
                       last_step: int | None = None) -> dict:
    """trainer_state.json of a checkpoint of this format, each of `fields` present with its type (a number finite;
    `step` a count, at most `last_step`: the run's own last step, so a checkpoint at step 10**30 is refused, not
    resumed into a run that ends at once)."""
    older = sorted(p.name for pattern in OLDER_FORMATS for p in folder.glob(pattern))
    path = folder / TRAINER_STATE
    if older:
        raise ValueError(f"Checkpoint {folder} is in an unsafe older format ({', '.join(older)}: pickles that can run code "
                         "when read) and is not read; start the run again without --resume.")
    try:
        state = json.loads(read_regular(path, MAX_TRAINER_STATE_BYTES))
    except UnicodeDecodeError as err:
        raise refuse(path, f"is not JSON ({err.reason})") from None
    except json.JSONDecodeError as err:
        raise refuse(path, f"is not JSON ({err.msg}, line {err.lineno})") from None
    except (ValueError, RecursionError) as err:  # an integer of more digits than Python converts; nesting past its stack
        raise refuse(path, f"is not JSON ({type(err).__name__}: {clip(err, 80)})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"Checkpoint {folder} is not of this format ({TRAINER_STATE} names no {FORMAT!r}): an older or "
                         "foreign checkpoint, not read; start the run again without --resume.")
    for name, kind in {"step": int, **fields}.items():
        if (name not in state or not _is(state[name], kind) or not _finite(state[name])
                or (name == "step" and state[name] < 0)):
            raise refuse(path, f"has no valid {name!r} (expected {getattr(kind, '__name__', kind)}, got {state.get(name)!r:.60})")
    if last_step is not None and state["step"] > last_step:
        raise refuse(path, f"is at step {clip(state['step'], 40)}, past this run's last step {last_step} (--max-steps, "
                           "--epochs)")
    return state


def restore(folder: Path, module: torch.nn.Module, trained: dict[str, torch.Tensor], optimizer, scheduler, rank: int,
            step: int | None = None) -> None:
    """Load a checkpoint `write` wrote into the live run: `trained` (the module's weights training changes) from
    model.safetensors, then optimizer, schedule and this process's RNG states. Every file is read and checked
    against the live objects before any of them changes; `step` (trainer_state.json's): the schedule is at it, and
    no parameter has taken more optimizer steps (the schedule is stepped once per step)."""
    weights = _read_weights(folder / WEIGHTS, trained)
    optimization = _load(folder / OPTIMIZATION)
    _check(optimization, {"optimizer": {}, "scheduler": {}}, folder / OPTIMIZATION, "", keys_only=True)
    _check_optimizer(optimization["optimizer"], optimizer, folder / OPTIMIZATION, step)
    _check(optimization["scheduler"], scheduler.state_dict(), folder / OPTIMIZATION, "scheduler")
    if step is not None and optimization["scheduler"].get("last_epoch") != step:
        raise refuse(folder / OPTIMIZATION, f"is not a state of this run (scheduler.last_epoch "
                                            f"{clip(optimization['scheduler'].get('last_epoch'), 40)} is not the step {step} "
                                            f"of {TRAINER_STATE})")
    rng = _load(folder / rng_file(rank))
    _check_rng(rng, folder / rng_file(rank))
    module.load_state_dict(weights, strict=False)  # the keys are exactly `trained`'s, checked above
    optimizer.load_state_dict(optimization["optimizer"])
    scheduler.load_state_dict(optimization["scheduler"])
    python = rng["python"]
    random.setstate((python["version"], tuple(python["state"].tolist()), python["gauss"] if python["has_gauss"] else None))
    numpy = rng["numpy"]
    key = numpy["key"].numpy().astype(np.uint32)
    np.random.set_state(("MT19937", key, numpy["pos"], numpy["has_gauss"], numpy["cached_gaussian"]))
    torch.set_rng_state(rng["torch"])


def _is(value, kind) -> bool:
    if isinstance(kind, types.GenericAlias):  # list[float]: a list of such values
        return isinstance(value, kind.__origin__) and all(_is(v, kind.__args__[0]) for v in value)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if float in kinds:
        kinds += (int,)
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


def _finite(value) -> bool:
    """No NaN or infinity (JSON's `NaN`, `Infinity`) where a number is counted or timed."""
    if isinstance(value, list):
        return all(map(_finite, value))
    return not isinstance(value, float) or math.isfinite(value)


def _present(path: Path) -> Path:
    if not path.exists() and not path.is_symlink():
        raise refuse(path, "is missing (the checkpoint is incomplete or damaged)")
    try:
        return regular_file(path)
    except ValueError as err:
        raise refuse(path, f"cannot be read ({err})") from None


def _load(path: Path):
    """A torch file of tensors and plain values: weights_only=True, so a pickle that would build any other object
    (a `__reduce__` payload) is refused before it runs."""
    try:
        return torch.load(_present(path), map_location="cpu", weights_only=True)
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 (torch raises UnpicklingError, RuntimeError, EOFError, … for bad files)
        called = _code_called(path)
        why = (f"holds objects other than tensors and plain values (a pickle that would run code when read: it calls "
               f"{clip(repr(called), 80)}); refused unread by the safe loader" if called is not None
               else f"is damaged or truncated ({type(err).__name__}: {' '.join(str(err).split())[:120]})")
        raise refuse(path, why) from None


def _code_called(path: Path) -> str | None:
    """What a torch file the safe loader refused calls that the loader does not allow (a global, ``module.name``), read
    with ``pickletools`` (which runs nothing): the file's ``data.pkl`` (torch's zip format) or its pickles (older
    format, or a bare pickle). ``None``: it names nothing of the kind, so the loader failed on a damaged file."""
    from torch._weights_only_unpickler import _get_allowed_globals

    allowed = _get_allowed_globals()
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                inner = [i for i in archive.infolist() if i.filename.rsplit("/", 1)[-1] == "data.pkl"]
                if len(inner) != 1 or inner[0].file_size > MAX_PICKLE_BYTES:
                    return None
                stream = io.BytesIO(archive.read(inner[0]))
        else:
            stream = io.BytesIO(read_regular(path, MAX_PICKLE_BYTES))
    except (OSError, ValueError, zipfile.BadZipFile):
        return None
    strings: list[str] = []
    try:
        while stream.tell() < len(stream.getbuffer()):  # the older format is a few pickles in a row
            for opcode, arg, _ in pickletools.genops(stream):
                if opcode.name in ("GLOBAL", "INST") and arg.replace(" ", ".") not in allowed:
                    return arg.replace(" ", ".")
                if opcode.name == "STACK_GLOBAL":  # the loader reads none; its module and name were pushed just before
                    return ".".join(strings[-2:]) or "a global"
                if isinstance(arg, str):
                    strings.append(arg)
    except Exception:  # noqa: BLE001 (pickletools stops at a damaged or truncated pickle: what came before is all)
        pass
    return None


def _read_weights(path: Path, trained: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    try:
        weights = load_file(_present(path))
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 (safetensors' own error type for a damaged header or short file)
        raise refuse(path, f"is damaged or truncated ({type(err).__name__}: {' '.join(str(err).split())[:120]})") from None
    _check(weights, {k: v.detach() for k, v in trained.items()}, path, "weights")
    return weights


def _check(value, template, path: Path, where: str, keys_only: bool = False) -> None:
    """`value` is shaped as the live `template`: the same keys, list lengths, leaf types, tensor dtypes and shapes."""
    def wrong(what: str) -> ValueError:
        return refuse(path, f"is not a state of this run ({where or 'top level'}: {what})")

    if isinstance(template, torch.Tensor):
        if not isinstance(value, torch.Tensor) or value.dtype != template.dtype or value.shape != template.shape:
            got = f"{value.dtype} {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__
            raise wrong(f"expected {template.dtype} {tuple(template.shape)}, got {got}")
    elif isinstance(template, dict):
        if not isinstance(value, dict):
            raise wrong(f"expected a dict, got {type(value).__name__}")
        if value.keys() != template.keys():
            odd = sorted(map(str, value.keys() ^ template.keys()))
            raise wrong(f"keys {odd[:3]} differ")
        if not keys_only:
            for key in template:
                _check(value[key], template[key], path, f"{where}.{key}".strip("."))
    elif isinstance(template, (list, tuple)):
        if type(value) is not type(template) or len(value) != len(template):
            raise wrong(f"expected a {type(template).__name__} of {len(template)}, got {type(value).__name__} {value!r:.60}")
        for i, (v, t) in enumerate(zip(value, template)):
            _check(v, t, path, f"{where}[{i}]")
    elif not _is(value, type(template)) or (isinstance(template, float) and not isinstance(value, float)):
        raise wrong(f"expected {type(template).__name__}, got {type(value).__name__} {value!r:.60}")
    elif not _finite(value):  # a learning rate, beta or cached draw of NaN or infinity
        raise wrong(f"{value!r} is not a finite number")


def _check_optimizer(saved, optimizer, path: Path, step: int | None) -> None:
    """The live optimizer's groups, hyper-parameter types and parameter ids; each parameter's state only tensors of
    its shape (moments) or scalars (its step: a count of at most `step`)."""
    live = optimizer.state_dict()
    _check(saved, live, path, "optimizer", keys_only=True)
    _check(saved["param_groups"], live["param_groups"], path, "optimizer.param_groups")
    if [g["params"] for g in saved["param_groups"]] != [g["params"] for g in live["param_groups"]]:
        raise refuse(path, "is not a state of this run (optimizer.param_groups: parameter ids differ)")
    ids = (i for group in live["param_groups"] for i in group["params"])
    params = dict(zip(ids, (p for group in optimizer.param_groups for p in group["params"])))
    if not isinstance(saved["state"], dict) or not set(saved["state"]) <= set(params):
        raise refuse(path, "is not a state of this run (optimizer.state: not a dict of this optimizer's parameter ids)")
    for i, entry in saved["state"].items():
        shapes = (params[i].shape, torch.Size([]))
        if not isinstance(entry, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor) and v.is_floating_point() and v.shape in shapes
                for k, v in entry.items()):
            raise refuse(path, f"is not a state of this run (optimizer.state[{i}]: not tensors of parameter {i}'s shape "
                               f"{tuple(params[i].shape)})")
        count = entry.get("step")
        if step is not None and count is not None and not (count.numel() == 1 and 0 <= float(count) <= step):
            raise refuse(path, f"is not a state of this run (optimizer.state[{i}].step {clip(count.flatten()[:1].tolist(), 40)} "
                               f"is past the step {step} of {TRAINER_STATE})")


def _check_rng(rng, path: Path) -> None:
    """Shaped as `rng_state()`, with every Mersenne Twister word and position in range (so setting them cannot fail
    half-way)."""
    _check(rng, rng_state(), path, "rng")
    python, numpy = rng["python"], rng["numpy"]
    words, key = python["state"], numpy["key"]
    if (python["version"] != 3 or python["has_gauss"] not in (0, 1) or numpy["has_gauss"] not in (0, 1)
            or not (0 <= int(words[:-1].min()) and int(words[:-1].max()) < 2**32 and 0 <= int(words[-1]) <= MT_WORDS)
            or not (0 <= int(key.min()) and int(key.max()) < 2**32 and 0 <= numpy["pos"] <= MT_WORDS)):
        raise refuse(path, "is not a state of this run (rng: values out of range)")
