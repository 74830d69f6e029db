"""The Study tab's components (:func:`build`) and the Explore tab's "Make a study from this slice" form
(:func:`build_slice_form`): laid out here and returned as dataclasses; what they do is in :mod:`.handlers`, and
:mod:`.wiring` connects the two."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ...study import store
from ...study.questions import KINDS, QUESTION_IDS


@dataclass
class StudyTab:
    """The operator's controls, the report area (``out``), the follow timer and the export files; ``off``: why
    the operator's actions are off on this server (the controls are then hidden and the tab explains the CLI)."""

    token: gr.Textbox
    name: gr.Dropdown
    results: gr.File
    refresh: gr.Button
    count: gr.Number
    add: gr.Button
    close: gr.Button
    export: gr.Button
    live: gr.Checkbox
    out: gr.Markdown
    timer: gr.Timer
    files: gr.Files
    off: str | None = None


_ABOUT = ("Rating studies: people judge edits on their own page (`/study/rate#t=...`); this tab shows how they "
          "agree with each other and with the metrics. Create studies with `python -m augclip_demo study create` "
          "(or from a slice in the Explore tab); the operator token (`AUGCLIP_STUDY_OPERATOR_TOKEN`) unlocks the "
          "actions below: type it, then pick one of the server's studies. See docs/study.md.")

#: What the tab says when the operator's actions are off: the same steps on the command line.
_CLI = """**On the command line** (where the manifest and its images are; `--db PATH` picks the studies file):

- `python -m augclip_demo study create NAME MANIFEST.jsonl [--kind 2afc|rating]`: a study over a manifest's items
- `python -m augclip_demo study raters NAME --count N`: N raters, each with a private link (shown once)
- `python -m augclip_demo study status NAME [--results RESULTS.jsonl]`: progress and agreement
- `python -m augclip_demo study close NAME`, then `study export NAME`: the judgments as a manifest and as CSV

Rating links work on this page whether or not the operator's actions are on (docs/study.md)."""


def build(off: str | None = None) -> StudyTab:
    """Lay out the Study tab (call inside the page's ``gr.Tabs``); nothing is wired here. ``off``: why the
    operator's actions are off (:func:`.operator.operator_off`): the tab then says so and explains the CLI."""
    with gr.Tab("Study", id="study"):
        if off:
            gr.Markdown(f"Rating studies: people judge edits on their own page (`/study/rate#t=...`).\n\n"
                        f"**{off}**\n\n{_CLI}", elem_id="study-off")
        else:
            gr.Markdown(_ABOUT)
        with gr.Column(visible=not off):
            with gr.Row():
                token = gr.Textbox(label="Operator token", type="password", max_length=200,
                                   elem_id="study-operator-token")
                # the server's studies, listed once the token is checked (a custom name is checked by the store)
                name = gr.Dropdown([], value=None, label="Study (type the token to list them)",
                                   allow_custom_value=True, elem_id="study-name")
                results = gr.File(label="Results of `batch` on the study's manifest (optional)", file_types=[".jsonl"],
                                  type="filepath", elem_id="study-results")
            with gr.Row():
                refresh = gr.Button("Show agreement", variant="primary", elem_id="study-show")
                count = gr.Number(label="Raters to add", value=1, minimum=1, maximum=store.MAX_RATERS_PER_CALL,
                                  precision=0)
                add = gr.Button("Add raters", elem_id="study-add")
                close = gr.Button("Close study", variant="stop", elem_id="study-close")
                export = gr.Button("Export", elem_id="study-export")
                live = gr.Checkbox(label="Refresh every 30 s", value=False, elem_id="study-live")
            out = gr.Markdown(elem_id="study-report")
            timer = gr.Timer(30.0, active=False)
            files = gr.Files(label="Exports")
    return StudyTab(token=token, name=name, results=results, refresh=refresh, count=count, add=add, close=close,
                    export=export, live=live, out=out, timer=timer, files=files, off=off)


@dataclass
class SliceStudyForm:
    """The design of a study over the active slice, its button and the line that says what was made."""

    token: gr.Textbox
    name: gr.Textbox
    kind: gr.Radio
    questions: gr.CheckboxGroup
    per_unit: gr.Number
    per_rater: gr.Number
    repeats: gr.Number
    make: gr.Button
    said: gr.Markdown
    state: Any  # the Explore tab's state, read for the open file and the active slice

    @property
    def make_inputs(self) -> list[Any]:
        """The make event's inputs, in :func:`.handlers.make_study_from_slice`'s order."""
        return [self.token, self.name, self.kind, self.questions, self.per_unit, self.per_rater, self.repeats,
                self.state]


def build_slice_form(state: Any) -> SliceStudyForm:
    """The Explore tab's "Make a study from this slice" accordion (call inside that tab; ``state``: its state);
    nothing is wired here."""
    with gr.Accordion("Make a study from this slice (operator only)", open=False):
        gr.Markdown("People then judge the slice's edits on the rater page: pairs of edits of one source (2AFC) or "
                    "1-5 ratings. Add raters in the Study tab. See docs/study.md.")
        with gr.Row():
            token = gr.Textbox(label="Operator token", type="password", max_length=200,
                               elem_id="aug-explore-study-token")
            name = gr.Textbox(label="Study name", max_length=store.MAX_NAME, elem_id="aug-explore-study-name")
            kind = gr.Radio(list(KINDS), value="2afc", label="Kind", elem_id="aug-explore-study-kind")
            questions = gr.CheckboxGroup(list(QUESTION_IDS), value=["overall"], label="Questions ('overall' is "
                                         "always asked)", elem_id="aug-explore-study-questions")
        with gr.Row():
            per_unit = gr.Number(3, label="Judgments per unit", minimum=1, maximum=1000, precision=0)
            per_rater = gr.Number(0, label="Units per rater (0: all)", minimum=0, maximum=store.MAX_UNITS,
                                  precision=0)  # the page sends 0 for an empty field
            repeats = gr.Number(2, label="Attention checks per rater", minimum=0, maximum=1000, precision=0)
            make = gr.Button("Make a study from this slice", elem_id="aug-explore-study-make")
        said = gr.Markdown(elem_id="aug-explore-study-info")
    return SliceStudyForm(token=token, name=name, kind=kind, questions=questions, per_unit=per_unit,
                          per_rater=per_rater, repeats=repeats, make=make, said=said, state=state)
