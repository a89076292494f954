"""The worst queries of a stored result with saved rankings, as plain records: each query, its top results with
their fine / coarse / miss mark and why each is not a fine hit (the metric's ``fine_miss_reasons``; the marks are
the judge's flags saved beside the result).

Fine misses come first, ordered by how far the first fine hit is (none in the saved ranking first), then by the
first coarse hit. Thumbnails are read from the data the result names, at the settings it was judged with.
"""
from __future__ import annotations

import base64
import io
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from lookbench import terminal
from lookbench.metric.fine_recall.records import fine_miss_reasons
from lookbench.results.provenance import Provenance, named_data

THUMBNAIL = 96  # pixels, the longer side: a Mini report of 100 queries x 10 results stays a few MB


@dataclass
class Chip:
    """One reason a result is not a fine hit: ``kind`` is ``category``, ``main``, ``lacks`` or ``differs``;
    ``attribute`` the attribute it names (``None`` for the category)."""

    kind: str
    attribute: str | None
    text: str


@dataclass
class Shown:
    """One retrieved item: its ``rank`` (1-based), ``gallery_index`` (into the subset gallery followed by the noise),
    ``mark`` (``fine``, ``coarse`` or ``miss``) and ``chips``."""

    rank: int
    gallery_index: int
    item_id: str
    score: float | None  # None: not shown (a stranger's claim no one checked)
    category: str
    mark: str
    chips: list[Chip]


@dataclass
class WorstQuery:
    """One query and its top results; ``text``: a text query's words (``None`` for an image query); ranks 1-based,
    ``None``: no hit within the saved ``depth``."""

    subset: str
    number: int
    item_id: str
    text: str | None
    category: str
    attributes: list[tuple[str, str]]
    first_fine: int | None
    first_coarse: int | None
    depth: int
    results: list[Shown]

    def attribute_names(self) -> list[str]:
        """The attributes its shown results lack or differ in (what the attribute filter reads)."""
        return sorted({c.attribute for r in self.results for c in r.chips if c.attribute})


@dataclass
class Report:
    """What the report shows: ``title``, ``headline`` (label, value) pairs, ``attribute_errors`` per subset and
    ``overall``, and the ``queries`` (worst first) of ``evaluated`` queries in all."""

    path: Path
    title: str
    mode: str
    headline: list[tuple[str, str]]
    attribute_errors: dict
    queries: list[WorstQuery]
    evaluated: int
    provenance: dict = field(repr=False, default_factory=dict)

    def to_json(self) -> dict:
        """The report as JSON (how a child process that made it under budgets hands it back)."""
        return {**asdict(self), "path": str(self.path)}

    @classmethod
    def from_json(cls, data: dict) -> "Report":
        queries = [WorstQuery(**{**q, "attributes": [tuple(a) for a in q["attributes"]],
                                 "results": [Shown(**{**r, "chips": [Chip(**c) for c in r["chips"]]}) for r in q["results"]]})
                   for q in data["queries"]]
        return cls(**{**data, "path": Path(data["path"]), "headline": [tuple(h) for h in data["headline"]],
                      "queries": queries})


def chips(query: dict, item: dict, mode: str, coarse: bool) -> list[Chip]:
    """Why ``item`` (a saved row's annotation) is not a fine hit for ``query``: the metric's ``fine_miss_reasons``,
    as chips (``[]`` exactly when it is one). ``coarse`` is the judge's flag saved with the row: another category
    is all there is to say."""
    reasons = fine_miss_reasons(query, item, mode) if coarse else [("category", query["category"], item["category"])]
    return [_chip(reason) for reason in reasons]


def _chip(reason: tuple) -> Chip:
    match reason:
        case ("category", query, item):
            return Chip("category", None, f"category {item} (query {query})")
        case ("main", query, item):
            return Chip("main", None, f"main attribute {item or 'none'} (query {query or 'none'})")
        case ("lacks", name, _):
            return Chip("lacks", name, f"lacks {name}")
    _, name, value, values = reason  # "differs"
    return Chip("differs", name, f"{name} {'/'.join(values)} (query {value})")


def _first(rows: list[dict], flag: str) -> int | None:
    return next((r["rank"] for r in rows if r[flag]), None)


