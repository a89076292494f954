"""``lookbench evaluate``."""
from __future__ import annotations

from pathlib import Path

from lookbench.settings import (DEFAULT_INDEX, DEFAULT_MODE, DEFAULT_PRECISION, DEFAULT_QUERIES, DEFAULT_TEXT_FORM, INDEXES,
                                MODES, PRECISIONS, QUERY_KINDS, TEXT_FORMS)


def register(sub) -> None:
    ev = sub.add_parser("evaluate", help="evaluate an image encoder (or a text tower: --queries text) on LookBench "
                                         "(default: the embedded LookBench-Mini)")
    ev.add_argument("--data", help="a folder from `lookbench build`, a Hub dataset id (owner/name[@revision]: a branch, tag "
                                   "or commit), or a srpone/look-bench snapshot "
                                   "(default: the embedded LookBench-Mini, built on first use)")
    ev.add_argument("--model", help="a registered name (see `lookbench models`), a local transformers model folder or a "
                                    "Hub id, optionally pinned: owner/name@revision, a branch, tag or commit (default: the registry's default model)")
    ev.add_argument("--trust-remote-code", action="store_true",
                    help="let a Hub model run the code in its repo (config.json auto_map); refused without it")
    ev.add_argument("--subsets", nargs="+", help="paper names or aliases (default: every test subset in --data)")
    ev.add_argument("--cutoff", help="contamination-aware: only queries time-stamped after this ISO date, e.g. 2025-06-01; "
                                     "a release name, e.g. v20250101: only the queries of later releases; "
                                     "'model': after the model's declared training cutoff (see `lookbench models`)")
    ev.add_argument("--no-distractors", dest="distractors", action="store_false", help="leave the shared noise gallery out")
    ev.add_argument("--queries", choices=QUERY_KINDS, default=DEFAULT_QUERIES,
                    help="image: search with each query's image; text: with its words (the data's text config), read by "
                         "the model's text tower (default model then: gr-lite-mini-text); same gallery and metric")
    ev.add_argument("--text-form", choices=TEXT_FORMS, default=None,
                    help=f"with --queries text: the short words ('striped red v-neck top') or the long sentence naming "
                         f"every attribute (default: {DEFAULT_TEXT_FORM})")
    ev.add_argument("--mode", choices=MODES, default=None,
                    help="judge the rankings in one mode only: strict (category + every query attribute, the paper's) "
                         "or leaderboard (category + main attribute, the published table's); default: both from one "
                         f"run, {DEFAULT_MODE} as the table's scores and results.json")
    ev.add_argument("--batch-size", type=int, help="images per forward pass (default: 32 on a CPU, 128 on an accelerator)")
    ev.add_argument("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION)
    ev.add_argument("--device", help="torch device (default: the accelerate process's device, else cuda if available, else cpu)")
    ev.add_argument("--index", choices=INDEXES, default=DEFAULT_INDEX, help="flat: exact search; hnsw: approximate (labelled)")
    ev.add_argument("--workers", type=int, help="decode/preprocess threads (default: the CPU cores of each process)")
    ev.add_argument("--cache-dir", type=Path, help="embedding cache folder (default: $HF_HOME/lookbench/embeddings)")
    ev.add_argument("--no-cache", dest="use_cache", action="store_false", help="neither read nor write the embedding cache")
    ev.add_argument("--skip-invalid", action="store_true", help="skip unreadable images and report them instead of stopping")
    ev.add_argument("--output", type=Path, help="also write results.json and PNG plots into this folder")
    ev.add_argument("--results", type=Path, help="the results store the result is saved in "
                                                 "(default: $HF_HOME/lookbench/results; read by `lookbench leaderboard`)")
    ev.add_argument("--no-save", dest="save", action="store_false", help="neither read nor write the results store")
    ev.add_argument("--overwrite", action="store_true",
                    help="evaluate again even if the store holds an identical finished evaluation, and replace it")
    ev.add_argument("--save-predictions", action="store_true",
                    help="also save each query's top-20 gallery rows as Parquet beside the result (see `lookbench explain`)")
    ev.add_argument("--details", action="store_true",
                    help="also print the scores per release, the attribute errors at top-1 and how each interval is drawn "
                         "(an identical run is answered from the results store)")
    ev.add_argument("--quiet", action="store_true", help="no progress bars")
    ev.add_argument("--verbose", action="store_true", help="also show the libraries' own progress bars and logging")
    ev.set_defaults(run=run_evaluate)


def run_evaluate(args) -> int:
    """Run the engine; failures reach the user as one line through ``lookbench.cli.main``."""
    from lookbench import paths, terminal
    from lookbench.engine import evaluate
    from lookbench.results.result import mode_file
    from lookbench.leaderboard.ranking import published_best

    if args.results and not args.save:
        raise ValueError("--results names a store to save in and --no-save says not to save: give one of them")
    if args.text_form is not None and args.queries != "text":
        raise ValueError("--text-form chooses the words of text queries: give it with --queries text")
    result = evaluate(
        args.model, data=args.data, subsets=args.subsets, cutoff=args.cutoff, distractors=args.distractors,
        mode=args.mode, batch_size=args.batch_size, precision=args.precision, device=args.device, index=args.index,
        cache_dir=args.cache_dir, use_cache=args.use_cache, skip_invalid=args.skip_invalid, workers=args.workers,
        quiet=args.quiet, verbose=args.verbose, output_dir=args.output,
        results_dir=(args.results or paths.results_dir()) if args.save else None, overwrite=args.overwrite,
        save_predictions=args.save_predictions, trust_remote_code=args.trust_remote_code, queries=args.queries,
        text_form=args.text_form or DEFAULT_TEXT_FORM,
    )
    if result is None:  # a non-main accelerate process: the main process prints and writes
        return 0
    board = result.modes.get("leaderboard") if hasattr(result, "plot") else None  # a sealed run has no score
    print(result.table(published=None if board is None else published_best(board.to_dict()), details=args.details))
    stored = [r.stored for r in result.modes.values() if r.stored is not None]
    zero_shot = result.meta.zero_shot
    trained_on = zero_shot.reason.removeprefix("trained on ")
    lines = [] if zero_shot.value is not False else [
        f"trained on this data's source ({trained_on}): in-distribution, not zero-shot"]
    if result.reused:
        lines.append(f"stored result{'s' if len(stored) > 1 else ''} of an identical evaluation: "
                     f"{', '.join(map(str, stored))} (not recomputed; --overwrite to evaluate again)")
    elif stored:
        lines.append(f"saved in the results store: {', '.join(map(str, stored))}")
    lines += [f"note: {note}" for note in result.notes]
    if args.output:
        others = [str(args.output / mode_file(m)) for m in list(result.modes)[1:]]
        plots = f"; plots: {args.output}" if hasattr(result, "plot") else ""
        lines.append(f"results: {', '.join([str(args.output / 'results.json'), *others])}{plots}")
    lines += further(result, args.details, args.output, stored[0] if stored else None)
    for line in lines:
        print("\n".join(terminal.paragraph(line)))
    return 0


def further(result, details: bool, output, stored) -> list[str]:
    """What else there is to see and how, a line each: the same command with --details (unless given), and
    `lookbench explain` of the result written (the --output folder, else the stored file named above)."""
    if not hasattr(result, "plot"):  # a sealed run: no score to explain
        return []
    lines = [] if details else [
        "more: --details adds the scores per release, the attribute errors and how each interval is drawn"]
    if output is None and stored is None:
        return lines
    target = str(output) if output is not None else f"RESULT (the {Path(stored).name} above)"
    lines.append(f"explain: lookbench explain {target} shows its attribute errors"
                 + ("; with --subset and --query a query's results, with --report the worst queries as HTML"
                    if result.meta.saved() else "; evaluate with --save-predictions for a query's results too"))
    return lines
