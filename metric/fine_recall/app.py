"""Gradio Space of the `lookbench/fine_recall` metric: paste rankings and annotations as JSON, get the scores.

evaluate's stock `launch_gradio_widget` cannot serve this metric (its one-table input has no room for the
`gallery`, `k` and `mode` arguments, and it targets a Gradio API that no longer exists), so the Space
builds the same kind of page itself.
"""
import json
import re
from pathlib import Path

import evaluate
import gradio as gr

HERE = Path(__file__).resolve().parent
# The module next to this file, by its file path: evaluate.load(folder) would load <folder>/<folder name>.py, and a
# Space runs from /home/user/app (that is, app.py itself). The Space runs exactly the code it ships.
metric = evaluate.load(str(HERE / "fine_recall.py"))

EXAMPLE_GALLERY = [
    {"category": "top", "main_attribute": "crew neck",
     "attributes": [{"name": "neckline", "value": "crew"}, {"name": "sleeve", "value": "long"}]},
    {"category": "top", "main_attribute": "v-neck",
     "attributes": [{"name": "neckline", "value": "v"}, {"name": "sleeve", "value": "long"}]},
    {"category": "dress", "main_attribute": "midi",
     "attributes": [{"name": "length", "value": "midi"}, {"name": "pattern", "value": "floral"}]},
    {"category": "dress", "main_attribute": "midi",
     "attributes": [{"name": "length", "value": "midi"}, {"name": "pattern", "value": "solid"}]},
]
EXAMPLE_REFERENCES = [dict(EXAMPLE_GALLERY[0], outfit_id="look-1"), dict(EXAMPLE_GALLERY[2], outfit_id="look-1")]
EXAMPLE_PREDICTIONS = [[1, 0, 2], [3, 2, 0]]


def score(predictions, references, gallery, k, mode):
    """Parse the JSON inputs and compute the metric. Whatever is refused is the page's message, never a stack trace:
    the metric refuses bad input (K beyond the rankings, too many Ks, ...) with a ValueError, and anything else it
    raises is shown with its type."""
    inputs = {}
    for name, text in (("predictions", predictions), ("references", references), ("gallery", gallery)):
        try:
            inputs[name] = json.loads(text)
        except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError; deep nesting recurses
            raise gr.Error(f"{name} is not JSON this page can read ({type(error).__name__}: {error})") from None
    try:
        cutoffs = [int(value) for value in re.split(r"[\s,]+", k.strip()) if value]
    except ValueError:
        raise gr.Error(f"k must be whole numbers separated by commas, got {k!r}") from None
    try:
        return metric.compute(**inputs, k=cutoffs, mode=mode)
    except Exception as error:
        raise gr.Error(str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}") from error


def card():
    """The metric card without its YAML header."""
    text = (HERE / "README.md").read_text(encoding="utf-8")
    return re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)


with gr.Blocks(title="LookBench Fine Recall") as demo:
    gr.Markdown(f"# Metric: lookbench/fine_recall\n{metric.info.description}")
    with gr.Row():
        predictions_box = gr.Textbox(
            json.dumps(EXAMPLE_PREDICTIONS), lines=8, label="predictions (ranked gallery rows per query)"
        )
        references_box = gr.Textbox(
            json.dumps(EXAMPLE_REFERENCES, indent=1), lines=8, label="references (query annotations)"
        )
        gallery_box = gr.Textbox(
            json.dumps(EXAMPLE_GALLERY, indent=1), lines=8, label="gallery (annotation of every gallery row)"
        )
    with gr.Row():
        k_box = gr.Textbox("1, 2", label="k (cut-offs)")
        mode_box = gr.Radio(["strict", "leaderboard"], value="strict", label="mode")
    button = gr.Button("Compute", variant="primary")
    output = gr.JSON(label="scores and their 95 % intervals, ci95 (percent)")
    button.click(score, [predictions_box, references_box, gallery_box, k_box, mode_box], output, api_name="score")
    gr.Markdown(card())

if __name__ == "__main__":
    demo.launch()
