"""The worst queries of a stored result with saved rankings, as plain records: each query, its top results with
their fine / coarse / miss mark and the attributes each lacks or differs in (the metric's ``attribute_differences``;
the marks are the judge's flags saved beside the result).

Fine misses come first, ordered by how far the first fine hit is (none in the saved ranking first), then by the
first coarse hit. Thumbnails are read from the data the result names, at the settings it was judged with.
"""
from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from pathlib import Path

from lookbench.metric.fine_recall.records import attribute_differences

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
    score: float
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


def chips(query: dict, item: dict, mode: str, coarse: bool) -> list[Chip]:
    """Why ``item`` (a saved row's annotation) is not a fine hit for ``query``: another category, another main
    attribute (leaderboard mode), the query's attributes it lacks or has otherwise (case- and space-insensitive)."""
    if not coarse:
        return [Chip("category", None, f"category {item['category']} (query {query['category']})")]
    out = []
    if mode == "leaderboard" and _key(item.get("main_attribute")) != _key(query.get("main_attribute")):
        out.append(Chip("main", None, f"main attribute {item.get('main_attribute') or 'none'} "
                                      f"(query {query.get('main_attribute') or 'none'})"))
    gaps = attribute_differences({"category": "-", "attributes": query["attributes"] or []},
                                 {"category": "-", "attributes": item["attributes"] or []})
    out += [Chip("lacks", name, f"lacks {name}") for name, _ in gaps["lacks"]]
    out += [Chip("differs", name, f"{name} {'/'.join(values)} (query {value})") for name, value, values in gaps["differs"]]
    return out


def _key(text) -> str:
    return " ".join((text or "").split()).casefold()


def _first(rows: list[dict], flag: str) -> int | None:
    return next((r["rank"] for r in rows if r[flag]), None)


def worst_queries(result, top: int = 10, limit: int = 100) -> Report:
    """The ``limit`` worst queries of the stored result at ``result`` (a results JSON or an ``--output`` folder)
    with ``top`` results each; a ValueError naming the file when it has no saved rankings or does not check."""
    from lookbench.engine.predictions import read
    from lookbench.results.comparison import read_result
    from lookbench.results.outcomes import check_result
    from lookbench.results.store import predictions_folder

    if top < 1 or limit < 1:
        raise ValueError(f"--top and the number of queries must be at least 1, got {top} and {limit}")
    data = read_result(result)
    path = Path(data["_path"])
    check_result(data, str(path))  # a report shows only what the result's own outcomes give
    provenance = data["provenance"]
    saved = provenance.get("saved_predictions") or []
    subsets = [s for s in provenance.get("subsets") or [] if s in data]
    if not subsets or any(s not in saved for s in subsets):
        raise ValueError(f"{path} has no saved rankings for {', '.join(s for s in subsets if s not in saved) or 'its subsets'}; "
                         "evaluate again with --save-predictions")
    mode, queries, evaluated = provenance["mode"], [], 0
    for subset in subsets:
        table = read(predictions_folder(path) / f"{subset}.parquet").sort_by([("query", "ascending"), ("rank", "ascending")])
        by_query: dict[int, list[dict]] = {}
        for row in table.to_pylist():
            by_query.setdefault(row["query"], []).append(row)
        evaluated += len(by_query)
        for number, rows in by_query.items():
            fine, coarse = _first(rows, "fine_hit"), _first(rows, "coarse_hit")
            if fine == 1:
                continue
            q = rows[0]
            query = {"category": q["query_category"], "main_attribute": q["query_main_attribute"],
                     "attributes": q["query_attributes"]}
            shown = [Shown(r["rank"], r["gallery_index"], str(r["item_id"]), float(r["score"]), r["category"],
                           "fine" if r["fine_hit"] else "coarse" if r["coarse_hit"] else "miss",
                           [] if r["fine_hit"] else chips(query, r, mode, r["coarse_hit"])) for r in rows[:top]]
            queries.append(WorstQuery(subset, number, str(q["query_item_id"]), q.get("query_text"), q["query_category"],
                                      [(a["name"], a["value"]) for a in q["query_attributes"] or []], fine, coarse,
                                      len(rows), shown))
    far = float("inf")
    queries.sort(key=lambda w: (-(w.first_fine or far), -(w.first_coarse or far)))  # stable: subset, query order
    overall = data["overall"]
    headline = [(label, _score(overall, metric, at)) for label, metric, at in
                (("Fine@1", "fine_recall", "@1"), ("Coarse@1", "coarse_recall", "@1"), ("nDCG@5", "ndcg", "@5"))]
    headline.append(("queries", str(overall.get("num_queries", evaluated))))
    errors = {name: block.get("attribute_errors") for name, block in data.items()
              if name in (*subsets, "overall") and isinstance(block, dict)}
    model = (provenance.get("model") or {}).get("name", "?")
    kind = provenance.get("queries", "image")
    title = (f"{model} on {(provenance.get('dataset') or {}).get('name') or 'LookBench'}, {mode} mode"
             + ("" if kind == "image" else f", {kind} queries"))
    return Report(path, title, mode, headline, errors, queries[:limit], evaluated, provenance)


def _score(block: dict, metric: str, at: str) -> str:
    value = (block.get(metric) or {}).get(at)
    if value is None:
        return "-"
    lo, hi = ((block.get("ci95") or {}).get(metric) or {}).get(at) or (None, None)
    return f"{value:.1f}" + (f" [{lo:.1f}, {hi:.1f}]" if lo is not None else "")


def thumbnails(report: Report, data=None, size: int = THUMBNAIL) -> dict[str, str]:
    """``{key: data URI}`` of every image the report shows, JPEG thumbnails read from the data the result names
    (``data``: another copy of it, as ``--data`` takes it); keys as ``image_key`` gives them."""
    from datasets import Image

    from lookbench.engine.data import load_benchmark
    from lookbench.results.store import Settings
    from lookbench.submissions.verify import named_data

    settings = Settings.of(report.provenance)
    text_form = settings.queries.removeprefix("text-") if settings.queries.startswith("text-") else None
    bench = load_benchmark(named_data(report.provenance["dataset"]) if data is None else data,
                           list(settings.subsets) if settings.chosen_subsets else None, settings.cutoff,
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
