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


def _shown(row: dict) -> dict:
    """A row's values as the table prints them: unknown facts "unknown", facts that do not apply "-"."""
    unknown = ("revision", "params", "released", "training_cutoff")
    out = {k: ("unknown" if k in unknown else "-") if v is None else str(v) for k, v in row.items() if k != "default"}
    out["name"] = row["name"] + (" (default)" if row["default"] else "")
    if row["params"] is not None:
        out["params"] = f"{row['params'] / 1e6:.2f}M"
    if row["input"] is not None:
        out["input"] = f"{row['input']}px"
    out["available"] = "yes" if row["available"] else "no"
    return out


def run_models(args) -> int:
    from lookbench.encoders.registry import describe_models, find

    rows = describe_models()
    if args.name:
        wanted = find(args.name).name  # an unknown name: one line naming the close ones
        rows = [r for r in rows if r["name"] == wanted]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    shown = [_shown(r) for r in rows]
    if args.name:
        print("\n".join(f"{k}: {v}" for k, v in shown[0].items()))
        return 0
    cells = [{k: v[:12] if k == "revision" and r["hub_id"] else v for k, v in c.items() if k in _COLUMNS}
             for r, c in zip(rows, shown)]
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
