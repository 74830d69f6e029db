"""The Explore tab's events: :func:`wire` connects the components of :mod:`.layout` to the handlers of
:mod:`.handlers` (their session state in :mod:`.state`, what they show in :mod:`.views`), and
:func:`wire_to_evaluate` the Inspect view's button to the Evaluate tab.

The tab shows a batch results file as a leaderboard, agreement tables, disagreements and an item grid, all
following one active slice, and a self-contained HTML report to share. The queries, statistics and the report
are :mod:`augclip_demo.explore` (no Gradio there). Files come from the operator
(:class:`~augclip_demo.explore.shelf.Shelf`: listed by name, never a path from the client) or from a bounded
upload.
"""

from __future__ import annotations

from typing import Any

from ..binding import bind
from ..study.handlers import SliceStudyContext
from ..study.operator import OPERATOR
from ..study.wiring import wire_slice_form as wire_study_form
from . import handlers as on
from .handlers import ExploreContext


def wire(ctx: ExploreContext) -> None:
    """Every event of the tab, the form of "Make a study from this slice" included (the button to Evaluate:
    :func:`wire_to_evaluate`)."""
    tab = ctx.tab
    state, grid_inputs = tab.state, tab.grid_inputs
    private = _PRIVATE

    def then_views(event: Any) -> None:
        _then_views(ctx, event)

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
    wire_study_form(SliceStudyContext(settings=ctx.settings, shelf=ctx.shelf, operator=OPERATOR, tab=tab.study_form))


_PRIVATE = {"api_visibility": "private"}  # the page's own events: not an API for other programs


def _then_views(ctx: ExploreContext, event: Any) -> None:
    """After a file is opened or the slice changes: the quick views, then the slow ones."""
    tab = ctx.tab
    event.success(bind(on.stoppable_views, ctx), tab.view_inputs, tab.view_outputs, **_PRIVATE).success(
        bind(on.details, ctx), tab.detail_inputs, tab.detail_outputs, **_PRIVATE)


# ---------------------------------------------------------------------------------------------- from Batch
def wire_from_batch(ctx: ExploreContext, event: Any, handoff: Any, tabs: Any, tab_id: str = "explore") -> None:
    """After ``event`` (the Batch tab's Open in Explore, which fills the server-side state ``handoff``): the run
    opened here with its manifest and images, ``tabs`` (the page's) switched to this tab, then the views."""
    _then_views(ctx, event.success(bind(on.open_batch_run, ctx, tab_id=tab_id), [handoff, ctx.tab.state],
                                   [*ctx.tab.open_outputs, tabs], **_PRIVATE))


# ---------------------------------------------------------------------------------------------- to Evaluate
def wire_to_evaluate(ctx: ExploreContext, outputs: dict[str, Any], clip_choices: list[str], tabs: Any,
                     tab_id: str = "evaluate") -> None:
    """Open the inspected item in the Evaluate tab with the run's recorded settings: CLIP model, AugCLIP options,
    BPM (on, its parser) and the judge (on), so that Evaluate computes the record's numbers again where the
    server's models are the run's; the run's BPM models and judge model are said beside (explanations are new
    work there: the Explore tab keeps showing the run's own numbers).

    ``outputs``: the Evaluate inputs by :data:`.handlers.EVALUATE_FIELDS` name (a name not given is left alone;
    the values: :func:`.handlers.evaluate_values`); ``tabs``: the page's ``gr.Tabs``, switched to ``tab_id``."""
    names = [name for name in on.EVALUATE_FIELDS if name in outputs]
    handler = bind(on.handoff, ctx, names=names, clip_choices=clip_choices,
                   parser_choices=_choices(outputs.get("bpm_parser")), tab_id=tab_id)
    ctx.tab.to_evaluate.click(handler, [ctx.tab.state], [*(outputs[name] for name in names), tabs],
                              api_visibility="private")


def _choices(component: Any) -> list[str] | None:
    """The values a Radio / Dropdown offers (Gradio keeps (label, value) pairs), None for other components."""
    choices = getattr(component, "choices", None)
    if choices is None:
        return None
    return [choice[1] if isinstance(choice, (list, tuple)) else choice for choice in choices]
