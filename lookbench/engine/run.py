"""One evaluation, stage by stage (docs/architecture.md §8): options → data → images → encode → search → score →
results → store, each stage handing the next a named object; ``lookbench.evaluate`` is ``evaluate`` here."""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, replace
from pathlib import Path

from lookbench.results import stats, store
from lookbench.encoders.registry import load_encoder
from lookbench.filtering import Cutoff
from lookbench.settings import (DEFAULT_DISTRACTORS, DEFAULT_INDEX, DEFAULT_PRECISION, DEFAULT_QUERIES, DEFAULT_TEXT_FORM,
                                QueryKind)
from lookbench.results.judge import combine
from lookbench.results.folder import ResultFolder
from lookbench.results.provenance import ZeroShot
from lookbench.results.result import EvaluationResult, SealedRun
from lookbench.progress import quiet_libraries, stage_bar
from lookbench.engine.data import Benchmark, load_benchmark, public_part_of
from lookbench.engine.encode import Embeddings, encode_images, encode_texts, oracle_embeddings
from lookbench.engine import predictions
from lookbench.engine.options import check_options
from lookbench.errors import EvaluationError
from lookbench.engine.images import BenchmarkImages
from lookbench.engine.runtime import Processes
from lookbench.engine.scoring import Split, SubsetTask, score_subsets
from lookbench.engine.timings import StageTimes


