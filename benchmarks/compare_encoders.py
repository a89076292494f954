"""Encoder comparison on LookBench-Mini, produced by `lookbench evaluate` (issue 4's "Done when" table).

Runs the CLI for raw pixels, EfficientNet-Lite0 (ImageNet), a randomly initialised gr-lite-mini and the
trained gr-lite-mini, in strict and leaderboard mode (the second mode re-uses the embedding cache), and
writes the table into the GR-Lite-mini model card and benchmarks/RESULTS.md.

    python benchmarks/compare_encoders.py [--data DIR] [--write]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CARD = ROOT / "models" / "gr_lite" / "gr-lite-mini" / "README.md"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
SECTION = "## Encoders on LookBench-Mini"
SUBSET_COLUMNS = ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook", "overall")


def random_gr_lite_mini(folder: Path) -> Path:
    """gr-lite-mini at a seeded random initialisation: the untrained starting point of the recipe."""
    import torch
    from transformers import set_seed

    from lookbench.models.gr_lite import GrLiteConfig, GrLiteModel, processor_for

    set_seed(0)
    config = GrLiteConfig.from_preset("gr-lite-mini")
    with torch.no_grad():
        GrLiteModel(config).save_pretrained(folder)
    processor_for(config).save_pretrained(folder)
    return folder


def evaluate(model: str, mode: str, data: str | None, out: Path) -> dict:
    command = ["lookbench", "evaluate", "--model", model, "--mode", mode, "--output", str(out), "--quiet"]
    if data:
        command += ["--data", data]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"`{' '.join(command)}` failed:\n{proc.stderr}")
    return json.loads((out / "results.json").read_text())


def table(rows: list[tuple[str, dict, dict]]) -> str:
    lines = [
        "| encoder | metric | " + " | ".join(SUBSET_COLUMNS) + " |",
        "|---|---|" + "---:|" * len(SUBSET_COLUMNS),
    ]
    for name, strict, board in rows:
        for label, result, metric, k in (
            ("Fine R@1 (strict)", strict, "fine_recall", "@1"),
            ("Fine R@1 (leaderboard)", board, "fine_recall", "@1"),
            ("Coarse R@1", strict, "coarse_recall", "@1"),
            ("nDCG@5", strict, "ndcg", "@5"),
        ):
            cells = [f"{result[s][metric][k]:.2f}" for s in SUBSET_COLUMNS]
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def replace_block(text: str, begin: str, end: str, body: str) -> str:
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"marker {begin!r} not found")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="dataset folder (default: the embedded LookBench-Mini)")
    parser.add_argument("--write", action="store_true", help="write the table into the model card and RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        models = [
            ("raw pixels", "raw-pixels"),
            ("EfficientNet-Lite0 (ImageNet)", "efficientnet-lite0"),
            ("gr-lite-mini, random init", str(random_gr_lite_mini(tmp / "gr-lite-mini-random"))),
            ("gr-lite-mini, trained", "gr-lite-mini"),
        ]
        rows = []
        for name, model in models:
            strict = evaluate(model, "strict", args.data, tmp / f"{len(rows)}-strict")
            board = evaluate(model, "leaderboard", args.data, tmp / f"{len(rows)}-leaderboard")
            rows.append((name, strict, board))
            print(f"{name}: strict Fine R@1 overall {strict['overall']['fine_recall']['@1']:.2f}", flush=True)
    provenance = rows[-1][1]["provenance"]
    command = "python benchmarks/compare_encoders.py --write" + (f" --data {args.data}" if args.data else "")
    dataset = provenance["dataset"]
    queries = sum(provenance["counts"]["queries"].values())
    body = (
        f"{table(rows)}\n\nScores in percent on the {queries} queries of {dataset['data']} (revision "
        f"{dataset['revision']}, releases {', '.join(dataset['releases'])}), shared noise gallery of "
        f"{dataset['noise_gallery']} included; overall = query-weighted mean. Each row is `lookbench evaluate --model … "
        f"--mode strict|leaderboard`; the table is produced by `{command}`."
    )
    print(body)
    if args.write:
        CARD.write_text(replace_block(CARD.read_text(), "<!-- results:begin -->", "<!-- results:end -->", body))
        text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
        section = f"{SECTION}\n\n{body}\n"
        if SECTION in text:
            text = re.sub(re.escape(SECTION) + r".*?(?=\n## |\Z)", lambda _: section, text, flags=re.S)
        else:
            text = text.rstrip() + "\n\n" + section
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
