"""Text queries on a LookBench release, produced by `lookbench evaluate --queries text` (the GR-Lite-mini-text card's tables).

Runs the CLI for the two baselines that say what the words add — `random` (chance) and the `category-text` oracle
(told each row's category and nothing else: what reading only the category word can reach) — and for GR-Lite-mini-text
on both text forms, and writes one table per release into the model card and benchmarks/RESULTS.md, with the issue's
bar: GR-Lite-mini-text's strict Fine R@1 against the oracle's, overall and on every subset.

    python benchmarks/compare_text_models.py --write                                   # the default LookBench-Mini
    python benchmarks/compare_text_models.py --write --table real-photos --data DIR    # `lookbench build --source fashion-mnist`

`--candidate DIR` scores a trained model folder in place of the committed one (printed, never written).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from compare_encoders import (DATASET_ID, SUBSETS, Table, card_args, interval_words, replace_block, table,
                              write_results_section)

from lookbench.encoders.entries import gr_lite_mini_text_folder

CARD = gr_lite_mini_text_folder() / "README.md"
CARD_URL = "https://huggingface.co/lookbench/gr-lite-mini-text"  # where a model-index entry's table is (the card itself)
THIS_MODEL = "GR-Lite-mini-text (this model)"
ORACLE = "category-text (oracle)"
BAR_OVERALL, BAR_SUBSET = 25.0, 10.0  # issue 39's Done-when: points of strict Fine R@1 above the oracle
TABLES = {
    "mini": Table("## Text queries on LookBench-Mini (synthetic): GR-Lite-mini-text", modes=("strict",)),
    "real-photos": Table("## Text queries on real photos (Fashion-MNIST t10k): GR-Lite-mini-text",
                         "28 px Zalando product photos (Fashion-MNIST t10k, upscaled to 96 px; never trained on), class + shade in words",
                         model_index=False, modes=("strict",), distractors=False, per_subset=False),
}


def evaluate(model: str, form: str, data: str | None, out: Path, distractors: bool) -> dict:
    command = ["lookbench", "evaluate", "--queries", "text", "--text-form", form, "--model", model, "--mode", "strict",
               "--output", str(out), "--quiet"]
    command += ["--data", data] if data else []
    command += [] if distractors else ["--no-distractors"]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"`{' '.join(command)}` failed:\n{proc.stderr}")
    return json.loads((out / "results.json").read_text())


def verdict(rows: list[tuple[str, str, dict]], spec: Table, ours: str) -> str:
    """The issue's bar for each form: strict Fine R@1 at least 25 points above the oracle's overall and 10 on every
    subset."""
    oracle = next(result for name, _, result in rows if name == ORACLE)
    columns = ["overall", *(SUBSETS if spec.per_subset else ())]
    lines = []
    for name, form, result in rows:
        if name != ours:
            continue
        gains = [(c, result[c]["fine_recall"]["@1"] - oracle[c]["fine_recall"]["@1"]) for c in columns]
        met = gains[0][1] >= BAR_OVERALL and all(gain >= BAR_SUBSET for _, gain in gains[1:])
        shown = ", ".join(f"{c} {gain:+.2f}" for c, gain in gains)
        lines.append(f"GR-Lite-mini-text ({form.split(', ')[1]} words) vs the category-text oracle, strict Fine R@1: {shown} "
                     f"points — the bar (+{BAR_OVERALL:.0f} overall" + (f", +{BAR_SUBSET:.0f} on every subset" if spec.per_subset else "")
                     + f") is {'met' if met else 'NOT met'}.")
    return " ".join(lines)


def write(name: str, body: str, rows: list[tuple[str, str, dict]], ours: str) -> None:
    CARD.write_text(replace_block(CARD.read_text(), f"<!-- results:{name}:begin -->", f"<!-- results:{name}:end -->", body))
    if TABLES[name].model_index:
        write_model_index(name, [(form, result) for model, form, result in rows if model == ours])
    write_results_section(TABLES[name].title, body)


def source_name(name: str) -> str:
    """What a table's model-index entries are known by: the script and table that measured them."""
    return f"benchmarks/compare_text_models.py --table {name}"


def write_model_index(name: str, rows: list[tuple[str, dict]]) -> None:
    """This model's headline scores of one table as the card's ``model-index``, per text form: the values its
    ``.eval_results`` are staged from (``lookbench.results.hub_results``, one function for both)."""
    from huggingface_hub import ModelCard

    from lookbench.results.hub_results import headline_scores, model_index

    card = ModelCard.load(CARD)
    kept = [r for r in card.data.eval_results or [] if r.source_name != source_name(name)]
    for form, result in rows:
        provenance, dataset = result["provenance"], result["provenance"]["dataset"]
        kept += model_index(headline_scores(result), DATASET_ID, f"{dataset['name']}: {dataset['data']}",
                            dataset["revision"], provenance["mode"], CARD_URL, source_name(name), provenance["queries"])
    card.data.model_name, card.data.eval_results = "GR-Lite-mini-text", kept
    card.save(CARD)


def main() -> None:
    args = card_args(__doc__.splitlines()[0], TABLES)
    spec = TABLES[args.table]
    ours = f"GR-Lite-mini-text candidate ({args.candidate})" if args.candidate else THIS_MODEL
    models = [("random", "random", "short"), (ORACLE, "category-text", "short")]
    models += [(ours, str(args.candidate) if args.candidate else "gr-lite-mini-text", form) for form in ("short", "long")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, form in models:
            result = evaluate(model, form, args.data, Path(tmp) / str(len(rows)), spec.distractors)
            rows.append((name, f"strict, {form}", result))
            print(f"{name} ({form}): Fine R@1 overall {result['overall']['fine_recall']['@1']:.2f}", flush=True)
    provenance = rows[-1][2]["provenance"]
    dataset = provenance["dataset"]
    queries = sum(provenance["counts"]["queries"].values())
    command = f"python benchmarks/compare_text_models.py --write --table {args.table}" + (f" --data {args.data}" if args.data else "")
    gallery = f"shared noise gallery of {dataset['noise_gallery']} included" if spec.distractors else "no distractors"
    overall = "the first six columns are the query-weighted overall" if spec.per_subset else "one subset, RealStudioFlat"
    body = (
        f"{table(rows, spec).replace('| encoder | mode |', '| encoder | mode, words |', 1)}\n\n{verdict(rows, spec, ours)}\n\n"
        f"Measured on {spec.measured_on or dataset['name']}: text queries (the release's text config; the random and "
        f"oracle rows read no word, so their form does not matter), scores in percent ± half their 95 % interval "
        f"({interval_words(provenance['intervals'])}) on the {queries} queries of {dataset['data']} "
        f"(revision {dataset['revision']}, releases {', '.join(dataset['releases'])}), {gallery}; {overall}. Each row is "
        f"`lookbench evaluate --queries text --text-form short|long --model … --mode strict"
        f"{'' if spec.distractors else ' --no-distractors'}`; the table is produced by `{command}`."
    )
    print(body)
    if args.write:
        write(args.table, body, rows, ours)


if __name__ == "__main__":
    main()
