"""The leaderboard Space's page (``app.Board.blocks``): the ranked tables with their controls, the plot, the
submissions' verdicts and the "Your results" tab, drawn from a ``Board`` it is given; the Board keeps the state."""
from __future__ import annotations

import gradio as gr

from lookbench.leaderboard.render import GROUPS_NOTE, ZERO_SHOT_NOTE
from lookbench.results.trust import CONSISTENT, LADDER, VERIFIED_NOTE
from lookbench.schema import TEST_SUBSETS
from lookbench.settings import METRICS
from lookbench.space.board.facts import ANY_SIZE, FILTERS_NOTE, SIZES
from lookbench.space.views import KS, OVERALL, board_page
from lookbench.terminal import markdown_safe

CONCURRENCY = 2

INTRO = f"""# LookBench leaderboard
The published LookBench leaderboard beside the community's submissions. A submission is a result **with its
rankings** (`lookbench submit`, a pull request on the results repo); this Space re-judges every ranked item against the
data's own ground truth and recomputes every score it claims (`lookbench verify`), and reads the reproduction records
of the results repo (`lookbench reproduce-submission`) signed by a key its card lists, recomputing their agreement
from both rankings. The
**verified** column says how far each row can be trusted, strongest first (the legend under the table):
{", ".join(f"**{markdown_safe(level.name)}**" for level in LADDER)}.
**{CONSISTENT}**: the claimed scores follow from the submitted rankings, which does not show that a model produced them.
Rows below {CONSISTENT} are never ranked among the rows above."""
# The legend under the tables: VERIFIED_NOTE as Markdown shows it (a failed check's "<reason>" is no HTML tag).
LEGEND = "\n".join(markdown_safe(line) for line in VERIFIED_NOTE.split("\n"))


def blocks(board) -> gr.Blocks:
    """The board's page: its intro, the ranked tables (``board_tab``), the submitters' own results, and the API."""
    from lookbench.space.board.browse import SubmittedResults

    with gr.Blocks(title="LookBench leaderboard") as demo:
        gr.Markdown(INTRO)
        with gr.Tab("Leaderboard"):
            board_tab(board)
        with gr.Tab("Your results") as tab:
            SubmittedResults(board).tab(tab)
        gr.api(board.api_board, api_name="leaderboard")
    demo.queue(default_concurrency_limit=CONCURRENCY, max_size=64)
    return demo

def board_tab(board) -> None:
    """The ranked tables with their controls, the plot and the submissions' verdicts."""
    with gr.Row():
        status = gr.Markdown(board.status, elem_id="status")  # a callable: read at each page load
        refresh = gr.Button("Refresh", scale=0, elem_id="refresh")
    with gr.Row():
        metric = gr.Radio(list(METRICS), value="fine", label="Metric")
        k = gr.Dropdown(list(KS), value=1, label="K")
        subset = gr.Dropdown([OVERALL, *TEST_SUBSETS], value=OVERALL, label="Subset", elem_id="subset")
        by_release = gr.Checkbox(False, label="Per release (the score on each release's queries)")
    with gr.Row():
        open_weights = gr.Checkbox(False, label="Open weights only", elem_id="open-weights")
        size = gr.Dropdown(list(SIZES), value=ANY_SIZE, label="Size (parameters)", elem_id="size")
        trained_before = gr.Textbox(label="Declared training cutoff on or before", placeholder="e.g. 2024-06-01",
                                    elem_id="trained-before")
        trusted = gr.Checkbox(False, label="Reproduced or scored sealed only", elem_id="trusted")
        zero_shot = gr.Checkbox(False, label="Zero-shot only (not trained on the data's source)", elem_id="zero-shot")
    generation = gr.State(0)  # moved on by each refresh, so the tables are drawn again

    @gr.render(inputs=[metric, k, subset, by_release, open_weights, size, trained_before, trusted, zero_shot,
                       generation])
    def _board(*controls):
        try:
            ranked = board.board(*controls[:-1])
        except ValueError as err:
            gr.Markdown(f"⚠️ {markdown_safe(err)}")
            return
        board_page(ranked, f"{GROUPS_NOTE}\n\n{ZERO_SHOT_NOTE}\n\n{LEGEND}\n\n{FILTERS_NOTE}")

    with gr.Accordion("Submissions and their verification", open=True):
        table = gr.Dataframe(board.submissions, headers=["model", "submission", "verified"], interactive=False,
                             elem_id="submissions")

    def _refresh(count):
        return board.refresh_from_page(), count + 1, board.submissions()

    refresh.click(_refresh, generation, [status, generation, table], api_name="refresh")