def evaluate(model=None, data=None, subsets=None, cutoff=None, distractors: bool = DEFAULT_DISTRACTORS, *,
             mode=None, batch_size: int | None = None, precision: str = DEFAULT_PRECISION,
             device: str | None = None, index: str = DEFAULT_INDEX,
             cache_dir=None, use_cache: bool = True, skip_invalid: bool = False, workers: int | None = None,
             quiet: bool = False, verbose: bool = False, output_dir=None, results_dir=None, overwrite: bool = False,
             save_predictions: bool = False, trust_remote_code: bool = False, queries: str = DEFAULT_QUERIES,
             text_form: str = DEFAULT_TEXT_FORM) -> EvaluationResult | None:
    """Evaluate an image encoder on LookBench; returns an ``EvaluationResult`` (``None`` on non-main processes).

    ``model``: a registered name (see ``lookbench models``), a local transformers folder or Hub id, or any object
    with ``encode(list_of_PIL_images) -> (n, d) array`` and ``name``. ``data``: a folder from ``lookbench build``,
    a Hub dataset id, a published ``srpone/look-bench`` snapshot, or ``None`` for the embedded LookBench-Mini.
    ``mode``: ``None`` (default) judges the one ranking in every mode — ``strict`` (the paper's) and ``leaderboard``
    (the published table's) — with one encode and one search; ``"strict"`` or ``"leaderboard"`` only that one. The
    returned result is the first mode's (strict's, unless ``mode`` names another); ``result.modes`` maps every judged
    mode to its own result (``result.modes["leaderboard"]``), each with ``.to_dict()`` and ``.table()``.
    ``cutoff`` keeps only queries time-stamped after it (contamination-aware evaluation) or, a release name, the
    queries of later releases of the data's kind; ``"model"`` takes the model's declared training cutoff.
    ``results_dir``: a results store (``lookbench.results.store``) to write every mode's result into; identical stored
    evaluations are returned instead of recomputed unless ``overwrite``. ``output_dir``: ``results.json`` (the first
    mode's), ``results-<mode>.json`` for the others, and the plots.
    ``save_predictions`` also writes every query's top gallery rows as Parquet beside the result. ``quiet``
    shows no progress bar; ``verbose`` also shows the libraries' own bars and logging. ``trust_remote_code`` lets a
    Hub model run its own code (refused otherwise). ``queries="text"`` searches with each query's words instead of
    its image (the release's ``text`` config in ``text_form``, ``short`` or ``long``), encoded by the model's text
    tower (``encode_text(list_of_str)``; default model ``gr-lite-mini-text``); the gallery, the noise and the metric
    are the image queries'.
    While a release of the data is sealed and others are public, the public releases are scored on their rows alone
    (the returned result) and the sealed one only ranked, as a ``SealedRun`` into ``sealed/`` of ``output_dir`` and
    into the store; a note says which was which.
    """
    asked = dict(locals())  # the call's own arguments, for the public part of a sealed folder (``_public_part``)
    options = check_options(mode=mode, index=index, precision=precision, batch_size=batch_size, workers=workers,
                            cutoff=cutoff, cache_dir=cache_dir, output_dir=output_dir, results_dir=results_dir,
                            save_predictions=save_predictions, model=model, queries=queries, text_form=text_form)
    kind, cutoff = options.kind, options.cutoff
    started = time.perf_counter()
    times = StageTimes()
    processes = Processes()
    quiet = quiet or not processes.is_main

    def load_model():
        return load_encoder(options.model, device=device or processes.device, precision=precision,
                            trust_remote_code=trust_remote_code)

    encoder = None
    if options.cutoff_from_model or kind.text:  # the model decides which queries load, or must read; weights load lazily
        encoder = load_model()
        if kind.text:
            check_text_tower(encoder)
    if options.cutoff_from_model:
        cutoff = model_cutoff(encoder)
    with quiet_libraries(verbose):
        with times.stage("load"):
            with stage_bar("load", quiet=quiet, unit="config") as bar:
                if processes.is_main:
                    bench = load_benchmark(data, subsets, cutoff, distractors, progress=bar, text_form=kind.form)
                processes.barrier()  # the main process fills the datasets cache first; the others then read it
                if not processes.is_main:
                    bench = load_benchmark(data, subsets, cutoff, distractors, text_form=kind.form)
            for name, splits in bench.subsets.items():
                if len(splits["query"]) == 0:
                    raise EvaluationError(f"{name}: no query left to evaluate" + (f" after cutoff {cutoff}" if cutoff else ""))
            encoder = encoder or load_model()
            bench.count_after(encoder.training_cutoff)
        scored_part = _public_part(bench, encoder, asked)
        if bench.unlabelled and public_releases(bench):  # the sealed release's rankings beside the public result
            output_dir = None if output_dir is None else Path(output_dir) / SEALED_PART
        settings = store.Settings(options.modes.headline, bench.noise is not None, cutoff, tuple(bench.subsets),
                                  bool(subsets), index, precision, kind.label)
        fingerprint = _fingerprint(encoder, kind)
        planned = {m: _planned(encoder, fingerprint, bench, results_dir, replace(settings, mode=m)) for m in options.modes}
        if bench.unlabelled and getattr(encoder, "oracle", False):
            raise EvaluationError(f"{bench.provenance['data']} is sealed: its categories are withheld, so the oracle "
                                  f"{encoder.name} has nothing to read")
        if not overwrite and not bench.unlabelled:
            found = _stored(planned, list(bench.subsets) if save_predictions else ())
            if found is not None:
                if not processes.is_main:
                    return None
                return _finish(found, output_dir)
        with times.stage("hash"), stage_bar("hash", quiet=quiet, unit="img") as bar:
            images = BenchmarkImages.of(bench)
            images.hash(bar)
        oracle = getattr(encoder, "oracle", False)
        with times.stage("encode"), stage_bar(f"encode {encoder.name}", quiet=quiet, unit="img") as bar:
            if oracle:  # told the categories of the gallery: no pixel is read
                embeddings = oracle_embeddings(encoder, images.gallery_sources(), _gallery_categories(bench))
            else:
                embeddings = encode_images(encoder, images.gallery_sources() if kind.text else images.sources(),
                                           batch_size=batch_size, workers=workers, cache_dir=cache_dir,
                                           use_cache=use_cache, skip_invalid=skip_invalid, progress=bar,
                                           processes=processes)
            if not processes.is_main:
                return None
        with times.stage("search"):  # cosine = inner product of unit vectors
            embeddings = embeddings.normalised()
        tasks, texts_encoded = _tasks(encoder, kind, bench, images, embeddings, times)
        noise = None if bench.noise is None else Split.of(images.noise, bench.noise, embeddings)
        with stage_bar("search + score", quiet=quiet, unit="step") as bar:
            scored = score_subsets(embeddings.matrix, tasks, noise, modes=options.modes, index=index, progress=bar,
                                   timings=times, judge=not bench.unlabelled)
    if bench.unlabelled:
        plan = planned[options.modes.headline]
        keep = plan.stored is not None or output_dir is not None  # a sealed run's rankings are its whole result
        rankings = None if not keep else {
            name: predictions.rankings(embeddings.matrix, tasks[name], noise, s) for name, s in scored.items()}
        run = _sealed_run(encoder, fingerprint, bench, images, embeddings, scored, processes, settings, times, started,
                          texts_encoded, rankings, plan, output_dir)
        if scored_part is None:
            return run
        for result in scored_part.modes.values():  # one line: what was scored, what only ranked and where it lies
            result.notes.append(f"scored the public releases {', '.join(public_releases(bench))}; ranked only the "
                                f"sealed {', '.join(bench.provenance['sealed']['releases'])} (no score"
                                + (f"; its rankings: {output_dir}" if output_dir is not None else "") + ")")
        return scored_part
    provenance = _provenance(encoder, fingerprint, bench, images, embeddings, scored, processes, settings,
                             wall_time_s=round(time.perf_counter() - started, 3), texts_encoded=texts_encoded)
    provenance["intervals"] = stats.settings()
    provenance["timings_s"] = times.rounded()  # per stage; their sum leaves out option checks and bookkeeping
    results = {}
    for m, plan in planned.items():
        rankings = None if not save_predictions else {
            name: predictions.rankings(embeddings.matrix, tasks[name], noise, s, m) for name, s in scored.items()}
        results[m] = _result({name: s.judgements[m] for name, s in scored.items()}, scored,
                             {**provenance, **plan.settings.provenance()}, plan, rankings)
        if plan.stored is not None:
            results[m].write_json(plan.stored)
    return _finish(results, output_dir)


