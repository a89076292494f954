"""``lookbench demo``: serve the Gradio Space locally (docs/architecture.md §5)."""
from __future__ import annotations

from pathlib import Path

from lookbench import terminal


def register(sub) -> None:
    demo = sub.add_parser("demo", help="serve the Gradio demo (search + leaderboard) on loopback")
    demo.add_argument("--port", type=int, help="port (default: gradio's, 7860 or the next free one)")
    demo.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: loopback only)")
    demo.add_argument("--data", help="a folder from `lookbench build` (default: the embedded LookBench-Mini)")
    demo.add_argument("--real-photos", nargs="?", const=True, default=None, metavar="IDX_DIR",
                      help="also offer the real-photo gallery: Fashion-MNIST's t10k release (`lookbench build --source "
                           "fashion-mnist`), from the Debian package dataset-fashion-mnist or a folder of its IDX files")
    demo.add_argument("--results", type=Path, metavar="PATH",
                      help="a results store, a folder of submissions, an `evaluate --output` folder or a result JSON: "
                           "the leaderboard tab ranks its runs beside the published table, and the \"Your results\" "
                           "tab browses each one saved with --save-predictions (default: lookbench evaluate's store, "
                           "$HF_HOME/lookbench/results)")
    demo.add_argument("--assets", type=Path, help="folder of the galleries' assets (default: $HF_HOME/lookbench/space)")
    demo.add_argument("--models", nargs="+", metavar="MODEL",
                      help="registered models to offer, two at a time side by side; each gets prepared assets "
                           "(default: gr-lite-mini efficientnet-lite0; `lookbench models` lists them)")
    demo.add_argument("--prepare", action="store_true", help="only build (or refresh stale) assets, then exit")
    demo.set_defaults(run=run_demo)


def run_demo(args) -> int:
    if args.prepare:
        from lookbench.space.assets import galleries, open_galleries

        served, _ = open_galleries(galleries(args.data, args.real_photos, args.assets), models(args.models))
        for assets in served:
            terminal.say(f"assets: {assets.folder} ({assets.name})")
        return 0
    from lookbench.space.waiting import WaitingRoom

    chosen = models(args.models)
    room = WaitingRoom(args.host, args.port).announce()  # the address at once, its page showing the progress
    from lookbench.space.app import serve
    from lookbench import paths

    serve(host=args.host, port=args.port, data=args.data, photos=args.real_photos,
          results=args.results or paths.results_dir(), assets_dir=args.assets, models=chosen, room=room)
    return 0


def models(names) -> tuple[str, ...]:
    """The models asked for by registered (or published) name, once each (an unknown name: the registry's one-line
    error); none asked for: the Space's two."""
    from lookbench.encoders.registry import find
    from lookbench.space.assets import DEFAULT_MODELS

    return tuple(dict.fromkeys(find(name).name for name in names)) if names else DEFAULT_MODELS
