"""One Space query: encode it (an upload) or take its stored embedding (a benchmark query), search the prepared
index, drop self-matches, and mark every result with the metric.

docs/architecture.md §5, §8. Search is the stored faiss index restricted to the chosen subset (and the noise
gallery) by an ID selector; self-match removal is the engine's ``remove_self_matches``; fine / coarse marks and
nDCG@k come from the metric's ``score_queries`` in strict mode, and why a result is not fine from its
``fine_miss_reasons`` (as the report's chips, ``lookbench.report.records.chips``), so the Space never scores anything
itself.
"""
from __future__ import annotations

import functools
import hashlib
import io
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, UnidentifiedImageError

from lookbench.dataset_builder.text_queries import FORMS, record_text
from lookbench.engine.embedding_cache import HASH_BYTES
from lookbench.engine import check_output, decode, remove_self_matches, search_depth
from lookbench.errors import shown
from lookbench.filtering import after_mask
from lookbench.terminal import markdown_safe
from lookbench.metric.fine_recall.judging import score_queries
from lookbench.metric.fine_recall.records import GalleryColumns
from lookbench.report.records import chips
from lookbench.schema import NOISE, TEST_SUBSETS, resolve_subset
from lookbench.settings import DEFAULT_DISTRACTORS
from lookbench.space.assets import ANNOTATION, SpaceAssets

ALL = "all"
MODE = "strict"  # the Search tab marks results by the paper's Fine Recall
MAX_WORDS = 300  # characters of a text query: a description, not a document (GR-Lite-text reads 64 tokens)


class QueryError(ValueError):
    """A query the Space cannot run; the message is shown to the user as it is."""


class NotYet(QueryError):
    """Nothing to search yet (no query, no words): a control used before a query, said in the status line, never a
    toast over the page."""


@dataclass
class Hit:
    """One retrieved gallery row as the Space shows it."""

    rank: int
    score: float
    row: int
    subset: str
    item_id: str
    category: str
    main_attribute: str
    thumb: bytes  # the thumbnail's encoded bytes (WebP)
    mark: str | None = None  # "fine", "coarse", "miss"; None for a query without annotation
    chips: list = field(default_factory=list)  # why it is not a fine hit (``records.Chip``); none for a fine one


@dataclass
class Retrieval:
    """One model's answer to one query; the per-query hits and nDCG are the metric's (None without annotation)."""

    model: str
    hits: list
    self_matches_removed: int
    fine_hit: bool | None = None
    coarse_hit: bool | None = None
    ndcg: float | None = None


@dataclass
class Query:
    """What is searched with: a benchmark query (stored embedding, annotation), an uploaded image's bytes, or words
    (a benchmark query's own words keep its row and annotation: marked by the metric, its own image left out)."""

    label: str
    blob: bytes | None = None
    benchmark_row: int | None = None  # row of the assets' query table
    annotation: dict | None = None
    text: str | None = None
    ignored: list = field(default_factory=list)  # words of ``text`` the text tower cannot read (shown, never dropped silently)


