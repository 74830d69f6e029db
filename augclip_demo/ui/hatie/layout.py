"""The HATIE tab's components (a tab of the Evaluate tab's results): :func:`build` lays them out and
returns them as a :class:`HatieTab`; what its one button does is in :mod:`.handlers` (after Evaluate,
HATIE's criteria for every edit as bars, their components on demand, and the masks the criteria used), and
:mod:`.wiring` connects the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ...hatie.criteria import EDIT_TYPES
from ...papers import HATIE
from .. import first_contact
from ..common import empty_table

AUTO = "auto (from the instruction)"
HELP = (f"**HATIE** ({HATIE.short}: *{HATIE.title}*) scores an edit on Object / Background Fidelity and Consistency; which of them "
        "apply depends on the edit type. Image Quality is the FID of a set of edits, so a single pair shows "
        "*needs a set* (batch runs compute it: `augclip-demo hatie table`). Measures and weights are those of "
        "HATIE's published code (CLIP ViT-B/32, DINOv2, LPIPS, L2); each component below shows its weight in "
        "its criterion and its share of it. Regions come from BPM's GroundingDINO + SAM, where HATIE used a "
        "closed-vocabulary Mask R-CNN (see docs/hatie.md).")


@dataclass
class HatieTab:
    """The HATIE tab's components, plus the Evaluate tab's it reads (the instruction, the CLIP model) and the
    page's session state (it reads the session's report and writes HATIE's values into it)."""

    edit_type: gr.Dropdown
    run_btn: gr.Button
    info: gr.Markdown
    plots: gr.Gallery
    shares: gr.Gallery
    components: gr.Dataframe
    masks: gr.Gallery
    # the Evaluate tab's
    instruction: Any
    clip_model: Any
    session_state: Any

    @property
    def run_inputs(self) -> list[Any]:
        return [self.instruction, self.edit_type, self.clip_model, self.session_state]

    @property
    def run_outputs(self) -> list[Any]:
        # the report gains HATIE in place; the page's state is left alone (see EvaluateTab.bpm_outputs)
        return [self.info, self.plots, self.shares, self.components, self.masks]


#: What the components table says before HATIE has run (not Gradio's "1 2 3" headers).
_EMPTY_COMPONENTS = "No components yet: press Run HATIE (after Evaluate) to see every measure of each criterion."


def build(session_state: Any, instruction: Any, clip_model: Any) -> HatieTab:
    """Lay out the HATIE tab (inside the page's Tabs); nothing is wired here."""
    with gr.Tab("HATIE", id="hatie"):
        info = gr.Markdown(HELP, label="HATIE: verdict and notes", elem_id="aug-hatie-info")
        with gr.Row():
            edit_type = gr.Dropdown([AUTO, *EDIT_TYPES], value=AUTO, label="HATIE edit type", elem_id="aug-hatie-type")
            run_btn = gr.Button("Run HATIE", size="sm", elem_id="aug-hatie-run")
        first_contact.note("hatie", "tab")
        plots = gr.Gallery(label="Criteria per edit", columns=2, height=360, object_fit="contain",
                           elem_id="aug-hatie-bars")
        shares = gr.Gallery(label="What each criterion is made of (share of value x weight)", columns=2, height=420,
                            object_fit="contain", elem_id="aug-hatie-shares")
        with gr.Accordion("Components (every measure, its weight in the criterion and its share of it)", open=True):
            components = gr.Dataframe(empty_table(_EMPTY_COMPONENTS), label="HATIE components", show_label=False,
                                      interactive=False, wrap=True, elem_id="aug-hatie-components")
        masks = gr.Gallery(label="Masks the criteria used", columns=4, height=300, object_fit="contain",
                           elem_id="aug-hatie-masks")
    return HatieTab(edit_type=edit_type, run_btn=run_btn, info=info, plots=plots, shares=shares, components=components,
                    masks=masks, instruction=instruction, clip_model=clip_model, session_state=session_state)
