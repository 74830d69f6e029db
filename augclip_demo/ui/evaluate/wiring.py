"""The Evaluate tab's events: :func:`wire` connects the components of :mod:`.layout` to the handlers of
:mod:`.handlers`, API endpoints included (on hidden buttons where the page has none).

Pressing Evaluate runs three stages, each updating the page when it finishes: the scores (fast; the
``/evaluate`` API endpoint), then the explanations (relevancy maps, hyperplane views, ranking charts;
``/explain``), then BPM when enabled (``/bpm``). Changing an AugCLIP option re-scores from the cached
embeddings and refreshes the explanations.
"""

from __future__ import annotations

from typing import Any

from ..binding import bind
from . import handlers as on
from .handlers import EvaluateContext


def chain_later_stages(ctx: EvaluateContext, event: Any, with_bpm: bool = True) -> None:
    """After new scores (``event``): the explanations, BPM and the judge (``with_bpm``), then the downloads."""
    tab = ctx.tab
    # The results changed: the old comparison goes at once (a branch of its own, so the first
    # result does not wait for it); it is rebuilt when next asked for.
    event.success(bind(on.reset_comparison, ctx), [tab.session_state], tab.comparison_outputs, api_name=False,
                  show_progress="hidden")
    # Later stages show their progress in their own tab, so the scores stay readable meanwhile.
    follow = event.success(bind(on.explain, ctx), [tab.explain_on, tab.session_state], tab.explain_outputs,
                           api_name=False, show_progress_on=[tab.relevancy_info])
    follow = follow.success(bind(on.show_other_maps, ctx), [tab.session_state, tab.edit_pick], tab.relevancy_outputs,
                            api_name=False, show_progress_on=tab.relevancy_outputs[1:])  # the CLIP-T and CLIPdir maps
    follow = follow.success(bind(on.explain_rest, ctx), [tab.session_state], tab.rest_outputs, api_name=False,
                            show_progress_on=[tab.umap_plot])
    follow = follow.success(bind(on.show_rankings, ctx), [tab.session_state, tab.edit_pick], tab.ranking_outputs,
                            api_name=False, show_progress="hidden")
    if with_bpm:
        follow = follow.success(bind(on.bpm_stage, ctx), tab.bpm_inputs, tab.bpm_outputs, api_name=False,
                                show_progress_on=[tab.bpm_info])
        follow = follow.success(bind(on.judge_stage, ctx), [tab.judge_on, tab.instruction, tab.clip_model,
                                                            tab.session_state],
                                tab.judge_outputs, api_name=False, show_progress_on=[tab.judge_info])
    follow = follow.then(bind(on.complete_downloads, ctx), [tab.session_state], tab.downloads, api_name=False,
                         show_progress="hidden")
    # A comparison the user opened while the stages ran is rebuilt with what came since (BPM, judge).
    follow.then(bind(on.refresh_comparison, ctx), [tab.session_state], tab.comparison_outputs, api_name=False,
                show_progress="hidden")


def wire(ctx: EvaluateContext) -> None:
    """Every event of the Evaluate tab, and its API endpoints (on hidden buttons where the page has none)."""
    tab = ctx.tab
    evaluate_stage, page_outputs = bind(on.evaluate, ctx, archive=False), [*tab.score_outputs, tab.status_box]
    chain_later_stages(ctx, tab.evaluate_btn.click(evaluate_stage, tab.evaluate_inputs, page_outputs, api_name=False))
    chain_later_stages(ctx, tab.rescore_btn.click(bind(on.rescore, ctx), tab.rescore_inputs, tab.score_outputs,
                                                 api_name=False), False)
    rescore_if_evaluated = bind(on.rescore_if_evaluated, ctx)
    for control in (tab.classifier, tab.weighting, tab.include_images):
        chain_later_stages(ctx, control.change(rescore_if_evaluated, tab.rescore_inputs, tab.score_outputs,
                                              api_name=False), False)
    chain_later_stages(ctx, tab.C.submit(rescore_if_evaluated, tab.rescore_inputs, tab.score_outputs, api_name=False),
                      False)
    # Stand-alone endpoints for API users (same session as their /evaluate call), on hidden buttons.
    tab.evaluate_api.click(bind(on.evaluate, ctx, archive=True), tab.evaluate_inputs, tab.score_outputs,
                           api_name="evaluate")
    tab.rescore_api.click(bind(on.rescore, ctx, archive=True), tab.rescore_inputs, tab.score_outputs,
                          api_name="rescore")
    tab.explain_api.click(bind(on.explain, ctx, archive=True), [tab.explain_on, tab.session_state],
                          tab.explain_outputs, api_name="explain")
    # .input: the user's pick (the explanation stage sets the first pick and draws what it shows itself)
    tab.edit_pick.input(bind(on.pick_edit, ctx), [tab.session_state, tab.edit_pick],
                        [*tab.figure_outputs, tab.exact_plot], api_name=False)
    tab.edit_pick.input(bind(on.show_bpm_pick, ctx), [tab.session_state, tab.edit_pick], tab.bpm_info,
                        api_name=False, show_progress="hidden")
    comparison = bind(on.show_comparison, ctx)
    tab.comparison_tab.select(comparison, [tab.session_state], tab.comparison_outputs, api_name=False)
    tab.comparison_btn.click(comparison, [tab.session_state], tab.comparison_outputs, api_name=False)
    tab.bpm_api.click(bind(on.bpm_stage, ctx, archive=True), tab.bpm_inputs, tab.bpm_outputs, api_name="bpm")
    tab.bpm_parse_btn.click(bind(on.parse_instruction, ctx), [tab.instruction, tab.bpm_parser, tab.clip_model],
                            [*tab.parse_fields, tab.bpm_parse_info], api_name="bpm_parse")
    # the page's button renders HTML; /bpm_fields answers plain values
    tab.bpm_btn.click(bind(on.bpm_on_fields, ctx, plain=False), tab.bpm_field_inputs, tab.bpm_outputs,
                      api_name=False, show_progress_on=[tab.bpm_info])
    tab.bpm_fields_btn.click(bind(on.bpm_on_fields, ctx, plain=True), tab.bpm_field_inputs, tab.bpm_outputs,
                             api_name="bpm_fields")
    tab.extract_btn.click(bind(on.extract_attributes, ctx), [tab.source, tab.target, tab.source_text, tab.provider,
                                                             tab.clip_model, tab.session_state],
                          [tab.src_box, tab.tgt_box, tab.provider_info, tab.session_state],
                          api_name="extract_attributes")
    tab.load_btn.upload(bind(on.load_attributes, ctx), tab.load_btn, [tab.src_box, tab.tgt_box], api_name=False)
    tab.save_btn.click(bind(on.save_attributes, ctx), [tab.src_box, tab.tgt_box, tab.session_state], tab.save_btn,
                       api_name=False)
    if tab.example_block is not None:
        # Load the example into the inputs, then evaluate it with the page's current options.
        chain_later_stages(ctx, tab.example_block.load_input_event.then(evaluate_stage, tab.evaluate_inputs,
                                                                       page_outputs, api_name=False))
    tab.edits.change(bind(on.show_edits, ctx), tab.edits, tab.gallery, api_name=False)
    tab.provider.change(bind(on.describe_provider, ctx), tab.provider, tab.provider_info, api_name=False)
    # /comparison answers plain values (the fragment, the HTML file for the client to download): the page's button
    # above shows and hides its download button. Last, so the events above keep their order.
    tab.comparison_api.click(bind(on.comparison_answer, ctx), [tab.session_state], tab.comparison_outputs,
                             api_name="comparison")
