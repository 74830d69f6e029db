"""The page: layout and wiring. Logic lives in :mod:`.session`, rendering in :mod:`.views`.

Pressing Evaluate runs three stages, each updating the page when it finishes: the scores (fast;
the ``/evaluate`` API endpoint), then the explanations (relevancy maps, hyperplane views, ranking
charts; ``/explain``), then BPM when enabled (``/bpm``). Changing an AugCLIP option re-scores from
the cached embeddings and refreshes the explanations.
"""

from __future__ import annotations

import html
import logging
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

import gradio as gr

from ..attributes.base import Attributes
from ..attributes.catalog import ProviderStatus, provider_status
from ..bpm import POSITION_STATES, SIZE_STATES
from ..config import Settings
from ..errors import InputError, WeightsUnavailableError
from ..inference.needs import web_app_settings
from ..metrics.suite import METRICS
from ..pipeline import NETWORK_METRICS, AugCLIPOptions
from ..report import edit_tag
from . import first_contact, views
from . import session as logic
from .batch_tab import build_batch_tab
from .examples import load_examples
from .explore_tab import build_explore_tab
from .guard import scrub_paths, user_facing
from .hatie_tab import build_hatie_tab
from .inputs import bound_inputs, image_path_input, number_input
from .status import check_region_models, model_status, status_html
from .storage import WorkFolders
from .study_tab import build_study_tab, study_routes

log = logging.getLogger(__name__)

CLIP_CHOICES = ["ViT-B-16/openai", "ViT-B-32/openai", "ViT-L-14/openai", "random:ViT-B-16", "random:tiny"]

CSS = first_contact.CSS + """
.aug-status {font-size: 0.95rem; padding: 4px 0;}
.aug-untrained {background: #fff1d6; border: 2px solid #e08a00; color: #5a3600; padding: 8px 12px;
  border-radius: 6px; font-weight: 600; margin: 4px 0;}
.aug-error {background: #fde2e1; border: 2px solid #c0392b; color: #5c1410; padding: 8px 12px; border-radius: 6px;}
.aug-steps {color: #555; font-size: 0.9rem;}
#aug-evaluate {min-height: 48px;}
#aug-gallery .caption-label {max-width: 100%; white-space: normal; overflow-wrap: break-word; line-height: 1.15;}
"""

HEADER = """
# AugCLIP Studio
<div class="aug-steps">Judge text-guided image edits: <b>1.</b> upload a source image and type the target text,
<b>2.</b> add 1-8 edited images, <b>3.</b> (optionally) check the attributes, then press <b>Evaluate</b>.
Or start from an example below. AugCLIP scores each edit against the estimated <i>ideal</i> edit of the
source; CLIPdir, CLIP-I, CLIP-T, L2 (and BPM, region-aware) are shown beside it.</div>
"""


def provider_label(item: ProviderStatus) -> str:
    """Dropdown text: the name plus what the user should know before choosing it."""
    if not item.available:
        return f"{item.name} (not configured)"
    if item.lower_fidelity:
        return f"{item.name} (offline, lower fidelity)"
    return {"manual": "manual (your lists)", "openai": "openai (MLLM, the paper's method)"}.get(item.name, item.name)


