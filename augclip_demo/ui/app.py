"""The page: :func:`build_app` lays out the tabs and connects the Evaluate tab's events to their handlers.

The Evaluate tab's components are in :mod:`.evaluate_layout`, its handlers in :mod:`.evaluate_handlers`
(logic in :mod:`.session`, rendering in :mod:`.views`); the other tabs are modules of their own.

Pressing Evaluate runs three stages, each updating the page when it finishes: the scores (fast;
the ``/evaluate`` API endpoint), then the explanations (relevancy maps, hyperplane views, ranking
charts; ``/explain``), then BPM when enabled (``/bpm``). Changing an AugCLIP option re-scores from
the cached embeddings and refreshes the explanations.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr

from ..config import Settings
from ..inference.needs import web_app_settings
from . import evaluate_handlers as on
from . import first_contact, views
from . import session as logic
from .batch_handlers import (
    BatchContext,
    hide_stop,
    load_example_files,
    score_upload,
    show_needs,
    show_stop,
    stop_run,
)
from .batch_tab import build_batch_tab
from .binding import bind
from .evaluate_handlers import EvaluateContext, page_settings
from .evaluate_layout import EvaluateOffer, build_evaluate_tab, evaluate_offer
from .examples import load_examples
from .explore_tab import build_explore_tab
from .guard import MEMORY_GATE
from .hatie_handlers import HatieContext, show_hatie
from .inputs import bound_inputs
from .status import check_region_models, model_status, status_html
from .storage import WorkFolders
from .study_routes import study_routes
from .study_tab import build_study_tab

_CLIP_CHOICES = ["ViT-B-16/openai", "ViT-B-32/openai", "ViT-L-14/openai", "shapes:tiny", "random:ViT-B-16", "random:tiny"]

CSS = first_contact.CSS + """
.aug-status {font-size: 0.95rem; padding: 4px 0;}
.aug-untrained {background: #fff1d6; border: 2px solid #e08a00; color: #5a3600; padding: 8px 12px;
  border-radius: 6px; font-weight: 600; margin: 4px 0;}
