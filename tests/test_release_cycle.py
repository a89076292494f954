"""The whole cycle, offline, as a maintainer runs it (docs/building-a-release.md): a crawl with hidden truth (Mini,
Fashion-MNIST) → `annotate` (zero-shot) → `review` (two reviewers at once in the real app through gradio_client, each
labelling from the truth, a shared sample between them) → `audit` → `build --append` onto an earlier release. The
release holds the truth, the earlier release's shards stay byte-identical, and the audit's figures are the
proposals' agreement with the truth."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from lookbench import cli
from lookbench.dataset_builder.taxonomy import load as load_taxonomy
from lookbench.schema import SUBSETS, resolve_subset

from tests.helpers.raw_release import write_release
from tests.helpers.review_app import reviewing_at_once, serve  # noqa: F401  (serve: a fixture)

EARLY = ("2016-01-01T00:00:00Z", "2016-02-01T00:00:00Z", "2016-03-01T00:00:00Z")  # before every crawl's items


def truth_by_key(out: Path) -> dict[str, dict]:
    """The hidden labels by review key ``<Config>/<split>/<item_id>``, joined through the crawl's items by image."""
    labels = {}
    for line in (out / "truth.jsonl").read_text().splitlines():
        row = json.loads(line)
        labels[row["image"]] = {"category": row["category"], "attributes": row["attributes"]}
    keys = {}
    for line in (out / "crawl" / "items.jsonl").read_text().splitlines():
        item = json.loads(line)
        keys[f"{resolve_subset(item['subset'])}/{item['split']}/{item['item_id']}"] = labels[item["image"]]
    return keys


def built_rows(folder: Path, release: str) -> dict[str, tuple]:
    found = {}
    for config in SUBSETS:
        if not (folder / config).is_dir():
            continue
        for split in SUBSETS[config].splits:
            for row in datasets.load_dataset(str(folder), config, split=split):
                if row["release"] == release:
                    found[f"{config}/{split}/{row['item_id']}"] = (
                        row["category"], row["main_attribute"], {(a["name"], a["value"]) for a in row["attributes"]})
    return found


@pytest.mark.slow
@pytest.mark.parametrize("source", ["mini", "fashion-mnist"])
def test_crawl_annotate_review_audit_build_append(source, tmp_path, serve, capsys):
    out, raw, data = tmp_path / "fresh", tmp_path / "raw", tmp_path / "data" / "lookbench"
    crawl = subprocess.run([sys.executable, "-m", "lookbench.dataset_builder.crawl", "--source", source, "--out", str(out),
                            "--scale", "0.2", "--limit", "4"], capture_output=True, text=True, timeout=600)
    assert crawl.returncode == 0, crawl.stderr
    truth = truth_by_key(out)
    assert cli.main(["annotate", "--input", str(out / "crawl"), "--taxonomy", str(out / "taxonomy.json"),
                     "--proposer", "zero-shot:gr-lite-mini-text", "--out", str(raw), "--quiet"]) == 0
    taxonomy = load_taxonomy(raw / "taxonomy.json")
    # review: two people at once on one server, a shared sample of 6 both decide
    served = serve(raw, "--overlap", "2", "--shared", "6")
    acknowledged = reviewing_at_once(served, truth, ["alice", "bob"], taxonomy)
    assert set(acknowledged["alice"]) | set(acknowledged["bob"]) == set(truth)
    assert len(set(acknowledged["alice"]) & set(acknowledged["bob"])) == 6
    # audit: what the proposer got right is what agrees with the truth, counted here from the rows themselves
    capsys.readouterr()
    assert cli.main(["audit", str(raw), "--json", str(tmp_path / "audit.json")]) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "audit.json").read_text())
    proposals = {}
    for config in SUBSETS:
        for split in SUBSETS[config].splits:
            path = raw / config / f"{split}.jsonl"
            for line in path.read_text().splitlines() if path.exists() else []:
                row = json.loads(line)
                proposals[f"{config}/{split}/{row['item_id']}"] = row["proposals"]
    hits = sum(proposals[k]["category"]["value"] == t["category"] for k, t in truth.items())
    assert report["attributes"]["category"]["accuracy"]["hits"] == hits and report["attributes"]["category"]["accuracy"]["n"] == len(truth)
    main = {k: taxonomy.categories[t["category"]].main_attribute for k, t in truth.items()}
    name = next(iter(set(main.values())))  # the main attribute (color for the Mini, shade for Fashion-MNIST)
    proposed_main = sum((proposals[k]["attributes"].get(name) or {}).get("value") == t["attributes"][name] for k, t in truth.items())
    assert report["attributes"][name]["accuracy"]["hits"] == proposed_main
    assert report["counts"] == {"items": len(truth), "reviewed": len(truth), "disputed": 0, "not_reviewed": 0,
                                "reviewers": ["alice", "bob"], "not_reviewable": 0, "settled": 0, "settled_by": {}}  # issue 54
    assert report["disagreements"] == [] and report["agreement"]["category"]["pairs"]["alice / bob"]["n"] == 6
    assert f"{len(truth)} items: {len(truth)} reviewed and agreed, 0 disputed, 0 not reviewed" in printed
    # build: an earlier release first, then the reviewed crawl appended to it
    base = write_release(tmp_path / "base", stamps=EARLY)
    assert cli.main(["build", "--source", "raw", "--input", str(base), "--out", str(data), "--quiet"]) == 0
    before = {p.relative_to(data): hashlib.sha256(p.read_bytes()).hexdigest() for p in data.rglob("*.parquet")}
    assert cli.main(["build", "--source", "raw", "--input", str(raw), "--append", "--out", str(data), "--quiet"]) == 0
    assert {p: hashlib.sha256((data / p).read_bytes()).hexdigest() for p in before} == before
    release = max(json.loads(l)["timestamp"] for l in (out / "crawl" / "items.jsonl").read_text().splitlines())
    release = "v" + release[:10].replace("-", "")
    expected = {k: (t["category"], t["attributes"][main[k]], {(n, v) for n, v in t["attributes"].items() if v != taxonomy.not_applicable})
                for k, t in truth.items()}
    assert built_rows(data, release) == expected
    card = (data / "README.md").read_text()
    assert "## Annotation audit" in card and f"{len(truth)} items: {len(truth)} reviewed and agreed" in card
    assert (data / f"annotation_audit-{release}.json").is_file()
