"""``lookbench reproduce``: the published leaderboard's open models, run here beside their published rows."""
from __future__ import annotations

from pathlib import Path

from lookbench.settings import DEFAULT_PRECISION, DEFAULT_REFERENCE, METRICS, PRECISIONS


def register(sub) -> None:
    rp = sub.add_parser("reproduce", help="run the published leaderboard's registered models in leaderboard mode and "
                                          "print each local score beside the published one")
    rp.add_argument("--data", help="the data to run on (default: the published srpone/look-bench snapshot); "
                                   "any --data of `lookbench evaluate`")
    rp.add_argument("--models", nargs="+", help="registered or published names (default: every registered published model; "
                                                "see `lookbench models`)")
    rp.add_argument("--reference", default=DEFAULT_REFERENCE, help="the shipped published leaderboard to compare with")
    rp.add_argument("--metric", choices=list(METRICS), default="fine")
    rp.add_argument("--k", type=int, default=1)
    rp.add_argument("--no-distractors", dest="distractors", action="store_false",
                    help="leave the noise gallery out (the published figures include it)")
    rp.add_argument("--trust-remote-code", action="store_true", help="let models that need it run their Hub code")
    rp.add_argument("--batch-size", type=int)
    rp.add_argument("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION)
    rp.add_argument("--device")
    rp.add_argument("--results", type=Path, help="the results store the runs are saved in (default: $HF_HOME/lookbench/results)")
    rp.add_argument("--quiet", action="store_true", help="no progress bars")
    rp.set_defaults(run=run_reproduce)


def run_reproduce(args) -> int:
    from lookbench.leaderboard.reproduce import reproduce
    from lookbench import paths

    out = reproduce(args.data, args.models, reference=args.reference, metric=args.metric, k=args.k,
                    distractors=args.distractors, trust_remote_code=args.trust_remote_code,
                    results_dir=args.results or paths.results_dir(), batch_size=args.batch_size, precision=args.precision,
                    device=args.device, quiet=args.quiet)
    print(out.render())
    return 0 if out.reproduced else 2  # nothing ran: a script must not take it for a reproduction
