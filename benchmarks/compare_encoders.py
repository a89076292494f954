"""Encoder comparison on a LookBench release, produced by `lookbench evaluate` (the GR-Lite-mini card's tables).

Runs the CLI for raw pixels, EfficientNet-Lite0 (ImageNet), the previous GR-Lite-minis (read from git at
`PREVIOUS`, where their weights differ from the committed ones) and the committed one, in each mode of the
table (a second mode re-uses the embedding cache, a repeated run the results store), and writes one table per
release into the model card and benchmarks/RESULTS.md, and this model's scores of the LookBench-Mini tables into the
card's ``model-index`` (huggingface_hub's ``EvalResult``):

    python benchmarks/compare_encoders.py --write                                   # the default LookBench-Mini
    python benchmarks/compare_encoders.py --write --table published --data DIR      # the published layout
    python benchmarks/compare_encoders.py --write --table real-photos --data DIR    # `lookbench build --source fashion-mnist`

`--candidate DIR` scores a trained model folder in place of the committed one (printed, never written).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lookbench.encoders.entries import gr_lite_mini_folder

ROOT = Path(__file__).resolve().parent.parent
MODEL = gr_lite_mini_folder().relative_to(ROOT)  # the editable install's committed folder
CARD = ROOT / MODEL / "README.md"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
PREVIOUS = {  # version -> the main commit before the next version replaced the weights
    "v1": "3117cad43298b4e749594c77e8097597b7af220a",
    "v2": "530d90062d0e2522e4fdbd92f8ae71da3afa11ca",
    "v3": "e0318585e745b4d1a0d79ebd03fe87a60c1e6b72",
}
MODEL_FILES = ("config.json", "preprocessor_config.json", "model.safetensors", "README.md")
SUBSETS = ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook")
COLUMNS = {  # column -> (metric, K) of the overall scores
    "Fine R@1": ("fine_recall", "@1"),
    "Fine R@5": ("fine_recall", "@5"),
    "Fine R@10": ("fine_recall", "@10"),
    "Fine R@20": ("fine_recall", "@20"),
    "Coarse R@1": ("coarse_recall", "@1"),
    "nDCG@5": ("ndcg", "@5"),
}
THIS_MODEL = "GR-Lite-mini (this model)"
BASELINE = "EfficientNet-Lite0 (ImageNet)"
DATASET_ID = "lookbench/lookbench"  # the project's dataset repo on the Hub (`lookbench stage --namespace` retargets it)
METRIC_ID = "lookbench/fine_recall"
CARD_URL = "https://huggingface.co/lookbench/gr-lite-mini"  # where a model-index entry's table is (the card itself)


@dataclass(frozen=True)
class Table:
    """One table of the card: its RESULTS.md heading, what it measured, and how it is evaluated."""

    title: str
    measured_on: str | None = None  # what the rows were measured on, where the dataset's name does not say it
    model_index: bool = True  # this model's rows go into the card's model-index (which names DATASET_ID)
    modes: tuple[str, ...] = ("strict", "leaderboard")
    distractors: bool = True  # the shared noise gallery appended to every subset's gallery
    per_subset: bool = True  # each subset's Fine R@1 beside the overall columns
    rivals: tuple[str, ...] = (BASELINE,)  # the verdict compares this model with each


TABLES = {
    "mini": Table("## Encoders on LookBench-Mini (synthetic)"),
    "published": Table("## Encoders on LookBench-Mini (synthetic) at the published layout's size"),
    # Not a LookBench dataset, so not in the model-index (whose entries name LookBench's dataset repo).
    "real-photos": Table("## Encoders on real photos (Fashion-MNIST t10k)",
                         "28 px Zalando product photos (Fashion-MNIST t10k, upscaled to 96 px; never trained on)",
                         model_index=False, modes=("strict",), distractors=False, per_subset=False,
                         rivals=(BASELINE, "raw pixels")),
}


def git_blob(revision: str, name: str) -> bytes:
    blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{(MODEL / name).as_posix()}"], capture_output=True)
    if blob.returncode:
        sys.exit(f"cannot read {name} of GR-Lite-mini at {revision[:7]} from git: {blob.stderr.decode().strip()}")
    return blob.stdout


def previous_folder(revision: str, folder: Path) -> Path | None:
    """An earlier version's weights as a model folder (same config and weights, hence the same cache fingerprint
    as before), or None when they are the committed weights."""
    if git_blob(revision, "model.safetensors") == (ROOT / MODEL / "model.safetensors").read_bytes():
        return None
    folder.mkdir(parents=True)
    for name in MODEL_FILES:
        (folder / name).write_bytes(git_blob(revision, name))
    return folder


def evaluate(model: str, mode: str, data: str | None, out: Path, distractors: bool = True) -> dict:
    command = ["lookbench", "evaluate", "--model", model, "--mode", mode, "--output", str(out), "--quiet"]
    if data:
        command += ["--data", data]
    if not distractors:
        command.append("--no-distractors")
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"`{' '.join(command)}` failed:\n{proc.stderr}")
    return json.loads((out / "results.json").read_text())


def column_names(spec: Table) -> list[str]:
    return [*COLUMNS, *(f"{s} Fine R@1" for s in SUBSETS if spec.per_subset)]


def cells(result: dict, spec: Table, ci95: bool = False) -> list:
    """One table row: the overall columns, then (per_subset) each subset's Fine R@1; their [lo, hi] with ``ci95``."""
    def value(scores: dict, metric: str, k: str):
        return scores["ci95"][metric][k] if ci95 else scores[metric][k]

    return ([value(result["overall"], metric, k) for metric, k in COLUMNS.values()]
            + [value(result[s], "fine_recall", "@1") for s in SUBSETS if spec.per_subset])


