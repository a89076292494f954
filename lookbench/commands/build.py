"""``lookbench build`` and ``lookbench subsets``."""
from __future__ import annotations

from pathlib import Path

from lookbench import terminal
from lookbench.dataset_builder.catalog import SOURCES
from lookbench.progress import quiet_libraries


APPEND_INPUT = Path("<--input>")  # ``--append`` given alone: the raw release is --input


def _output_flags(parser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quiet", action="store_true", help="no progress bars")
    group.add_argument("--verbose", action="store_true", help="also show the libraries' own progress bars and logging")


def register(sub) -> None:
    build = sub.add_parser("build", help="build a LookBench release into a script-less Hub dataset folder, or append one")
    build.add_argument("--source", choices=list(SOURCES), help="; ".join(f"{name}: {s.help}" for name, s in SOURCES.items()))
    build.add_argument("--append", type=Path, nargs="?", const=APPEND_INPUT, metavar="RAW",
                       help="add this raw release folder (alone: --source raw --input RAW) to the built folder --out as new "
                            "shards (it must be newer than everything there); the existing shards stay byte-identical")
    build.add_argument("--input", type=Path, help="the release folder to read (raw, upstream; fashion-mnist: the folder of the "
                                                  "four IDX .gz files, default the Debian package dataset-fashion-mnist's)")
    build.add_argument("--out", type=Path, required=True, help="dataset folder to write (load it with datasets.load_dataset)")
    build.add_argument("--release", help="snapshot name v<YYYYMMDD> for rows that carry none (default: v<date of the newest timestamp>)")
    build.add_argument("--notes", help="what changed with this release, for the card's release history")
    build.add_argument("--scale", type=float, default=1.0, help="LookBench-Mini size multiplier (about 80 = the published ≈60k corpus per subset)")
    build.add_argument("--noise-scale", type=float, default=1.0,
                       help="LookBench-Mini: multiply the noise gallery on top of --scale (about 13 = the published noise proportion)")
    build.add_argument("--seed", type=int, default=0, help="LookBench-Mini seed")
    build.add_argument("--subsets", nargs="+", help="only these subsets (paper names or aliases)")
    build.add_argument("--taxonomy", type=Path, help="taxonomy file to check every row against (default: the release's own taxonomy.json)")
    build.add_argument("--skip-invalid", action="store_true", help="leave invalid rows out and report them instead of stopping")
    build.add_argument("--train-out", type=Path, help="also write the training set (train split) to this dataset folder")
    build.add_argument("--seal", action="store_true", help="withhold every label of the build (with --append: of the "
                                                           "releases it adds): --out holds the public part, the labels "
                                                           "go to --labels-out (docs/publishing.md)")
    from lookbench.commands.seal import add_seal_flags

    add_seal_flags(build)
    _output_flags(build)
    build.set_defaults(run=run_build)

    subsets = sub.add_parser("subsets", help="list the LookBench subsets, with sizes of a built dataset folder")
    subsets.add_argument("--data", type=Path, help="a folder written by `lookbench build` (default: the embedded LookBench-Mini if built)")
    _output_flags(subsets)
    subsets.set_defaults(run=run_subsets)


def run_build(args) -> int:
    from lookbench.dataset_builder import SourceError, append_release, build_release

    if not args.seal and (args.until or args.labels_out):
        raise SourceError("--until and --labels-out describe a sealed build: give them with --seal")
    if args.seal:
        from lookbench.dataset_builder.sealed import check_until

        check_until(args.until)
    if args.append is APPEND_INPUT:
        if args.source != "raw" or args.input is None:
            raise SourceError("--append alone appends the raw release --input: give --source raw --input RAW --append")
        args.append, args.input, args.source = args.input, None, None
    if args.append is None and args.source is None:
        raise SourceError("give --source (a new build) or --append RAW (a newer snapshot added to --out)")
    if args.append is not None:
        given = [flag for flag, value in (("--source", args.source), ("--input", args.input),
                                          ("--train-out", args.train_out)) if value is not None]
        if given:
            raise SourceError(f"--append RAW is the raw release to add; it takes no {' or '.join(given)}")
    with quiet_libraries(args.verbose):
        if args.append is not None:
            summary = append_release(args.append, args.out, release=args.release, skip_invalid=args.skip_invalid,
                                     taxonomy=args.taxonomy, subsets=args.subsets, notes=args.notes, progress=not args.quiet)
        else:
            summary = build_release(
                args.source, args.out, input_path=args.input, release=args.release, scale=args.scale,
                noise_scale=args.noise_scale, seed=args.seed, skip_invalid=args.skip_invalid, taxonomy=args.taxonomy,
                subsets=args.subsets, train_out=args.train_out, notes=args.notes, progress=not args.quiet,
            )
        if args.seal:
            from lookbench.commands.seal import sealed_lines
            from lookbench.dataset_builder.seal import seal

            labels = args.labels_out or args.out.with_name(f"{args.out.name}-labels")
            # a new build seals every release; an append only the releases it added (earlier ones stay as they are)
            sealed = seal(args.out, summary.appended if args.append is not None else None, args.until, labels)
    terminal.say("\n".join(summary.lines()))
    if args.seal:
        terminal.say("\n".join(sealed_lines(sealed, args.out, labels)))
    return 0


def split_sizes(folder: Path) -> dict[str, dict[str, int]]:
    """Rows per config and split of a built folder, read from Parquet footers (no image is decoded)."""
    import pyarrow.parquet as pq

    sizes: dict[str, dict[str, int]] = {}
    for shard in sorted(folder.glob("*/*-*-of-*.parquet")):
        split = shard.name.split("-", 1)[0]
        sizes.setdefault(shard.parent.name, {}).setdefault(split, 0)
        sizes[shard.parent.name][split] += pq.ParquetFile(shard).metadata.num_rows
    return sizes


def run_subsets(args) -> int:
    from lookbench.dataset_builder import default_mini_dir
    from lookbench.schema import SUBSETS

    folder = args.data or default_mini_dir()
    if args.data and not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a dataset folder built by `lookbench build`")
    with quiet_libraries(args.verbose):
        sizes = split_sizes(folder) if folder.is_dir() else {}
    rows = [[s.name, s.alias, f"{s.source}, {'multi' if s.multi_item else 'single'}-item, {s.difficulty}",
             sizes.get(s.name, {}).get("query"), sizes.get(s.name, {}).get("gallery"),
             f"{s.published_queries}/{s.published_gallery}"] for s in SUBSETS.values()]
    terminal.say("\n".join(terminal.table([*(terminal.Column(c, "left") for c in ("subset", "alias", "kind")), "query", "gallery",
                                    "published query/gallery"], rows,
                                   footnotes=[f"data: {folder if sizes else '(not built; run lookbench build --source mini --out DIR)'}"],
                                   drop_order=["alias", "kind"])))
    return 0
