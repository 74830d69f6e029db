"""The Batch tab's events: :func:`wire` connects the components of :mod:`.layout` to the handlers of
:mod:`.handlers` (the ``/batch`` API endpoint included)."""

from __future__ import annotations

import gradio as gr

from ..binding import bind
from .handlers import (
    BatchContext,
    hide_stop,
    load_example_files,
    score_upload,
    show_needs,
    show_stop,
    stop_run,
)


def wire(ctx: BatchContext) -> None:
    """Every event of the Batch tab: the note beside Run, the shipped examples, Run (the /batch endpoint) and
    Stop."""
    tab = ctx.tab
    # No triggers: on page load and on every change of the two inputs.
    gr.on(None, bind(show_needs, ctx), [tab.clip_model, tab.metrics], tab.needs, api_name=False,
          show_progress="hidden")
    tab.example_btn.click(bind(load_example_files, ctx), None, [tab.manifest, tab.images], api_name=False)
    # One batch at a time: a batch fills the CPU / GPU by itself.
    # Stop shows first (a second listener on Run would wait for the run), and goes when the run ends.
    run = tab.run_btn.click(bind(show_stop, ctx), None, tab.stop_btn, api_name=False, show_progress="hidden").then(
        bind(score_upload, ctx), tab.run_inputs, tab.run_outputs, api_name="batch", concurrency_limit=1,
        concurrency_id="batch")
    # The page's .then follows a finished or cancelled run, not a refused one: hide on success and on failure
    # (a cancel counts as a failure).
    run.success(bind(hide_stop, ctx), None, tab.stop_btn, api_name=False, show_progress="hidden")
    run.failure(bind(hide_stop, ctx), None, tab.stop_btn, api_name=False, show_progress="hidden")
    # Stop cancels the run's event (the handler's CancelWatch stops the runner), queued or running, then shows
    # what that run kept (the cancelled event's own outputs never reach the page).
    tab.stop_btn.click(bind(stop_run, ctx), None, [tab.stop_btn, *tab.run_outputs], cancels=[run], api_name=False,
                       show_progress_on=[tab.summary])  # while the stopped run writes what it kept
