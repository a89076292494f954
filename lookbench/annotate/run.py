"""One annotation run: a crawl and a taxonomy in, the annotated raw release folder out, batch by batch, resumable.

Why batches on disk: a proposer over a real crawl runs for hours, and a kill must cost at most one batch. Each
finished batch is one file of ``RAW/.annotate/`` (written whole, ``lookbench.files.replacing``), which also names
the run (``run.json``: the crawl's sha256, the taxonomy's revision, the proposer's name and revision); a second run
into the same ``RAW`` with the same three resumes after the last finished batch, with anything else is refused. The
subset files and ``taxonomy.json`` are written at the end, each whole, and the ``.annotate/`` folder is removed; the
run holds ``RAW``'s ``folder_lock`` throughout, so two runs never write one folder. Images are copied into the
subset folders as their batch is done (``RAW/<Config>/images/<crawl path>``).
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lookbench.errors import shown
from lookbench.files import folder_lock, read_regular, replacing
from lookbench.progress import stage_bar
from lookbench.schema import SUBSETS

from lookbench.annotate.crawl import Crawl, image_of, raw_image_of, read_crawl
from lookbench.annotate.proposers import Proposer
from lookbench.annotate.resume import expected_row, resumed
from lookbench.dataset_builder.taxonomy import FILE_NAME as TAXONOMY_FILE, Taxonomy

WORK = ".annotate"  # the run's state inside RAW (a dot folder: the builder never reads it)
REPORT = "annotate_report.json"


@dataclass
class Summary:
    out: Path
    proposer: dict
    taxonomy: str
    rows: dict[str, dict[str, int]] = field(default_factory=dict)
    resumed: int = 0  # items a killed run had already done
    skipped: list[str] = field(default_factory=list)  # every skipped item, named
    not_proposed: dict[str, int] = field(default_factory=dict)  # "category" / attribute name -> rows
    invalid: int = 0  # answers refused against the taxonomy (the vlm proposer)

    def lines(self) -> list[str]:
        out = [f"Wrote {self.out} (proposals by {self.proposer['name']} @ {self.proposer['revision'][:24]}, "
               f"taxonomy {self.taxonomy}); no row is labelled until it is reviewed"]
        out += [f"  {config:<18} " + "  ".join(f"{s}={n}" for s, n in splits.items()) for config, splits in self.rows.items()]
        if self.resumed:
            out.append(f"  resumed: {self.resumed} item(s) were done by an earlier run")
        out.append(f"  skipped items: {len(self.skipped)}" + (f" (listed in {self.out / REPORT})" if self.skipped else ""))
        out += [f"    {line}" for line in self.skipped[:10]]
        if len(self.skipped) > 10:
            out.append(f"    … and {len(self.skipped) - 10} more")
        if self.not_proposed:
            out.append("  not proposed: " + ", ".join(f"{k} {n}" for k, n in sorted(self.not_proposed.items())))
        if self.invalid:
            out.append(f"  invalid answers (not proposed): {self.invalid}")
        return out


def _write_json(path: Path, value, lines: bool = False) -> None:
    """``value`` as JSON (``lines``: a list as JSON lines), written whole or not at all."""
    with replacing(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as file:
            if lines:
                file.writelines(json.dumps(v, ensure_ascii=False) + "\n" for v in value)
            else:
                file.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _copy_in(relative: str, data: bytes, folder: Path) -> None:
    """The crawl file ``relative``'s bytes ``data`` (read and decoded already) copied to ``folder/images/relative``
    (whole, atomic)."""
    target = folder / "images" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    with replacing(target) as tmp:
        tmp.write_bytes(data)


def _state(out: Path, run: dict, crawl: Crawl, taxonomy: Taxonomy) -> tuple[dict[int, dict], int, list[str]]:
    """The finished batches of an earlier run into ``out``, checked as fresh input (``resume.resumed``), after
    checking it was this run; a finished release or a folder of something else is refused."""
    work = out / WORK
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    if not work.is_dir():
        if out.is_dir() and any(out.iterdir()):
            raise ValueError(f"--out {out} is not empty and holds no unfinished annotate run; give a new or empty folder")
        return {}, 0, []
    try:
        earlier = json.loads(read_regular(work / "run.json", 1 << 20).decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        earlier = None
    if earlier != run:
        differs = [k for k in run if earlier is None or earlier.get(k) != run[k]]
        was = earlier.get("proposer") if isinstance(earlier, dict) else None
        named = (f" ({shown(was['name'])}, this run {shown(run['proposer']['name'])})" if "proposer" in differs and
                 isinstance(was, dict) and isinstance(was.get("name"), str) and was["name"] != run["proposer"]["name"] else "")
        raise ValueError(f"--out {out} holds an unfinished annotate run of another {', '.join(differs)}{named}; resume it "
                         "with the same --input, --taxonomy and --proposer (every one, in the same order), or give a new folder")
    return resumed(work, crawl, taxonomy, run["proposer"])


def annotate(input_path, taxonomy: Taxonomy, proposer: Proposer, out, *, batch_size: int = 16,
             progress: bool = False) -> Summary:
    """Propose labels for every item of the crawl ``input_path`` and write the raw release folder ``out``."""
    if batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {batch_size}")
    crawl = read_crawl(input_path)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    named = {"name": proposer.name, "revision": proposer.revision}
    run = {"crawl_sha256": crawl.digest, "taxonomy": taxonomy.revision, "proposer": named}
    summary = Summary(out, named, taxonomy.label, skipped=list(crawl.skipped))
    with folder_lock(out):
        done, invalid, refused = _state(out, run, crawl, taxonomy)
        summary.resumed = len(done)
        summary.skipped += refused
        (out / WORK).mkdir(parents=True, exist_ok=True)
        _write_json(out / WORK / "run.json", run)
        todo = [item for item in crawl.items if item.line not in done]
        with stage_bar("annotate", quiet=not progress, unit=" items") as bar:
            bar.total = len(crawl.items)
            bar.update(len(done))
            for start in range(0, len(todo), batch_size):
                batch = todo[start:start + batch_size]
                before = proposer.invalid
                entries = _annotate_batch(crawl, batch, proposer, out, named)
                invalid += proposer.invalid - before
                _write_json(_new_batch(out / WORK, batch[0].line), {"invalid": proposer.invalid - before, "entries": entries})
                done.update((e["line"], e) for e in entries)
                bar.update(len(batch))
        summary.invalid = invalid
        _finish(out, crawl, done, taxonomy, summary)
    return summary


def _new_batch(work: Path, line: int) -> Path:
    """The file of a batch that starts at crawl line ``line``: a new name, never an earlier batch's (a resumed run
    tries an earlier skip again, which can start a batch at a line an earlier one started at)."""
    n = 0
    while (path := work / (f"batch-{line:09d}" + (f"-{n}" if n else "") + ".json")).exists():
        n += 1
    return path


def _annotate_batch(crawl: Crawl, batch, proposer: Proposer, out: Path, named: dict) -> list[dict]:
    readable, images, entries = [], [], {}
    for item in batch:
        try:
            data, image = image_of(crawl, item)
            street = raw_image_of(crawl, item)
        except ValueError as err:
            entries[item.line] = {"line": item.line, "skipped": f"items.jsonl line {item.line} "
                                                                f"(item_id={shown(item.fields['item_id'])}): {err}"}
            continue
        readable.append((item, data, street))
        images.append(image)
    proposals = proposer.propose([item for item, _, _ in readable], images) if readable else []
    for (item, data, street), proposed in zip(readable, proposals):
        _copy_in(item.fields["image"], data, out / item.config)
        if street is not None:
            _copy_in(item.fields["raw_image"], street, out / item.config)
        entries[item.line] = {"line": item.line, "config": item.config, "split": item.split,
                              "row": {**expected_row(item), "proposals": proposed, "proposer": named}}
    return [entries[item.line] for item in batch]


def _finish(out: Path, crawl: Crawl, done: dict[int, dict], taxonomy: Taxonomy, summary: Summary) -> None:
    """The subset files in crawl order, the taxonomy and the report; then the run's state is removed."""
    splits: dict[tuple[str, str], list[dict]] = {}
    not_proposed = Counter()
    for item in crawl.items:
        entry = done[item.line]
        if "skipped" in entry:
            summary.skipped.append(entry["skipped"])
            continue
        splits.setdefault((entry["config"], entry["split"]), []).append(entry["row"])
        proposals = entry["row"]["proposals"]
        not_proposed.update(["category"] if proposals["category"]["value"] is None else [])
        not_proposed.update(n for n, a in proposals["attributes"].items() if a["value"] is None)
    if not splits:
        raise ValueError(f"--input {crawl.folder}: no item could be annotated ({summary.skipped[0]})")
    for config in SUBSETS:
        for split in SUBSETS[config].splits:
            if any(c == config for c, _ in splits):  # a subset the crawl reaches gets every split file
                rows = splits.get((config, split), [])
                _write_json(out / config / f"{split}.jsonl", rows, lines=True)
                summary.rows.setdefault(config, {})[split] = len(rows)
    taxonomy.write(out / TAXONOMY_FILE)
    summary.not_proposed = dict(not_proposed)
    _write_json(out / REPORT, {"proposer": summary.proposer, "taxonomy": summary.taxonomy, "rows": summary.rows,
                               "skipped": summary.skipped, "not_proposed": summary.not_proposed,
                               "invalid_answers": summary.invalid, "resumed": summary.resumed})
    shutil.rmtree(out / WORK)
