"""The Explore tab: a batch results file as a leaderboard, agreement tables, disagreements and an item grid,
all following one active slice; a self-contained HTML report to share.

The queries, statistics and the report are :mod:`augclip_demo.explore` (no Gradio there). The page is in
parts: the components in :mod:`.explore_layout`, the handlers in :mod:`.explore_handlers` (their session state
in :mod:`.explore_state`, what they show in :mod:`.explore_views`), and here the wiring of the two. Files come
from the operator (:class:`~augclip_demo.explore.shelf.Shelf`: listed by name, never a path from the client) or
from a bounded upload.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ..config import Settings
from ..explore.shelf import Shelf
from . import explore_handlers as on
from .binding import bind
from .explore_handlers import ExploreContext
from .explore_judgments import StudyReader
from .explore_layout import ExploreTab, build_explore_layout, explore_help
from .storage import WorkFolders
from .study_tab import slice_study_control


def build_explore_tab(settings: Settings, *, folders: WorkFolders | None = None,
                      shelf: Shelf | None = None) -> EvaluateHandoff:
    """Lay out the tab and wire it; call inside ``gr.Blocks`` / ``gr.Tabs``. The returned handoff connects the
    Inspect view's button to the Evaluate tab (:meth:`EvaluateHandoff.wire`)."""
    if shelf is None:
        shelf = Shelf(settings.explore_files, judgments=StudyReader(settings.study_db_path))
        shelf.warm()  # the first listed file, opened while the server starts
    ctx = ExploreContext(settings=settings, shelf=shelf, folders=folders or WorkFolders())
    with gr.Tab("Explore", id="explore"):
        gr.Markdown(explore_help(settings))
        tab = build_explore_layout(shelf)
        _wire_explore_tab(tab, ctx)
        slice_study_control(settings, tab.state, shelf)  # ui/study_tab.py: operator only
    return EvaluateHandoff(tab.to_evaluate, tab.state, ctx)


def _wire_explore_tab(tab: ExploreTab, ctx: ExploreContext) -> None:
    """Every event of the tab (the button to Evaluate: :meth:`EvaluateHandoff.wire`)."""
    state, grid_inputs = tab.state, tab.grid_inputs
    private = {"api_visibility": "private"}  # the page's own events: not an API for other programs

    def then_views(event: Any) -> None:
        event.success(bind(on.stoppable_views, ctx), tab.view_inputs, tab.view_outputs, **private).success(
            bind(on.details, ctx), tab.detail_inputs, tab.detail_outputs, **private)

    then_views(tab.open.click(bind(on.open_results_file, ctx), [tab.file, tab.upload, state], tab.open_outputs,
                              **private))
    then_views(tab.apply.click(bind(on.apply, ctx), [state, *tab.slice_controls], [state], **private))
    then_views(tab.save.click(bind(on.save, ctx), [state, *tab.slice_controls], [state, tab.saved, tab.compare],
                              **private))
    then_views(tab.saved.input(bind(on.pick_saved, ctx), [state, tab.saved], [state, *tab.slice_controls],
                               **private))
    then_views(tab.compare.input(bind(on.compare_picked, ctx), [state], [state], **private))
    then_views(tab.judgments.input(bind(on.pick_judgments, ctx), [state, tab.judgments], [state], **private))
    regrid = bind(on.regrid, ctx)
    for control in grid_inputs:
        control.input(regrid, [state, *grid_inputs], [state, *tab.grid_outputs], **private)
    for control in (tab.ranking_a, tab.ranking_b):
        control.input(bind(on.refound, ctx), [state, tab.ranking_a, tab.ranking_b], [state, tab.found, tab.found2],
                      **private).success(regrid, [state, *grid_inputs], [state, *tab.grid_outputs], **private)
    for source, kind in ((tab.grid, "page_items"), (tab.rows, "page_items"), (tab.grid2, "page_items2"),
                         (tab.rows2, "page_items2"), (tab.found, "found"), (tab.found2, "found2")):
        source.select(bind(on.inspect, ctx, kind=kind), [state], tab.inspect_outputs, **private)
    for table in (tab.matrix, tab.human):
        table.select(bind(on.cell_items, ctx), [state], tab.cell_outputs, **private)
    tab.report_btn.click(bind(on.make_report, ctx), [state, tab.ranking_a, tab.ranking_b], [tab.report], **private)


# ---------------------------------------------------------------------------------------------- to Evaluate
class EvaluateHandoff:
    """Open the inspected item in the Evaluate tab with the run's recorded settings: CLIP model, AugCLIP options,
    BPM (on, its parser) and the judge (on), so that Evaluate computes the record's numbers again where the
    server's models are the run's; the run's BPM models and judge model are said beside (explanations are new
    work there: the Explore tab keeps showing the run's own numbers)."""

    #: the Evaluate inputs filled, in this order (a name the app does not pass is left alone)
    FIELDS = ("source", "edits", "target", "source_text", "instruction", "src_box", "tgt_box", "classifier", "C",
              "weighting", "include_images", "clip_model", "bpm_on", "bpm_parser", "judge_on")

    def __init__(self, button: gr.Button, state: gr.State, ctx: ExploreContext):
        self.button, self.state, self.ctx = button, state, ctx

    def wire(self, outputs: dict[str, Any], clip_choices: list[str], tabs: Any, tab_id: str = "evaluate") -> None:
        """Connect the button to the Evaluate tab's inputs (``outputs`` by :data:`FIELDS` name; the values:
        :func:`.explore_handlers.evaluate_values`)."""
        names = [name for name in self.FIELDS if name in outputs]
        handler = bind(on.handoff, self.ctx, names=names, clip_choices=clip_choices,
                       parser_choices=_choices(outputs.get("bpm_parser")), tab_id=tab_id)
        self.button.click(handler, [self.state], [*(outputs[name] for name in names), tabs],
                          api_visibility="private")


def _choices(component: Any) -> list[str] | None:
    """The values a Radio / Dropdown offers (Gradio keeps (label, value) pairs), None for other components."""
    choices = getattr(component, "choices", None)
    if choices is None:
        return None
    return [choice[1] if isinstance(choice, (list, tuple)) else choice for choice in choices]