SEALED_PART = "sealed"  # the --output subfolder of a sealed release's rankings, beside its public releases' result


def public_releases(bench: Benchmark) -> list[str]:
    """The releases of a sealed folder whose labels are public (``[]``: every one is sealed, or none is)."""
    sealed = bench.provenance.get("sealed")
    return [] if not sealed else sorted(set(bench.provenance["releases"]) - set(sealed["releases"]))


def _public_part(bench: Benchmark, encoder, asked: dict) -> EvaluationResult | None:
    """While a release is sealed, the folder's public releases evaluated as any public data (``public_part_of``: their
    rows alone), the same model and settings; ``None`` when nothing is public, or on a process other than the main."""
    if not bench.unlabelled or not public_releases(bench):
        return None
    sealed = bench.provenance["sealed"]["releases"]
    return evaluate(**{**asked, "model": encoder, "data": public_part_of(asked["data"], sealed)})


def _tasks(encoder, kind: QueryKind, bench: Benchmark, images: BenchmarkImages, embeddings: Embeddings,
           times: StageTimes) -> tuple[dict, int]:
    """Per subset what to search with and in (``SubsetTask``): its queries as image rows, or as their words encoded
    by the text tower (an oracle is told their categories); and how many texts were encoded."""
    tasks, texts_encoded = {}, 0
    for name, splits in bench.subsets.items():
        source = images.subsets[name].query
        if getattr(encoder, "oracle", False):
            vectors = encoder.encode_queries(list(splits["query"]["category"]))
            split = Split.of_texts(source, splits["query"], embeddings, vectors)
        elif kind.text:
            with times.stage("encode"):
                vectors = encode_texts(encoder, list(splits["query"]["query_text"]), embeddings.matrix.shape[1])
            texts_encoded += len(vectors)
            split = Split.of_texts(source, splits["query"], embeddings, vectors)
        else:
            split = Split.of(source, splits["query"], embeddings)
        if len(split.rows) == 0:
            raise EvaluationError(f"{name}: no query left to evaluate: every query image was skipped")
        tasks[name] = SubsetTask(split, Split.of(images.subsets[name].gallery, splits["gallery"], embeddings))
    return tasks, texts_encoded