class Retriever:
    """Serves queries from loaded ``SpaceAssets`` with the given encoders (name -> ``Encoder``); ``readers`` maps a
    model to the encoder whose text tower embeds words in that model's image space (its image tower is the model's)."""

    def __init__(self, assets: SpaceAssets, encoders: dict, readers: dict | None = None):
        self.assets, self.encoders, self.readers = assets, encoders, readers or {}
        self.ranges = {name: tuple(r) for name, r in assets.manifest["ranges"].items()}
        hashes = assets.gallery["hash"]
        content = {h: i for i, h in enumerate(dict.fromkeys(hashes))}
        self.gallery_uid = np.fromiter((content[h] for h in hashes), dtype=np.int64, count=len(hashes))
        self.content = content
        self.columns = GalleryColumns(assets.gallery.select_columns(list(ANNOTATION)))
        self.query_keys = {f"{s}/{r + 1}": i for i, (s, r) in enumerate(zip(assets.queries["subset"], assets.queries["row"]))}
        self._selectors = {}

    # -- queries --------------------------------------------------------------------------------------------

    def benchmark_query(self, key: str) -> Query:
        """``<Subset>/<n>``: the n-th (1-based) query of a subset."""
        subset, _, number = key.strip().rpartition("/")
        try:
            key = f"{resolve_subset(subset)}/{int(number)}"
        except ValueError:
            raise QueryError(f"No benchmark query {shown(key)}: write <Subset>/<n>, e.g. RealStreetLook/3") from None
        if key not in self.query_keys:
            raise QueryError(f"No benchmark query {shown(key)} in {self.assets.name}")
        row = self.query_keys[key]
        record = self.assets.queries[row]
        return Query(key, benchmark_row=row, annotation={f: record[f] for f in ANNOTATION})

    def subset(self, subset: str) -> str:
        """``all`` or the paper name of a subset this gallery has (an alias resolved), else a ``QueryError``."""
        if subset == ALL:
            return ALL
        name = resolve_subset(subset)
        if name not in self.ranges or name == NOISE:
            raise QueryError(f"{self.assets.name} has no subset {name}; it has {', '.join(self.subsets)}")
        return name

    @property
    def subsets(self) -> list[str]:
        """The test subsets this gallery has, in the paper's order."""
        return [s for s in TEST_SUBSETS if s in self.ranges]

    def random_query(self, subset: str, seed: int, cutoff=None) -> Query:
        """A seeded choice among the subset's queries (all subsets for ``all``) time-stamped after ``cutoff``."""
        subset = self.subset(subset)
        queries = self.assets.queries
        rows = np.arange(len(queries)) if subset == ALL else np.flatnonzero(np.array(queries["subset"]) == subset)
        if cutoff:
            try:
                rows = rows[after_mask(queries.select(rows), cutoff)]
            except (TypeError, ValueError) as err:
                raise QueryError(str(err)) from err
        if rows.size == 0:
            raise QueryError(f"No query of {subset} is time-stamped after {cutoff}: nothing to pick")
        row = int(np.random.default_rng(seed).choice(rows))
        return self.benchmark_query(f"{queries[row]['subset']}/{queries[row]['row'] + 1}")

    def words(self, text, key=None) -> Query:
        """A text query. When ``key`` names a benchmark query and the words are its own (either form of the release's
        text queries), it is that query in words."""
        text = " ".join(str(text or "").split())
        if not text:
            raise NotYet("No words yet: describe the item, e.g. 'striped red long-sleeved v-neck top'")
        if len(text) > MAX_WORDS:
            raise QueryError(f"The description has {len(text)} characters; a text query has at most {MAX_WORDS}")
        read, ignored = self.reading(text)
        if not read:
            raise QueryError(f"No word of “{markdown_safe(text)}” is one the text tower knows (ignored: "
                             f"{markdown_safe(', '.join(ignored))}); words it knows include "
                             f"{', '.join(self.suggestions(ignored))}")
        if key and str(key).strip():
            query = self.benchmark_query(str(key))
            record = self.assets.queries[query.benchmark_row]
            if text.lower() in {record_text(record, form).lower() for form in FORMS}:
                return Query(f"{query.label} in words: “{markdown_safe(text)}”", benchmark_row=query.benchmark_row,
                             annotation=query.annotation, text=text, ignored=ignored)
        return Query(f"the words “{markdown_safe(text)}”", text=text, ignored=ignored)

    def reading(self, text: str) -> tuple[list[str], list[str]]:
        """The words every text tower here reads, and those one of them ignores (a tower that does not say what
        it reads is taken to read every word)."""
        read, ignored = {}, {}
        for reader in self.readers.values():
            tower = getattr(reader, "text_reader", None)
            known, unknown = tower.reading(text) if tower else ([*dict.fromkeys(text.split())], [])
            read.update(dict.fromkeys(known))
            ignored.update(dict.fromkeys(unknown))
        return [w for w in read if w not in ignored], list(ignored)

    @functools.cached_property
    def vocabulary(self) -> list[str]:
        """The taxonomy's values in this gallery's annotations (categories, attribute values) whose every word the
        text towers read: what the words box offers."""
        values = set(self.assets.gallery["category"]) | set(self.assets.gallery["main_attribute"])
        values |= {a["value"] for attributes in self.assets.gallery["attributes"] for a in attributes or []}
        phrases = {" ".join(str(v).replace("_", " ").split()).lower() for v in values if v}
        return sorted(p for p in phrases if p and not self.reading(p)[1])

    def suggestions(self, ignored, n: int = 12) -> list[str]:
        """Known words near the ignored ones (difflib), then the first known words, ``n`` in all."""
        import difflib

        near = [w for word in ignored for w in difflib.get_close_matches(word.lower(), self.vocabulary, 2, 0.6)]
        return list(dict.fromkeys(near + self.vocabulary))[:n]

    def described(self, key: str) -> str:
        """A benchmark query's own words (the short form)."""
        return record_text(self.assets.queries[self.benchmark_query(key).benchmark_row])

    @staticmethod
    def upload(blob: bytes, label: str = "uploaded file") -> Query:
        """An uploaded file, checked to be an image within PIL's decompression-bomb limit before it is decoded."""
        if not blob:
            raise QueryError(f"The {label} is empty")
        try:
            with Image.open(io.BytesIO(blob)) as image:
                width, height = image.size
                mode, kind = image.mode, image.format
        except Image.DecompressionBombError as err:
            raise QueryError(f"The {label} is refused as a possible decompression bomb: {err}") from err
        except (UnidentifiedImageError, OSError, ValueError) as err:
            raise QueryError(f"The {label} is not an image PIL can read ({type(err).__name__})") from err
        if width * height > (Image.MAX_IMAGE_PIXELS or float("inf")):
            raise QueryError(f"The {label} ({width}x{height} pixels) exceeds PIL's decompression-bomb limit of "
                             f"{Image.MAX_IMAGE_PIXELS} pixels")
        converted = "" if mode == "RGB" else f", {mode} converted to RGB"
        return Query(f"{label} ({kind} {width}x{height}{converted})", blob=blob)

    # -- search ---------------------------------------------------------------------------------------------

    def _selector(self, subset: str, distractors: bool):
        """The faiss ID selector of the scope (kept alive here: faiss holds only a pointer)."""
        import faiss

        key = (subset, distractors)
        if key not in self._selectors:
            names = list(TEST_SUBSETS) if subset == ALL else [subset]
            parts = [faiss.IDSelectorRange(*self.ranges[n]) for n in names if n in self.ranges]
            if distractors and NOISE in self.ranges:
                parts.append(faiss.IDSelectorRange(*self.ranges[NOISE]))
            chain = parts[0]
            keep = list(parts)
            for part in parts[1:]:
                chain = faiss.IDSelectorOr(chain, part)
                keep.append(chain)
            self._selectors[key] = (chain, keep)
        return self._selectors[key][0]

    def scope_rows(self, subset: str, distractors: bool) -> np.ndarray:
        names = list(TEST_SUBSETS) if subset == ALL else [subset]
        names += [NOISE] if distractors else []
        return np.concatenate([np.arange(*self.ranges[n]) for n in names if n in self.ranges])

    def vector(self, query: Query, model: str) -> np.ndarray:
        if query.text is not None:
            if model not in self.readers:
                raise QueryError(f"Model {shown(model)} reads no words; text queries: {', '.join(self.readers) or 'none here'}")
            out = check_output(self.readers[model], self.readers[model].encode_text([query.text]), [query.label], None)
            return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        if query.benchmark_row is not None:
            return self.assets.models[model].queries[query.benchmark_row][None, :]
        encoder = self.encoders[model]
        decoded = decode(encoder, [query.blob])
        if decoded.errors[0] is not None:
            raise QueryError(f"The {query.label} cannot be decoded: {decoded.errors[0]}")
        out = check_output(encoder, encoder.encode_batch(decoded.inputs), [query.label], None)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def query_uid(self, query: Query) -> int:
        """The content id of the query's image in the gallery (-1: none, as for free words)."""
        if query.blob is not None:
            digest = hashlib.sha256(query.blob).digest()[:HASH_BYTES].hex()
        elif query.benchmark_row is not None:
            digest = self.assets.queries[query.benchmark_row]["hash"]
        else:
            return -1
        return self.content.get(digest, -1)

    def search(self, query: Query, model: str, subset: str = ALL, distractors: bool = DEFAULT_DISTRACTORS,
               k: int = 10) -> Retrieval:
        """The top ``k`` of ``model`` for ``query`` in the scope, self-matches dropped, marked when annotated."""
        import faiss

        subset = self.subset(subset)
        if model not in self.assets.models:
            raise QueryError(f"Model {shown(model)} has no prepared assets; prepared: {', '.join(self.assets.models)}")
        rows = self.scope_rows(subset, distractors)
        if rows.size == 0:
            raise QueryError(f"The gallery of {subset} is empty{'' if distractors else ' without distractors'}")
        uid = np.array([self.query_uid(query)], dtype=np.int64)
        depth = min(search_depth(uid, self.gallery_uid[rows], None, k), rows.size)
        params = faiss.SearchParameters()
        params.sel = self._selector(subset, distractors)
        scores, ids = self.assets.models[model].index.search(self.vector(query, model), depth, params=params)
        ranking = remove_self_matches(ids, uid, self.gallery_uid, k)
        score_of = dict(zip(ids[0].tolist(), scores[0].tolist()))
        kept = [int(i) for i in ranking.ids[0] if i >= 0]
        gallery = self.assets.gallery.select(kept)
        hits = [Hit(rank, score_of[row], row, g["subset"], g["item_id"], g["category"], g["main_attribute"], g["thumb"])
                for rank, (row, g) in enumerate(zip(kept, gallery), 1)]
        result = Retrieval(model, hits, ranking.self_matches_removed)
        if query.annotation is not None and hits:
            per_query = score_queries(ranking.ids, [query.annotation], self.columns, k=[k], mode=MODE)
            for hit, fine, coarse, g in zip(hits, per_query["fine"][0], per_query["coarse"][0], gallery):
                hit.mark = "fine" if fine else "coarse" if coarse else "miss"
                hit.chips = [] if fine else chips(query.annotation, g, MODE, bool(coarse))
            result.fine_hit = bool(per_query["fine"][0].any())
            result.coarse_hit = bool(per_query["coarse"][0].any())
            result.ndcg = 100.0 * float(per_query["ndcg"][0, 0])
        return result

