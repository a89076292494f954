"""`lookbench explain RESULT --report OUT.html` (issue 46 item 3): the worst queries as records that agree with the
saved rankings, drawn as one self-contained page that opens from disk in Chromium and shows each query beside its
results; image and text queries; OUT checked before any work."""
from __future__ import annotations

import os

import numpy as np
import pyarrow.parquet as pq
import pytest

import lookbench
from lookbench.cli import main
from lookbench.report import html, records
from lookbench.results.rankings import predictions_folder
from tests.helpers.engine_data import ShadeReader, graded_release, write_folder
from tests.helpers.browser import chromium_page, needs_chromium



@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return write_folder(tmp_path_factory.mktemp("graded") / "lookbench", graded_release())


@pytest.fixture(scope="module")
def saved(graded, tmp_path_factory):
    out = tmp_path_factory.mktemp("saved") / "out"
    lookbench.evaluate("raw-pixels", data=graded, output_dir=out, save_predictions=True, quiet=True, use_cache=False,
                       results_dir=None)
    return out


def test_the_worst_queries_are_the_fine_misses_by_how_far_the_first_fine_hit_is(saved, graded):
    report = records.worst_queries(saved, top=5, limit=1000)
    tables = {s: pq.read_table(predictions_folder(saved / "results.json") / f"{s}.parquet").to_pylist()
              for s in report.provenance["subsets"]}
    misses = {(s, r["query"]) for s, rows in tables.items() for r in rows
              if r["rank"] == 1 and not r["fine_hit"]}
    assert {(w.subset, w.number) for w in report.queries} == misses and misses  # every fine miss, no fine hit at 1
    far = [w.first_fine or np.inf for w in report.queries]
    assert far == sorted(far, reverse=True)  # none in the ranking first, then the farthest
    for w in report.queries:
        rows = [r for r in tables[w.subset] if r["query"] == w.number]
        assert [(r.rank, r.item_id) for r in w.results] == [(r["rank"], r["item_id"]) for r in rows[:5]]
        for shown, row in zip(w.results, rows):
            assert shown.mark == ("fine" if row["fine_hit"] else "coarse" if row["coarse_hit"] else "miss")
            assert (shown.mark == "miss") == any(c.kind == "category" for c in shown.chips)
            assert (shown.mark == "fine") == (shown.chips == [])
    assert report.evaluated == sum(len({r["query"] for r in rows}) for rows in tables.values())
    assert len(records.worst_queries(saved, top=5, limit=3).queries) == 3
    images = records.thumbnails(report, graded)
    assert all(images[records.image_key(w.subset, "query", w.item_id)].startswith("data:image/jpeg;base64,")
               for w in report.queries)


def test_text_queries_show_their_words(tmp_path):
    data = write_folder(tmp_path / "data", texts=True)
    lookbench.evaluate(ShadeReader(), data=data, queries="text", quiet=True, save_predictions=True,
                       output_dir=tmp_path / "out", use_cache=False, results_dir=None)
    report = records.worst_queries(tmp_path / "out")
    assert report.queries and all(w.text for w in report.queries) and "text-" in report.title
    page = html.render(report, records.thumbnails(report, data))
    first = report.queries[0]
    assert f"“{first.text}” (a text query; its image:)" in page


def test_out_is_checked_before_any_work_and_bad_input_is_one_line(saved, tmp_path, capsys):
    os.mkfifo(tmp_path / "fifo.html")
    assert main(["explain", str(saved), "--report", str(tmp_path / "fifo.html")]) == 2
    assert "fifo.html is a FIFO" in capsys.readouterr().err
    assert main(["explain", str(saved), "--report", str(tmp_path / "nowhere" / "r.html")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["explain", str(saved), "--subset", "RealStudioFlat"]) == 2
    assert "--subset and --query name one query together" in capsys.readouterr().err
    plain = tmp_path / "plain"
    lookbench.evaluate("raw-pixels", data=write_folder(tmp_path / "d", graded_release()), output_dir=plain, quiet=True,
                       use_cache=False, results_dir=None)
    assert main(["explain", str(plain), "--report", str(tmp_path / "r.html")]) == 2
    assert "has no saved rankings for" in capsys.readouterr().err and not (tmp_path / "r.html").exists()


def test_explain_without_a_query_shows_the_attribute_error_block(saved, capsys):
    assert main(["explain", str(saved)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert ": raw-pixels on " in out[0] and out[0].endswith(", strict mode")
    assert any(line.startswith("attribute ") and line.rstrip().endswith("queries") for line in out)


@pytest.mark.browser
@needs_chromium
def test_the_report_opens_from_disk_in_chromium_and_shows_the_query_and_its_results(saved, graded, tmp_path, capsys):
    from playwright.sync_api import expect

    out = tmp_path / "report.html"
    assert main(["explain", str(saved), "--report", str(out), "--top", "4", "--data", str(graded)]) == 0
    assert f"report: {out} (" in capsys.readouterr().out
    report = records.worst_queries(saved, top=4)
    with chromium_page(str(tmp_path / "profile"), 1400, 1500, offline=True) as page:  # opens from disk: nothing fetched
        page.goto(out.as_uri())
        expect(page.locator("h1")).to_contain_text("raw-pixels")
        queries = page.locator(".query")
        expect(queries).to_have_count(len(report.queries))
        first = queries.first
        expect(first.locator(".q b")).to_have_text(f"{report.queries[0].subset} query {report.queries[0].number}")
        loaded = "imgs => imgs.map(i => i.complete && i.naturalWidth > 0)"
        assert first.locator(".q img").evaluate_all(loaded) == [True]  # the query's own image, inline
        cards = first.locator(".results .tile")
        expect(cards).to_have_count(len(report.queries[0].results))
        assert all(cards.locator("img").evaluate_all(loaded))
        assert cards.evaluate_all("cs => cs.map(c => c.dataset.mark)") == [r.mark for r in report.queries[0].results]
        assert page.locator("img[alt='attribute error chart']").evaluate_all(loaded) == [True]
        subset = report.queries[-1].subset
        page.select_option("#subset", subset)
        expect(page.locator("#shown")).to_have_text(str(sum(w.subset == subset for w in report.queries)))
        expect(page.locator(f".query[data-subset='{subset}']").first).to_be_visible()
        page.screenshot(path=str(tmp_path / "report.png"))
