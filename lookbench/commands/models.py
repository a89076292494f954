"""``lookbench models``: the registry, with what each model needs before it runs here."""
from __future__ import annotations

import json

FORMATS = ("table", "json")
# The table's columns (header, field): one row per model; `lookbench models NAME` shows every field, --format json
# gives them all. When the terminal is too narrow, licence, params, dim and cutoff are left out in that order.
_COLUMNS = (("name", "name"), ("dim", "dim"), ("params", "params"), ("licence", "license"), ("cutoff", "training_cutoff"),
            ("ready", "available"))
_DROP_ORDER = ("licence", "params", "dim", "cutoff")


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
    from lookbench import terminal

    shown = [_shown(r) for r in rows]
    if args.name:
        print("\n".join(terminal.table([terminal.Column("field", "left"), terminal.Column("value", "left")],
                                        list(shown[0].items()))))
        return 0
    print("\n".join(terminal.table(
        [terminal.Column(header, "right" if header in ("dim", "params") else "left") for header, _ in _COLUMNS], [[c[key] for _, key in _COLUMNS] for c in shown],
        footnotes=["cutoff: the date the model's training data ends (`evaluate --cutoff model` scores only the queries "
                   "after it). ready: whether it can run here; `lookbench models NAME` shows what it needs, its Hub id "
                   "and revision, published name, preprocessing and notes (--format json: every entry in full). Also "
                   "accepted by --model: a local transformers model folder, a Hub id (owner/name[@revision]), or in "
                   "Python any object with encode(list_of_PIL_images) and name."],
        drop_order=_DROP_ORDER)))
    return 0
