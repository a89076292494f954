"""``lookbench annotate``: a crawl folder in, a raw release folder of proposed labels out (lookbench/annotate)."""
from __future__ import annotations

from pathlib import Path

from lookbench import terminal
from lookbench.progress import quiet_libraries


def register(sub) -> None:
    annotate = sub.add_parser("annotate", help="propose every item's category and attributes for review (a raw release "
                                               "folder whose rows carry proposals, not labels)")
    annotate.add_argument("--input", type=Path, required=True, metavar="CRAWL",
                          help="crawl folder: images + items.jsonl (image, item_id, timestamp, subset, split, ...)")
    annotate.add_argument("--taxonomy", type=Path, required=True, help="the taxonomy file to propose from")
    annotate.add_argument("--proposer", required=True, action="append",
                          help="zero-shot:MODEL (a registered model with a text tower, e.g. gr-lite-mini-text), "
                               "vlm:HUB_ID (a transformers image-text-to-text model) or metadata (the item's own words); "
                               "give it several times to layer proposers, the more precise first: each field takes the "
                               "first proposer's answer, the next ones fill in where it gave none")
    annotate.add_argument("--out", type=Path, required=True, metavar="RAW",
                          help="raw release folder to write; a killed run resumes when run again with the same arguments")
    annotate.add_argument("--batch-size", type=int, default=16, help="items per batch (and per resumable step)")
    annotate.add_argument("--device", help="torch device of a model proposer (default: cuda if available, else cpu)")
    group = annotate.add_mutually_exclusive_group()
    group.add_argument("--quiet", action="store_true", help="no progress bar")
    group.add_argument("--verbose", action="store_true", help="also show the libraries' own progress bars and logging")
    annotate.set_defaults(run=run_annotate)


def run_annotate(args) -> int:
    from lookbench.annotate.run import annotate
    from lookbench.dataset_builder.taxonomy import load

    taxonomy = load(args.taxonomy)
    with quiet_libraries(args.verbose):
        proposer = make_proposer(args.proposer, taxonomy, args.device)
        summary = annotate(args.input, taxonomy, proposer, args.out, batch_size=args.batch_size, progress=not args.quiet)
    terminal.say("\n".join(summary.lines()))
    return 0


def make_proposer(specs: list[str], taxonomy, device: str | None = None):
    """The proposer the ``--proposer`` options name, layered in their order when there are several."""
    if len(specs) == 1:
        return _one_proposer(specs[0], taxonomy, device)
    from lookbench.annotate.layered import Layered

    return Layered(taxonomy, [_one_proposer(spec, taxonomy, device) for spec in specs])


def _one_proposer(spec: str, taxonomy, device: str | None = None):
    """The proposer one ``--proposer`` names: ``zero-shot:MODEL``, ``vlm:HUB_ID`` or ``metadata``."""
    kind, _, argument = spec.partition(":")
    from lookbench.annotate.proposers import Metadata, ZeroShot

    if kind == "metadata" and not argument:
        return Metadata(taxonomy)
    if kind == "zero-shot" and argument:
        return ZeroShot(taxonomy, argument, device)
    if kind == "vlm" and argument:
        from lookbench.annotate.vlm import Vlm

        return Vlm(taxonomy, argument, device)
    raise ValueError(f"--proposer {spec!r}: expected zero-shot:MODEL (a model with a text tower), vlm:HUB_ID "
                     "(a transformers image-text-to-text model) or metadata")
