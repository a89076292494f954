"""``lookbench models``: the registry, with what each model needs before it runs here."""
from __future__ import annotations

import json

FORMATS = ("table", "json")
# The table's columns; --format json gives every field, description and notes included.
_COLUMNS = ("name", "published_name", "revision", "dim", "input", "params", "license", "released", "training_cutoff",
            "available", "needs")


def register(sub) -> None:
    models = sub.add_parser("models", help="list the registered image encoders and whether each can run here")
    models.add_argument("name", nargs="?", help="show one entry in full (a registered or published name)")
    models.add_argument("--format", choices=FORMATS, default="table")
    models.set_defaults(run=run_models)


def run_models(args) -> int:
    from lookbench.registry import describe_models, find

    rows = describe_models()
    if args.name:
        wanted = find(args.name).name  # an unknown name: one line naming the close ones
        rows = [r for r in rows if r["name"].split(" ")[0] == wanted]
    if args.format == "json":
        print(json.dumps([{**r, "name": r["name"].split(" ")[0], "default": r["name"].endswith("(default)")} for r in rows],
                         indent=2))
        return 0
    if args.name:
        print("\n".join(f"{k}: {v}" for k, v in rows[0].items()))
        return 0
    cells = [{k: str(r[k])[:12] if k == "revision" and r["hub_id"] != "-" else str(r[k]) for k in _COLUMNS} for r in rows]
    widths = {k: max(len(k), *(len(c[k]) for c in cells)) for k in _COLUMNS}
    print("  ".join(k.ljust(widths[k]) for k in _COLUMNS))
    for c in cells:
        print("  ".join(c[k].ljust(widths[k]) for k in _COLUMNS))
    print("training_cutoff: the date the model's training data ends (`evaluate --cutoff model` scores only the queries "
          "after it). published_name: the model's row in the published leaderboard (`lookbench reproduce`). "
          "`lookbench models NAME` shows an entry's Hub id, preprocessing and notes. Also accepted by --model: a local "
          "transformers model folder, a Hub id (owner/name[@revision]), or in Python any object with "
          "encode(list_of_PIL_images) and name.")
    return 0
