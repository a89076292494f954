"""``lookbench seal`` and ``lookbench unseal``: withhold the labels of a built folder's releases, and publish them
again (docs/publishing.md)."""
from __future__ import annotations

from pathlib import Path

from lookbench import terminal


def add_seal_flags(parser) -> None:
    """``--until`` and ``--labels-out``, shared by ``seal`` and ``build --seal``."""
    parser.add_argument("--until", metavar="DATE", help="the date (YYYY-MM-DD) the card says the labels stay sealed until")
    parser.add_argument("--labels-out", type=Path, metavar="DIR",
                        help="the folder the withheld labels are written to (default: <DIR>-labels beside it)")


def register(sub) -> None:
    sp = sub.add_parser("seal", help="withhold the labels of a built folder's releases: the folder keeps the public part, "
                                     "the labels go to a dataset folder of their own (a private Hub repo)")
    sp.add_argument("folder", type=Path, metavar="DIR", help="a folder written by `lookbench build`")
    sp.add_argument("--release", nargs="+", metavar="NAME", help="the releases to seal (default: every release in DIR)")
    add_seal_flags(sp)
    sp.set_defaults(run=run_seal)

    up = sub.add_parser("unseal", help="put a sealed folder's labels back (then `lookbench stage` + `push` publish them "
                                       "as a new tagged revision)")
    up.add_argument("folder", type=Path, metavar="DIR", help="a sealed folder")
    up.add_argument("--labels", type=Path, required=True, metavar="DIR", help="its labels folder (from `seal`)")
    up.set_defaults(run=run_unseal)


def sealed_lines(sealed, folder: Path, labels: Path) -> list[str]:
    return [f"sealed {', '.join(sealed.releases)} of {folder} ({sealed.shown})",
            f"labels: {labels} (publish it as the private repo {sealed.labels} with `lookbench stage --labels {labels}` "
            "and `lookbench push`)"]


def run_seal(args) -> int:
    from lookbench.dataset_builder.seal import seal
    from lookbench.progress import quiet_libraries

    labels = args.labels_out or args.folder.with_name(f"{args.folder.name}-labels")
    with quiet_libraries():
        sealed = seal(args.folder, args.release, args.until, labels)
    terminal.say("\n".join(sealed_lines(sealed, args.folder, labels)))
    return 0


def run_unseal(args) -> int:
    from lookbench.dataset_builder.seal import unseal
    from lookbench.progress import quiet_libraries

    with quiet_libraries():
        sealed = unseal(args.folder, args.labels)
    terminal.say(f"unsealed {', '.join(sealed.releases)} of {args.folder}: its labels are public again; `lookbench stage` and "
          "`lookbench push` publish them as a new tagged revision")
    return 0
