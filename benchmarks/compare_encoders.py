"""Encoder comparison on a LookBench release, produced by `lookbench evaluate` (the GR-Lite-mini card's tables).

Runs the CLI for raw pixels, EfficientNet-Lite0 (ImageNet), the previous GR-Lite-mini (v1, read from git at
`V1_REVISION`) and the committed one, in strict and leaderboard mode (the second mode re-uses the embedding
cache, a repeated run the results store), and writes one table per release into the model card and
benchmarks/RESULTS.md, and this model's scores into the card's ``model-index`` (huggingface_hub's ``EvalResult``):

    python benchmarks/compare_encoders.py --write                                   # the default LookBench-Mini
    python benchmarks/compare_encoders.py --write --table published --data DIR      # the published layout
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from lookbench.registry import gr_lite_mini_folder

ROOT = Path(__file__).resolve().parent.parent
MODEL = gr_lite_mini_folder().relative_to(ROOT)  # the editable install's committed folder
CARD = ROOT / MODEL / "README.md"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
V1_REVISION = "3117cad43298b4e749594c77e8097597b7af220a"  # main before GR-Lite-mini v2 replaced the weights
V1_FILES = ("config.json", "preprocessor_config.json", "model.safetensors", "README.md")
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
TITLES = {"mini": "## Encoders on LookBench-Mini (synthetic)",
          "published": "## Encoders on synthetic LookBench-Mini at the published layout's size"}
DATASET_ID = "lookbench/lookbench"  # the project's dataset repo on the Hub (`lookbench stage --namespace` retargets it)
METRIC_ID = "lookbench/fine_recall"
CARD_URL = "https://huggingface.co/lookbench/gr-lite-mini"  # where a model-index entry's table is (the card itself)


def v1_folder(folder: Path) -> Path:
    """The v1 weights as a model folder: same config and weights, hence the same cache fingerprint as before."""
    folder.mkdir(parents=True)
    for name in V1_FILES:
        blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{V1_REVISION}:{(MODEL / name).as_posix()}"],
                              capture_output=True)
        if blob.returncode:
            sys.exit(f"cannot read {name} of GR-Lite-mini v1 at {V1_REVISION[:7]} from git: {blob.stderr.decode().strip()}")
        (folder / name).write_bytes(blob.stdout)
    return folder


def evaluate(model: str, mode: str, data: str | None, out: Path) -> dict:
    command = ["lookbench", "evaluate", "--model", model, "--mode", mode, "--output", str(out), "--quiet"]
    if data:
        command += ["--data", data]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"`{' '.join(command)}` failed:\n{proc.stderr}")
    return json.loads((out / "results.json").read_text())


def cells(result: dict) -> list[float]:
    """One table row: the overall columns, then each subset's Fine R@1."""
    overall = [result["overall"][metric][k] for metric, k in COLUMNS.values()]
    return overall + [result[subset]["fine_recall"]["@1"] for subset in SUBSETS]


def table(rows: list[tuple[str, str, dict]]) -> str:
    header = ["encoder", "mode", *COLUMNS, *(f"{s} Fine R@1" for s in SUBSETS)]
    lines = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
    for name, mode, result in rows:
        lines.append(f"| {name} | {mode} | " + " | ".join(f"{v:.2f}" for v in cells(result)) + " |")
    return "\n".join(lines)


