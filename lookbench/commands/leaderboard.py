"""``lookbench leaderboard``: the published table and the results store (or a folder of submissions), ranked per
comparable group, each row saying what was verified.

Imports no torch (docs/architecture.md §5): it reads JSON files and the package's published figures; a submission
is re-scored from its rankings (``lookbench verify``'s check), which reads its Parquet files and the data.
"""
from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path


def register(sub) -> None:
    from lookbench.leaderboard.load import references
    from lookbench.leaderboard.render import FORMATS, TOP
    from lookbench.hub import DATASET_ID
    from lookbench.settings import DEFAULT_REFERENCE, METRICS

    lb = sub.add_parser("leaderboard", help="rank stored results beside the published leaderboard, per comparable group")
    lb.add_argument("--results", type=Path,
                    help="the results store, or a folder of submissions as `lookbench submit --dry-run --out` writes them "
                         "(re-scored from their rankings), to read (default: $HF_HOME/lookbench/results)")
    lb.add_argument("--reference", default=DEFAULT_REFERENCE, choices=[*references(), "none"],
                    help="the published leaderboard to show (none: only the store)")
    lb.add_argument("--metric", choices=list(METRICS), default="fine", help="fine or coarse Recall@K, or nDCG@K")
    lb.add_argument("--k", type=int, default=1, help="the K of the metric (published: 1, 5, 10, 20)")
    lb.add_argument("--subset", help="rank by one subset (paper name or alias) instead of the query-weighted overall")
    lb.add_argument("--by-release", action="store_true",
                    help="also each model's score on every release's queries (gallery whole) and its declared training cutoff")
    lb.add_argument("--trusted", action="store_true",
                    help="show only rows reproduced or scored sealed (more than arithmetic on public labels; ranks "
                         "stay those of the full table)")
    lb.add_argument("--zero-shot", action="store_true",
                    help="show only zero-shot rows: the model's declared training data shares no source with the data "
                         "(ranks stay those of the full table); with --trusted, the trusted zero-shot rows")
    lb.add_argument("--card", type=Path, metavar="README.md",
                    help="the leaderboard Space card whose reproduction_keys sign the reproduction records that count "
                         "(default: the card this package ships)")
    lb.add_argument("--hub", nargs="?", const=DATASET_ID, metavar="DATASET",
                    help="also the rows of the Hub's own leaderboard of the dataset (default: "
                         f"{DATASET_ID}), each in its comparable group as not checked: a Hub community result")
    lb.add_argument("--all", action="store_true",
                    help=f"every row of each table (default: its top {TOP}, and your own runs beside the published rows)")
    lb.add_argument("--format", choices=FORMATS, default="table")
    lb.add_argument("--plot", type=Path, metavar="FILE.png",
                    help="also draw the ranking as a bar chart (with --by-release: score against release date, one line per "
                         "model, its training cutoff marked), in the format of the file's suffix (.png added when none)")
    lb.set_defaults(run=run)


def run(args) -> int:
    from lookbench import paths, terminal
    from lookbench.hub import check_hub_id
    from lookbench.leaderboard.figures import plot_path
    from lookbench.leaderboard.hub_rows import hub_entries
    from lookbench.leaderboard.load import load_store
    from lookbench.leaderboard.ranking import leaderboard
    from lookbench.leaderboard.render import GROUPS_NOTE, TOP, ZERO_SHOT_NOTE
    from lookbench.progress import quiet_libraries
    from lookbench.results.trust import VERIFIED_NOTE
    from lookbench.submissions.signing import card_keys

    plot = plot_path(args.plot) if args.plot else None  # a refusal before the store is read
    card = args.card or resources.files("lookbench.space.board") / "README.md"
    if args.card is not None and not args.card.is_file():
        raise ValueError(f"--card {args.card} is not a file (the leaderboard Space's README.md)")
    hub = None if args.hub is None else check_hub_id(args.hub, "--hub")
    with quiet_libraries():  # re-scoring a submission loads its data: datasets' bars are not this command's output
        entries, skipped = load_store(args.results or paths.results_dir(), keys=card_keys(card))
        if hub is not None:
            rows, unplaced = hub_entries(hub, entries)
            entries, skipped = [*entries, *rows], [*skipped, *unplaced]
        board = leaderboard(reference=args.reference, metric=args.metric, k=args.k, subset=args.subset,
                            by_release=args.by_release, loaded=(entries, skipped))
    if args.trusted:
        board = board.trusted()
    if args.zero_shot:
        board = board.zero_shot()
    for line in board.skipped:  # stderr, in every format: stdout stays the table (csv/json parse cleanly)
        print("\n".join(terminal.paragraph(f"lookbench leaderboard: skipped {line}", indent="  ")), file=sys.stderr)
    print(board.render(args.format, top=None if args.all else TOP), flush=True)
    if args.format == "markdown" and board.sections:  # a file's text: Markdown wraps it
        print("\n" + GROUPS_NOTE + "\n\n" + ZERO_SHOT_NOTE + "\n\n" + VERIFIED_NOTE)
    elif args.format == "table" and board.sections:
        notes = [*terminal.paragraph(GROUPS_NOTE), ""]
        notes += [line for given in VERIFIED_NOTE.split("\n") for line in terminal.paragraph(given, indent="  ")]
        print("\n" + "\n".join(notes))
    if plot:
        terminal.say(f"plot: {board.plot(plot)}", file=sys.stderr)
    return 0
