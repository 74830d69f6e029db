"""The page: :func:`build_app` lays out the status area and the tabs, and wires each tab and the page's own events.

Each tab is a room, a package of its own (:mod:`.evaluate`, :mod:`.batch`, :mod:`.hatie`, :mod:`.explore`,
:mod:`.study`) with the same parts: ``layout.build(...)`` lays the tab out and returns its components,
``handlers`` holds its context and handlers, ``wiring.wire(ctx)`` connects the two (docs/app.md, *Adding a
tab*). What several rooms use is here at the top: the page's settings (:mod:`.common`), the guards, the status
area, the work folders, the first-visit notes.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr
from fastapi.middleware import Middleware

from ..config import Settings
from ..inference.needs import web_app_settings
from . import batch, evaluate, explore, first_contact, hatie, study
from .binding import bind
from .common import page_settings
from .evaluate import handlers as on
from .evaluate import session as logic
from .examples import load_examples
from .guard import MEMORY_GATE
from .help import help_markdown
from .inputs import bound_inputs
from .page_cache import PageCache
from .status import check_region_models, model_status, status_html
from .storage import UploadBounds, UploadGate, WorkFolders

_CLIP_CHOICES = ["ViT-B-16/openai", "ViT-B-32/openai", "ViT-L-14/openai", "shapes:tiny", "random:ViT-B-16", "random:tiny"]

CSS = first_contact.CSS + """
.aug-status {font-size: 0.95rem; padding: 4px 0;}
.aug-untrained {background: #fff1d6; border: 2px solid #e08a00; color: #5a3600; padding: 8px 12px;
  border-radius: 6px; font-weight: 600; margin: 4px 0;}
