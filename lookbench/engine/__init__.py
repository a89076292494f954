"""The evaluation engine behind ``lookbench evaluate`` and ``lookbench.evaluate``, as stages with named hand-offs.

docs/architecture.md §8: ``data`` loads a ``Benchmark`` → ``images`` turns its splits into ``BenchmarkImages``
and hashes their bytes → ``encode`` makes one ``Embeddings`` matrix of every distinct image (cache, processes,
decode schedule from ``runtime``) → ``scoring`` searches each ``SubsetTask`` (``search``: faiss, noise merge,
self-match removal) and scores it with the metric's ``score_retrieval`` → ``results`` holds the
``EvaluationResult``. ``check_options`` runs first, so a bad option fails before anything is loaded. With a
results store (``lookbench.results.store``), an identical stored evaluation is returned before ``images``; ``predictions``
saves the rankings. The Space, the benchmarks and the tests use these stages directly.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path

from lookbench.results import stats, store
from lookbench.files import new_sibling
from lookbench.encoders.registry import check_model, load_encoder
from lookbench.filtering import parse_cutoff
from lookbench.settings import (DEFAULT_DISTRACTORS, DEFAULT_INDEX, DEFAULT_MODE, DEFAULT_PRECISION, DEFAULT_QUERIES,
                                DEFAULT_TEXT_FORM, INDEXES, MODES, PRECISIONS, QUERY_KINDS, TEXT_FORMS)
from lookbench.results.judge import combine
from lookbench.progress import quiet_libraries, stage_bar
from lookbench.engine.data import Benchmark, DataSource, load_benchmark, resolve_data
from lookbench.engine.encode import (Embeddings, EncodeStats, check_output, encode_images, encode_texts,
                                     oracle_embeddings)
from lookbench.engine import predictions
from lookbench.errors import EvaluationError
from lookbench.engine.images import BenchmarkImages, Decoded, ImageSource, SubsetImages, decode
from lookbench.engine.results import EvaluationResult, SealedRun
from lookbench.engine.runtime import Processes, Schedule, reuse_freed_memory
from lookbench.engine.scoring import Split, SubsetScore, SubsetTask, score_subsets
from lookbench.engine.search import Hits, Ranking, merge_noise, remove_self_matches, search, search_depth
from lookbench.engine.timings import StageTimes

__all__ = [
    "Benchmark", "BenchmarkImages", "DataSource", "Decoded", "Embeddings", "EncodeStats", "EvaluationError", "EvaluationResult",
    "Hits", "ImageSource", "Processes", "Ranking", "Schedule", "Split", "StageTimes", "SubsetImages", "SubsetScore", "SubsetTask",
    "check_options", "check_output", "decode", "encode_images", "evaluate", "load_benchmark", "merge_noise",
    "remove_self_matches", "resolve_data", "reuse_freed_memory", "score_subsets", "search", "search_depth",
]


def _check_folder(path, what: str) -> None:
    """A folder that exists or can be made: not a file, and its nearest existing ancestor a writable folder."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise EvaluationError(f"{what} {path} exists and is not a folder")
    parent = path if path.exists() else next(p for p in path.parents if p.exists())
    if not parent.is_dir():
        raise EvaluationError(f"{what} {path} cannot be created: {parent} is not a writable folder")
    try:  # a real write, not os.access: a read-only mount or an immutable folder refuses even root
        new_sibling(parent / ".lookbench-write-check", "probe", folder=False).unlink()
    except OSError as err:
        where = "" if parent == path else f": {parent} is not a writable folder"
        raise EvaluationError(f"{what} {path} cannot be written{where} ({err.strerror})") from None


