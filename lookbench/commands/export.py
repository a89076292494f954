"""``lookbench export RESULT --format mteb|eval-results --out DIR`` (also ``export mteb RESULT``): a stored or
``--output`` result in another format — an mteb ``TaskResult`` JSON (the ``mteb`` extra; ``lookbench/mteb/export.py``
says how the scores map), or the Hub's ``.eval_results/lookbench.yaml`` (``lookbench/results/hub_results.py``:
one headline score per task of the benchmark's ``eval.yaml``). docs/architecture.md §5.
"""
from __future__ import annotations

from pathlib import Path

from lookbench import terminal

FORMATS = ("mteb", "eval-results")


def register(sub) -> None:
    ex = sub.add_parser("export", help="write a result in another format (mteb TaskResult JSON, the Hub's .eval_results)")
    ex.add_argument("given", nargs="+", metavar="[FORMAT] RESULT",
                    help="a result JSON (results store file, or an --output folder), after the format or with --format")
    ex.add_argument("--format", dest="fmt", choices=FORMATS, help="the format to write")
    ex.add_argument("--out", type=Path, required=True, metavar="DIR",
                    help="folder to write into (mteb: <task name>.json; eval-results: .eval_results/lookbench.yaml)")
    ex.add_argument("--dataset", metavar="OWNER/NAME", help="eval-results: the Hub Benchmark the scores go to (default: "
                                                            "the Hub dataset the result names, else lookbench/lookbench)")
    ex.add_argument("--source", metavar="URL", help="eval-results: the page the scores come from (default: LookBench's "
                                                    "leaderboard Space)")
    ex.add_argument("--benchmark", type=Path, metavar="EVAL_YAML",
                    help="eval-results: the benchmark's eval.yaml; every task written must be one of its tasks")
    ex.set_defaults(run=run)


def _format_and_result(args) -> tuple[str, Path]:
    """``export FORMAT RESULT`` or ``export RESULT --format FORMAT``, one format either way."""
    if len(args.given) == 2:
        fmt, result = args.given
        if fmt not in FORMATS or args.fmt not in (None, fmt):
            raise ValueError(f"export {terminal.terminal_safe(fmt)[:40]} …: the format is one of {', '.join(FORMATS)}"
                             + (f", and --format says {args.fmt}" if args.fmt not in (None, fmt) else ""))
        return fmt, Path(result)
    if len(args.given) != 1 or args.fmt is None:
        raise ValueError("export takes one RESULT and its format: `lookbench export RESULT --format "
                         f"{'|'.join(FORMATS)} --out DIR`")
    return args.fmt, Path(args.given[0])


def run(args) -> int:
    from lookbench.paths import result_file

    fmt, result = _format_and_result(args)
    if fmt == "eval-results":
        terminal.say(export_eval_results(result_file(result), args.out, args.dataset, args.source, args.benchmark))
        return 0
    try:
        from lookbench.mteb import export_result
    except ModuleNotFoundError as err:
        raise ValueError(str(err)) from err
    terminal.say(export_result(result_file(result), args.out))
    return 0


def export_eval_results(path: Path, out: Path, dataset: str | None = None, source: str | None = None,
                        benchmark: Path | None = None) -> str:
    """The result at ``path`` as ``out/.eval_results/lookbench.yaml``; what to tell the user. Its notes carry the trust
    its row has on LookBench's board: a stored result is ``not checked`` (its scores against its own outcomes); one
    whose scores fail that check is refused, as the board lists it apart, unranked."""
    from lookbench.hub import BOARD_SPACE, DATASET_ID, check_hub_id, looks_like_hub_id
    from lookbench.leaderboard.load import check
    from lookbench.results import hub_results
    from lookbench.results.provenance import Provenance
    from lookbench.results.store import read_json
    from lookbench.results.trust import FAILED

    data = read_json(path)
    try:
        provenance = Provenance.of(data)
        named = provenance.dataset.data
        provenance.measured()
    except ValueError as err:
        raise ValueError(f"{path} is not a LookBench result ({err})") from None
    if dataset is None:
        dataset = named.partition("@")[0] if isinstance(named, str) and looks_like_hub_id(named) else DATASET_ID
    dataset = check_hub_id(dataset, "--dataset")
    tasks = hub_results.benchmark_task_ids(benchmark) if benchmark is not None else None
    scores = hub_results.headline_scores(data, str(path))  # a sealed run's "no score" before its outcomes are read
    trust = check(data, path)
    if trust.startswith(FAILED):
        raise ValueError(f"{path}: {trust.removeprefix(FAILED)}; LookBench's board lists it apart, unranked, so nothing "
                         "is exported")
    found = hub_results.entries(data, dataset, source or f"https://huggingface.co/spaces/{BOARD_SPACE}", trust, str(path))
    written = hub_results.write(found, out, tasks)
    return f"wrote {written}: {len(scores)} score(s) on {dataset} ({', '.join(e.task_id for e in found)})"