.aug-error, #aug-batch-summary blockquote {background: #fde2e1; border: 2px solid #c0392b; color: #5c1410; padding: 8px 12px; border-radius: 6px;}
.aug-steps {color: #555; font-size: 0.9rem;}
#aug-evaluate {min-height: 48px;}
.gallery-item .caption-label {max-width: 100%; white-space: normal; overflow-wrap: break-word; line-height: 1.15;}
/* HATIE's charts are wide: a tile keeps the chart's proportions (a square tile cropped its axis), caption below */
#aug-hatie-bars .thumbnail-item, #aug-hatie-shares .thumbnail-item {aspect-ratio: auto; height: auto;}
#aug-hatie-bars .thumbnail-item img, #aug-hatie-shares .thumbnail-item img {height: auto;}
#aug-hatie-bars .grid-container, #aug-hatie-shares .grid-container {padding-top: 40px;}
#aug-hatie-bars .caption-label, #aug-hatie-shares .caption-label {position: static; transform: none; margin: 2px auto;}
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
    offer = evaluate.evaluate_offer(base, clip_choices=clip_choices, cuda=_cuda_available(), examples=load_examples())
    settings_for = partial(page_settings, base, clip_choices)
    folders = WorkFolders(max_age_s=base.app_files_max_age_s, max_bytes=base.app_disk_mb << 20,
                          client_bytes=(base.app_disk_mb << 20) * base.app_client_disk_percent // 100,
                          unused_s=base.app_upload_unused_s)

    with gr.Blocks(title="AugCLIP Studio", delete_cache=(600, base.app_files_max_age_s)) as demo:
        sweep = partial(_sweep_work_files, demo, folders)
        session_state = gr.State(logic.Session(), time_to_live=base.app_files_max_age_s,
                                 delete_callback=lambda state: folders.release_folder(getattr(state, "output_dir", None)))
        gr.Markdown(_HEADER)
        demo_btn = first_contact.build_demo_controls(visible=first_contact.demo_offered(base) and bool(offer.examples))
        status_box = gr.HTML(status_html(status, region_check), elem_id="aug-status")
        timer = gr.Timer(1.0, active=status.state == "loading" or region_check.state == "checking")
        with gr.Tabs() as main_tabs:
            # Each tab laid out, then wired, in the page's order (the events' order, fn_index, follows); the
            # HATIE tab is laid out inside the Evaluate tab's results, and Evaluate is wired last, after the
            # Explore tab's hand-off to it.
            tab = evaluate.build(base, offer, session_state=session_state, status_box=status_box)
            hatie_ctx = hatie.HatieContext(settings_for=settings_for, tab=tab.hatie)
            hatie.wire(hatie_ctx)
            batch_ctx = batch.BatchContext(settings=base, clip_choices=clip_choices, folders=folders, after_run=sweep,
                                           tab=batch.build(base, provider_choices=offer.provider_choices,
                                                           default_provider=offer.default_provider,
                                                           clip_choices=clip_choices))
            batch.wire(batch_ctx)
            shelf = explore.operator_shelf(base)
            explore_ctx = explore.ExploreContext(settings=base, shelf=shelf, folders=folders,
                                                 tab=explore.build(base, shelf))
            explore.wire(explore_ctx)
            study.wire(study.StudyContext(settings=base, folders=folders, operator=study.OPERATOR, tab=study.build(study.operator_off())))
            with gr.Tab("Help"):
                gr.Markdown(help_markdown())

        ctx = evaluate.EvaluateContext(settings=base, offer=offer, folders=folders, tab=tab, sweep=sweep,
                                       startup_status=status, startup_region=region_check)
        explore.wire_to_evaluate(explore_ctx, {name: getattr(tab, name) for name in explore.EVALUATE_FIELDS},
                                 clip_choices, main_tabs)
        evaluate.wire(ctx)
        _wire_batch_to_explore(batch_ctx, explore_ctx, main_tabs)
        _wire_page(demo, ctx, offer, timer=timer, demo_btn=demo_btn, batch_ctx=batch_ctx)
    demo.queue(default_concurrency_limit=base.concurrency, max_size=64)
    demo.work_folders = folders  # for tests and operators: where the session files live
    demo.evaluate_context = ctx  # for tests: the Evaluate handlers' context, as the events have it
    demo.batch_context, demo.hatie_context = batch_ctx, hatie_ctx  # the same for the Batch and HATIE tabs
    demo.explore_context = explore_ctx  # and the Explore tab
    return demo


def _sweep_work_files(demo: gr.Blocks, folders: WorkFolders) -> None:
    """Keep the app's files within their age and size bounds (after each stage that writes files)."""
    cached = [file for file_set in demo.temp_file_sets for file in list(file_set)]
    keep = {Path(file) for block in demo.blocks.values() for file in getattr(block, "keep_in_cache", ())}
    folders.sweep(cache_files=cached, keep=keep)


def _wire_batch_to_explore(batch_ctx: batch.BatchContext, explore_ctx: explore.ExploreContext, tabs: gr.Tabs) -> None:
    """The Batch tab's Open in Explore: the run's files handed over in a server-side state (never a client's path),
    then opened in the Explore tab, which is shown."""
    handoff = gr.State(None)
    event = batch_ctx.tab.explore_btn.click(bind(batch.explore_handoff, batch_ctx), None, handoff, api_name=False)
    explore.wire_from_batch(explore_ctx, event, handoff, tabs)


def _wire_page(demo: gr.Blocks, ctx: evaluate.EvaluateContext, offer: evaluate.EvaluateOffer, *, timer: gr.Timer,
              demo_btn: gr.Button, batch_ctx: batch.BatchContext) -> None:
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
        evaluate.chain_later_stages(ctx, demo_event.then(bind(on.evaluate, ctx, archive=False), tab.evaluate_inputs,
                                                [*tab.score_outputs, tab.status_box], api_name=False))
        # The Batch tab follows the demo (its own CLIP model menu; picking another there leaves it).
        demo_btn.click(bind(batch.follow_demo, batch_ctx), None, batch_ctx.tab.clip_model, api_name=False,
                       show_progress="hidden")
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


def launch_kwargs(settings: Settings | None = None, demo: gr.Blocks | None = None) -> dict[str, Any]:
    """Arguments for ``demo.launch``: GRADIO_SERVER_NAME / GRADIO_SERVER_PORT are read by Gradio itself.
    ``demo`` (from :func:`build_app`): its uploads are counted against its disk cap while they arrive."""
    settings = settings or Settings.from_env()
    # uvicorn (under Gradio) believes X-Forwarded-For only from these peers; it reads its own variable when the
    # server starts, so the app's one setting is handed over here (study/routes.client_address)
    os.environ["FORWARDED_ALLOW_IPS"] = settings.forwarded_allow_ips
    bounds = UploadBounds.of(settings)
    app_kwargs: dict[str, Any] = {"routes": study.study_routes(settings)}  # the rater page (ui/study/routes.py)
    # the page's later loads at an address answered from memory, without a worker thread (ui/page_cache.py)
    middleware = [Middleware(PageCache)]
    folders = getattr(demo, "work_folders", None)
    if folders is not None:  # multipart bodies bounded, and counted per client against the cap as they arrive
        middleware.append(Middleware(UploadGate, folders=folders, request_bytes=bounds.request_bytes))
    app_kwargs["middleware"] = middleware
    return {
        "server_name": os.environ.get("GRADIO_SERVER_NAME") or None,
        # Gradio refuses bigger files itself: one upload route serves every component (storage.UploadBounds)
        "max_file_size": bounds.file_bytes,
        "css": CSS,
        "theme": gr.themes.Soft(),
        "show_error": False,
        "app_kwargs": app_kwargs,
    }
