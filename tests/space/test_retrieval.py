"""One query of the demo, marked by the metric: benchmark queries, subsets and distractors, random queries, words
read by the text tower, two models side by side, a gallery prepared in the background."""
import re

import numpy as np
import pytest

from lookbench.metric.fine_recall.bootstrap import score_retrieval

from tests.helpers.photos import small_photos
from tests.helpers.space_app import expected_marks as _expected_marks, seen as _seen, shown as _shown


@pytest.mark.parametrize("model", ["gr-lite-mini", "efficientnet-lite0"])
def test_benchmark_query_marks_and_scores_agree_with_the_metric(space_app, model):
    retriever = space_app.retriever()
    assets = retriever.assets
    k = 10
    for key in ("RealStudioFlat/2", "RealStreetLook/1", "AIGen-StreetLook/5"):
        query = retriever.benchmark_query(key)
        result = retriever.search(query, model, "all", True, k)
        assert [h.rank for h in result.hits] == list(range(1, k + 1))
        rows = [h.row for h in result.hits]
        assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
        items = assets.gallery.select(rows).to_list()
        assert [h.mark for h in result.hits] == _expected_marks(query.annotation, items)
        scores = score_retrieval([rows], [query.annotation], assets.gallery, k=[k])
        assert 100.0 * result.fine_hit == scores[f"fine_recall@{k}"]
        assert 100.0 * result.coarse_hit == scores[f"coarse_recall@{k}"]
        assert result.ndcg == pytest.approx(scores[f"ndcg@{k}"])
        for hit, item in zip(result.hits, items):
            names = {a["name"] for a in item["attributes"]}
            if hit.mark == "coarse":
                lacks = [c.attribute for c in hit.chips if c.kind == "lacks"]
                differs = [c.attribute for c in hit.chips if c.kind == "differs"]
                assert lacks or differs
                assert all(n not in names for n in lacks) and all(n in names for n in differs)


def test_subset_scope_and_distractors_restrict_the_gallery(space_app):
    retriever = space_app.retriever()
    query = retriever.benchmark_query("AIGen-Studio/3")
    only = retriever.search(query, "gr-lite-mini", "RealStreetLook", False, 20)
    assert {h.subset for h in only.hits} == {"RealStreetLook"}
    wide = retriever.search(query, "gr-lite-mini", "AIGen-Studio", True, 50)
    assert {h.subset for h in wide.hits} <= {"AIGen-Studio", "noise"}
    assert retriever.search(query, "gr-lite-mini", "aigen_studio", True, 50).hits == wide.hits  # the alias works


def test_random_query_is_seeded_and_respects_the_cutoff(space_app):
    from lookbench.space.retrieval import QueryError

    retriever, queries = space_app.retriever(), space_app.retriever().assets.queries
    first = retriever.random_query("RealStreetLook", 7)
    assert first.label == retriever.random_query("RealStreetLook", 7).label and first.label.startswith("RealStreetLook/")
    picked = {retriever.random_query("all", seed, "2025-01-01").benchmark_row for seed in range(25)}
    assert all(queries[row]["timestamp"].year >= 2025 for row in picked) and len(picked) > 5
    with pytest.raises(QueryError, match="after 2100-01-01"):
        retriever.random_query("all", 0, "2100-01-01")


