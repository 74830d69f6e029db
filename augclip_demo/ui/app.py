"""A first, minimal page: status of the configured backbone and a single-edit scorer.

The full inspection bench (several edits, explanations, downloads) replaces this page.
"""

from __future__ import annotations

import os
from typing import Any

import gradio as gr

from ..attributes import Attributes
from ..config import Settings
from ..errors import AugclipError
from ..inference import get_encoder
from ..pipeline import Evaluator
from ..report import UNTRAINED_WARNING


def _status(settings: Settings) -> str:
    try:
        encoder = get_encoder(settings)
        text = f"CLIP model **{encoder.spec.label}** on **{encoder.device}**"
        if encoder.untrained:
            text += f" - **{UNTRAINED_WARNING}**"
        return text
    except AugclipError as exc:
        return f"**Model configuration problem:** {exc}"


def build_app(settings: Settings | None = None) -> gr.Blocks:
    settings = settings or Settings.from_env()

    def score(source: str | None, edited: str | None, target: str, source_text: str,
              source_attrs: str, target_attrs: str) -> tuple[list[list[Any]], str]:
        if not source or not edited:
            raise gr.Error("Upload a source image and an edited image first.")
        try:
            attrs = Attributes(source_attrs.splitlines(), target_attrs.splitlines())
            report = Evaluator(settings=settings).evaluate(source, edited, target, source_text or None, attrs)
        except AugclipError as exc:
            raise gr.Error(str(exc)) from None
        edit = report.edits[0]
        rows = [[key, "n/a" if value is None else round(value, 4)]
                for key, value in edit.metrics.items() if not key.startswith("clip_dir_aug")]
        return rows, report.verdict()

    with gr.Blocks(title="AugCLIP Studio") as demo:
        gr.Markdown("# AugCLIP Studio\nScore a text-guided image edit with AugCLIP and its baselines.")
        gr.Markdown(_status(settings))
        with gr.Row():
            source = gr.Image(type="filepath", label="Source image")
            edited = gr.Image(type="filepath", label="Edited image")
        target = gr.Textbox(label="Target text")
        source_text = gr.Textbox(label="Source text (optional, enables CLIPdir)")
        with gr.Row():
            source_attrs = gr.Textbox(label="Source attributes (one per line)", lines=4)
            target_attrs = gr.Textbox(label="Target attributes (one per line)", lines=4)
        button = gr.Button("Evaluate", variant="primary")
        table = gr.Dataframe(headers=["metric", "value"], label="Scores")
        verdict = gr.Markdown()
        button.click(score, [source, edited, target, source_text, source_attrs, target_attrs], [table, verdict],
                     api_name="score")
    return demo


def launch_kwargs() -> dict[str, Any]:
    """Arguments for ``demo.launch``: host and port from GRADIO_SERVER_NAME / _PORT (Gradio reads them too)."""
    return {"server_name": os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1")}