def table(rows: list[tuple[str, str, dict]], spec: Table) -> str:
    """Each cell is the score ± half its 95 % interval, as `lookbench evaluate` prints it."""
    header = ["encoder", "mode", *column_names(spec)]
    lines = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
    for name, mode, result in rows:
        shown = [f"{v:.2f} ±{(hi - lo) / 2:.2f}" for v, (lo, hi) in zip(cells(result, spec), cells(result, spec, ci95=True))]
        lines.append(f"| {name} | {mode} | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def verdict(rows: list[tuple[str, str, dict]], spec: Table, ours: str = THIS_MODEL) -> str:
    """The issue's targets: this model against each rival of the table on every strict column."""
    by_name = {name: result for name, mode, result in rows if mode == "strict"}
    names, lines = column_names(spec), []
    for rival in spec.rivals:
        pairs = list(zip(names, cells(by_name[ours], spec), cells(by_name[rival], spec)))
        ahead = [n for n, a, b in pairs if a >= b]
        behind = [f"{n} ({a:.2f} vs {b:.2f})" for n, a, b in pairs if a < b]
        lines.append(f"Strict mode, GR-Lite-mini vs {rival.removesuffix(' (ImageNet)')}: ahead or equal on {len(ahead)} of "
                     f"{len(names)} columns ({', '.join(ahead) or 'none'}); behind on {', '.join(behind) or 'none'}.")
    return " ".join(lines)


def replace_block(text: str, begin: str, end: str, body: str) -> str:
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"marker {begin!r} not found")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)


def source_name(name: str) -> str:
    """What a table's model-index entries are known by: the script and table that measured them."""
    return f"benchmarks/compare_encoders.py --table {name}"


def eval_results(name: str, rows: list[tuple[str, str, dict]]):
    """This model's scores of one table as model-index entries, the dataset named as measured: per mode, the overall
    columns (config ``all``) and each subset's Fine R@1 (config = the subset), in percent as the table shows them."""
    from huggingface_hub import EvalResult

    spec, results = TABLES[name], []
    if not spec.model_index:
        return results
    for model, mode, result in rows:
        if model != THIS_MODEL:
            continue
        dataset = result["provenance"]["dataset"]
        common = dict(task_type="image-feature-extraction", task_name="Fashion image retrieval", dataset_type=DATASET_ID,
                      dataset_name=f"{dataset['name']}: {dataset['data']}", dataset_split="query",
                      dataset_revision=dataset["revision"], metric_type=METRIC_ID, metric_config=mode,
                      source_name=source_name(name), source_url=CARD_URL)
        values = cells(result, spec)
        for column, value in zip(COLUMNS, values):
            results.append(EvalResult(**common, dataset_config="all", metric_name=f"{column} ({mode})", metric_value=round(value, 2)))
        for subset, value in zip(SUBSETS, values[len(COLUMNS):]):
            results.append(EvalResult(**common, dataset_config=subset, metric_name=f"Fine R@1 ({mode})", metric_value=round(value, 2)))
    return results