def worst_queries(result, top: int = 10, limit: int = 100) -> Report:
    """The ``limit`` worst queries of the stored result at ``result`` (a results JSON or an ``--output`` folder)
    with ``top`` results each; a ValueError naming the file when it has no saved rankings or does not check."""
    from lookbench.results.comparison import read_result
    from lookbench.results.folder import ResultFolder
    from lookbench.results.outcomes import check_result
    from lookbench.schema import SUBSETS

    _check_depths(top, limit)
    data = read_result(result)
    path = Path(data["_path"])
    check_result(data, str(path))  # a report shows only what the result's own outcomes give
    provenance = Provenance(data["provenance"])
    saved = provenance.saved()
    named = provenance.subsets or []
    unknown = [s for s in named if s not in SUBSETS] if isinstance(named, list) else [named]
    if unknown:  # a subset's name is part of a file's path: only the schema's are read
        raise ValueError(f"{path}: provenance.subsets names {str(unknown[0])[:60]!r}, not a LookBench subset")
    subsets = [s for s in named if s in data]
    blocks = {s: data[s] for s in subsets}
    if not subsets or any(s not in saved for s in subsets):
        raise ValueError(f"{path} has no saved rankings for {', '.join(s for s in subsets if s not in saved) or 'its subsets'}; "
                         "evaluate again with --save-predictions")

    def ranked():
        for subset, _, _, table in ResultFolder.of(path).rankings(subsets, blocks, saved=True,
                                                                  shown=lambda relative: str(path.parent / relative)):
            table = table.sort_by([("query", "ascending"), ("rank", "ascending")])
            by_query: dict[int, list[dict]] = {}
            for row in table.to_pylist():
                by_query.setdefault(row["query"], []).append(row)
            for number, rows in by_query.items():
                yield subset, number, rows[0], rows, _first(rows, "fine_hit"), _first(rows, "coarse_hit"), len(rows)

    overall = data["overall"]
    headline = [(label, _score(overall, metric, at)) for label, metric, at in HEADLINE]
    errors = {name: block.get("attribute_errors") for name, block in data.items()
              if name in (*subsets, "overall") and isinstance(block, dict)}
    report = _report(path, provenance.raw, provenance.mode, ranked(), top, limit, headline, errors)
    report.headline.append(("queries", str(overall.get("num_queries", report.evaluated))))
    return report


def judged_queries(verification, top: int = 10, limit: int = 100, label: str | None = None) -> Report:
    """``worst_queries`` of a verified submission (``verify``'s ``Verification``) as the judge saw it: which gallery
    row each rank holds is the submission's, every annotation, mark and headline score is the judge's on the data it
    judged (``Verification.judged``), none read from the files. The similarity scores are not shown: no one checked
    them (the page says so). ``label``: the name the model is shown under (the board's row label; default the
    result's own)."""
    judged = verification.judged
    if judged is None:
        raise ValueError(f"{verification.result} was not verified from its rankings on labelled data; only a verified "
                         "submission is shown")
    _check_depths(top, limit)
    bench, judgement = judged.bench, judged.judgement

    def ranked():
        noise = bench.noise
        order = Provenance(verification.claims["provenance"]).subsets  # as the result lists them (a tie keeps that order)
        for subset, matrix in sorted(judged.rankings.items(), key=lambda item: order.index(item[0])):
            queries, gallery = bench.subsets[subset]["query"], bench.subsets[subset]["gallery"]
            columns = ["item_id", *_ANNOTATION, *(["query_text"] if "query_text" in queries.column_names else [])]
            records = queries.select_columns(columns).to_list()
            fine, coarse = judgement.subsets[subset].fine, judgement.subsets[subset].coarse
            shown = matrix[:, :top]
            wanted = sorted({int(i) for i in shown[shown >= 0]})
            items = dict(zip(wanted, _gallery_rows(gallery, noise, wanted)))
            for q, record in enumerate(records):
                depth = int((matrix[q] >= 0).sum())
                head = {"query": q + 1, "query_item_id": record["item_id"], "query_text": record.get("query_text"),
                        **{f"query_{name}": record[name] for name in _ANNOTATION}}
                rows = [{**head, "rank": r + 1, "gallery_index": int(i), "score": None, **items[int(i)],
                         "fine_hit": bool(fine[q, r]), "coarse_hit": bool(coarse[q, r])}
                        for r, i in enumerate(shown[q]) if i >= 0]
                yield subset, q + 1, head, rows, _first_flag(fine[q, :depth]), _first_flag(coarse[q, :depth]), depth

    overall = judgement.overall
    headline = [(label, f"{overall[metric + at]:.1f}" if metric + at in overall else "-") for label, metric, at in HEADLINE]
    errors = {name: j.scores.get("attribute_errors") for name, j in judgement.subsets.items()}
    errors["overall"] = overall.get("attribute_errors")
    report = _report(Path(verification.result), verification.claims["provenance"], judged.mode, ranked(), top, limit,
                     headline, errors, label)
    report.headline.append(("queries", str(report.evaluated)))
    return report


HEADLINE = (("Fine@1", "fine_recall", "@1"), ("Coarse@1", "coarse_recall", "@1"), ("nDCG@5", "ndcg", "@5"))
_ANNOTATION = ("category", "main_attribute", "attributes")


def _check_depths(top: int, limit: int) -> None:
    if top < 1 or limit < 1:
        raise ValueError(f"--top and the number of queries must be at least 1, got {top} and {limit}")


def _first_flag(flags) -> int | None:
    hit = np.flatnonzero(flags)
    return int(hit[0]) + 1 if hit.size else None


def _gallery_rows(gallery, noise, indexes: list[int]) -> list[dict]:
    """The ``item_id`` and annotation of each gallery row (``indexes`` sorted; past the subset gallery: the noise's)."""
    columns = ["item_id", *_ANNOTATION]
    size = len(gallery)
    own = [i for i in indexes if i < size]
    rows = gallery.select(own).select_columns(columns).to_list() if own else []
    if len(own) < len(indexes):
        rows += noise.select([i - size for i in indexes[len(own):]]).select_columns(columns).to_list()
    return rows


