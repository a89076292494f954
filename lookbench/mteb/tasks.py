"""LookBench as one mteb ``Any2AnyRetrieval`` task whose hf_subsets are the four subsets: image to image (``i2i``), or
text to image (``t2i``: each query's words from the data's text config, ``queries="text"``), over the same corpora
and qrels.

docs/architecture.md §5. Each subset's corpus is its own gallery followed by the shared noise gallery, as in the
engine. The qrels are the metric's own judgement: the one judge's (``lookbench.results.judge.fine_matches``) over the whole
corpus marks every fine hit of the chosen mode, relevance 1. Nothing else is judged relevant, because mteb's
``hit_rate_at_K`` (trec_eval's ``success``) counts any judgement of 1 or more as a hit, and then it is exactly
LookBench's Fine Recall@K. So mteb's ``ndcg_at_K`` is the *binary* nDCG of fine hits (ideal: as many fine hits as
the corpus holds, up to K), not LookBench's nDCG@K, which grades every same-category item by attribute overlap
|A_q ∩ A_i| / |A_q|; the two differ (tests/mteb/test_mteb.py shows by how much on LookBench-Mini). A query with no fine
hit in its corpus keeps one judgement of 0, so that mteb scores it as a miss instead of dropping it. A text query's
relevant items are its image query's: the words name its category and every attribute, and the judgement is the
same fine hit.

A gallery image byte-identical to its query is dropped, as the engine drops it (``engine/search.py``): every
corpus row whose content hash equals the query's carries the query's id, and the task sets mteb's
``ignore_identical_ids``, which removes that id from the query's results (copies with one id and one score
collapse into one result). Such copies are not judged either. Text queries leave out the same rows, as the engine
leaves them out of a text query's ranking.
"""
from __future__ import annotations

import re
import typing
from pathlib import Path

import numpy as np
from mteb.abstasks.retrieval import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata
from mteb.types import Licenses

from lookbench.engine import check_options
from lookbench.engine.data import load_benchmark, resolve_data
from lookbench.errors import EvaluationError
from lookbench.engine.images import BenchmarkImages
from lookbench.metric.fine_recall.records import GalleryColumns
from lookbench.results.judge import fine_matches, gallery_columns, query_columns
from lookbench.citation import BIBTEX, PAPER_URL
from lookbench.paths import mteb_stats_dir
from lookbench.settings import DEFAULT_DISTRACTORS, DEFAULT_MODE, DEFAULT_QUERIES, DEFAULT_TEXT_FORM

SPLIT = "test"
LANGUAGES = ["zxx-Zxxx"]  # images: no linguistic content (mteb's code for it)
TEXT_LANGUAGES = ["eng-Latn"]  # the text queries' templates are English
K_VALUES = (1, 5, 10, 20, 100)  # LookBench's K, and 100 so that a dropped self-match never shortens the top 20
QUERY_BLOCK = 64  # queries judged against the whole corpus at once (a block x corpus ranking in memory)


def task_name(mode: str, revision: str | None, distractors: bool = DEFAULT_DISTRACTORS,
              queries: str = DEFAULT_QUERIES) -> str:
    """``LookBench-<mode>[-text-<form>][-no-distractors]-<data revision>``: mteb's result cache finds a result by
    task name (and model) and serves it without comparing dataset revisions once every subset is there, so
    everything that changes the scores is part of the name. ``queries``: ``image`` or ``text-<form>``, as a result's
    provenance names it."""
    return (f"LookBench-{mode}{'' if queries == DEFAULT_QUERIES else f'-{queries}'}"
            f"{'' if distractors == DEFAULT_DISTRACTORS else '-no-distractors'}-"
            + re.sub(r"[^\w.-]+", "_", revision or "unknown"))


class LookBenchTaskMetadata(TaskMetadata):
    """mteb's metadata, except that descriptive statistics live under ``$HF_HOME/lookbench/mteb``, beside the
    other LookBench caches, instead of inside the installed mteb package."""

    @property
    def descriptive_stat_path(self) -> Path:
        return mteb_stats_dir() / f"{self.name}.json"


class LookBenchRetrieval(AbsTaskRetrieval):
    """The LookBench subsets of one data folder for one scoring mode; ``lookbench_tasks`` makes a subclass per
    folder and mode, since mteb reads ``metadata`` from the class."""

    ignore_identical_ids = True
    k_values = K_VALUES

    def __init__(self, splits: dict, **kwargs):
        self._splits = splits
        super().__init__(**kwargs)

    def load_data(self, num_proc=None, *, timer=None, **kwargs) -> None:
        """The splits are built by ``lookbench_tasks`` (mteb's loader reads Hub repos in its own layout)."""
        self.dataset = {subset: {SPLIT: split} for subset, split in self._splits.items()}
        self.data_loaded = True


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}-{row:05d}" for row in range(n)]


