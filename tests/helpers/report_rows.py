"""The rows of a worst-queries page as the report and the "Your results" tabs draw them (``report.html.query_row``):
each row's data attributes, title and the marks of its result tiles (``report.style.tile``), in order."""
from __future__ import annotations

import json
import re

ROW = re.compile(r"<div class='query' data-subset='(?P<subset>[^']*)' data-category='(?P<category>[^']*)' "
                 r"data-attributes='(?P<attributes>[^']*)'>.*?<b>(?P<title>[^<]*)</b>")
CARD = re.compile(r"<figure class='tile' data-mark='(?P<mark>fine|coarse|miss)' style='--mark:#\w+'><img src='data:image/jpeg;base64,")


def query_rows(html: str) -> list[dict]:
    """Each row of ``html``: its data attributes, title and the marks of its tiles (each with its thumbnail)."""
    rows = []
    for part in html.split("<div class='query' ")[1:]:
        found = ROW.match("<div class='query' " + part)
        assert found, part[:300]
        rows.append({**found.groupdict(), "attributes": json.loads(found["attributes"].replace("&quot;", '"')),
                     "marks": [m["mark"] for m in CARD.finditer(part)]})
    return rows