def check_options(*, mode=DEFAULT_MODE, index=DEFAULT_INDEX, precision=DEFAULT_PRECISION, batch_size=None,
                  workers=None, cutoff=None, cache_dir=None, output_dir=None, results_dir=None,
                  save_predictions=False, model=None, queries=DEFAULT_QUERIES, text_form=DEFAULT_TEXT_FORM) -> None:
    """Every option checked before anything is loaded, so a typo fails in a second, not after encoding."""
    check_model(model)
    for name, value, choices in (("mode", mode, MODES), ("index", index, INDEXES), ("precision", precision, PRECISIONS),
                                 ("queries", queries, QUERY_KINDS), ("text_form", text_form, TEXT_FORMS)):
        if value not in choices:
            raise EvaluationError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    for name, value in (("batch_size", batch_size), ("workers", workers)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise EvaluationError(f"{name} must be an integer of at least 1, got {value!r}")
    if cutoff is not None and cutoff != "model":
        try:
            parse_cutoff(cutoff)
        except TypeError as err:
            raise EvaluationError(str(err)) from err
    for path, what in ((cache_dir, "cache folder"), (output_dir, "output folder"), (results_dir, "results store")):
        if path is not None:
            _check_folder(path, what)
    if save_predictions and output_dir is None and results_dir is None:
        raise EvaluationError("save_predictions (--save-predictions) needs a place to write them: a results store "
                              "(not --no-save) or an output folder (--output)")


def evaluate(model=None, data=None, subsets=None, cutoff=None, distractors: bool = DEFAULT_DISTRACTORS, *,
             mode: str = DEFAULT_MODE, batch_size: int | None = None, precision: str = DEFAULT_PRECISION,
             device: str | None = None, index: str = DEFAULT_INDEX,
             cache_dir=None, use_cache: bool = True, skip_invalid: bool = False, workers: int | None = None,
             quiet: bool = False, verbose: bool = False, output_dir=None, results_dir=None, overwrite: bool = False,
             save_predictions: bool = False, trust_remote_code: bool = False, queries: str = DEFAULT_QUERIES,
             text_form: str = DEFAULT_TEXT_FORM) -> EvaluationResult | None:
    """Evaluate an image encoder on LookBench; returns an ``EvaluationResult`` (``None`` on non-main processes).

    ``model``: a registered name (see ``lookbench models``), a local transformers folder or Hub id, or any object
    with ``encode(list_of_PIL_images) -> (n, d) array`` and ``name``. ``data``: a folder from ``lookbench build``,
    a Hub dataset id, a published ``srpone/look-bench`` snapshot, or ``None`` for the embedded LookBench-Mini.
    ``cutoff`` keeps only queries time-stamped after it (contamination-aware evaluation); ``"model"`` takes the
    model's declared training cutoff. ``results_dir``: a results store (``lookbench.results.store``) to write the result
    into; an identical stored evaluation is returned instead of recomputed unless ``overwrite``.
    ``save_predictions`` also writes every query's top gallery rows as Parquet beside the result. ``quiet``
    shows no progress bar; ``verbose`` also shows the libraries' own bars and logging. ``trust_remote_code`` lets a
    Hub model run its own code (refused otherwise). ``queries="text"`` searches with each query's words instead of
    its image (the release's ``text`` config in ``text_form``, ``short`` or ``long``), encoded by the model's text
    tower (``encode_text(list_of_str)``; default model ``gr-lite-mini-text``); the gallery, the noise and the metric
    are the image queries'.
    """
    text = queries == "text"
    if model is None and text:
        from lookbench.encoders.entries import DEFAULT_TEXT_MODEL

        model = DEFAULT_TEXT_MODEL
    check_options(mode=mode, index=index, precision=precision, batch_size=batch_size, workers=workers, cutoff=cutoff,
                  cache_dir=cache_dir, output_dir=output_dir, results_dir=results_dir, save_predictions=save_predictions,
                  model=model, queries=queries, text_form=text_form)
    started = time.perf_counter()
    times = StageTimes()
    processes = Processes()
    quiet = quiet or not processes.is_main
    encoder = None
    if cutoff == "model" or text:  # the model decides which queries load, or must read; its weights load lazily
        encoder = load_encoder(model, device=device or processes.device, precision=precision,
                               trust_remote_code=trust_remote_code)
        if text:
            check_text_tower(encoder)
    if cutoff == "model":
        if encoder.training_cutoff is None:
            raise EvaluationError(f"model {encoder.name} declares no training cutoff (a registry entry's training_cutoff, "
                                  "or training_cutoff: in its model card's YAML); give --cutoff a date instead")
        cutoff = encoder.training_cutoff
    with quiet_libraries(verbose):
        with times.stage("load"):
            with stage_bar("load", quiet=quiet, unit="config") as bar:
                words = text_form if text else None
                if processes.is_main:
                    bench = load_benchmark(data, subsets, cutoff, distractors, progress=bar, text_form=words)
                processes.barrier()  # the main process fills the datasets cache first; the others then read it
                if not processes.is_main:
                    bench = load_benchmark(data, subsets, cutoff, distractors, text_form=words)
            for name, splits in bench.subsets.items():
                if len(splits["query"]) == 0:
                    raise EvaluationError(f"{name}: no query left to evaluate" + (f" after cutoff {cutoff}" if cutoff else ""))
            encoder = encoder or load_encoder(model, device=device or processes.device, precision=precision,
                                              trust_remote_code=trust_remote_code)
            bench.count_after(encoder.training_cutoff)
        settings = store.Settings(mode, bench.noise is not None, cutoff, tuple(bench.subsets), bool(subsets), index, precision,
                                  f"text-{text_form}" if text else "image")
        fingerprint = _fingerprint(encoder, text)
        planned = _planned(encoder, fingerprint, bench, results_dir, settings)
        if bench.unlabelled and getattr(encoder, "oracle", False):
            raise EvaluationError(f"{bench.provenance['data']} is sealed: its categories are withheld, so the oracle "
                                  f"{encoder.name} has nothing to read")
        if planned.stored is not None and not overwrite and not bench.unlabelled:
            found = store.find_identical(planned.stored, planned.identity,
                                         need_predictions=list(bench.subsets) if save_predictions else ())
            try:  # the stored rankings are read and checked: a damaged one is never reused, nor copied to --output
                saved = None if found is None else predictions.read_saved(planned.stored, found["provenance"])
            except ValueError as err:
                found = None
                planned.notes.append(f"the stored result's saved rankings cannot be used ({err}): evaluated again")
            if found is not None:
                if not processes.is_main:
                    return None
                result = EvaluationResult.from_dict(found, stored=planned.stored, reused=True, notes=planned.notes,
                                                    rankings=saved or None)
                if output_dir is not None:
                    result.save(output_dir)
                return result
        with times.stage("hash"), stage_bar("hash", quiet=quiet, unit="img") as bar:
            images = BenchmarkImages.of(bench)
            images.hash(bar)
        oracle = getattr(encoder, "oracle", False)
        with times.stage("encode"), stage_bar(f"encode {encoder.name}", quiet=quiet, unit="img") as bar:
            if oracle:  # told the categories of the gallery: no pixel is read
                embeddings = oracle_embeddings(encoder, images.gallery_sources(), _gallery_categories(bench))
            else:
                embeddings = encode_images(encoder, images.gallery_sources() if text else images.sources(),
                                           batch_size=batch_size, workers=workers, cache_dir=cache_dir,
                                           use_cache=use_cache, skip_invalid=skip_invalid, progress=bar,
                                           processes=processes)
            if not processes.is_main:
                return None
        with times.stage("search"):  # cosine = inner product of unit vectors
            embeddings = embeddings.normalised()
        tasks, texts_encoded = {}, 0
        for name, splits in bench.subsets.items():
            source = images.subsets[name].query
            if oracle:
                vectors = encoder.encode_queries(list(splits["query"]["category"]))
                queries = Split.of_texts(source, splits["query"], embeddings, vectors)
            elif text:
                with times.stage("encode"):
                    vectors = encode_texts(encoder, list(splits["query"]["query_text"]), embeddings.matrix.shape[1])
                texts_encoded += len(vectors)
                queries = Split.of_texts(source, splits["query"], embeddings, vectors)
            else:
                queries = Split.of(source, splits["query"], embeddings)
            if len(queries.rows) == 0:
                raise EvaluationError(f"{name}: no query left to evaluate: every query image was skipped")
            tasks[name] = SubsetTask(queries, Split.of(images.subsets[name].gallery, splits["gallery"], embeddings))
        noise = None if bench.noise is None else Split.of(images.noise, bench.noise, embeddings)
        with stage_bar("search + score", quiet=quiet, unit="step") as bar:
            scored = score_subsets(embeddings.matrix, tasks, noise, mode=mode, index=index, progress=bar, timings=times,
                                   judge=not bench.unlabelled)
        keep = planned.stored is not None or output_dir is not None  # a sealed run's rankings are its whole result
        rankings = None if not (save_predictions or (bench.unlabelled and keep)) else {
            name: predictions.rankings(embeddings.matrix, tasks[name], noise, s) for name, s in scored.items()}
    if bench.unlabelled:
        return _sealed_run(encoder, fingerprint, bench, images, embeddings, scored, processes, settings, times, started,
                           texts_encoded, rankings, planned, output_dir)
    judged = combine({name: s.judged for name, s in scored.items()})
    overall = judged.overall
    results = {name: {**s.scores, "self_matches_removed": s.self_matches_removed, "gallery_size": s.gallery_size}
               for name, s in scored.items()}
    outcomes = judged.outcomes()
    intervals = stats.intervals(outcomes)
    release_scores, release_intervals = judged.per_release, judged.release_intervals
    provenance = _provenance(encoder, fingerprint, bench, images, embeddings, scored, processes, settings,
                             wall_time_s=round(time.perf_counter() - started, 3), texts_encoded=texts_encoded)
    provenance["intervals"] = stats.settings()
    provenance["timings_s"] = times.rounded()  # per stage; their sum leaves out option checks and bookkeeping
    provenance["saved_predictions"] = sorted(rankings or ())  # the subsets whose rankings lie beside the JSON
    result = EvaluationResult(results, overall, provenance, outcomes, intervals, release_scores, release_intervals,
                              stored=planned.stored, notes=planned.notes, rankings=rankings)
    if planned.stored is not None:
        result.write_json(planned.stored)
    if output_dir is not None:
        result.save(output_dir)
    return result


def _sealed_run(encoder, fingerprint, bench, images, embeddings, scored, processes, settings, times, started,
                texts_encoded, rankings, planned, output_dir) -> SealedRun:
    """The run on a sealed release: its rankings and counts, saved as a result is, with no score."""
    subsets = {name: {**s.scores, "gallery_size": s.gallery_size, "self_matches_removed": s.self_matches_removed}
               for name, s in scored.items()}
    provenance = _provenance(encoder, fingerprint, bench, images, embeddings, scored, processes, settings,
                             wall_time_s=round(time.perf_counter() - started, 3), texts_encoded=texts_encoded)
    provenance["timings_s"] = times.rounded()
    provenance["saved_predictions"] = sorted(rankings or ())
    run = SealedRun(subsets, provenance, rankings, stored=planned.stored, notes=planned.notes)
    if planned.stored is not None:
        run.write_json(planned.stored)
    if output_dir is not None:
        run.save(output_dir)
    return run


@dataclass
class _Planned:
    """Where the result goes in the store (``None``: no store) and the identity that decides reuse."""

    stored: Path | None
    identity: store.Identity
    notes: list


def check_text_tower(encoder) -> None:
    """Text queries need a text tower: one line naming the registered models that have one, otherwise."""
    if encoder.text_tower is None:
        from lookbench.encoders.registry import text_models
        from lookbench.encoders.text import TOKENIZER_FILES

        if encoder.name in text_models():  # declared, but its folder lacks the tokenizer
            raise EvaluationError(f"model {encoder.name} has a text tower, but {getattr(encoder, 'folder', 'its folder')} "
                                  f"holds no tokenizer ({', '.join(TOKENIZER_FILES[:3])}, ...): fetch the repo's "
                                  "tokenizer files into it")
        raise EvaluationError(f"model {encoder.name} has no text tower, so it cannot read text queries (--queries text); "
                              f"registered models with one: {', '.join(text_models())} (or any object with "
                              "encode_text(list_of_str) beside encode(images))")


def _fingerprint(encoder, text: bool) -> str | None:
    """What identifies the model of a run: its fingerprint, and for text queries its text tower's too."""
    if not text or not encoder.text_fingerprint or encoder.fingerprint is None:
        return encoder.fingerprint
    return f"{encoder.fingerprint}+text:{encoder.text_fingerprint}"


def _gallery_categories(bench: Benchmark) -> list[list[str]]:
    """The category of every gallery and noise row, in the order of ``BenchmarkImages.gallery_sources``."""
    out = [list(splits["gallery"]["category"]) for splits in bench.subsets.values()]
    return out + ([list(bench.noise["category"])] if bench.noise is not None else [])


def _planned(encoder, fingerprint, bench: Benchmark, results_dir, settings: store.Settings) -> _Planned:
    p = bench.provenance
    identity = store.Identity(fingerprint, p["revision"], settings)
    notes = []
    if results_dir is not None and fingerprint is None:
        notes.append(f"model {encoder.name} declares no revision or fingerprint, so its identity is unknown: a stored "
                     "result is never reused for it (give the object a revision to allow that)")
    elif results_dir is not None and p["revision"] is None:
        notes.append(f"the data {p['data']} has no known revision, so a stored result is never reused for it")
    path = None if results_dir is None else store.result_path(
        results_dir, model=encoder.name, revision=encoder.provenance.get("revision"), fingerprint=fingerprint,
        releases=p["releases"], data_revision=p["revision"], settings=settings)
    return _Planned(path, identity, notes)


def _provenance(encoder, fingerprint, bench: Benchmark, images: BenchmarkImages, embeddings: Embeddings, scored: dict,
                processes: Processes, settings: store.Settings, *, wall_time_s, texts_encoded: int = 0) -> dict:
    """What makes the scores reproducible: versions, data revision, model fingerprint, settings and counts."""
    from lookbench._version import __version__

    stats = embeddings.stats
    counts = {
        "unique_images": stats.unique_images,
        "rows": sum(len(s) for s in images.sources()),
        "forward_images": stats.forward_images,
        "forward_images_per_process": stats.forward_per_process,
        "cache_hits": stats.cache_hits,
        "corrupt_cache_files": stats.corrupt_cache_files,
        "invalid_images_skipped": [f"{where}: {err}" for where, err in stats.invalid],
        "self_matches_removed": sum(s.self_matches_removed for s in scored.values()),
        "queries": {name: s.scores.get("num_queries") for name, s in scored.items()},
        "texts_encoded": texts_encoded,
    }
    return {
        "result_format": store.RESULT_FORMAT,
        "lookbench_version": __version__,
        "dataset": bench.provenance,
        "model": {"name": encoder.name, **encoder.provenance, "fingerprint": fingerprint,
                  "training_cutoff": encoder.training_cutoff,
                  "preprocessing": encoder.preprocessing, "embedding_dim": int(embeddings.matrix.shape[1]),
                  **({"text_tower": encoder.text_tower} if settings.queries != "image" else {})},
        **settings.provenance(),
        "device": getattr(encoder, "device", "cpu"),
        "processes": processes.world,
        "search": ("exact (faiss knn, inner product of unit vectors = cosine)" if settings.index == "flat"
                   else "approximate (faiss HNSW32, cosine)"),
        "counts": counts,
        "wall_time_s": wall_time_s,
        "evaluated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