def verdict(rows: list[tuple[str, str, dict]]) -> str:
    """The issue's targets: this model against EfficientNet-Lite0 on every strict column."""
    by_name = {name: result for name, mode, result in rows if mode == "strict"}
    ours, base = cells(by_name[THIS_MODEL]), cells(by_name["EfficientNet-Lite0 (ImageNet)"])
    names = [*COLUMNS, *(f"{s} Fine R@1" for s in SUBSETS)]
    ahead = [n for n, a, b in zip(names, ours, base) if a >= b]
    behind = [f"{n} ({a:.2f} vs {b:.2f})" for n, a, b in zip(names, ours, base) if a < b]
    return (f"Strict mode, GR-Lite-mini vs EfficientNet-Lite0: ahead or equal on {len(ahead)} of {len(names)} "
            f"columns ({', '.join(ahead) or 'none'}); behind on {', '.join(behind) or 'none'}.")


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

    results = []
    for model, mode, result in rows:
        if model != THIS_MODEL:
            continue
        dataset = result["provenance"]["dataset"]
        common = dict(task_type="image-feature-extraction", task_name="Fashion image retrieval", dataset_type=DATASET_ID,
                      dataset_name=f"{dataset['name']}: {dataset['data']}", dataset_split="query",
                      dataset_revision=dataset["revision"], metric_type=METRIC_ID, metric_config=mode,
                      source_name=source_name(name), source_url=CARD_URL)
        values = cells(result)
        for column, value in zip(COLUMNS, values):
            results.append(EvalResult(**common, dataset_config="all", metric_name=f"{column} ({mode})", metric_value=round(value, 2)))
        for subset, value in zip(SUBSETS, values[len(COLUMNS):]):
            results.append(EvalResult(**common, dataset_config=subset, metric_name=f"Fine R@1 ({mode})", metric_value=round(value, 2)))
    return results


def write_model_index(name: str, results) -> None:
    """The card's model-index through huggingface_hub's card data: this table's entries replaced, the others kept."""
    from huggingface_hub import ModelCard

    card = ModelCard.load(CARD)
    kept = [r for r in card.data.eval_results or [] if r.source_name != source_name(name)]
    card.data.model_name, card.data.eval_results = "GR-Lite-mini", kept + results
    card.save(CARD)


def write(name: str, body: str, results) -> None:
    CARD.write_text(replace_block(CARD.read_text(), f"<!-- results:{name}:begin -->", f"<!-- results:{name}:end -->", body))
    write_model_index(name, results)
    text = RESULTS.read_text()
    section = f"{TITLES[name]}\n\n{body}\n"
    if TITLES[name] in text:
        text = re.sub(re.escape(TITLES[name]) + r"\n.*?(?=\n## |\Z)", lambda _: section, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + section
    RESULTS.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="dataset folder (default: the embedded LookBench-Mini)")
    parser.add_argument("--table", choices=sorted(TITLES), default="mini", help="which table of the card to write")
    parser.add_argument("--write", action="store_true", help="write the table into the model card and RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        models = [
            ("raw pixels", "raw-pixels"),
            ("EfficientNet-Lite0 (ImageNet)", "efficientnet-lite0"),
            (f"GR-Lite-mini v1 ({V1_REVISION[:7]})", str(v1_folder(tmp / "gr-lite-mini-v1"))),
            (THIS_MODEL, "gr-lite-mini"),
        ]
        rows = []
        for name, model in models:
            for mode in ("strict", "leaderboard"):
                result = evaluate(model, mode, args.data, tmp / f"{len(rows)}-{mode}")
                rows.append((name, mode, result))
                print(f"{name} ({mode}): Fine R@1 overall {result['overall']['fine_recall']['@1']:.2f}", flush=True)
    provenance = rows[-1][2]["provenance"]
    dataset = provenance["dataset"]
    queries = sum(provenance["counts"]["queries"].values())
    command = f"python benchmarks/compare_encoders.py --write --table {args.table}" + (f" --data {args.data}" if args.data else "")
    body = (
        f"{table(rows)}\n\n{verdict(rows)}\n\nMeasured on {dataset['name']}: scores in percent on the {queries} queries of {dataset['data']} "
        f"(revision {dataset['revision']}, releases {', '.join(dataset['releases'])}), shared noise gallery of "
        f"{dataset['noise_gallery']} included; the first six columns are the query-weighted overall. Each row is "
        f"`lookbench evaluate --model … --mode strict|leaderboard`; the table is produced by `{command}`."
    )
    print(body)
    if args.write:
        write(args.table, body, eval_results(args.table, rows))


if __name__ == "__main__":
    main()
