"""LookBench Space: fashion retrieval in the browser — a query, its top-k per model with fine / coarse marks and
attribute differences, shop-the-look crops, two encoders side by side, two galleries (the synthetic LookBench-Mini
and real photos), and the leaderboard.

docs/architecture.md §2, §5. Runs as ``lookbench demo`` and, staged, as a Hub Space (``python app.py``), so it
imports the ``lookbench`` package only: installed, or the copy ``lookbench stage`` puts beside it. Assets are prepared
once (see ``lookbench.space.assets``; the Space ships them in ``assets/``); a request only encodes an uploaded image
and searches the stored index.
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import threading
from pathlib import Path

import gradio as gr

from lookbench.errors import shown
from lookbench.hub import UPSTREAM
from lookbench.leaderboard.ranking import leaderboard
from lookbench.terminal import markdown_safe
from lookbench.paths import space_assets_dir
from lookbench.schema import NOISE, TEST_SUBSETS
from lookbench.report.style import legend
from lookbench.space.assets import DEFAULT_MODELS, SpaceAssets
from lookbench.space.preparing import later
from lookbench.space.requests import (MAX_UPLOAD_BYTES, error, image_file, images_folder, read_upload, refused,
                                      uploaded, whole)
from lookbench.space.retrieval import ALL, MAX_WORDS, NotYet, Query, QueryError, Retriever
from lookbench.space.warm import readers, warm_encoders
from lookbench.space.yours import YourResults
from lookbench.space.views import (CSS, OVERALL, annotation_markdown, details_markdown, gallery_markdown,
                                   leaderboard_tab, panel_html)

NONE = "none"  # the second model's choice: no second panel
CONCURRENCY = 2
MAX_SEED = 2**53 - 2  # the seed box moves on by one, and stays an exact number in the browser
log = logging.getLogger("lookbench.space")

PAPER = "https://arxiv.org/abs/2601.14706"
PROJECT = f"https://huggingface.co/datasets/{UPSTREAM}"
INTRO = f"""### LookBench — attribute-aware fashion retrieval · [paper (arXiv:2601.14706)]({PAPER}) · [benchmark]({PROJECT})
A benchmark query (**Random query**, an example), a photo, words, or one garment cropped off a street photo (**Shop
the look**): each result is marked **fine** (same category and every attribute: LookBench's Fine Recall), **coarse**
(same category only) or a **miss**, with what it lacks."""


class SpaceApp:
    """The Blocks app over one or more galleries (``SpaceAssets``, or their folders); its handlers are plain
    methods (tests call them too). The first gallery is the default."""

    def __init__(self, galleries, results=None, models=DEFAULT_MODELS, encoders=None, data=None):
        loaded = [g if isinstance(g, SpaceAssets) else SpaceAssets.load(g) for g in galleries]
        if not loaded:
            raise ValueError("the Space has no gallery to serve")
        self.wanted = list(models)  # those of them every gallery has assets of are served (``self.models``)
        self.models = [m for m in models if all(m in g.models for g in loaded)]
        self.given = encoders or {}
        self.encoders = {}  # the retrievers share the one dict: a model that joins later is there for every gallery
        warm_encoders(self.models, self.encoders, self.given)
        self.readers = readers(self.models, self.given)
        self.galleries = {}
        for assets in loaded:
            self.add(assets)
        self.default = next(iter(self.galleries))
        self.results = results
        self.yours = YourResults(results, data)
        self.preparing = None  # a gallery being prepared in the background (``preparing.Preparing``)

    def add(self, assets: SpaceAssets) -> str:
        """One more gallery to serve (a background preparation's), or new assets of a served gallery's folder (with
        more models: a model joins the choices once every gallery has its assets); its name on the page."""
        same = [name for name, retriever in self.galleries.items() if retriever.assets.folder == assets.folder]
        name = same[0] if same else assets.name if assets.name not in self.galleries else \
            f"{assets.name} ({assets.folder.name})"
        self.galleries[name] = Retriever(assets, self.encoders, self.readers)
        held = [set(retriever.assets.models) for retriever in self.galleries.values()]
        models = [m for m in self.wanted if all(m in h for h in held)]
        warm_encoders(models, self.encoders, self.given)
        self.models = models
        return name

    def prepare_later(self, name: str, job, *more) -> threading.Thread:
        """The thread that prepares gallery ``name`` (``job(bars)`` returns its ``SpaceAssets``), then each further
        ``(name, job)`` of ``more``, while the app serves (``preparing.later``); the page shows their progress."""
        return later(self, [(name, job), *more])

    def progress_note(self) -> str:
        """What the page says of a gallery being prepared: its stage and count, or why it failed ("" when none)."""
        return "" if self.preparing is None else self.preparing.note()

    def poll(self, gallery, model=None, second=None, chosen=False):
        """The gallery choice, the progress line, and the model choices (a model prepared later joins them; the
        visitor's choices are kept), when a page opens and every few seconds while something is being prepared. The
        second model is the default's (``pair``: side by side once a second model is ready, also on a page opened
        before it was) unless the visitor ``chosen`` one, none included."""
        kept = second in self.models or (chosen and second == NONE)
        return (gr.update(choices=list(self.galleries), value=gallery if gallery in self.galleries else self.default),
                self.progress_note(), gr.Timer(active=self.preparing is not None and not self.preparing.error),
                gr.update(choices=self.models, value=model if model in self.models else self.pair[0]),
                gr.update(choices=[NONE, *self.models], value=second if kept else self.pair[1]))

    def retriever(self, gallery=None) -> Retriever:
        """The chosen gallery's retriever (None: the default one)."""
        if gallery in (None, ""):
            return self.galleries[self.default]
        if not isinstance(gallery, str) or gallery not in self.galleries:  # an API call can send any JSON value
            raise QueryError(f"Unknown gallery {shown(gallery)}; choose one of {', '.join(self.galleries)}")
        return self.galleries[gallery]

    # -- Search tab ---------------------------------------------------------------------------------------

    def _query(self, retriever: Retriever, image, query_id) -> Query:
        if query_id and str(query_id).strip():
            return retriever.benchmark_query(str(query_id))
        blob = uploaded(image)
        if blob is None:
            raise NotYet("No query yet: upload an image, click an example or press Random query")
        return retriever.upload(blob)

    def chosen(self, model, second) -> list[str]:
        """The models of the two panels: ``model``, and ``second`` beside it unless it is none or the same."""
        for name, value in (("model", model), ("second model", second)):
            if value not in (*self.models, *((NONE, "", None) if name == "second model" else ())):
                raise QueryError(f"Unknown {name} {shown(value)}; choose one of "
                                 f"{', '.join(self.models + ([NONE] if name == 'second model' else []))}")
        return [model] + ([second] if second not in (NONE, "", None, model) else [])

    def search(self, image, query_id, subset, distractors, model, second, k, gallery=None):
        """Status, the words' note (cleared), query annotation, outfit photo, then each panel's tiles and table (the
        second empty, and hidden by the page, for one model)."""
        def ask(retriever):
            names = self.chosen(model, second)
            return self._query(retriever, image, query_id), names

        return self._answer(ask, subset, distractors, k, gallery)

    def search_words(self, words, query_id, subset, distractors, k, gallery=None):
        """A text query ("describe the item"), answered by each model with a text tower, as ``search`` answers; the
        benchmark query's own words are marked by the metric. The words' note says which words were read and which
        ignored; a query of unknown words only is that message, never results."""
        def ask(retriever):
            if not self.readers:
                raise QueryError("No model here reads words (GR-Lite-mini-text is not installed)")
            return retriever.words(words, query_id), list(self.readers)

        return self._answer(ask, subset, distractors, k, gallery, words)

    def words_note(self, words, gallery=None) -> str:
        """What the text towers make of ``words``: the words read and those ignored (with known words near them)."""
        text = " ".join(str(words or "").split())[:MAX_WORDS]
        if not self.readers or not text:
            return ""
        retriever = self.retriever(gallery)
        read, ignored = retriever.reading(text)
        note = f"Read: {markdown_safe(', '.join(read)) or 'nothing'}"
        if ignored:
            note += (f" · **ignored** (not in its vocabulary): {markdown_safe(', '.join(ignored))} · words it knows "
                     f"include {', '.join(retriever.suggestions(ignored))}")
        return note

    def describe(self, query_id, gallery=None):
        """The benchmark query's own words, into the text box."""
        try:
            return self.retriever(gallery).described(str(query_id or ""))
        except ValueError as err:
            raise error(err) from None

    def _answer(self, ask, subset, distractors, k, gallery, words=None):
        """``ask(retriever)`` gives the query and the models that answer it; ``words``: a text query's, noted."""
        note = ""
        try:
            k = whole(k, "top-k", 1, 50)
            retriever = self.retriever(gallery)
            note = "" if words is None else self.words_note(words, gallery)
            query, names = ask(retriever)
            results = [retriever.search(query, n, subset, bool(distractors), k) for n in names]
        except ValueError as err:  # QueryError, an unknown subset, an unusable model: the user's input
            message = refused(err)
            if not isinstance(err, NotYet):  # a control used before any query: the status line says so, no toast
                gr.Warning(message)
            return f"⚠️ {message}", note, "", None, "", "", "", ""
        except Exception as err:  # never a traceback in front of the user; the app keeps serving
            log.exception("search failed")
            gr.Warning(f"The search failed: {type(err).__name__}: {err}")
            return f"⚠️ The search failed: {type(err).__name__}: {err}", note, "", None, "", "", "", ""
        assets = retriever.assets
        outfit = None  # a benchmark query's source photo: a street look's outfit with the item's box, else the item
        if query.benchmark_row is not None:
            record = assets.queries[query.benchmark_row]
            outfit = image_file(record["outfit"] or record["image"])
        scope = "all subsets" if subset == ALL else retriever.subset(subset)
        noise = ("with" if distractors else "without") + " noise distractors" if NOISE in retriever.ranges else "no noise gallery"
        status = f"{query.label}: top {k} of {assets.name}, {scope}, {noise}."
        if sum(r.self_matches_removed for r in results):
            status += " The query's own image is in the gallery: dropped from the results."
            gr.Info("The query image is identical to a gallery image; that gallery image was dropped.")
        columns = []
        for result in results + [None] * (2 - len(results)):  # the second panel is shown only for two models
            columns += ["", ""] if result is None else [panel_html(result, k), details_markdown(result, k, assets.name)]
        return (status, note, annotation_markdown(query), outfit, *columns)

    def search_image(self, image, query_id, subset, model, second, k, gallery=None):
        """A visitor's switch of gallery. A benchmark query belongs to the gallery it came from: its image, id and
        results are cleared. An uploaded image is searched in the new gallery, in the same subset when it has it,
        else in all, with its noise distractors when it has some (the controls ``choose_gallery`` sets)."""
        try:
            retriever = self.retriever(gallery)
        except ValueError as err:
            raise error(err) from None
        if image is None or image == "" or (query_id and str(query_id).strip()):
            cleared = f"Gallery {retriever.assets.name}: pick a benchmark query or upload a photo."
            return None, "", cleared, "", "", None, "", "", "", ""
        subset = subset if subset in retriever.subsets else ALL
        return gr.update(), "", *self.search(image, "", subset, NOISE in retriever.ranges, model, second, k, gallery)

    def words_query(self, words, query_id, gallery=None):
        """The query image and benchmark query id beside a text query's results: the benchmark query's when the words
        are its own, else none and an empty box (an earlier query's image and id are not what these results answer)."""
        try:
            query = self.retriever(gallery).words(words, query_id)
        except ValueError:
            return None, gr.update()
        if query.benchmark_row is None:
            return None, ""
        return image_file(self.retriever(gallery).assets.queries[query.benchmark_row]["image"]), gr.update()

    def choose_gallery(self, gallery, subset):
        """The controls of a newly chosen gallery: its subsets (the current one kept when it has it), whether it has
        a noise gallery, and what it is."""
        try:
            retriever = self.retriever(gallery)
        except ValueError as err:
            raise error(err) from None
        choices = [*retriever.subsets, ALL]
        noise = NOISE in retriever.ranges
        return (gr.update(choices=choices, value=subset if subset in choices else ALL),
                gr.update(interactive=noise, value=noise, label="Noise distractors in the gallery" if noise
                          else "Noise distractors (this gallery has none)"),
                gallery_markdown(retriever.assets),
                gr.update(choices=retriever.vocabulary if self.readers else [], value=None))

    def random(self, subset, seed, cutoff, gallery=None):
        """A seeded random benchmark query of the subset (after the cutoff); the seed box then moves on by one.

        A failure (no query after the cutoff) is a ``gr.Error``: shown, and the chained search does not run."""
        try:
            seed = whole(seed or 0, "Seed", 0, MAX_SEED)
            if cutoff is not None and not isinstance(cutoff, str):
                raise QueryError(f"Cutoff date must be text such as 2025-01-01, got {type(cutoff).__name__}")
            retriever = self.retriever(gallery)
            if subset != ALL and subset not in TEST_SUBSETS:
                raise QueryError(f"Unknown subset {shown(subset)}; choose one of {', '.join([*TEST_SUBSETS, ALL])}")
            query = retriever.random_query(subset, seed, (cutoff or "").strip() or None)
        except ValueError as err:  # raised, so the search chained on success does not run
            raise error(err) from None
        image = image_file(retriever.assets.queries[query.benchmark_row]["image"])
        return image, query.label, seed + 1, f"Random query {query.label} of {retriever.assets.name} (seed {seed})."

    def crop(self, editor):
        """Shop the look: the cropped garment of the editor (its composite, a file path) becomes the query image."""
        composite = editor.get("composite") if isinstance(editor, dict) else None
        if not composite:  # used before a photo: said in the status line, no toast
            return gr.update(), gr.update(), "⚠️ Nothing to crop: load a street photo and crop one garment."
        from PIL import Image

        try:  # the composite gradio's preprocessing wrote into its upload cache
            blob = read_upload(composite)
            with Image.open(io.BytesIO(blob)) as image:
                box = image.getbbox() if "A" in image.getbands() else (0, 0, *image.size)
                empty = box is None or box[2] - box[0] < 2 or box[3] - box[1] < 2
        except (ValueError, OSError, Image.DecompressionBombError) as err:  # QueryError, not an image, a bomb
            message = str(err) if isinstance(err, QueryError) else f"The crop is not an image PIL can read ({type(err).__name__})"
            gr.Warning(refused(message))
            return gr.update(), gr.update(), f"⚠️ {message}"
        if empty:
            gr.Warning(refused("The crop is empty: draw a larger box around one garment"))
            return gr.update(), gr.update(), "⚠️ The crop is empty: draw a larger box around one garment."
        return composite, "", "Cropped garment loaded as the query."

    def outfit_for_crop(self, query_id, gallery=None):
        """The current benchmark street look's full outfit photo, to crop another garment from, and the status line
        (unchanged; without a street-look query, what to pick first, said there: no toast)."""
        try:
            retriever = self.retriever(gallery)
        except ValueError as err:
            raise error(err) from None
        try:
            query = retriever.benchmark_query(str(query_id)) if query_id else None
        except QueryError:
            query = None
        if query is None or not retriever.assets.queries[query.benchmark_row]["photo"]:
            return gr.update(), f"⚠️ {refused('Pick a street-look benchmark query first (RealStreetLook or AIGen-StreetLook)')}"
        return image_file(retriever.assets.queries[query.benchmark_row]["photo"]), gr.update()

    def examples(self) -> list:
        """The first query of each subset of each gallery, the first two models, k=8; noise distractors when the
        gallery has some."""
        rows = []
        for name, retriever in self.galleries.items():
            for subset in retriever.subsets:
                key = f"{subset}/1"
                if key in retriever.query_keys:
                    image = image_file(retriever.assets.queries[retriever.query_keys[key]]["image"])
                    rows.append([image, key, subset, NOISE in retriever.ranges, *self.pair, 8, name])
        return rows

    @property
    def pair(self) -> tuple[str, str]:
        """The two models shown at first: the first two served (the second none when only one is)."""
        return self.models[0], (self.models[1] if len(self.models) > 1 else NONE)

    # -- Leaderboard tab ----------------------------------------------------------------------------------

    def board(self, metric, k, subset, zero_shot=False):
        """The leaderboard tab's tables (``zero_shot``: only its zero-shot rows); a bad metric, K or subset is a
        ``ValueError`` with the message to show."""
        k = whole(k, "K", 1, 1000)
        board = leaderboard(results=self.results, metric=metric, k=k, subset=None if subset == OVERALL else subset)
        return board.zero_shot() if zero_shot else board

    # -- layout -------------------------------------------------------------------------------------------

    def examples_cache(self) -> Path:
        """Where gradio caches the examples' outputs: named by the galleries' manifests, so rebuilt assets drop them."""
        digest = hashlib.sha256()
        for retriever in self.galleries.values():
            digest.update(json.dumps(retriever.assets.manifest["files"], sort_keys=True).encode())
        return space_assets_dir() / ".examples-cache" / digest.hexdigest()[:16]

    def blocks(self) -> gr.Blocks:
        os.environ.setdefault("GRADIO_EXAMPLES_CACHE", str(self.examples_cache()))  # gradio reads only this variable
        first = self.galleries[self.default]
        with gr.Blocks(title="LookBench") as demo:
            gr.Markdown(INTRO, elem_id="intro")
            with gr.Tab("Search"):
                with gr.Row(equal_height=False):
                    gallery = gr.Radio(list(self.galleries), value=self.default, label="Gallery", elem_id="gallery",
                                       scale=1)
                    with gr.Column(scale=3):
                        gallery_info = gr.Markdown(gallery_markdown(first.assets), elem_id="gallery-info")
                        progress = gr.Markdown(self.progress_note(), elem_id="preparing")
                timer = gr.Timer(2.0, active=self.preparing is not None)
                with gr.Row(equal_height=False):
                    with gr.Column(scale=1, min_width=260):  # the query, and what to search it with
                        image = gr.Image(label="Query image", sources=["upload", "webcam", "clipboard"], type="filepath",
                                         height=260, elem_id="query-image")
                        with gr.Row():
                            random_button = gr.Button("Random query", elem_id="random", min_width=100)
                            search_button = gr.Button("Search", variant="primary", elem_id="search", min_width=80)
                        query_id = gr.Textbox(label="Benchmark query", placeholder="empty: the image above is the query",
                                              info="<Subset>/<n>, e.g. RealStreetLook/3", elem_id="query-id")
                        annotation = gr.Markdown(elem_id="annotation")
                        model = gr.Dropdown(self.models, value=self.pair[0], label="Model", elem_id="model")
                        second = gr.Dropdown([NONE, *self.models], value=self.pair[1], label="Beside it",
                                             elem_id="second")
                        subset = gr.Dropdown([*first.subsets, ALL], value=ALL, label="Subset", elem_id="subset")
                        noise = NOISE in first.ranges
                        distractors = gr.Checkbox(noise, interactive=noise, label="Noise distractors in the gallery"
                                                  if noise else "Noise distractors (this gallery has none)")
                        k = gr.Slider(1, 50, value=10, step=1, label="top-k")
                        with gr.Row():
                            cutoff = gr.Textbox(label="Cutoff date", placeholder="e.g. 2025-01-01",
                                                info="random queries only after it", min_width=120)
                            seed = gr.Number(0, precision=0, label="Seed", min_width=80)
                        outfit = gr.Image(label="Source photo (a street look: the outfit, the item boxed in red)",
                                          interactive=False, height=220)
                    with gr.Column(scale=3):  # its results
                        with gr.Row(equal_height=False):
                            words = gr.Textbox(label="Describe the item (a text query, read by GR-Lite-mini-text)",
                                               placeholder="e.g. striped red long-sleeved v-neck top",
                                               max_length=MAX_WORDS, elem_id="words", scale=3, lines=1)
                            known = gr.Dropdown(first.vocabulary if self.readers else [], value=None,
                                                label="Add a word it knows", elem_id="known", scale=1, min_width=140)
                            with gr.Column(scale=1, min_width=150):
                                words_button = gr.Button("Search by words", variant="primary", elem_id="search-words",
                                                         size="sm")
                                describe_button = gr.Button("Words of the benchmark query", elem_id="describe", size="sm")
                        words_note = gr.Markdown(elem_id="words-note")
                        status = gr.Markdown(elem_id="status")
                        gr.HTML(legend(unmarked=True), elem_id="legend")
                        with gr.Row(equal_height=False):
                            with gr.Column(min_width=340):
                                panel_a = gr.HTML(elem_id="results-a")
                            with gr.Column(min_width=340, elem_id="column-b"):  # hidden while empty (CSS)
                                panel_b = gr.HTML(elem_id="results-b")
                        with gr.Accordion("The results as tables", open=True):
                            details_a = gr.Markdown(elem_id="details-a")
                            details_b = gr.Markdown(elem_id="details-b")
                with gr.Accordion("Shop the look: crop one garment of a street photo", open=False):
                    editor = gr.ImageEditor(label="Street photo", type="filepath", sources=["upload", "clipboard"],
                                            transforms=["crop"], brush=False, eraser=False, layers=False, height=320,
                                            elem_id="editor")
                    with gr.Row():
                        outfit_button = gr.Button("Load the current street look's outfit photo")
                        crop_button = gr.Button("Search with the crop", variant="primary")
                inputs = [image, query_id, subset, distractors, model, second, k, gallery]
                outputs = [status, words_note, annotation, outfit, panel_a, details_a, panel_b, details_b]
                run = dict(fn=self.search, inputs=inputs, outputs=outputs, preprocess=False, api_name=False)
                search_button.click(**{**run, "api_name": "search"})
                image.upload(lambda: "", outputs=query_id, api_name=False).then(**run)
                for control in (subset, distractors, model, second):
                    control.input(**run)
                k.release(**run)
                chosen = gr.State(False)  # the visitor chose the second model (none included): polls keep it
                second.input(lambda: True, outputs=chosen, api_name=False, queue=False)
                polled = dict(fn=self.poll, inputs=[gallery, model, second, chosen],
                              outputs=[gallery, progress, timer, model, second], api_name=False, queue=False)
                timer.tick(**polled)
                demo.load(**polled)  # a page opened after a model joined: its choices and the pair, not the start's
                # Every change of gallery (a visitor's, an example's) sets its controls; a visitor's also clears a
                # benchmark query of the other gallery, or searches an upload there. Neither checks the subset against
                # the dropdown's choices (preprocess=False): both run at once, and the first to finish changed them.
                gallery.change(self.choose_gallery, [gallery, subset], [subset, distractors, gallery_info, known],
                               preprocess=False, api_name=False)
                known.input(lambda text, word: " ".join([*str(text or "").split(), word or ""]).strip()[:MAX_WORDS],
                            [words, known], words, api_name=False, queue=False).then(
                    lambda: None, outputs=known, api_name=False, queue=False)
                gallery.input(self.search_image, [image, query_id, subset, model, second, k, gallery],
                              [image, query_id, *outputs], preprocess=False, api_name=False)
                # No preprocessing where the API is open: gradio's own check of a choice echoes it in full with a
                # traceback; the handlers check every value themselves (``whole``, ``retriever``, the subset).
                random_button.click(self.random, [subset, seed, cutoff, gallery], [image, query_id, seed, status],
                                    preprocess=False, api_name="random").success(**run)
                by_words = dict(fn=self.search_words, inputs=[words, query_id, subset, distractors, k, gallery],
                                outputs=outputs, preprocess=False)
                words_query = dict(fn=self.words_query, inputs=[words, query_id, gallery], outputs=[image, query_id],
                                   preprocess=False, api_name=False)
                words_button.click(**by_words, api_name="search_words").then(**words_query)
                words.submit(**by_words, api_name=False).then(**words_query)
                describe_button.click(self.describe, [query_id, gallery], words, preprocess=False,
                                      api_name="describe").success(
                    **by_words, api_name=False).then(**words_query)
                outfit_button.click(self.outfit_for_crop, [query_id, gallery], [editor, status], api_name=False)
                crop_button.click(self.crop, editor, [image, query_id, status], api_name=False).then(**run)
                gr.Examples(self.examples(), inputs, outputs, fn=self.search, cache_examples=True, cache_mode="lazy",
                            preprocess=False, label="Examples: a benchmark query of each subset of each gallery")
            with gr.Tab("Leaderboard"):
                leaderboard_tab(self.board, "" if self.results is not None else
                                "\n\nNo local results store given (`lookbench demo --results DIR` adds its runs).")
            with gr.Tab("Your results") as tab:
                self.yours.tab(tab)
        demo.queue(default_concurrency_limit=CONCURRENCY, max_size=64)
        return demo

    @property
    def launch_options(self) -> dict:
        """What ``Blocks.launch`` needs besides the address: the page's CSS, the upload limit, and the one folder of
        files the app hands gradio (the thumbnails ``requests.image_file`` writes)."""
        return {"css": CSS, "max_file_size": MAX_UPLOAD_BYTES, "show_error": True, "allowed_paths": [str(images_folder())]}

    def launch(self, host=None, port=None, announced=False, **kwargs):
        """``host`` None: gradio's GRADIO_SERVER_NAME, else 127.0.0.1 (loopback). Once it listens, one line gives
        its address (unless a waiting room ``announced`` it) and one says it is ready, flushed (a file or a pipe
        holds gradio's own lines back)."""
        demo = self.blocks()
        block = not kwargs.pop("prevent_thread_lock", False)
        demo.launch(server_name=host, server_port=port, prevent_thread_lock=True, quiet=True, **self.launch_options,
                    **kwargs)
        if not announced:
            print(f"Running on {demo.local_url.rstrip('/')}", flush=True)
        print(f"Ready: {', '.join(self.galleries)} with {', '.join(self.models)}", flush=True)
        if block:
            demo.block_thread()
        return demo


def serve(host=None, port=None, data=None, photos=None, results=None, assets_dir=None, shipped=None,
          models=DEFAULT_MODELS, room=None, **launch_kwargs):
    """Prepare (once) and load the galleries, then serve the app (``lookbench.space.start``): what ``lookbench demo``
    runs (``data``, default the embedded Mini; ``models``: those offered, each with prepared assets; ``results``: the
    stored results of its tabs) and, with ``shipped`` (an assets folder as ``lookbench stage`` ships it), the Hub Space."""
    from lookbench.space.start import start

    return start(lambda served, encoders: SpaceApp(served, results=results, models=models, encoders=encoders, data=data),
                 host, port, data, photos, assets_dir, shipped, models, room, **launch_kwargs)


if __name__ == "__main__":  # as a Hub Space: gradio reads GRADIO_SERVER_NAME / GRADIO_SERVER_PORT
    prepared = Path(__file__).resolve().parent / "assets"  # the galleries `lookbench stage` ships beside app.py
    serve(host=None, shipped=prepared if prepared.is_dir() else None)