def test_words_are_read_by_the_text_tower_and_searched_in_gr_lite_minis_index(space_app):
    """GR-Lite-mini-text's words land in GR-Lite-mini's image space: a benchmark query's own words are that query
    (its annotation marks the results, as the metric does), free words are unmarked, and the ranking is the index's
    inner products with the text tower's unit vector."""
    from lookbench.dataset_builder.text_queries import record_text
    from lookbench.encoders.registry import load_encoder
    from lookbench.space.retrieval import QueryError

    retriever = space_app.retriever()
    assets = retriever.assets
    assert list(space_app.readers) == ["gr-lite-mini"]
    fine = 0
    keys = [f"{s}/{n}" for s in ("RealStudioFlat", "AIGen-Studio", "RealStreetLook", "AIGen-StreetLook") for n in (1, 2, 3)]
    for key in keys:
        query = retriever.words(retriever.described(key), key)
        record = assets.queries[query.benchmark_row]
        assert query.text == record_text(record) and query.annotation == retriever.benchmark_query(key).annotation
        result = retriever.search(query, "gr-lite-mini", "all", True, 5)
        items = assets.gallery.select([h.row for h in result.hits]).to_list()
        assert [h.mark for h in result.hits] == _expected_marks(query.annotation, items)
        assert record["hash"] not in [item["hash"] for item in items]  # the query's own image is left out
        fine += result.hits[0].mark == "fine"
    assert fine >= 9, f"{fine} of {len(keys)} benchmark queries in words found a fine hit first"  # the card: 96.8 % on Mini
    free = retriever.words("  striped   red top ")
    assert (free.text, free.annotation, free.label) == ("striped red top", None, "the words “striped red top”")
    result = retriever.search(free, "gr-lite-mini", "all", True, 5)
    assert all(h.mark is None for h in result.hits)
    vector = load_encoder("gr-lite-mini-text").encode_text(["striped red top"])[0]
    vector = vector / np.linalg.norm(vector)
    index = assets.models["gr-lite-mini"].index
    assert [h.score for h in result.hits] == pytest.approx([float(index.reconstruct(h.row) @ vector) for h in result.hits],
                                                           abs=1e-5)
    assert retriever.words("red top", "RealStudioFlat/1").annotation is None  # not the query's own words: free words
    for bad, message in (("", "No words yet"), ("x" * 301, "has 301 characters; a text query has at most 300")):
        with pytest.raises(QueryError, match=message):
            retriever.words(bad)
    with pytest.raises(QueryError, match="Model 'efficientnet-lite0' reads no words"):
        retriever.search(free, "efficientnet-lite0", "all", True, 5)
    assert "\\[" in retriever.words("[a](http://x)").label  # a visitor's words are shown, never rendered as Markdown


def test_the_words_box_names_the_words_it_ignores_and_refuses_words_it_cannot_read(space_app):
    """Issue 47 item 2: "a black leather handbag" returned five black skirts, the unknown words dropped silently.
    The words read and ignored come from the text tower's own vocabulary (its tokenizer's unknown token); the
    suggestions are the gallery's taxonomy values it reads; only unknown words is a message, not results."""
    from lookbench.space.retrieval import QueryError

    retriever = space_app.retriever()
    tokenizer = space_app.readers["gr-lite-mini"].text_reader.tokenizer
    vocabulary = set(tokenizer.get_vocab())
    assert retriever.reading("A black leather handbag, blue-jeans!") == (["A", "black", "blue"], ["leather", "handbag", "jeans"])
    assert {"leather", "handbag", "jeans"}.isdisjoint(vocabulary) and {"black", "blue"} <= vocabulary
    assert retriever.words("a black leather handbag").ignored == ["leather", "handbag"]
    annotated = set(retriever.assets.gallery["category"]) | {a["value"] for attrs in retriever.assets.gallery["attributes"]
                                                             for a in attrs}
    values = {" ".join(v.replace("_", " ").split()).lower() for v in annotated}
    assert "v-neck" in retriever.vocabulary and set(retriever.vocabulary) <= values
    assert all(set(re.findall(r"\w+", v)) <= vocabulary for v in retriever.vocabulary)  # every word of each is read
    with pytest.raises(QueryError) as refused:
        retriever.words("leather handbag")
    message = str(refused.value)
    assert message.startswith("No word of “leather handbag” is one the text tower knows (ignored: leather, handbag); "
                              "words it knows include ")
    offered = message.rsplit("include ", 1)[1].split(", ")
    assert len(offered) == 12 and set(offered) <= set(retriever.vocabulary)
    note = space_app.words_note("a black leather handbag")
    assert note.startswith("Read: a, black · **ignored** (not in its vocabulary): leather, handbag · words it knows include ")
    assert space_app.words_note("") == ""
    past = retriever.reading(" ".join(["red"] * 70 + ["top"]))  # past the 64 tokens it reads: ignored too
    assert past == (["red"], ["top"])
    status, note, *rest = space_app.search_words("leather handbag", "", "all", True, 5)
    assert status.startswith("⚠️ No word of “leather handbag”") and "ignored" in note and rest[2:] == ["", "", "", ""]


