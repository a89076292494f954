"""The writer of LookBench-Mini: runs a plan over a worker pool and writes the raw release folder.

Why apart from the plan and the drawing: this is the only module that touches the file system, so file
names, the JSONL layout (docs/architecture.md §4) and the process pool live in one place, and the bytes
written depend on the arguments alone (each task renders from its own seed, results stay in plan order).
"""
from __future__ import annotations

import concurrent.futures
import json
import math
import multiprocessing
import os
from pathlib import Path

import numpy as np
from PIL import Image

from lookbench.dataset_builder.mini.plan import MINI_TAXONOMY, STREAMS, Task, plan_test, plan_train
from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE
from lookbench.dataset_builder.mini.render import render_outfit, render_view


def write_taxonomy(path) -> Path:
    """Write the Mini's taxonomy file (``dataset_builder/taxonomy.py``), for the builder's validation and the annotator."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return MINI_TAXONOMY.write(path)


def _save(img: Image.Image, path: Path):
    img.save(path, format="PNG", compress_level=3)


def _saved(img: Image.Image, folder: Path, image: str, row: dict, **extra) -> dict:
    """Write ``img`` as ``folder/image`` and return ``row`` completed with its image path (and ``extra``)."""
    _save(img, folder / image)
    return row | {"image": image, **extra}


def _render(task: Task, folder: Path, stem: str) -> list[dict]:
    """Render one task into ``folder`` and return its finished rows (runs in a worker process)."""
    rng = np.random.default_rng(task.seed)
    if task.kind == "view":
        return [_saved(render_view(task.items[0], task.style, rng), folder, f"images/{stem}.png", task.rows[0])]
    raw, boxes = render_outfit(task.items, rng, aigen=task.style == "aigen", judged=len(task.rows))
    if task.kind == "crop":  # a training street crop: only the first item is annotated
        return [_saved(raw.crop(boxes[0]), folder, f"images/{stem}.png", task.rows[0])]
    raw_path = f"images/raw/{task.rows[0]['outfit_id']}.png"
    _save(raw, folder / raw_path)
    return [_saved(raw.crop(box), folder, f"images/{stem}-{k}.png", row, bbox=box, raw_image=raw_path)
            for k, (row, box) in enumerate(zip(task.rows, boxes))]


def _execute(tasks: list[Task], folders: list[Path], stems: list[str], workers: int) -> list[list[dict]]:
    """Render every task, in order; a fork pool over ``workers`` processes when it pays off."""
    if workers <= 1 or len(tasks) < 64:
        return list(map(_render, tasks, folders, stems))
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        return list(pool.map(_render, tasks, folders, stems, chunksize=max(1, len(tasks) // (workers * 8))))


def generate_raw_release(
    out_dir, *, scale: float = 1.0, seed: int = 0, split: str = "test", workers: int | None = None, noise_scale: float = 1.0
) -> dict:
    """Write LookBench-Mini as a raw release folder (docs/architecture.md §4) and return {config: {split: rows}}.

    ``split="test"`` writes the four test subsets (query + gallery) and ``noise`` (gallery);
    ``split="train"`` writes ``train/train.jsonl`` + images, disjoint from the test configs (other id prefix,
    other seed stream). Same arguments → byte-identical files; ``workers`` only changes the speed.
    ``noise_scale`` multiplies the noise gallery on top of ``scale`` (about 13 gives the published release's
    noise : subset proportions, 58,275 distractors to 11,124 query + gallery rows).
    """
    if split not in STREAMS:
        raise ValueError(f"split must be 'test' or 'train', got {split!r}")
    for name, value in (("scale", scale), ("noise_scale", noise_scale)):
        if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
            raise ValueError(f"{name} must be a positive number, got {value!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    out = Path(out_dir)
    plan = plan_test(int(seed), float(scale), float(noise_scale)) if split == "test" else plan_train(int(seed), float(scale))
    for config in plan:
        folder = out / config
        if folder.exists() and any(folder.iterdir()):
            raise FileExistsError(f"{folder} already exists and is not empty; LookBench-Mini writes into a fresh folder")
    tasks, folders, stems = [], [], []
    for config, splits in plan.items():
        for split_name, split_tasks in splits.items():
            folder = out / config
            (folder / "images" / split_name).mkdir(parents=True, exist_ok=True)
            if any(task.kind == "outfit" for task in split_tasks):
                (folder / "images" / "raw").mkdir(exist_ok=True)
            tasks += split_tasks
            folders += [folder] * len(split_tasks)
            stems += [f"{split_name}/{i:05d}" for i in range(len(split_tasks))]
    if split == "test":  # the release ships its taxonomy (the training set is read with it)
        write_taxonomy(out / TAXONOMY_FILE)
    rendered = iter(_execute(tasks, folders, stems, min(2, os.cpu_count() or 1) if workers is None else workers))
    summary: dict[str, dict[str, int]] = {}
    for config, splits in plan.items():
        for split_name, split_tasks in splits.items():
            rows = [row for _ in split_tasks for row in next(rendered)]
            with open(out / config / f"{split_name}.jsonl", "w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
            summary.setdefault(config, {})[split_name] = len(rows)
    return summary