def _report(path: Path, provenance: dict, mode: str, ranked, top: int, limit: int, headline: list,
            errors: dict, label: str | None = None) -> Report:
    """The report of ``ranked``: per query its subset, number, record (``query_*`` fields), rows by rank (at least
    the top ``top``), first fine and coarse hit and depth; the fine misses, worst first."""
    missed, evaluated = [], 0
    for subset, number, q, rows, fine, coarse, depth in ranked:
        evaluated += 1
        if fine != 1:
            missed.append((subset, number, q, rows[:top], fine, coarse, depth))
    far = float("inf")
    missed.sort(key=lambda m: (-(m[4] or far), -(m[5] or far)))  # stable: subset, query order
    queries = []
    for subset, number, q, rows, fine, coarse, depth in missed[:limit]:  # chips for the kept queries only
        query = {"category": q["query_category"], "main_attribute": q["query_main_attribute"],
                 "attributes": q["query_attributes"]}
        shown = [Shown(r["rank"], r["gallery_index"], str(r["item_id"]), None if r["score"] is None else float(r["score"]),
                       r["category"], "fine" if r["fine_hit"] else "coarse" if r["coarse_hit"] else "miss",
                       [] if r["fine_hit"] else chips(query, r, mode, r["coarse_hit"])) for r in rows]
        queries.append(WorstQuery(subset, number, str(q["query_item_id"]), q.get("query_text"), q["query_category"],
                                  [(a["name"], a["value"]) for a in q["query_attributes"] or []], fine, coarse,
                                  depth, shown))
    facts = Provenance(provenance)
    model = label or facts.model.name or "?"
    kind = facts.queries
    title = (f"{model} on {facts.dataset.title}, {mode} mode" + ("" if kind == "image" else f", {kind} queries"))
    return Report(path, title, mode, list(headline), errors, queries, evaluated, provenance)


def _score(block: dict, metric: str, at: str) -> str:
    lo, hi = ((block.get("ci95") or {}).get(metric) or {}).get(at) or (None, None)
    return terminal.score((block.get(metric) or {}).get(at), None if lo is None else (lo, hi))


def thumbnails(report: Report, data=None, size: int = THUMBNAIL, bench=None) -> dict[str, str]:
    """``{key: data URI}`` of every image the report shows, JPEG thumbnails read from the data the result names
    (``data``: another copy of it, as ``--data`` takes it; ``bench``: that data already loaded, as it was judged);
    keys as ``image_key`` gives them."""
    from datasets import Image

    from lookbench.engine.data import as_recorded, load_benchmark

    if bench is None:
        provenance = Provenance(report.provenance)
        settings, text_form = provenance.settings, provenance.text_form
        data = as_recorded(named_data(provenance.dataset) if data is None else data, provenance.dataset)
        bench = load_benchmark(data, list(settings.subsets) if settings.chosen_subsets else None, settings.cutoff,
                               settings.distractors, text_form=text_form)
    out = {}
    for subset in {w.subset for w in report.queries}:
        splits = bench.subsets[subset]
        gallery_size = len(splits["gallery"])
        rows = {w.item_id: None for w in report.queries if w.subset == subset}
        ids = splits["query"].select_columns(["item_id"]).with_format("arrow")[:]["item_id"].to_pylist()
        where = {item: i for i, item in enumerate(ids) if item in rows}
        wanted = [(image_key(subset, "query", item), splits["query"], where[item]) for item in rows if item in where]
        for w in report.queries:
            for r in w.results if w.subset == subset else ():
                source, at = (splits["gallery"], r.gallery_index) if r.gallery_index < gallery_size else \
                    (bench.noise, r.gallery_index - gallery_size)
                wanted.append((image_key(subset, "gallery", r.gallery_index), source, at))
        undecoded = {}  # each split read as bytes: an image that cannot be decoded is the page's to say, not an error
        for key, dataset, row in wanted:
            if key not in out:
                if id(dataset) not in undecoded:
                    undecoded[id(dataset)] = dataset.select_columns(["image"]).cast_column("image", Image(decode=False))
                out[key] = _thumbnail(undecoded[id(dataset)][row]["image"], size)
    return out  # an image that cannot be read has None: the page says so in its place


def image_key(subset: str, split: str, at) -> str:
    """The key of an image: a query's by its item id, a gallery row's by its index (the noise follows the gallery)."""
    return f"{subset}/{split}/{at}"


def _thumbnail(cell: dict, size: int) -> str | None:
    from PIL import Image as PILImage

    try:
        with PILImage.open(io.BytesIO(cell["bytes"]) if cell.get("bytes") else cell["path"]) as opened:
            image = opened.convert("RGB")
    except (OSError, ValueError, TypeError):  # PIL's UnidentifiedImageError is an OSError
        return None
    image.thumbnail((size, size))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=70)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
