"""What the demo's tests share (tests/space/): the app on a loopback port, a search through gradio_client,
the tiles a panel shows, the marks by their definition and a screenshot that is not blank."""
import re
from pathlib import Path

import numpy as np
from PIL import Image

from tests.helpers.clients import free_port


TILE = re.compile(r"<figure class='tile' data-mark='(?P<mark>\w+)' style='--mark:(?P<colour>#\w+)'><img src='data:image/webp;"
                  r"base64,(?P<image>[^']+)' alt='[^']*'><span class='head'><span>#(?P<rank>\d+) · (?P<label>[^<]+)</span>"
                  r"<span>(?P<score>-?\d\.\d{3})</span></span><span class='what'>(?P<what>[^<]*)</span>"
                  r"(?:<span class=chips>(?P<chips>.*?)</span>)?</figure>")


def serving(app):
    """``app`` on a free loopback port, in this process, closed at the end (its example cache: in the assets)."""
    port = free_port()
    demo = app.blocks()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **app.launch_options)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


def expected_marks(query, items):
    """Strict Fine Recall by its definition (same category and A_q ⊆ A_i), independent of the metric's code."""
    q = {(a["name"], a["value"]) for a in query["attributes"]}
    marks = []
    for item in items:
        same = item["category"] == query["category"]
        marks.append("fine" if same and q <= {(a["name"], a["value"]) for a in item["attributes"]}
                     else "coarse" if same else "miss")
    return marks


def search(client, image=None, query_id="", subset="all", model="gr-lite-mini", k=6, distractors=True, second="none"):
    """The /search endpoint: status, words' note, annotation, outfit, then each panel's tiles (HTML) and table."""
    from gradio_client import handle_file

    return client.predict(handle_file(str(image)) if image else None, query_id, subset, distractors, model, second, k,
                          api_name="/search")


def tiles(panel: str) -> list[dict]:
    """The result tiles of a panel, each as its mark, rank, score, thumbnail bytes and chips."""
    import base64
    import html

    tiles = [m.groupdict() for m in TILE.finditer(panel)]
    assert len(tiles) == panel.count("<figure"), panel[:300]
    return [{**t, "rank": int(t["rank"]), "image": base64.b64decode(t["image"]),
             "chips": [html.unescape(c) for c in re.findall(r"<span class='chip \w+'>([^<]*)</span>", t["chips"] or "")]}
            for t in tiles]


def shown(hits) -> list[tuple]:
    """What the tiles of ``hits`` must show: rank, mark, score, thumbnail."""
    return [(h.rank, h.mark or "none", f"{h.score:.3f}", h.thumb) for h in hits]


def seen(panel: str) -> list[tuple]:
    return [(t["rank"], t["mark"], t["score"], t["image"]) for t in tiles(panel)]


def not_blank(path: Path) -> None:
    pixels = np.asarray(Image.open(path).convert("RGB"))
    assert pixels.shape[0] > 200 and pixels.shape[1] > 400
    assert pixels.std() > 10 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 200
