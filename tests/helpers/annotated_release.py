"""A small annotated raw release written by hand to annotate's row contract (docs/building-a-release.md): rows
without labels, each keeping its ``proposals`` and ``proposer``, the taxonomy at ``<RAW>/taxonomy.json``, and the
true labels beside it (``TRUTH``), so tests can review it as a person who knows the answer would."""
from __future__ import annotations

import json
from pathlib import Path

from PIL import Image, ImageDraw

from lookbench.dataset_builder.taxonomy import FILE_NAME, Taxonomy

from tests.helpers.raw_release import COLOURS, garment_png

TAXONOMY = Taxonomy.of("test-taxonomy", "1", {
    "tops": {"colour": ["red", "blue", "green", "black"], "sleeve": ["short", "long"], "cuff": ["plain", "ribbed"]},
    "skirts": {"colour": ["red", "blue", "green", "black"], "length": ["mini", "maxi"]},
}, main="colour")
NA = TAXONOMY.not_applicable
PROPOSER = {"name": "test-proposer", "revision": "r1"}


def truth_of(index: int) -> dict:
    """The true labels of item ``index``: a deterministic mix of categories, colours and "not applicable" cuffs."""
    colour = list(COLOURS)[index % 4]
    if index % 3 == 2:
        return {"category": "skirts", "attributes": {"colour": colour, "length": ["mini", "maxi"][index % 2]}}
    return {"category": "tops", "attributes": {"colour": colour, "sleeve": ["short", "long"][index % 2],
                                               "cuff": NA if index % 2 == 0 else "ribbed"}}


def proposal_of(index: int, truth: dict) -> dict:
    """A proposer right most of the time: it misses the colour of every fifth item and calls every cuff plain."""
    attributes = {}
    for name, value in truth["attributes"].items():
        if name == "colour" and index % 5 == 4:
            value = "black" if value != "black" else "red"
        if name == "cuff":
            value = "plain"
        attributes[name] = {"value": value, "confidence": 0.5 + (index % 5) / 10}
    return {"category": {"value": truth["category"], "confidence": 0.9}, "attributes": attributes}


def write_annotated(root: Path, n: int = 12, subset: str = "RealStudioFlat", street: bool = False, prefix: str = "item",
                    month: int = 6) -> dict[str, dict]:
    """An annotated raw release of ``n`` items of ``subset`` split over query and gallery (the query gets every third
    item), timestamped in ``month`` of 2025; returns the truth by item key ``<Config>/<split>/<item_id>``."""
    root.mkdir(parents=True, exist_ok=True)
    TAXONOMY.write(root / FILE_NAME)
    truth, rows = {}, {"query": [], "gallery": []}
    for index in range(n):
        split = "query" if index % 3 == 0 else "gallery"
        item_id = f"{prefix}-{index:03d}"
        labels = truth_of(index)
        colour = labels["attributes"]["colour"]
        row = {"item_id": item_id, "image": f"images/{item_id}.png", "timestamp": f"2025-{month:02d}-{1 + index % 27:02d}T00:00:00Z",
               "proposals": proposal_of(index, labels), "proposer": PROPOSER, "title": f"{colour} {labels['category']}"}
        garment_png(root / subset / row["image"], colour, variant=index + 100 * month)
        if street and split == "query":
            photo = Image.new("RGB", (128, 128), "white")
            ImageDraw.Draw(photo).rectangle([20, 20, 90, 110], fill=COLOURS[colour])
            photo.putpixel((index, month), (index, month, 0))  # every photo its own bytes
            photo.save(root / subset / f"images/{item_id}-look.png")
            row.update(raw_image=f"images/{item_id}-look.png", bbox=[20.0, 20.0, 90.0, 110.0], outfit_id=f"look-{index}")
        rows[split].append(row)
        truth[f"{subset}/{split}/{item_id}"] = labels
    for split, lines in rows.items():
        (root / subset / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return truth


def review_from_truth(review, truth: dict[str, dict], reviewer: str) -> int:
    """A scripted reviewer who knows the answer: every item the queue gives ``reviewer`` labelled with its truth
    (``review``: the app's ``Review``, whose ``decide`` the page calls); how many it labelled."""
    done = 0
    while (item := review.next_for(reviewer)) is not None:
        labels = truth[item.key]
        names = review.taxonomy.categories[labels["category"]].attributes
        review.decide(reviewer, item.key, labels["category"],
                      [labels["attributes"].get(name, review.taxonomy.not_applicable) for name in names])
        done += 1
    return done