@pytest.mark.slow
def test_any_prepared_model_is_offered_two_at_a_time(photo_assets, tmp_path_factory):
    """Issue 47 item 4: `lookbench demo --models` offers every model given (each with prepared assets); any two are
    the two panels, each titled with its model and this query's hit@k as the metric marks it."""
    from lookbench.commands.demo import models
    from lookbench.encoders.base import EncoderError
    from lookbench.space.app import SpaceApp
    from lookbench.space.assets import open_assets, real_photo_release

    three = models(["gr-lite-mini", "efficientnet-lite0", "raw-pixels"])
    release = real_photo_release(small_photos(tmp_path_factory.mktemp("photos")))
    assets = open_assets(release, tmp_path_factory.mktemp("three") / "photos", three, quiet=True)
    assert set(assets.manifest["models"]) == set(three)
    app = SpaceApp([assets], models=three)
    assert app.models == list(three) and app.pair == ("gr-lite-mini", "efficientnet-lite0")
    status, _, _, _, panel_a, _, panel_b, _ = app.search(None, "RealStudioFlat/3", "all", False, "raw-pixels",
                                                         "gr-lite-mini", 5)
    assert status.startswith("RealStudioFlat/3: top 5 of Fashion-MNIST real photos in LookBench's format")
    retriever = app.retriever()
    query = retriever.benchmark_query("RealStudioFlat/3")
    for panel, model in ((panel_a, "raw-pixels"), (panel_b, "gr-lite-mini")):
        result = retriever.search(query, model, "all", False, 5)
        assert f"<h3>{model} — fine hit@5 {'✓' if result.fine_hit else '✗'}" in panel
        assert _seen(panel) == _shown(result.hits)
    assert app.search(None, "RealStudioFlat/3", "all", False, "raw-pixels", "raw-pixels", 5)[6] == ""  # the same: one
    status, *_ = app.search(None, "RealStudioFlat/3", "all", False, "raw-pixels", "clip", 5)
    assert status == "⚠️ Unknown second model 'clip'; choose one of gr-lite-mini, efficientnet-lite0, raw-pixels, none"
    with pytest.raises(EncoderError, match="Unknown model 'no-such-model'"):
        models(["no-such-model"])


def test_a_gallery_prepared_in_the_background_shows_its_progress_then_joins(space_assets, photo_assets):
    """Issue 47 item 5: the first gallery is served while another is prepared on a thread; the page shows its stage
    and count, then offers it (the timer stops); a failed preparation is said and the app keeps serving."""
    import threading

    from lookbench.space.app import SpaceApp
    from lookbench.space.assets import SpaceAssets

    app = SpaceApp([space_assets])
    assert list(app.galleries) == ["LookBench-Mini (synthetic)"] and app.progress_note() == ""
    counted, release = threading.Event(), threading.Event()

    def job(bars):
        with bars("encode gr-lite-mini", quiet=False, unit="img") as bar:
            bar.reset(total=200)
            bar.update(80)
            counted.set()
            release.wait(60)
        return SpaceAssets.load(photo_assets)

    worker = app.prepare_later("Fashion-MNIST real photos in LookBench's format", job)
    assert app.poll("LookBench-Mini (synthetic)")[2].active  # the page polls from its first view
    worker.start()
    assert counted.wait(60)
    assert app.progress_note() == ("⏳ Preparing the gallery **Fashion-MNIST real photos in LookBench's format** in the background: "
                                   "encode gr-lite-mini 80 of 200. It joins the choices when ready.")
    choices, note, timer, *_ = app.poll("LookBench-Mini (synthetic)")
    assert choices["choices"] == ["LookBench-Mini (synthetic)"] and timer.active
    release.set()
    worker.join(60)
    choices, note, timer, *_ = app.poll("LookBench-Mini (synthetic)")
    assert choices["choices"] == ["LookBench-Mini (synthetic)", "Fashion-MNIST real photos in LookBench's format"] and note == "" and not timer.active
    assert app.search(None, "RealStudioFlat/2", "all", False, "gr-lite-mini", "none", 4,
                      "Fashion-MNIST real photos in LookBench's format")[0].startswith("RealStudioFlat/2: top 4 of Fashion-MNIST real photos in LookBench's format")

    def broken(bars):
        raise ValueError("the t10k IDX files are missing")

    failing = app.prepare_later("Other photos", broken)
    failing.start()
    failing.join(60)
    assert app.progress_note() == ("⚠️ The gallery Other photos could not be prepared: ValueError: the t10k IDX files "
                                   "are missing")
    assert not app.poll("LookBench-Mini (synthetic)")[2].active and len(app.galleries) == 2
