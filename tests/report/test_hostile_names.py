"""Hostile ids and names in a stored result (issue 53 item 5): ``explain --report``'s page runs no script an item id
or a model's or data's name carries (the thumbnail map was written into its ``<script>`` with ``json.dumps``, which
leaves ``</script>`` as it is) and shows them as text; ``explain`` prints them escaped, as ``leaderboard`` does."""
from __future__ import annotations

import json

import pytest

import lookbench
from lookbench.cli import main
from lookbench.report import html, records
from tests.helpers.browser import chromium_page, needs_chromium
from tests.helpers.engine_data import graded_release, write_folder

# Each sets window.__pwned (and opens a dialog) if the page lets it run; no double quote or backslash, which JSON
# would escape: each would run from a script that json.dumps wrote. Every item id carries all of them.
PAYLOADS = ("</script><script>window.__pwned='close';alert('close')</script>",
            "</SCRIPT ><svg onload=window.__pwned='svg'>",
            "<img src=x onerror=window.__pwned='img';alert('img')>",
            "<!--<script>",
            "'&amp;\u2028\u2029`${window.__pwned='template'}`")
# Terminal escapes (retitle the window, clear the screen, a hidden link, C1 CSI) and markup in one name.
MODEL = "evil\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://x.example\x07link\x1b]8;;\x07</script><script>window.__pwned='model'</script>"
DATA = "data\x9b2J\x1b[8m<img src=x onerror=\"window.__pwned='data'\">$\\frac{$"  # $: mathtext in the chart's title


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A graded release whose every item id carries a payload, evaluated with saved rankings; its results.json then
    names a hostile model and data (a file a stranger hands over)."""
    release = {config: {split: [dict(row, item_id="".join(PAYLOADS) + row["item_id"]) for row in rows]
                        for split, rows in splits.items()} for config, splits in graded_release().items()}
    root = tmp_path_factory.mktemp("hostile")
    data = write_folder(root / "data", release)
    out = root / "out"
    lookbench.evaluate("raw-pixels", data=data, output_dir=out, save_predictions=True, quiet=True, use_cache=False,
                       results_dir=None)
    result = json.loads((out / "results.json").read_text())
    result["provenance"]["model"]["name"] = MODEL
    result["provenance"]["dataset"]["name"] = DATA
    (out / "results.json").write_text(json.dumps(result))
    return out, data


def test_the_inline_script_carries_no_markup_whatever_a_text_holds():
    page = html.script_json({PAYLOADS[0]: PAYLOADS[3], "k": "\u2028\u2029&<>"})
    assert not any(c in page for c in "<>&\u2028\u2029") and json.loads(page) == {PAYLOADS[0]: PAYLOADS[3], "k": "\u2028\u2029&<>"}


def test_the_report_page_closes_its_script_once_and_quotes_every_id(hostile):
    out, data = hostile
    report = records.worst_queries(out, top=4)
    assert report.queries and all(w.item_id.startswith("".join(PAYLOADS)) for w in report.queries)
    images = records.thumbnails(report, data)
    page = html.render(report, images)
    script = page[page.rindex("<script>"):]
    assert page.lower().count("<script") == 1 and page.lower().count("</script") == 1 and script.endswith("</script></body></html>")
    assert "<!--" not in page and "<img src=x" not in page and "<svg" not in page.lower()
    assert json.loads(script[script.index("const IMAGES = ") + 15:script.index(";\ndocument")]).keys() == images.keys()


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_the_report_runs_no_script_a_hostile_id_or_name_carries_and_shows_them_as_text(hostile, tmp_path, capsys):
    out, data = hostile
    page_file = tmp_path / "report.html"
    assert main(["explain", str(out), "--report", str(page_file), "--top", "4", "--data", str(data)]) == 0
    capsys.readouterr()
    report = records.worst_queries(out, top=4)
    with chromium_page(str(tmp_path / "profile"), 1400, 1500, offline=True) as page:
        dialogs, errors = [], []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        page.wait_for_timeout(500)  # an injected onerror / onload would have fired by now
        assert page.evaluate("window.__pwned") is None and dialogs == [] and errors == []
        assert page.locator("h1").text_content() == f"LookBench report: {report.title}" and MODEL[:4] in report.title
        assert "</script><script>window.__pwned='model'</script> on data" in page.title()  # control characters: spaces
        cards = page.locator(".card.q").evaluate_all("cs => cs.map(c => c.textContent)")
        assert len(cards) == len(report.queries) > 0
        for text, w in zip(cards, report.queries):
            assert f"{w.item_id} · {w.category}" in text  # the id itself, as text
        shown = page.locator(".query").first.locator(".tile .what").evaluate_all("ts => ts.map(t => t.textContent)")
        assert shown == [f"{r.item_id} · {r.category}" for r in report.queries[0].results]
        loaded = "imgs => imgs.map(i => i.complete && i.naturalWidth > 0)"
        assert all(page.locator(".card.q img").evaluate_all(loaded))  # the page's own script ran, its keys intact
        assert page.locator("img[src='x'], svg").count() == 0


def _printed(capsys) -> str:
    said = capsys.readouterr()
    return said.out + said.err


def test_explain_prints_a_hostile_model_and_data_name_escaped(hostile, capsys):
    out, _ = hostile
    assert main(["explain", str(out)]) == 0
    head = _printed(capsys).splitlines()[0]
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in head and "data\\x9b2J\\x1b[8m" in head
    report = records.worst_queries(out, top=4)
    assert main(["explain", str(out), "--subset", report.queries[0].subset, "--query", str(report.queries[0].number)]) == 0
    shown = _printed(capsys)
    assert report.queries[0].item_id[:12] in shown
    result = json.loads((out / "results.json").read_text())
    result["provenance"]["mode"] = "strict\x1b]0;pwned\x07"
    result["\x1b]0;pwned\x07\x1b[2J"] = {}  # a block the refusal names: "has no per-query outcomes for <it>"
    broken = out.parent / "broken"
    broken.mkdir(exist_ok=True)
    (broken / "results.json").write_text(json.dumps(result))
    assert main(["explain", str(broken / "results.json")]) == 2
    refused = _printed(capsys)
    assert "has no per-query outcomes for \\x1b]0;pwned\\x07\\x1b[2J;" in refused and len(refused.splitlines()) == 1
    del result["\x1b]0;pwned\x07\x1b[2J"]
    (broken / "results.json").write_text(json.dumps(result))
    assert main(["explain", str(broken / "results.json")]) == 0
    moded = _printed(capsys).splitlines()[0]
    assert moded.endswith(", strict\\x1b]0;pwned\\x07 mode"), moded
    everything = shown + head + refused + moded
    assert not any(c in everything for c in "\x1b\x07\x9b")