.aug-error {background: #fde2e1; border: 2px solid #c0392b; color: #5c1410; padding: 8px 12px; border-radius: 6px;}
.aug-steps {color: #555; font-size: 0.9rem;}
#aug-evaluate {min-height: 48px;}
#aug-gallery .caption-label {max-width: 100%; white-space: normal; overflow-wrap: break-word; line-height: 1.15;}
"""

_HEADER = """
# AugCLIP Studio
<div class="aug-steps">Judge text-guided image edits: <b>1.</b> upload a source image and type the target text,
<b>2.</b> add 1-8 edited images, <b>3.</b> (optionally) check the attributes, then press <b>Evaluate</b>.
Or start from an example below. AugCLIP scores each edit against the estimated <i>ideal</i> edit of the
source; CLIPdir, CLIP-I, CLIP-T, L2 (and BPM, region-aware) are shown beside it.</div>
"""


def build_app(settings: Settings | None = None) -> gr.Blocks:
    """The whole page: the status area, the Evaluate, Batch, Explore, Study and Help tabs, wired."""
    base = app_settings(settings or Settings.from_env(), cuda=_cuda_available())
    MEMORY_GATE.budget = base.stage_memory_mb << 20  # one bound for the process's requests (docs/security.md)
    status, region_check = model_status(base), check_region_models(base)
    clip_choices = offered_models(base)
    offer = evaluate_offer(base, clip_choices=clip_choices, cuda=_cuda_available(), examples=load_examples())
    settings_for = partial(page_settings, base, clip_choices)
    folders = WorkFolders(max_age_s=base.app_files_max_age_s, max_bytes=base.app_disk_mb << 20)

    with gr.Blocks(title="AugCLIP Studio", delete_cache=(600, base.app_files_max_age_s)) as demo:
        sweep = partial(_sweep_work_files, demo, folders)
        session_state = gr.State(logic.Session(), time_to_live=base.app_files_max_age_s,
                                 delete_callback=lambda state: folders.release_folder(getattr(state, "output_dir", None)))
        gr.Markdown(_HEADER)
        status_box = gr.HTML(status_html(status, region_check), elem_id="aug-status")
        timer = gr.Timer(1.0, active=status.state == "loading" or region_check.state == "checking")
        demo_btn = first_contact.build_demo_controls(visible=first_contact.demo_offered(base) and bool(offer.examples))
        with gr.Tabs() as main_tabs:
            tab = build_evaluate_tab(base, offer, session_state=session_state, status_box=status_box)
            # Each tab wired right after its layout, as when it wired itself: the events keep their order
            # (fn_index), but for HATIE's button, now after the Evaluate layout's example loader, not before it.
            hatie = HatieContext(settings_for=settings_for, tab=tab.hatie)
            _wire_hatie_tab(hatie)
            batch = BatchContext(settings=base, clip_choices=clip_choices, folders=folders, after_run=sweep,
                                 tab=build_batch_tab(base, provider_choices=offer.provider_choices,
                                                     default_provider=offer.default_provider, clip_choices=clip_choices))
            _wire_batch_tab(batch)
            explore = build_explore_tab(base, folders=folders)
            with gr.Tab("Study", id="study"):
                build_study_tab(base, folders=folders)
            with gr.Tab("Help"):
                gr.Markdown(views.help_markdown())

        ctx = EvaluateContext(settings=base, clip_choices=clip_choices, folders=folders, tab=tab, sweep=sweep,
                              startup_status=status, startup_region=region_check, judge_ready=offer.judge_ready,
                              providers=offer.providers, examples=offer.examples)
        explore.wire(dict(source=tab.source, edits=tab.edits, target=tab.target, source_text=tab.source_text,
                          instruction=tab.instruction, src_box=tab.src_box, tgt_box=tab.tgt_box,
                          classifier=tab.classifier, C=tab.C, weighting=tab.weighting,
                          include_images=tab.include_images, clip_model=tab.clip_model, bpm_on=tab.bpm_on,
                          bpm_parser=tab.bpm_parser, judge_on=tab.judge_on), clip_choices, main_tabs)
        _wire_evaluate_tab(ctx)
        _wire_page(demo, ctx, offer, timer=timer, demo_btn=demo_btn)
    demo.queue(default_concurrency_limit=base.concurrency, max_size=64)
    demo.work_folders = folders  # for tests and operators: where the session files live
    demo.evaluate_context = ctx  # for tests: the Evaluate handlers' context, as the events have it
    demo.batch_context, demo.hatie_context = batch, hatie  # the same for the Batch and HATIE tabs
    return demo


def _sweep_work_files(demo: gr.Blocks, folders: WorkFolders) -> None:
    """Keep the app's files within their age and size bounds (after each stage that writes files)."""
    cached = [file for file_set in demo.temp_file_sets for file in list(file_set)]
    keep = {Path(file) for block in demo.blocks.values() for file in getattr(block, "keep_in_cache", ())}
    folders.sweep(cache_files=cached, keep=keep)


def _chain_later_stages(ctx: EvaluateContext, event: Any, with_bpm: bool = True) -> None:
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


def _wire_evaluate_tab(ctx: EvaluateContext) -> None:
    """Every event of the Evaluate tab, and its API endpoints (on hidden buttons where the page has none)."""
    tab = ctx.tab
    evaluate_stage, page_outputs = bind(on.evaluate, ctx, archive=False), [*tab.score_outputs, tab.status_box]
    _chain_later_stages(ctx, tab.evaluate_btn.click(evaluate_stage, tab.evaluate_inputs, page_outputs, api_name=False))
    _chain_later_stages(ctx, tab.rescore_btn.click(bind(on.rescore, ctx), tab.rescore_inputs, tab.score_outputs,
                                                  api_name=False), False)
    rescore_if_evaluated = bind(on.rescore_if_evaluated, ctx)
    for control in (tab.classifier, tab.weighting, tab.include_images):
        _chain_later_stages(ctx, control.change(rescore_if_evaluated, tab.rescore_inputs, tab.score_outputs,
                                               api_name=False), False)
    _chain_later_stages(ctx, tab.C.submit(rescore_if_evaluated, tab.rescore_inputs, tab.score_outputs, api_name=False),
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
    comparison = bind(on.show_comparison, ctx)
    tab.comparison_tab.select(comparison, [tab.session_state], tab.comparison_outputs, api_name=False)
    tab.comparison_btn.click(comparison, [tab.session_state], tab.comparison_outputs, api_name="comparison")
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
                          [tab.src_box, tab.tgt_box, tab.session_state], api_name="extract_attributes")
    tab.load_btn.upload(bind(on.load_attributes, ctx), tab.load_btn, [tab.src_box, tab.tgt_box], api_name=False)
    tab.save_btn.click(bind(on.save_attributes, ctx), [tab.src_box, tab.tgt_box, tab.session_state], tab.save_btn,
                       api_name=False)
    if tab.example_block is not None:
        # Load the example into the inputs, then evaluate it with the page's current options.
        _chain_later_stages(ctx, tab.example_block.load_input_event.then(evaluate_stage, tab.evaluate_inputs,
                                                                        page_outputs, api_name=False))
    tab.edits.change(bind(on.show_edits, ctx), tab.edits, tab.gallery, api_name=False)
    tab.provider.change(bind(on.describe_provider, ctx), tab.provider, tab.provider_info, api_name=False)


def _wire_hatie_tab(ctx: HatieContext) -> None:
    """The HATIE tab's button, which is also the /hatie endpoint."""
    ctx.tab.run_btn.click(bind(show_hatie, ctx), ctx.tab.run_inputs, ctx.tab.run_outputs, api_name="hatie")


def _wire_batch_tab(ctx: BatchContext) -> None:
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
    # Stop cancels the run's event (the handler's CancelWatch stops the runner), queued or running.
    tab.stop_btn.click(bind(stop_run, ctx), None, tab.stop_btn, cancels=[run], api_name=False,
                       show_progress="hidden")


def _wire_page(demo: gr.Blocks, ctx: EvaluateContext, offer: EvaluateOffer, *, timer: gr.Timer,
              demo_btn: gr.Button) -> None:
    """The page's own events: the status area, the first-visit notes, the untrained demo, the session's end,
    and the input bounds and upload accounting of every event (so this comes last)."""
    tab = ctx.tab
    refresh_status = bind(on.refresh_status, ctx)
    timer.tick(refresh_status, tab.clip_model, [tab.status_box, timer], api_name=False)
    demo.load(refresh_status, tab.clip_model, [tab.status_box, timer], api_name=False)
    first_contact.wire(demo, tab.clip_model, ctx.settings_for, model_status)
    if offer.examples:  # the untrained demo: every model random, then the first example, evaluated
        demo_event = demo_btn.click(bind(on.pick_demo_model, ctx), None, tab.clip_model, api_name=False).then(
            bind(on.load_first_example, ctx), None, tab.example_inputs, api_name=False)
        _chain_later_stages(ctx, demo_event.then(bind(on.evaluate, ctx, archive=False), tab.evaluate_inputs,
                                                [*tab.score_outputs, tab.status_box], api_name=False))
    tab.clip_model.change(refresh_status, tab.clip_model, [tab.status_box, timer], api_name=False)
    demo.unload(bind(on.end_session, ctx))
    bound_inputs(demo, ctx.settings)  # every text, checkbox and choice list: strict type and bound
    ctx.folders.watch_uploads(demo, ctx.sweep)  # uploads count against the disk cap on arrival; a timed sweep


def app_settings(settings: Settings, *, cuda: bool) -> Settings:
    """The page's settings (on a machine without CUDA, BPM's fast preset): :func:`..inference.needs.web_app_settings`."""
    return web_app_settings(settings, cuda=cuda, environ=os.environ)


def offered_models(settings: Settings) -> list[str]:
    """The CLIP specs web clients may pick: the configured one plus the operator's allow-list
    (``--allowed-models`` / ``AUGCLIP_ALLOWED_MODELS``) when one is set, else plus the usual ones."""
    if settings.allowed_models:
        return list(dict.fromkeys([settings.clip_model, *settings.allowed_models]))
    return sorted({settings.clip_model, *_CLIP_CHOICES})


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def launch_kwargs(settings: Settings | None = None) -> dict[str, Any]:
    """Arguments for ``demo.launch``: GRADIO_SERVER_NAME / GRADIO_SERVER_PORT are read by Gradio itself."""
    settings = settings or Settings.from_env()
    # uvicorn (under Gradio) believes X-Forwarded-For only from these peers; it reads its own variable when the
    # server starts, so the app's one setting is handed over here (study_routes.client_address)
    os.environ["FORWARDED_ALLOW_IPS"] = settings.forwarded_allow_ips
    return {
        "server_name": os.environ.get("GRADIO_SERVER_NAME") or None,
        # Gradio refuses bigger uploads itself (with a margin, so our own message names the file); the
        # batch tab's image zip has its own, larger limit.
        "max_file_size": f"{max(int(settings.max_upload_mb * 2) + 1, settings.upload_max_zip_mb + 1)}mb",
        "css": CSS,
        "theme": gr.themes.Soft(),
        "show_error": False,
        "app_kwargs": {"routes": study_routes(settings)},  # the rater page (ui/study_routes.py)
    }