def build_app(settings: Settings | None = None) -> gr.Blocks:
    base_settings = app_settings(settings or Settings.from_env(), cuda=_cuda_available())
    status = model_status(base_settings)
    region_check = check_region_models(base_settings)
    examples = load_examples()
    statuses = {item.name: item for item in provider_status(base_settings)}
    default_provider = base_settings.attribute_provider if base_settings.attribute_provider in statuses else "manual"
    provider_choices = [(provider_label(item), item.name) for item in statuses.values()]
    gpu = _cuda_available()
    llm_ready = statuses.get("openai") is not None and statuses["openai"].available
    judge_ready, judge_where = logic.judge_ready(base_settings)

    clip_choices = offered_models(base_settings)

    def settings_for(clip_model: str | None) -> Settings:
        return first_contact.demo_settings(base_settings.replace(
            clip_model=logic.offered_clip_model(clip_model, clip_choices)))

    def options_for(classifier: str, C: float | None, weighting: bool, include_images: bool) -> AugCLIPOptions:
        if C is None:  # an empty field is a mistake to report, not a request for the default
            raise InputError("C (svm / logistic) is empty: type a positive number (1 is the default).")
        return AugCLIPOptions(classifier=classifier, C=float(C), weighting=bool(weighting),
                              include_images=bool(include_images))

    folders = WorkFolders(max_age_s=base_settings.app_files_max_age_s, max_bytes=base_settings.app_disk_mb << 20)

    def own_folder(state: logic.Session | None, request: gr.Request | None) -> logic.Session:
        """The session's state with its work folder made (deleted when the session ends)."""
        state = state or logic.Session()
        if state.output_dir is None or not Path(state.output_dir).is_dir():
            state = logic.Session(**{**state.__dict__, "output_dir": str(
                folders.new(getattr(request, "session_hash", None)))})
        return state

    def sweep() -> None:
        """Keep the app's files within their age and size bounds (after each stage that writes files)."""
        cached = [file for file_set in demo.temp_file_sets for file in list(file_set)]
        keep = {Path(file) for block in demo.blocks.values() for file in getattr(block, "keep_in_cache", ())}
        folders.sweep(cache_files=cached, keep=keep)

    # ------------------------------------------------------------------ layout
    with gr.Blocks(title="AugCLIP Studio", delete_cache=(600, base_settings.app_files_max_age_s)) as demo:
        session_state = gr.State(logic.Session(), time_to_live=base_settings.app_files_max_age_s,
                                 delete_callback=lambda state: folders.release_folder(getattr(state, "output_dir", None)))
        gr.Markdown(HEADER)
        status_box = gr.HTML(status_html(status, region_check), elem_id="aug-status")
        timer = gr.Timer(1.0, active=status.state == "loading" or region_check.state == "checking")
        demo_btn = first_contact.build_demo_controls(visible=first_contact.DEMO_CLIP in clip_choices and bool(examples))

        with gr.Tabs() as main_tabs:
            with gr.Tab("Evaluate", id="evaluate"):
                examples_area = gr.Column()  # filled below, once the inputs exist: shown on top
                with gr.Row(equal_height=False):
                    with gr.Column(scale=4, min_width=280):
                        source = image_path_input(label="1. Source image", height=230,
                                          sources=["upload", "clipboard"], elem_id="aug-source")
                        target = gr.Textbox(label="Target text", elem_id="aug-target", lines=1,
                                            placeholder="an instruction (make the flower pink) or a description (a pink dahlia)")
                        source_text = gr.Textbox(label="Source text (optional: enables CLIPdir)", elem_id="aug-source-text",
                                                 placeholder="e.g. an orange dahlia flower")
                        instruction = gr.Textbox(label="Editing instruction (optional: for BPM)", elem_id="aug-instruction",
                                                 placeholder="e.g. make the flower pink")
                    with gr.Column(scale=5, min_width=320):
                        edits = gr.File(file_count="multiple", file_types=["image"], allow_reordering=True,
                                        label=f"2. Edited images (1-{base_settings.max_edits}; drag to reorder, x to remove)",
                                        elem_id="aug-edits")  # as tall as its files: all 8 in view
                        gallery = gr.Gallery(label="Edits in scoring order", columns=4, height="auto", allow_preview=True,
                                             object_fit="contain", format="png", elem_id="aug-gallery")
                    with gr.Column(scale=4, min_width=280):
                        provider = gr.Dropdown(provider_choices, value=default_provider, label="3. Attribute provider",
                                               info="fills empty lists on Evaluate; or type / edit the lists below",
                                               elem_id="aug-provider")
                        provider_info = gr.HTML(_describe(statuses, default_provider))
                        extract_btn = gr.Button("Extract attributes", size="sm")
                        first_contact.note("scores", "extract")
                        src_box = gr.Textbox(label="Source attributes (one per line)", lines=4, max_lines=10,
                                             elem_id="aug-src-attrs")
                        tgt_box = gr.Textbox(label="Target attributes (one per line)", lines=3, max_lines=10,
                                             elem_id="aug-tgt-attrs")
                        with gr.Row():
                            load_btn = gr.UploadButton("Load JSON", file_types=[".json"], size="sm")
                            save_btn = gr.DownloadButton("Save JSON", size="sm")
                with gr.Accordion("Advanced options (AugCLIP changes re-score from cached embeddings)", open=False):
                    with gr.Row():
                        classifier = gr.Radio(["svm", "logistic", "lda"], value="svm", label="Classifier (App. A.3)")
                        C = number_input(1.0, label="C (svm / logistic)", minimum=1e-4, maximum=base_settings.max_c)
                        weighting = gr.Checkbox(True, label="Weight samples by alpha (Eq. 6)")
                        include_images = gr.Checkbox(True, label="Images in the fit (App. B)")
                        # Only the offered models: a spec typed by a web client could name a folder on
                        # the server (local-dir:...) or any model on the Hub.
                        clip_model = gr.Dropdown(clip_choices, value=base_settings.clip_model,
                                                 label="CLIP model (spec)", elem_id="aug-clip-model")
                    with gr.Row():
                        explain_on = gr.Checkbox(True, label="Explanations (relevancy maps, hyperplane views, rankings)",
                                                 elem_id="aug-explain-on")
                        bpm_on = gr.Checkbox(gpu or base_settings.bpm_preset == "fast", label=bpm_label(base_settings, gpu),
                                             elem_id="aug-bpm-on")
                        bpm_parser = gr.Radio(["rules", "llm"] if llm_ready else ["rules"], value="rules",
                                              label="BPM instruction parser")
                        judge_on = gr.Checkbox(False, label="MLLM judge (SC / PQ / overall)", elem_id="aug-judge-on",
                                               interactive=judge_ready, info=judge_where)
                    gr.Markdown("**Reference and preservation metrics** (MagicBrush, PIE-Bench; docs/metrics.md): "
                                "each input switches on its columns.")
                    with gr.Row():
                        # unopened, like the source: our loader names the input in every error
                        ground_truth = image_path_input(label="Ground-truth edit (L1 / L2 / CLIP-I to it)",
                                                        elem_id="aug-ground-truth", height=150)
                        edit_mask = image_path_input(label="Edit mask: white = edited region (PSNR / MSE / SSIM outside it)",
                                                     elem_id="aug-edit-mask", height=150)
                        with gr.Column():
                            output_caption = gr.Textbox(label="Output caption (CLIP-T to it)",
                                                        elem_id="aug-output-caption")
                            feature_metrics = gr.CheckboxGroup(
                                [(f"{METRICS[key].label}: {what}", key) for key, what in NETWORK_METRICS.items()],
                                value=[], label="Columns that load a network of their own",
                                elem_id="aug-feature-metrics")
                with gr.Row():
                    evaluate_btn = gr.Button("Evaluate", variant="primary", size="lg", elem_id="aug-evaluate", scale=3)
                    rescore_btn = gr.Button("Re-score with the edited attributes", size="lg", scale=2)
                first_contact.note("scores", "evaluate")
                verdict = gr.Markdown(elem_id="aug-verdict")
                table = gr.Dataframe(views.empty_table(views.EMPTY_SCORES), label=views.SCORE_LABEL,
                                     datatype=views.SCORE_DATATYPES, interactive=False, elem_id="aug-table", wrap=True)
                judge_info = gr.HTML(elem_id="aug-judge")
                edit_pick = gr.Radio([], label="Explanations for edit", elem_id="aug-edit-pick", visible=False)
                with gr.Tabs():
                    with gr.Tab("Relevancy maps", id="relevancy"):
                        relevancy_info = gr.Markdown(views.RELEVANCY_HELP)
                        with gr.Row():
                            augclip_map = gr.Image(label="AugCLIP map (toward the ideal edit)", type="filepath",
                                                   elem_id="aug-map-augclip", show_label=False, buttons=["download", "fullscreen"])
                            clip_t_map = gr.Image(label="CLIP-T map (toward the target text)", type="filepath",
                                                  elem_id="aug-map-clip-t", show_label=False, buttons=["download", "fullscreen"])
                        clip_dir_map = gr.Image(label="CLIPdir signed map with its two components (App. D.5)",
                                                type="filepath", elem_id="aug-map-clip-dir", show_label=False, buttons=["download", "fullscreen"])
                    with gr.Tab("Hyperplane views", id="hyperplane"):
                        gr.Markdown(views.HYPERPLANE_HELP)
                        # Interactive (Plotly, bundled with Gradio): hover names a point and gives its alpha
                        # and signed distance; the legend hides / shows sets; drag to zoom, double-click to reset.
                        exact_plot = gr.Plot(label="Exact view (the selected edit's fit)", elem_id="aug-exact",
                                             show_label=False)
                        umap_plot = gr.Plot(label="UMAP view (illustrative; all edits)", elem_id="aug-umap",
                                            show_label=False)
                    with gr.Tab("Attribute rankings", id="rankings"):
                        gr.Markdown(views.RANKINGS_HELP)
                        with gr.Row():
                            source_ranking = gr.Image(label="Source attributes (Eq. 11)", type="filepath",
                                                      elem_id="aug-rank-source", show_label=False, buttons=["download", "fullscreen"])
                            target_ranking = gr.Image(label="Target attributes (Eq. 12)", type="filepath",
                                                      elem_id="aug-rank-target", show_label=False, buttons=["download", "fullscreen"])
                        alpha_plot = gr.Image(label="Alpha weights (Eq. 6)", type="filepath", elem_id="aug-alpha", show_label=False,
                                              buttons=["download", "fullscreen"])
                    with gr.Tab("BPM", id="bpm"):
                        bpm_info = gr.Markdown(views.BPM_HELP, elem_id="aug-bpm-info")
                        bpm_gallery = gr.Gallery(label="Per edit: source with M_origin / B_origin, edit with M_edit / "
                                                       "B_edit, preserved region", columns=3, height=420,
                                                 object_fit="contain", elem_id="aug-bpm-gallery")
                        bpm_table = gr.Dataframe(views.empty_table(views.EMPTY_BPM), label="BPM components",
                                                 interactive=False, wrap=True, elem_id="aug-bpm-table")
                        bpm_parse_info = gr.Markdown("**Parse**: press *Parse the instruction* (Evaluate does it "
                                                     "when BPM is on) to see o1 / o2 and the states before BPM runs; "
                                                     "correct any field, or fill them for a description-style "
                                                     "target.", elem_id="aug-bpm-parse-info")
                        with gr.Row():
                            bpm_o1 = gr.Textbox(label="o1 (object in the source; None to add)", elem_id="aug-bpm-o1")
                            bpm_o2 = gr.Textbox(label="o2 (object in the edit; None to remove)", elem_id="aug-bpm-o2")
                            bpm_size = gr.Dropdown(list(SIZE_STATES), value="unchanged", label="size state")
                            bpm_position = gr.Dropdown(list(POSITION_STATES), value="unchanged", label="position state")
                            bpm_reference = gr.Textbox(label="reference object (optional)")
                        with gr.Row():
                            bpm_parse_btn = gr.Button("Parse the instruction", size="sm", elem_id="aug-bpm-parse")
                            bpm_btn = gr.Button("Run BPM with these fields", size="sm", elem_id="aug-bpm-run")
                        first_contact.note("bpm", "tab")
                    build_hatie_tab(session_state, instruction, clip_model, settings_for)
                    with gr.Tab("Comparison", id="comparison") as comparison_tab:
                        with gr.Row():
                            comparison_btn = gr.Button("Show / refresh the comparison", size="sm",
                                                       elem_id="aug-comparison-refresh")
                            comparison_file = gr.DownloadButton("Download the HTML report", size="sm", visible=False,
                                                                elem_id="aug-comparison-download")
                        comparison_html = gr.HTML(views.COMPARISON_HELP, elem_id="aug-comparison")
                    with gr.Tab("Report (JSON)", id="json"):
                        report_json = gr.JSON(label="Full report")
                downloads = gr.File(label="Downloads: report.json, report.csv, figures.zip", file_count="multiple",
                                    interactive=False, elem_id="aug-downloads")
                with examples_area:
                    first_contact.note("scores", "examples")
                    example_block = gr.Examples(
                        examples=[ex.row for ex in examples],
                        example_labels=[ex.label for ex in examples],
                        inputs=[source, edits, target, source_text, instruction, provider, src_box, tgt_box],
                        label="Start from an example (one click loads and runs it)",
                        examples_per_page=8,
                    ) if examples else None
                evaluate_api = gr.Button(visible=False)
                rescore_api = gr.Button(visible=False)
                explain_api = gr.Button(visible=False)
                bpm_api = gr.Button(visible=False)
                bpm_fields_btn = gr.Button(visible=False)
            build_batch_tab(base_settings, provider_choices=provider_choices, default_provider=default_provider,
                            clip_choices=clip_choices, folders=folders, after_run=sweep)
            explore = build_explore_tab(base_settings, folders=folders)
            with gr.Tab("Study", id="study"):
                build_study_tab(base_settings, folders=folders)
            with gr.Tab("Help"):
                gr.Markdown(views.help_markdown())

        # -------------------------------------------------------------- handlers
        figure_outputs = [augclip_map, clip_t_map, clip_dir_map, source_ranking, target_ranking, alpha_plot]
        score_outputs = [verdict, table, src_box, tgt_box, downloads, report_json, session_state,
                         edit_pick, exact_plot, umap_plot, *figure_outputs, bpm_gallery, bpm_table]
        explain_outputs = [edit_pick, exact_plot, umap_plot, *figure_outputs, relevancy_info, downloads, session_state]
        parse_fields = [bpm_o1, bpm_o2, bpm_size, bpm_position, bpm_reference]
        bpm_outputs = [verdict, table, bpm_info, bpm_gallery, bpm_table, *parse_fields, downloads, report_json,
                       session_state, bpm_parse_info]

        # A click in the page runs stages (scores -> explanations -> BPM -> downloads): the stage handlers
        # (archive=False) refresh report.json / .csv, and figures.zip is written once, by the last step.
        # The API endpoints are single calls, so theirs (archive=True) write the zip themselves.
        def scored(report, state, *, clear: bool, archive: bool) -> dict:
            files = views.write_downloads(report, Path(state.output_dir), state.figures, archive=archive)
            # API replies (archive) carry plain values; the page renders HTML
            out = {verdict: views.verdict_text(report) if archive else views.verdict_markdown(report),
                   table: views.score_table(report, plain=archive),
                   src_box: "\n".join(report.attributes.source), tgt_box: "\n".join(report.attributes.target),
                   downloads: files, report_json: views.public_report(report), session_state: state}
            if clear:  # figures of an earlier evaluation must not stay beside new numbers
                out.update({component: None for component in (exact_plot, umap_plot, *figure_outputs, bpm_gallery)})
                out[bpm_table] = views.empty_table(views.EMPTY_BPM)
                out[edit_pick] = gr.Radio(choices=views.edit_choices(report), value=None, visible=False)
            return out

        @user_facing
        def edit_figures(state, pick, kinds: tuple[str, ...] = views.PER_EDIT_FIGURES, compute: bool = True) -> dict:
            """The selected edit's relevancy maps and ranking charts (``kinds`` of them), each drawn the
            first time it is shown; ``compute``: its maps not computed yet are computed first."""
            index = views.picked_index(pick)
            files = {}
            if index is not None and state is not None:
                if compute and state.report is not None and any(key in views.RELEVANCY_FIGURES for key in kinds):
                    logic.edit_maps(settings_for(state.clip_model), state, index)  # picked before the rest stage
                files = logic.figure_files(state, [f"{edit_tag(index)}_{key}" for key in kinds])
            out = {component: files.get(f"{edit_tag(index)}_{key}") if index is not None else None
                   for component, key in zip(figure_outputs, views.PER_EDIT_FIGURES) if key in kinds}
            out[exact_plot] = views.exact_plot(getattr(state, "explained", None), index)
            return out

        def evaluate_handler(archive: bool):
            """``archive=False``: the page's Evaluate (a model without weights is shown in the status area,
            and the later stages stand still); ``archive=True``: the API endpoint (it answers with the error)."""
            page = not archive

            @user_facing
            def evaluate(source, edits, target, source_text, instruction, provider, src_box_value, tgt_box_value,
                         classifier, C, weighting, include_images, clip_model, ground_truth_file=None,
                         edit_mask_file=None, caption=None, feature_keys=None, state=None, request: gr.Request = None,
                         progress=gr.Progress()):
                settings = settings_for(clip_model)
                folders.check_room("The evaluation")
                state = logic.Session(**{**own_folder(state, request).__dict__, "halted": None})
                if page and model_status(settings).state == "error":
                    return halted(settings, state)
                try:
                    report, state = logic.evaluate(
                        settings, state, source=source, edits=edits,
                        target_text=target or "", source_text=source_text or "", provider=provider,
                        source_attrs_box=src_box_value or "", target_attrs_box=tgt_box_value or "",
                        options=options_for(classifier, C, weighting, include_images),
                        progress=timed(progress), ground_truth=ground_truth_file or None,
                        edit_mask=edit_mask_file or None, output_caption=caption or "",
                        feature_metrics=list(feature_keys or []),
                        networks=first_contact.demo_networks(settings),
                    )
                except WeightsUnavailableError:
                    if not page or model_status(settings).state != "error":
                        raise  # not the page's CLIP (a feature network): its own message names it and the fix
                    return halted(settings, state)
                out = scored(report, state, clear=True, archive=archive)
                if page:
                    out[status_box] = status_html(model_status(settings), check_region_models(settings))
                sweep()
                return out

            return evaluate

        def halted(settings: Settings, state: logic.Session) -> dict:
            """Nothing scored: the status area names what is missing (no error toast, no red outputs)."""
            current = model_status(settings)
            return {**unchanged(score_outputs), status_box: status_html(current, check_region_models(settings)),
                    session_state: logic.Session(**{**state.__dict__, "halted": current.spec})}

        def rescore_handler(archive: bool):
            @user_facing
            def rescore(src_box_value, tgt_box_value, classifier, C, weighting, include_images, clip_model, state):
                report, state = logic.rescore(settings_for(clip_model), state or logic.Session(),
                                              options_for(classifier, C, weighting, include_images),
                                              src_box_value or "", tgt_box_value or "")
                return scored(report, state, clear=False, archive=archive)

            return rescore

        rescore_stage = rescore_handler(archive=False)

        def rescore_if_evaluated(*args):
            """Option changes re-score silently when there is something to re-score, else do nothing."""
            state = args[-1]
            if state is None or state.report is None:
                return unchanged(score_outputs)
            return rescore_stage(*args)

        def explain_handler(archive: bool):
            @user_facing
            def explain(explain_enabled, state, progress=gr.Progress()):
                if not explain_enabled or state is None or state.report is None or state.halted:
                    return unchanged(explain_outputs)
                return explained(state, archive=archive, progress=timed(progress))

            return explain

        def explained(state, *, archive: bool, progress=None) -> dict:
            """The page's stage (``archive=False``) shows the scores' explanations with the selected edit's
            AugCLIP relevancy map; its other maps (``shown_relevancy``), the UMAP view and the ranking
            charts follow. The API endpoint (``archive=True``) is one call: it makes everything and
            writes figures.zip."""
            settings = settings_for(state.clip_model)
            _, message, state = logic.explain(settings, state, progress)
            kinds = views.PER_EDIT_FIGURES if archive else views.RELEVANCY_FIGURES
            if archive:
                state = logic.explain_rest(settings, state)
            files = views.write_downloads(state.report, Path(state.output_dir), state.figures, archive=archive)
            sweep()
            choices = views.edit_choices(state.report)
            pick = choices[logic.selected_edit(state.report)]
            out = {edit_pick: gr.Radio(choices=choices, value=pick, visible=True),
                   umap_plot: views.umap_plot(state.explained),
                   **edit_figures(state, pick, kinds, compute=False),
                   relevancy_info: views.RELEVANCY_HELP + (f"\n\n{views.emphasis(scrub_paths(message))}" if message else ""),
                   downloads: files, session_state: state}
            if not archive:  # drawn by the next stage; an earlier result's charts must not stay meanwhile
                out.update({component: None for component, key in zip(figure_outputs, views.PER_EDIT_FIGURES)
                            if key not in kinds})
            return out

        relevancy_outputs = [component for component, key in zip(figure_outputs, views.PER_EDIT_FIGURES)
                             if key in views.RELEVANCY_FIGURES]

        @user_facing
        def shown_relevancy(state, pick):
            """Then the selected edit's CLIP-T and CLIPdir maps (the first result showed its AugCLIP map)."""
            index = views.picked_index(pick)
            if (index is None or state is None or state.report is None or state.halted
                    or getattr(state, "explained", None) is None):
                return unchanged(relevancy_outputs)
            files = logic.shown_maps(settings_for(state.clip_model), state, index)
            if state.shown not in (None, index):  # another edit was picked meanwhile: its handler draws it
                return unchanged(relevancy_outputs)
            return {component: files.get(f"{edit_tag(index)}_{key}")
                    for component, key in zip(relevancy_outputs, views.RELEVANCY_FIGURES)}

        rest_outputs = [umap_plot, session_state]
        ranking_outputs = [source_ranking, target_ranking, alpha_plot]

        @user_facing
        def explained_rest(state):
            """After the first result: the other edits' relevancy maps and the UMAP view (it waits for numba's
            start-up compile, if still running)."""
            if state is None or state.report is None or state.halted or getattr(state, "explained", None) is None:
                return unchanged(rest_outputs)
            state = logic.explain_rest(settings_for(state.clip_model), state, figures=False)
            return {umap_plot: views.umap_plot(state.explained), session_state: state}

        @user_facing
        def shown_rankings(state, pick):
            """Then the ranking charts of the edit selected now; the other figures are drawn when their edit
            is picked or when figures.zip is written."""
            if state is None or state.report is None or state.halted or getattr(state, "explained", None) is None:
                return unchanged(ranking_outputs)
            out = edit_figures(state, pick, views.RANKING_FIGURES)
            out.pop(exact_plot)
            if state.shown not in (None, views.picked_index(pick)):  # another edit was picked meanwhile
                return unchanged(ranking_outputs)
            return out

        def parse_shown(outcome) -> dict:
            """The parse in the BPM tab's fields and its summary above them."""
            values = logic.fields_of(outcome)
            return {**{component: values[name] for component, name in zip(parse_fields, logic.BPM_FIELDS)},
                    bpm_parse_info: views.parse_markdown(outcome)}

        @user_facing
        def bpm_parse(instruction_value, parser, clip_model):
            """Parse the instruction and show it, editable, before BPM runs."""
            return parse_shown(logic.parse_for_bpm(settings_for(clip_model), instruction_value or "", parser))

        def bpm_handler(archive: bool):
            @user_facing
            def bpm(bpm_enabled, instruction_value, parser, clip_model, state, progress=gr.Progress()):
                """After Evaluate: parse and show the parse; run BPM on it unless it needs the user first."""
                if not bpm_enabled or state is None or state.report is None or state.halted:
                    return unchanged(bpm_outputs)
                settings = settings_for(clip_model)
                outcome = logic.parse_for_bpm(settings, instruction_value or "", parser)
                shown = parse_shown(outcome)
                if outcome.parsed is None or outcome.parsed.confidence == "low":
                    why = ("the instruction has no parse" if outcome.parsed is None
                           else "the parse has low confidence")
                    message = (f"BPM waits for you: {why}. Check or fill the fields under Parse, then press Run BPM "
                               "with these fields.")
                    report = logic.Evaluator(settings=settings).skip_bpm(state.report, message)
                    return {**bpm_presented(report, state, message, archive=archive), **shown}
                report, message = logic.run_bpm(settings, state, instruction=instruction_value or "", parser=parser,
                                                fields=logic.fields_of(outcome), progress=timed(progress))
                return {**bpm_presented(report, state, message, archive=archive), **shown}

            return bpm

        bpm_complete = bpm_handler(archive=True)

        @user_facing
        def bpm_fields(instruction_value, parser, clip_model, o1, o2, size, position, reference, state,
                       progress=gr.Progress(), *, plain: bool):
            """BPM on the fields as the user left them (the parse, corrected; or typed by hand)."""
            if why := first_contact.cannot_run(settings_for(clip_model), "bpm"):  # at once, not after a load
                return {**unchanged(bpm_outputs), bpm_info: views.BPM_HELP + "\n\n" + views.emphasis(why, "b")}
            if state is None or state.report is None:
                raise gr.Error("Nothing to run BPM on yet: press Evaluate first.")
            if not any((v or "").strip() not in ("", "None") for v in (o1, o2)) and not (instruction_value or "").strip():
                raise gr.Error("Fill o1 (the object in the source) and/or o2 (the object in the edit) first.")
            fields = {"o1": o1, "o2": o2, "size_state": size, "position_state": position, "reference": reference}
            report, message = logic.run_bpm(settings_for(clip_model), state, instruction=instruction_value or "",
                                            parser=parser, fields=fields, progress=timed(progress))
            return bpm_presented(report, state, message, archive=True, plain=plain)

        # the page's button renders HTML; /bpm_fields answers plain values
        bpm_with_fields, bpm_fields_api = partial(bpm_fields, plain=False), partial(bpm_fields, plain=True)

        def bpm_presented(report, state, message, *, archive: bool, plain: bool | None = None) -> dict:
            files = views.write_downloads(report, Path(state.output_dir), state.figures, archive=archive)
            plain = archive if plain is None else plain  # the /bpm endpoint: plain values
            out = {verdict: views.verdict_text(report) if plain else views.verdict_markdown(report),
                   table: views.score_table(report, plain=plain),
                   downloads: files, report_json: views.public_report(report), session_state: state}
            results = getattr(report.arrays, "bpm", None) or []
            if message or not results:
                out.update({bpm_info: views.BPM_HELP + "\n\n" + views.emphasis(scrub_paths(message), "b"), bpm_gallery: None,
                            # the reason it did not run, not the generic "tick BPM ..." (both may be done)
                            bpm_table: views.empty_table(f"BPM has not run: {scrub_paths(message)}" if message
                                                         else views.EMPTY_BPM)})
                return out
            panels = views.bpm_panels(results, report)
            parse = panels[0][1].parse
            out.update({bpm_info: views.bpm_caption(panels), bpm_gallery: views.bpm_items(panels),
                        bpm_table: views.bpm_components_frame(panels),
                        bpm_o1: parse["o1"], bpm_o2: parse["o2"], bpm_size: parse["size_state"],
                        bpm_position: parse["position_state"], bpm_reference: parse["reference"]})
            return out

        judge_outputs = [verdict, table, judge_info, downloads, report_json, session_state]

        @user_facing
        def judge_stage(judge_enabled, instruction_value, clip_model, state, progress=gr.Progress()):
            """After Evaluate, when switched on: the MLLM judge's columns (the rationale on hover below the table)."""
            if not judge_enabled or not judge_ready or state is None or state.report is None or state.halted:
                return {**unchanged(judge_outputs), judge_info: ""}
            progress(0.05, desc="MLLM judge: asking the chat model")
            report = logic.run_judge(settings_for(clip_model), state, instruction=instruction_value or "")
            files = views.write_downloads(report, Path(state.output_dir), state.figures, archive=False)
            return {verdict: views.verdict_markdown(report), table: views.score_table(report),
                    judge_info: views.judge_html(report), downloads: files, report_json: views.public_report(report),
                    session_state: state}

        @user_facing
        def extract(source, target, source_text, provider, clip_model, state, progress=gr.Progress()):
            attrs, state = logic.extract(settings_for(clip_model), state or logic.Session(), source=source,
                                         target_text=target or "", source_text=source_text or "", provider=provider,
                                         progress=timed(progress))
            prov = attrs.provenance
            gr.Info(f"{len(attrs.source)} source and {len(attrs.target)} target attributes from {prov.provider} "
                    f"({prov.fidelity}). Edit them freely, then Evaluate.")
            return "\n".join(attrs.source), "\n".join(attrs.target), state

        @user_facing
        def load_attributes(file):
            attrs = Attributes.load(file)
            return "\n".join(attrs.source), "\n".join(attrs.target)

        @user_facing
        def save_attributes(src_box_value, tgt_box_value, state, request: gr.Request):
            return logic.save_attributes(own_folder(state, request), src_box_value or "", tgt_box_value or "")

        def refresh_status(clip_model: str | None) -> tuple[str, gr.Timer]:
            """The status area for the model picked now (picking one starts loading it)."""
            try:
                current, check = model_status(settings_for(clip_model)), check_region_models(settings_for(clip_model))
            except InputError:
                current, check = status, region_check
            busy = current.state == "loading" or check.state == "checking"
            return status_html(current, check), gr.Timer(active=busy)

        # -------------------------------------------------------------- wiring
        eval_inputs = [source, edits, target, source_text, instruction, provider, src_box, tgt_box, classifier, C,
                       weighting, include_images, clip_model, ground_truth, edit_mask, output_caption, feature_metrics,
                       session_state]
        rescore_inputs = [src_box, tgt_box, classifier, C, weighting, include_images, clip_model, session_state]
        explain_inputs = [explain_on, session_state]
        bpm_inputs = [bpm_on, instruction, bpm_parser, clip_model, session_state]

        @user_facing
        def downloads_complete(state):
            """The chain's last step: figures.zip, written once with everything the stages made."""
            if state is None or state.report is None or state.output_dir is None or state.halted:
                return gr.skip()
            if getattr(state, "explained", None) is not None:
                logic.edit_maps(settings_for(state.clip_model), state)  # if the rest stage stopped early
            logic.figure_files(state)  # every figure not drawn yet (other edits, the hyperplane PNGs)
            # a copy: a click on another edit may add a figure to the session meanwhile
            return views.write_downloads(state.report, Path(state.output_dir), dict(state.figures), archive=True)

        explain_stage, bpm_stage = explain_handler(archive=False), bpm_handler(archive=False)

        @user_facing
        def show_comparison(state):
            """Built when asked for (tab opened, button), so evaluating costs nothing more."""
            if state is None or state.report is None:
                return views.COMPARISON_HELP, gr.DownloadButton(visible=False)
            if getattr(state, "explained", None) is not None:
                logic.edit_maps(settings_for(state.clip_model), state)  # asked for before the rest stage ended
            fragment, path = logic.comparison(state)
            state.comparison_of = state.report
            return fragment, gr.DownloadButton(value=path, visible=True)

        def comparison_reset(state):
            if state is not None and state.report is not None and state.comparison_of is state.report:
                return gr.skip(), gr.skip()  # opened for these very results already (a quick click)
            return views.COMPARISON_HELP, gr.DownloadButton(visible=False)

        def comparison_refresh(state):
            if state is None or state.report is None or state.comparison_of is not state.report:
                return gr.skip(), gr.skip()
            return show_comparison(state)

        def then_explain_and_bpm(event, with_bpm: bool = True) -> None:
            # The results changed: the old comparison goes at once (a branch of its own, so the first
            # result does not wait for it); it is rebuilt when next asked for.
            event.success(comparison_reset, [session_state], [comparison_html, comparison_file], api_name=False,
                          show_progress="hidden")
            # Later stages show their progress in their own tab, so the scores stay readable meanwhile.
            follow = event.success(explain_stage, explain_inputs, explain_outputs, api_name=False,
                                   show_progress_on=[relevancy_info])
            follow = follow.success(shown_relevancy, [session_state, edit_pick], relevancy_outputs, api_name=False,
                                    show_progress_on=relevancy_outputs[1:])  # the CLIP-T and CLIPdir maps
            follow = follow.success(explained_rest, [session_state], rest_outputs, api_name=False,
                                    show_progress_on=[umap_plot])
            follow = follow.success(shown_rankings, [session_state, edit_pick], ranking_outputs, api_name=False,
                                    show_progress="hidden")
            if with_bpm:
                follow = follow.success(bpm_stage, bpm_inputs, bpm_outputs, api_name=False, show_progress_on=[bpm_info])
                follow = follow.success(judge_stage, [judge_on, instruction, clip_model, session_state], judge_outputs,
                                        api_name=False, show_progress_on=[judge_info])
            follow = follow.then(downloads_complete, [session_state], downloads, api_name=False, show_progress="hidden")
            # A comparison the user opened while the stages ran is rebuilt with what came since (BPM, judge).
            follow.then(comparison_refresh, [session_state], [comparison_html, comparison_file], api_name=False,
                        show_progress="hidden")

        evaluate_stage = evaluate_handler(archive=False)
        explore.wire(dict(source=source, edits=edits, target=target, source_text=source_text, instruction=instruction,
                          src_box=src_box, tgt_box=tgt_box, classifier=classifier, C=C, weighting=weighting,
                          include_images=include_images, clip_model=clip_model, bpm_on=bpm_on, bpm_parser=bpm_parser,
                          judge_on=judge_on), clip_choices, main_tabs)
        page_score_outputs = [*score_outputs, status_box]
        then_explain_and_bpm(evaluate_btn.click(evaluate_stage, eval_inputs, page_score_outputs, api_name=False))
        then_explain_and_bpm(rescore_btn.click(rescore_stage, rescore_inputs, score_outputs, api_name=False), False)
        for control in (classifier, weighting, include_images):
            then_explain_and_bpm(control.change(rescore_if_evaluated, rescore_inputs, score_outputs, api_name=False), False)
        then_explain_and_bpm(C.submit(rescore_if_evaluated, rescore_inputs, score_outputs, api_name=False), False)
        # Stand-alone endpoints for API users (same session as their /evaluate call), on hidden buttons.
        evaluate_api.click(evaluate_handler(archive=True), eval_inputs, score_outputs, api_name="evaluate")
        rescore_api.click(rescore_handler(archive=True), rescore_inputs, score_outputs, api_name="rescore")
        explain_api.click(explain_handler(archive=True), explain_inputs, explain_outputs, api_name="explain")
        # .input: the user's pick (the explanation stage sets the first pick and draws what it shows itself)
        @user_facing
        def picked(state, pick):
            """A click on another edit: the page shows it from now on, whatever stage is still running."""
            if state is not None:
                state.shown = views.picked_index(pick)
            return edit_figures(state, pick)

        edit_pick.input(picked, [session_state, edit_pick], [*figure_outputs, exact_plot], api_name=False)

        comparison_tab.select(show_comparison, [session_state], [comparison_html, comparison_file], api_name=False)
        comparison_btn.click(show_comparison, [session_state], [comparison_html, comparison_file],
                             api_name="comparison")
        bpm_api.click(bpm_complete, bpm_inputs, bpm_outputs, api_name="bpm")
        bpm_parse_btn.click(bpm_parse, [instruction, bpm_parser, clip_model], [*parse_fields, bpm_parse_info],
                            api_name="bpm_parse")
        bpm_btn.click(bpm_with_fields, [instruction, bpm_parser, clip_model, bpm_o1, bpm_o2, bpm_size, bpm_position,
                                        bpm_reference, session_state], bpm_outputs, api_name=False,
                      show_progress_on=[bpm_info])
        bpm_fields_btn.click(bpm_fields_api, [instruction, bpm_parser, clip_model, bpm_o1, bpm_o2, bpm_size, bpm_position,
                                              bpm_reference, session_state], bpm_outputs, api_name="bpm_fields")
        extract_btn.click(extract, [source, target, source_text, provider, clip_model, session_state],
                          [src_box, tgt_box, session_state],
                          api_name="extract_attributes")
        load_btn.upload(load_attributes, load_btn, [src_box, tgt_box], api_name=False)
        save_btn.click(save_attributes, [src_box, tgt_box, session_state], save_btn, api_name=False)
        if example_block is not None:
            # Load the example into the inputs, then evaluate it with the page's current options.
            then_explain_and_bpm(example_block.load_input_event.then(evaluate_stage, eval_inputs, page_score_outputs,
                                                                     api_name=False))
        edits.change(lambda files: views.edit_items(files), edits, gallery, api_name=False)
        provider.change(lambda name: _describe(statuses, name), provider, provider_info, api_name=False)
        timer.tick(refresh_status, clip_model, [status_box, timer], api_name=False)
        demo.load(refresh_status, clip_model, [status_box, timer], api_name=False)
        first_contact.wire(demo, clip_model, settings_for, model_status)
        if examples:  # the untrained demo: every model random, then the first example, evaluated
            demo_event = demo_btn.click(lambda: first_contact.DEMO_CLIP, None, clip_model, api_name=False).then(
                lambda: examples[0].row, None, [source, edits, target, source_text, instruction, provider, src_box,
                                                tgt_box], api_name=False)
            then_explain_and_bpm(demo_event.then(evaluate_stage, eval_inputs, page_score_outputs, api_name=False))
        clip_model.change(refresh_status, clip_model, [status_box, timer], api_name=False)
        def end_session(request: gr.Request) -> None:  # the page was closed (its heartbeat stopped)
            folders.release(getattr(request, "session_hash", None))

        demo.unload(end_session)
        bound_inputs(demo, base_settings)  # every text, checkbox and choice list: strict type and bound
        folders.watch_uploads(demo, sweep)  # uploads count against the disk cap on arrival; a timed sweep
    demo.queue(default_concurrency_limit=base_settings.concurrency, max_size=64)
    demo.work_folders = folders  # for tests and operators: where the session files live
    return demo