def _subset_split(name: str, splits: dict, noise, images, noise_columns, mode: str) -> dict:
    """mteb's ``RetrievalSplitData`` of one subset: queries, corpus (gallery + noise), qrels."""
    import datasets

    queries, gallery = splits["query"], splits["gallery"]
    query_hashes = images.subsets[name].query.hashes
    noise = [] if noise is None else noise
    corpus_hashes = images.subsets[name].gallery.hashes + (images.noise.hashes if noise else [])
    query_ids = _ids("query", len(queries))
    corpus_ids = _ids("gallery", len(gallery)) + _ids("noise", len(noise))
    owner: dict[bytes, str] = {}
    in_corpus = set(corpus_hashes)
    for qid, h in zip(query_ids, query_hashes):
        if h in owner and h in in_corpus:
            raise EvaluationError(f"{name}: queries {owner[h]} and {qid} are the same image, which the gallery also "
                                  "holds; mteb can drop a gallery copy for one query id only")
        owner.setdefault(h, qid)
    corpus_ids = [owner.get(h, cid) for h, cid in zip(corpus_hashes, corpus_ids)]

    parts = [gallery] + ([noise] if noise else [])
    corpus = datasets.concatenate_datasets([ds.select_columns(["image"]) for ds in parts]).add_column("id", corpus_ids)
    columns = gallery_columns(gallery, noise_columns if noise else None)
    relevant = {}
    references = queries.select_columns(query_columns(queries))
    for start in range(0, len(queries), QUERY_BLOCK):
        block = references.select(range(start, min(start + QUERY_BLOCK, len(queries))))
        fine = fine_matches(block, columns, mode)
        for qid, hits in zip(query_ids[start:], fine):
            judged = {corpus_ids[r]: 1 for r in np.flatnonzero(hits).tolist() if corpus_ids[r] != qid}
            relevant[qid] = judged or {next(c for c in corpus_ids if c != qid): 0}
    if "query_text" in queries.column_names:  # text to image: the words, searched against the same corpus
        asked = datasets.Dataset.from_dict({"id": query_ids, "text": list(queries["query_text"])})
    else:
        asked = queries.select_columns(["image"]).add_column("id", query_ids)
    return {"queries": asked, "corpus": corpus, "relevant_docs": relevant, "top_ranked": None}


def _date_range(bench) -> tuple[str, str]:
    """The first and last day of the timestamps of every loaded row (queries, galleries, noise)."""
    import pyarrow.compute as pc

    splits = [ds for s in bench.subsets.values() for ds in s.values()] + ([bench.noise] if bench.noise is not None else [])
    stamps = [pc.min_max(ds.with_format("arrow")[:]["timestamp"]) for ds in splits]
    return (min(s["min"].as_py() for s in stamps).date().isoformat(), max(s["max"].as_py() for s in stamps).date().isoformat())


def lookbench_tasks(data=None, mode: str = DEFAULT_MODE, subsets=None, distractors: bool = DEFAULT_DISTRACTORS,
                    queries: str = DEFAULT_QUERIES, text_form: str = DEFAULT_TEXT_FORM) -> list[LookBenchRetrieval]:
    """The mteb task for a LookBench data folder (``None``: the embedded LookBench-Mini; a folder from ``lookbench
    build``; a published ``srpone/look-bench`` snapshot, converted as ``lookbench evaluate`` converts it).

    One task, in a list as ``mteb.evaluate`` takes them: hf_subsets are the subsets, split ``test``, main score
    ``hit_rate_at_1`` = strict (or leaderboard-mode) Fine Recall@1 as a fraction. ``subsets`` limits the hf_subsets
    (names or aliases, as ``--subsets``); ``distractors=False`` leaves the noise gallery out of every corpus, as
    ``--no-distractors`` does (and the task name says so). ``queries="text"``: the text-to-image task (``t2i``) of
    ``lookbench evaluate --queries text --text-form <text_form>``, each query its words, the corpus and qrels the same.
    """
    check_options(mode=mode, queries=queries, text_form=text_form)
    text = queries == "text"
    source = resolve_data(data)
    bench = load_benchmark(source, subsets, distractors=distractors, text_form=text_form if text else None)
    if bench.unlabelled:
        raise EvaluationError(f"{source.label} is sealed: its labels are withheld, so it has no qrels and no mteb task "
                              "until it is unsealed")
    images = BenchmarkImages.of(bench)
    images.hash()
    noise_columns = GalleryColumns(bench.noise) if bench.noise is not None else None
    splits = {name: _subset_split(name, s, bench.noise, images, noise_columns, mode) for name, s in bench.subsets.items()}
    p = bench.provenance
    card = source.card
    license_ = str(card.get("license") or "not specified").lower()
    if license_ not in typing.get_args(Licenses):  # mteb knows a fixed list; the card's own word goes in the description
        license_ = "not specified"
    kind = f"text-{text_form}" if text else DEFAULT_QUERIES
    metadata = LookBenchTaskMetadata(
        name=task_name(mode, p["revision"], distractors, kind),
        description=(f"LookBench fashion {'text' if text else 'image'}-to-image retrieval on {p['name']} "
                     f"({', '.join(p['releases'])})" + (f", each query in words ({text_form} form of its category and "
                                                         "attributes)" if text else "") + ": a "
                     f"retrieved item is relevant when it is a {mode}-mode fine hit of the query (same category and "
                     + ("every query attribute" if mode == "strict" else "the same main attribute")
                     + "); each subset's corpus is its gallery" + (" plus the shared noise gallery" if distractors else "")
                     + ". Data licence: "
                     + str(card.get("license") or "not stated in its card") + "."),
        reference=PAPER_URL,
        dataset={"path": source.path, "revision": p["revision"] or "unknown"},
        type="Any2AnyRetrieval",
        category="t2i" if text else "i2i",
        modalities=["text", "image"] if text else ["image"],
        eval_splits=[SPLIT],
        eval_langs={name: TEXT_LANGUAGES if text else LANGUAGES for name in splits},
        main_score="hit_rate_at_1",
        date=_date_range(bench),
        domains=["E-commerce"],
        task_subtypes=[],
        license=license_,
        dialect=[],
        bibtex_citation=BIBTEX,
    )
    task = type("LookBenchRetrieval", (LookBenchRetrieval,), {"metadata": metadata, "__module__": __name__})
    return [task(splits)]
