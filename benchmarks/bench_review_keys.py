"""Keys and seconds per item in the review form (issue 54 item 4), driving the real page in Debian's chromium.

    python benchmarks/bench_review_keys.py [--limit N] [--work DIR]

A LookBench-Mini crawl with known labels (``--limit`` items per subset and split, scale 0.2) is annotated by the
zero-shot proposer and served by ``lookbench review RAW --reviewer bench``; a 1280×800 page then reviews every item as
a reviewer who knows the answer: when every shown field is right it presses ``a`` (accept-only), else it sets each
wrong field by its keys — the field's digit, the shortest start of the value that the field's type-ahead puts first,
Enter — the category first, then ``a`` (corrected). It counts the keys it sends and times each item from its first key
to the next item's header on the page: the page's own response time (server round trips and rendering; no human
thinking time). Prints per item kind the items, mean keys and the median and mean seconds.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_DISABLE_TELEMETRY": "1"}


def annotated(work: Path, limit: int) -> tuple[Path, dict]:
    """The annotated release and each item's truth by review key."""
    import os

    from lookbench.schema import resolve_subset

    env = {**os.environ, **OFFLINE}
    fresh, raw = work / "fresh", work / "raw"
    subprocess.run([sys.executable, "-m", "lookbench.dataset_builder.crawl", "--source", "mini", "--out", str(fresh),
                    "--scale", "0.2", "--limit", str(limit)], check=True, env=env, capture_output=True)
    subprocess.run([sys.executable, "-m", "lookbench", "annotate", "--input", str(fresh / "crawl"), "--taxonomy",
                    str(fresh / "taxonomy.json"), "--proposer", "zero-shot:gr-lite-mini-text", "--out", str(raw),
                    "--quiet"], check=True, env=env, capture_output=True)
    labels = {}
    for line in (fresh / "truth.jsonl").read_text().splitlines():
        row = json.loads(line)
        labels[row["image"]] = {"category": row["category"], "attributes": row["attributes"]}
    truth = {}
    for line in (fresh / "crawl" / "items.jsonl").read_text().splitlines():
        item = json.loads(line)
        truth[f"{resolve_subset(item['subset'])}/{item['split']}/{item['item_id']}"] = labels[item["image"]]
    return raw, truth


def prefix(value: str, choices: list[str]) -> str:
    """The shortest start of ``value`` whose first match among ``choices`` (the type-ahead's filter) is ``value``."""
    for n in range(1, len(value) + 1):
        start = value[:n].lower()
        if next(c for c in choices if start in c.lower()) == value:
            return value[:n]
    return value


def review(url: str, raw: Path, truth: dict) -> list[tuple[str, int, float]]:
    """(kind, keys, seconds) per item, as the page reviewed it."""
    from playwright.sync_api import expect, sync_playwright

    from lookbench.dataset_builder.taxonomy import load

    taxonomy = load(raw / "taxonomy.json")
    done = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(120_000)
        page.goto(url)
        header = page.locator("#review-header h3")
        expect(header).to_contain_text("/")
        fields = page.locator("#review-fields input:visible")
        while "Nothing left" not in (key := header.inner_text()):
            want = truth[key]
            names = list(taxonomy.categories[want["category"]].attributes)
            keys, started = 0, time.perf_counter()

            def put(digit: int, value: str, choices: list[str]):
                nonlocal keys
                typed = prefix(value, choices)
                page.keyboard.press(str(digit))
                page.keyboard.type(typed)
                page.keyboard.press("Enter")
                keys += 2 + len(typed)
                expect(fields.nth(digit)).to_have_value(value)

            corrected = False
            if fields.nth(0).input_value() != want["category"]:
                put(0, want["category"], list(taxonomy.categories))
                expect(fields).to_have_count(1 + len(names))
                for slot, name in enumerate(names, start=1):  # the new category's fields, not the old ones'
                    expect(fields.nth(slot)).to_have_attribute("aria-label", re.compile(rf"^{slot}\. {name}\b"))
                corrected = True
            for slot, name in enumerate(names, start=1):
                value = want["attributes"].get(name, taxonomy.not_applicable)
                if fields.nth(slot).input_value() != value:
                    put(slot, value, [*taxonomy.categories[want["category"]].attributes[name], taxonomy.not_applicable])
                    corrected = True
            page.keyboard.press("a")
            keys += 1
            expect(header).not_to_have_text(key)
            done.append(("corrected" if corrected else "accept-only", keys, time.perf_counter() - started))
        browser.close()
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=4, help="items per subset and split of the crawl (default 4)")
    parser.add_argument("--work", type=Path, help="working folder (default: a new temporary one)")
    args = parser.parse_args()
    import os

    work = args.work or Path(tempfile.mkdtemp(prefix="bench-review-"))
    raw, truth = annotated(work, args.limit)
    server = subprocess.Popen([sys.executable, "-m", "lookbench", "review", str(raw), "--reviewer", "bench",
                               "--overlap", "1", "--shared", "0"], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, **OFFLINE})
    try:
        url = None
        for line in server.stdout:
            if match := re.search(r"Review as bench: (\S+)", line):
                url = match.group(1)
                break
        rows = review(url, raw, truth)
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(f"{len(rows)} items of a LookBench-Mini crawl (--limit {args.limit}), zero-shot proposals, 1280x800")
    for kind in ("accept-only", "corrected"):
        mine = [r for r in rows if r[0] == kind]
        if mine:
            seconds = [r[2] for r in mine]
            print(f"{kind:<12} {len(mine):>3} items  keys/item {statistics.mean(r[1] for r in mine):5.1f}  "
                  f"seconds/item median {statistics.median(seconds):.2f}  mean {statistics.mean(seconds):.2f}")


if __name__ == "__main__":
    main()