def model_cutoff(encoder) -> Cutoff:
    """``--cutoff model``: the model's declared training cutoff, parsed once."""
    if encoder.training_cutoff is None:
        raise EvaluationError(f"model {encoder.name} declares no training cutoff (a registry entry's training_cutoff, "
                              "or training_cutoff: in its model card's YAML); give --cutoff a date instead")
    return Cutoff.of(encoder.training_cutoff)


def _result(judged: dict, scored: dict, provenance: dict, plan: "_Planned", rankings) -> EvaluationResult:
    """One mode's result: its judgements of every subset, overall and per release, with their intervals."""
    judgement = combine(judged)
    subsets = {name: {**j.scores, "self_matches_removed": scored[name].self_matches_removed,
                      "gallery_size": j.gallery_size} for name, j in judged.items()}
    outcomes = judgement.outcomes()
    provenance = {**provenance, "saved_predictions": sorted(rankings or ())}  # the subsets whose rankings lie beside the JSON
    return EvaluationResult(subsets, judgement.overall, provenance, outcomes, stats.intervals(outcomes),
                            judgement.per_release, judgement.release_intervals, stored=plan.stored, notes=plan.notes,
                            rankings=rankings)


def _stored(planned: dict, need_predictions) -> dict | None:
    """Every mode's identical stored result (with its saved rankings), or ``None`` when one of them is missing: the
    run then judges all of them again, since the encode and search it needs are the same."""
    found = {}
    for m, plan in planned.items():
        stored = None if plan.stored is None else store.find_identical(plan.stored, plan.identity,
                                                                      need_predictions=need_predictions)
        try:  # the stored rankings are read and checked: a damaged one is never reused, nor copied to --output
            saved = None if stored is None else ResultFolder.of(plan.stored).saved_rankings(stored)
        except ValueError as err:
            plan.notes.append(f"the stored {m} result's saved rankings cannot be used ({err}): evaluated again")
            stored = None
        if stored is None:
            return None
        found[m] = EvaluationResult.from_dict(stored, stored=plan.stored, reused=True, notes=plan.notes,
                                              rankings=saved or None)
    return found


def _finish(results: dict, output_dir) -> EvaluationResult:
    """The headline mode's result, every mode's in ``.modes``, written to ``output_dir`` when asked."""
    headline = next(iter(results.values()))
    for result in results.values():
        result.modes = results
    if output_dir is not None:
        headline.save(output_dir)
    return headline


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

    @property
    def settings(self) -> store.Settings:
        return self.identity.settings


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


def _fingerprint(encoder, kind: QueryKind) -> str | None:
    """What identifies the model of a run: its fingerprint, and for text queries its text tower's too."""
    if not kind.text or not encoder.text_fingerprint or encoder.fingerprint is None:
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
    if encoder.provenance.get("loaded_from"):
        notes.append(f"{encoder.provenance['loaded_from']} holds the registered model {encoder.name} (the same weights "
                     f"fingerprint): evaluated, stored and ranked as {encoder.name}")
    elif encoder.provenance.get("registered_as"):
        notes.append(f"{encoder.name} holds the registered model {encoder.provenance['registered_as']} (the same weights "
                     f"fingerprint): recorded as {encoder.provenance['model']} at {encoder.provenance['revision']}, "
                     f"{encoder.provenance['registered_as']} kept as its alias")
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

    stats, trained = embeddings.stats, encoder.training_datasets
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
                  "training_datasets": None if trained is None else {k: list(v) for k, v in trained.items()},
                  "preprocessing": encoder.preprocessing, "embedding_dim": int(embeddings.matrix.shape[1]),
                  **({"text_tower": encoder.text_tower} if settings.queries != "image" else {})},
        **settings.provenance(),
        # in-distribution or zero-shot: the model's declared training data against the data's sources
        **ZeroShot.judge(trained, bench.provenance.get("sources")).to_json(),
        "device": getattr(encoder, "device", "cpu"),
        "processes": processes.world,
        "search": ("exact (faiss knn, inner product of unit vectors = cosine)" if settings.index == "flat"
                   else "approximate (faiss HNSW32, cosine)"),
        "counts": counts,
        "wall_time_s": wall_time_s,
        "evaluated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
