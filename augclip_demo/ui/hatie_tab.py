"""The app's HATIE tab: after Evaluate, HATIE's criteria for every edit as bars, their components
on demand, and the masks the criteria used. Self-contained: :func:`build_hatie_tab` adds the tab and
wires its one button; it reads the session's report and writes HATIE's values into it.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import gradio as gr
import pandas as pd

from ..config import Settings
from ..errors import InputError
from ..hatie.criteria import EDIT_TYPES, HatieOptions
from ..papers import HATIE
from . import first_contact
from .guard import scrub_paths, user_facing

AUTO = "auto (from the instruction)"
HELP = (f"**HATIE** ({HATIE.short}: *{HATIE.title}*) scores an edit on Object / Background Fidelity and Consistency; which of them "
        "apply depends on the edit type. Image Quality is the FID of a set of edits, so a single pair shows "
        "*needs a set* (batch runs compute it: `augclip-demo hatie table`). Measures and weights are those of "
        "HATIE's published code (CLIP ViT-B/32, DINOv2, LPIPS, L2); each component below shows its weight in "
        "its criterion and its share of it. Regions come from BPM's GroundingDINO + SAM, where HATIE used a "
        "closed-vocabulary Mask R-CNN (see docs/hatie.md).")


def run_hatie(settings: Settings, session: Any, instruction: str, edit_type: str | None) -> list[Any]:
    """HATIE for the session's report (the page's Evaluate result); returns the per-edit results."""
    from ..pipeline import Evaluator

    if session is None or session.report is None:
        raise InputError("Nothing to score yet: press Evaluate first.")
    if session.clip_model != settings.clip_model:
        raise InputError("The CLIP model changed since the last evaluation: press Evaluate to encode with it.")
    if why := first_contact.cannot_run(settings, "hatie"):
        raise InputError(why)
    given = None if not edit_type or edit_type == AUTO else edit_type
    if not (instruction or "").strip() and given is None:
        raise InputError("HATIE needs the editing instruction (under the target text) or an edit type chosen here.")
    report = Evaluator(settings=settings).add_hatie(session.report, (instruction or "").strip() or None,
                                                    edit_type=given, options=HatieOptions())
    return list(report.arrays.hatie)


def build_hatie_tab(session_state: Any, instruction: Any, clip_model: Any,
                    settings_for: Callable[[str | None], Settings]) -> None:
    """Add the HATIE tab (inside the page's Tabs) and wire its button."""
    from ..explain.hatie_panel import component_rows, figure_image, hatie_figure, mask_views, share_figure

    with gr.Tab("HATIE", id="hatie"):
        info = gr.Markdown(HELP, elem_id="aug-hatie-info")
        with gr.Row():
            kind = gr.Dropdown([AUTO, *EDIT_TYPES], value=AUTO, label="HATIE edit type", elem_id="aug-hatie-type")
            run = gr.Button("Run HATIE", size="sm", elem_id="aug-hatie-run")
        first_contact.note("hatie", "tab")
        plots = gr.Gallery(label="Criteria per edit", columns=2, height=360, object_fit="contain",
                           elem_id="aug-hatie-bars")
        shares = gr.Gallery(label="What each criterion is made of (share of value x weight)", columns=2, height=420,
                            object_fit="contain", elem_id="aug-hatie-shares")
        with gr.Accordion("Components (every measure, its weight in the criterion and its share of it)", open=True):
            components = gr.Dataframe(interactive=False, wrap=True, elem_id="aug-hatie-components")
        masks = gr.Gallery(label="Masks the criteria used", columns=4, height=300, object_fit="contain",
                           elem_id="aug-hatie-masks")

    @user_facing
    def on_run(instruction_value, edit_type, clip, state, progress=gr.Progress()):
        progress(0.05, desc="HATIE: detecting, segmenting, measuring")
        results = run_hatie(settings_for(clip), state, instruction_value, edit_type)
        # The E-number and short name, as the score table, gallery and maps name the edit.
        # By position: two uploads may share a file name (one result per edit, in the report's order).
        label = {id(r): name.label for r, name in zip(results, state.report.edit_names())}
        figures = [(figure_image(hatie_figure(r, label[id(r)])), label[id(r)]) for r in results]
        parts = [(figure_image(share_figure(r, label[id(r)])), label[id(r)]) for r in results if r.scores is not None]
        rows = [{"edit": label[id(r)], **row} for r in results for row in component_rows(r)]
        views = [view for r in results for view in mask_views(r, label[id(r)])]
        kinds = "; ".join(f"{label[id(r)]}: {r.edit_type.edit_type or 'none'} ({r.edit_type.reason})" for r in results)
        notes = sorted({n for r in results for n in r.notes})
        text = HELP + f"\n\n**Edit type**: {html.escape(scrub_paths(kinds))}"
        if notes:
            text += "\n\n" + "\n".join(f"- {html.escape(scrub_paths(n))}" for n in notes)
        return {info: text, plots: figures, shares: parts or None, components: _rounded(pd.DataFrame(rows)),
                masks: views or None, session_state: state}

    run.click(on_run, inputs=[instruction, kind, clip_model, session_state],
              outputs=[info, plots, shares, components, masks, session_state], api_name="hatie")


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    """Values and weights to 4 decimals, shares as percentages (what a reader compares)."""
    out = frame.copy()
    for column in ("value", "weight", "weight in criterion"):
        if column in out:
            out[column] = out[column].map(lambda v: None if v is None or pd.isna(v) else round(float(v), 4))
    if "share" in out:
        out["share"] = out["share"].map(lambda v: "" if v is None or pd.isna(v) else f"{100 * float(v):.1f}%")
    return out