def app_settings(settings: Settings, *, cuda: bool) -> Settings:
    """The page's settings (on a machine without CUDA, BPM's fast preset): :func:`..inference.needs.web_app_settings`."""
    return web_app_settings(settings, cuda=cuda, environ=os.environ)


def bpm_label(settings: Settings, cuda: bool) -> str:
    if settings.bpm_preset == "fast":
        return "BPM (fast preset: OWL-ViT + SAM 2.1 at 512 px)"
    return "BPM (GroundingDINO + SAM)" + ("" if cuda else "; slow on CPU")


def timed(progress: Any) -> Any:
    """A ``progress(fraction, stage)`` callback for a Gradio progress bar that adds the time since the
    click: a long step (minutes of attribute extraction on CPU) visibly moves and says how long it has taken."""
    start, furthest = time.perf_counter(), [0.0]

    def report(fraction: float, stage: str) -> None:
        furthest[0] = max(furthest[0], min(max(float(fraction), 0.0), 1.0))  # a bar never moves back
        progress(furthest[0], desc=f"{stage} - {time.perf_counter() - start:.0f} s")

    return report


def offered_models(settings: Settings) -> list[str]:
    """The CLIP specs web clients may pick: the configured one plus the operator's allow-list
    (``--allowed-models`` / ``AUGCLIP_ALLOWED_MODELS``) when one is set, else plus the usual ones."""
    if settings.allowed_models:
        return list(dict.fromkeys([settings.clip_model, *settings.allowed_models]))
    return sorted({settings.clip_model, *CLIP_CHOICES})


def unchanged(outputs: list[Any]) -> dict[Any, Any]:
    """Leave every output as it is (an empty dict is not understood as "no update")."""
    return {component: gr.skip() for component in outputs}


def _describe(statuses: dict[str, ProviderStatus], name: str) -> str:
    item = statuses.get(name)
    return f"<small>{html.escape(item.reason)}</small>" if item else ""


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def launch_kwargs(settings: Settings | None = None) -> dict[str, Any]:
    """Arguments for ``demo.launch``: GRADIO_SERVER_NAME / GRADIO_SERVER_PORT are read by Gradio itself."""
    settings = settings or Settings.from_env()
    return {
        "server_name": os.environ.get("GRADIO_SERVER_NAME") or None,
        # Gradio refuses bigger uploads itself (with a margin, so our own message names the file); the
        # batch tab's image zip has its own, larger limit.
        "max_file_size": f"{max(int(settings.max_upload_mb * 2) + 1, settings.upload_max_zip_mb + 1)}mb",
        "css": CSS,
        "theme": gr.themes.Soft(),
        "show_error": False,
        "app_kwargs": {"routes": study_routes(settings)},  # the rater page (ui/study_tab.py)
    }
