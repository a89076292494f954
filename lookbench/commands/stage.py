"""``lookbench stage``: the six Hub repos as a local mirror (docs/publishing.md)."""
from __future__ import annotations

from pathlib import Path

from lookbench import terminal
from lookbench.upload_scripts.manifest import PARTS


def register(sub) -> None:
    stage = sub.add_parser("stage", help="stage the dataset, metric, model, demo and leaderboard repos into a local Hub mirror")
    stage.add_argument("--out", type=Path, required=True, help="mirror folder (HUB); HUB/lookbench is the dataset repo")
    stage.add_argument("--data", type=Path, help="a folder from `lookbench build` (default: the embedded LookBench-Mini)")
    stage.add_argument("--namespace", default="lookbench", help="Hub user or organisation of the repos (default: lookbench)")
    stage.add_argument("--photos", type=Path, help="the folder of Fashion-MNIST's IDX files the demo's real-photo gallery is "
                                                  "built from (default: the Debian package dataset-fashion-mnist's)")
    stage.add_argument("--labels", type=Path, metavar="DIR", help="a sealed --data's labels folder (from `lookbench seal`): "
                                                                  "staged as the private repo <namespace>/lookbench-labels")
    stage.add_argument("--only", metavar="PARTS", help="stage only these repos, keeping the others of an earlier staging "
                                                       f"in --out; a comma list of: {', '.join(PARTS)}")
    stage.add_argument("--review", type=Path, metavar="RAW", help="an annotated raw release: its review app staged as the "
                                                                  "private Space <namespace>/lookbench-review (Hub login)")
    stage.set_defaults(run=run_stage)


def run_stage(args) -> int:
    from lookbench.progress import quiet_libraries
    from lookbench.upload_scripts.stage import stage

    with quiet_libraries(False):
        staging = stage(args.out, data=args.data, namespace=args.namespace, photos=args.photos, labels=args.labels,
                        only=args.only, review=args.review)
    from lookbench.upload_scripts.manifest import files_of

    terminal.say(f"Staged {args.out}:")
    for repo in staging.repos:
        size = sum(f.stat().st_size for f in files_of(args.out, repo)) / 1e6  # what push uploads
        private = " private" if repo.private else ""
        terminal.say(f"  {repo.repo_type:<8} {repo.repo_id:<32} {args.out / repo.folder}  ({size:.1f} MB){private}")
        if repo.releases:
            terminal.say(f"  {'':<8} releases {', '.join(repo.releases)} (data revision {repo.data_revision}); "
                  f"push tags it {repo.release_tag}")
    terminal.say(f"Next: lookbench push --hub {args.out} --dry-run")
    return 0