def write_model_index(name: str, results) -> None:
    """The card's model-index through huggingface_hub's card data: this table's entries replaced, the others kept,
    in the order of TABLES (so re-writing one table leaves the card as it was when its scores are unchanged)."""
    from huggingface_hub import ModelCard

    card = ModelCard.load(CARD)
    kept = [r for r in card.data.eval_results or [] if r.source_name != source_name(name)]
    order = {source_name(table): i for i, table in enumerate(TABLES)}
    entries = sorted(kept + results, key=lambda r: order.get(r.source_name, len(order)))  # stable: rows keep their order
    card.data.model_name, card.data.eval_results = "GR-Lite-mini", entries
    card.save(CARD)


def write_results_section(title: str, body: str) -> None:
    """RESULTS.md's section `title` replaced by `body` (appended when new)."""
    text = RESULTS.read_text()
    section = f"{title}\n\n{body}\n"
    if title in text:
        text = re.sub(re.escape(title) + r"\n.*?(?=\n## |\Z)", lambda _: section, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + section
    RESULTS.write_text(text)


def write(name: str, body: str, results) -> None:
    CARD.write_text(replace_block(CARD.read_text(), f"<!-- results:{name}:begin -->", f"<!-- results:{name}:end -->", body))
    write_model_index(name, results)
    write_results_section(TABLES[name].title, body)


def interval_words(recorded: dict) -> str:
    """How a result's intervals were made, from its provenance, for a table's caption."""
    resamples = f"{recorded['resamples']} bootstrap resamples over queries, outfits whole"
    if "hit_rates" not in recorded:  # a result from before the Wilson intervals
        return resamples
    return f"Recall: Wilson on the effective number of queries; nDCG: percentiles of {resamples}"


def card_args(description: str, tables: dict) -> argparse.Namespace:
    """The flags of a card script: which of its tables, on which data, written or only printed, or a candidate
    folder scored in place of the committed model (never written: the card shows the committed one)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", help="dataset folder (default: the embedded LookBench-Mini)")
    parser.add_argument("--table", choices=sorted(tables), default="mini", help="which table of the card to write")
    parser.add_argument("--write", action="store_true", help="write the table into the model card and RESULTS.md")
    parser.add_argument("--candidate", type=Path, help="score this model folder in place of the committed one (not with --write)")
    args = parser.parse_args()
    if args.candidate and args.write:
        parser.error("--candidate scores an uncommitted model; the card's tables show the committed one, so drop --write")
    return args


def main() -> None:
    args = card_args(__doc__.splitlines()[0], TABLES)
    spec = TABLES[args.table]
    ours = f"GR-Lite-mini candidate ({args.candidate})" if args.candidate else THIS_MODEL
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        models = [("raw pixels", "raw-pixels"), (BASELINE, "efficientnet-lite0")]
        for version, revision in PREVIOUS.items():
            folder = previous_folder(revision, tmp / f"gr-lite-mini-{version}")
            if folder is not None:
                models.append((f"GR-Lite-mini {version} ({revision[:7]})", str(folder)))
        models.append((ours, str(args.candidate) if args.candidate else "gr-lite-mini"))
        rows = []
        for name, model in models:
            for mode in spec.modes:
                result = evaluate(model, mode, args.data, tmp / f"{len(rows)}-{mode}", spec.distractors)
                rows.append((name, mode, result))
                print(f"{name} ({mode}): Fine R@1 overall {result['overall']['fine_recall']['@1']:.2f}", flush=True)
    provenance = rows[-1][2]["provenance"]
    dataset = provenance["dataset"]
    queries = sum(provenance["counts"]["queries"].values())
    command = f"python benchmarks/compare_encoders.py --write --table {args.table}" + (f" --data {args.data}" if args.data else "")
    gallery = (f"shared noise gallery of {dataset['noise_gallery']} included" if spec.distractors else "no distractors")
    measured = f"Measured on {spec.measured_on or dataset['name']}"
    overall = "the first six columns are the query-weighted overall" if spec.per_subset else "one subset, RealStudioFlat"
    body = (
        f"{table(rows, spec)}\n\n{verdict(rows, spec, ours)}\n\n{measured}: scores in percent ± half their 95 % interval "
        f"({interval_words(provenance['intervals'])}) on the {queries} queries of "
        f"{dataset['data']} (revision {dataset['revision']}, releases {', '.join(dataset['releases'])}), {gallery}; {overall}. "
        f"Each row is `lookbench evaluate --model … --mode {'|'.join(spec.modes)}{'' if spec.distractors else ' --no-distractors'}`; "
        f"the table is produced by `{command}`."
    )
    print(body)
    if args.write:
        write(args.table, body, eval_results(args.table, rows))


if __name__ == "__main__":
    main()
