"""What the Evaluate tab's events do: one top-level function per handler.

Each handler takes the tab's :class:`EvaluateContext` first, then the values of its event's input
components, and returns the updates: a dict keyed by the tab's components (Gradio updates only those).
:func:`.wiring.wire` binds the context (:func:`bind`) and connects the events. The work itself is in
:mod:`.session`, the rendering in :mod:`.views`.

Pressing Evaluate runs stages, each updating the page when it finishes: the scores (:func:`evaluate`),
the explanations (:func:`explain`, then :func:`show_other_maps`, :func:`explain_rest`,
:func:`show_rankings`), BPM (:func:`bpm_stage`), the judge (:func:`judge_stage`), and last the downloads
(:func:`complete_downloads`). The stage handlers (``archive=False``) refresh report.json / .csv, and
figures.zip is written once, by the last step; the stand-alone API endpoints are single calls, so theirs
(``archive=True``) write the zip themselves.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from ...attributes.base import Attributes
from ...attributes.catalog import ProviderStatus
from ...config import Settings
from ...errors import InputError, WeightsUnavailableError
from ...pipeline import AugCLIPOptions
from ...report import UNTRAINED_WARNING, Report, edit_tag
from .. import first_contact
from ..common import empty_table, fitted_widths, page_settings, text_safe
from ..examples import Example
from ..guard import heavy_stage, scrub_paths, user_facing
from ..shown import put_on_page, superseded
from ..status import ModelStatus, RegionModelsCheck, check_region_models, model_status, status_html
from ..storage import WorkFolders
from . import session as logic
from . import views
from .layout import EvaluateOffer, EvaluateTab, provider_note

Updates = dict[Any, Any]

log = logging.getLogger(__name__)


@dataclass
class EvaluateContext:
    """What every Evaluate handler needs besides its inputs: the page's settings and offers, the session
    folders, the tab's components (the keys of the updates) and the status the page started with."""

    settings: Settings  # the page's (app_settings); a handler's own come from settings_for(its CLIP model)
    offer: EvaluateOffer  # what the tab offers (model choices, providers, examples, the judge), decided once
    folders: WorkFolders
    tab: EvaluateTab
    sweep: Callable[[], None]  # keeps the app's files within their bounds (after a stage that writes files)
    startup_status: ModelStatus
    startup_region: RegionModelsCheck

    @property
    def clip_choices(self) -> list[str]:
        return self.offer.clip_choices

    @property
    def judge_ready(self) -> bool:
        return self.offer.judge_ready

    @property
    def providers(self) -> dict[str, ProviderStatus]:
        return self.offer.providers

    @property
    def examples(self) -> list[Example]:
        return self.offer.examples

    def settings_for(self, clip_model: str | None) -> Settings:
        return page_settings(self.settings, self.clip_choices, clip_model)


# ---------------------------------------------------------------------------- small shared pieces


def unchanged(outputs: list[Any]) -> Updates:
    """Leave every output as it is (an empty dict is not understood as "no update")."""
    return {component: gr.skip() for component in outputs}


def answered(outputs: list[Any], out: Updates) -> Updates:
    """An API answer: a value for every output (an update's value; None where the page would leave its component
    as it was), so a client never receives an update object."""

    def value(update: Any) -> Any:
        return update.get("value") if isinstance(update, dict) and update.get("__type__") == "update" else update

    return {component: value(out.get(component)) for component in outputs}


def timed(progress: Any) -> Callable[[float, str], None]:
    """A ``progress(fraction, stage)`` callback for a Gradio progress bar that adds the time since the
    click: a long step (minutes of attribute extraction on CPU) visibly moves and says how long it has taken."""
    start, furthest = time.perf_counter(), [0.0]

    def report(fraction: float, stage: str) -> None:
        furthest[0] = max(furthest[0], min(max(float(fraction), 0.0), 1.0))  # a bar never moves back
        progress(furthest[0], desc=f"{stage} - {time.perf_counter() - start:.0f} s")

    return report


def augclip_options(classifier: str, C: float | None, weighting: bool, include_images: bool) -> AugCLIPOptions:
    if C is None:  # an empty field is a mistake to report, not a request for the default
        raise InputError("C (svm / logistic) is empty: type a positive number (1 is the default).")
    return AugCLIPOptions(classifier=classifier, C=float(C), weighting=bool(weighting),
                          include_images=bool(include_images))


def own_folder(ctx: EvaluateContext, state: logic.Session | None, request: gr.Request | None) -> logic.Session:
    """The session's state with its work folder made (deleted when the session ends)."""
    state = state or logic.Session()
    if state.output_dir is None or not Path(state.output_dir).is_dir():
        state = logic.Session(**{**state.__dict__, "output_dir": str(
            ctx.folders.new(getattr(request, "session_hash", None)))})
    return state


def _stopped(state: logic.Session | None) -> bool:
    """Nothing for a later stage to do: no result yet, or the last Evaluate halted before scoring."""
    return state is None or state.report is None or bool(state.halted)


def _explained(state: logic.Session | None) -> bool:
    return not _stopped(state) and getattr(state, "explained", None) is not None


def _for_the_newest_result(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A handler of one result (the later stages, a pick, Run BPM): when the page showed a newer result (another
    Evaluate or re-score ended) before it began or while it ran, it leaves the page as it is. Its updates would
    put the older result back beside the newer scores; a failure then is the older result's (the newer
    explanation removed its figures' folder) and nobody's to read. The handler takes ``state``."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        state = signature.bind_partial(*args, **kwargs).arguments.get("state")
        if superseded(state):
            return gr.skip()
        try:
            out = fn(*args, **kwargs)
        except Exception as exc:
            if not superseded(state):
                raise
            log.info("%s stopped for a result the page no longer shows: %s", fn.__name__, type(exc).__name__)
            return gr.skip()
        return gr.skip() if superseded(state) else out

    return wrapper


# ---------------------------------------------------------------------------- scores


def _scored_updates(ctx: EvaluateContext, report: Report, state: logic.Session, *, clear: bool,
                   archive: bool) -> Updates:
    """The scores shown (``clear``: and every figure of an earlier evaluation taken away)."""
    tab = ctx.tab
    files = views.write_downloads(report, Path(state.output_dir), state.figures, archive=archive)
    # API replies (archive) carry plain values; the page renders HTML
    out = {tab.verdict: views.verdict_text(report) if archive else views.verdict_markdown(report),
           tab.table: views.score_table(report, plain=archive),
           tab.src_box: "\n".join(report.attributes.source), tab.tgt_box: "\n".join(report.attributes.target),
           tab.downloads: files, tab.report_json: views.public_report(report), tab.session_state: state}
    if clear:  # figures of an earlier evaluation must not stay beside new numbers
        out.update({component: None for component in (tab.exact_plot, tab.umap_plot, *tab.figure_outputs,
                                                      tab.bpm_gallery)})
        out[tab.bpm_table] = empty_table(views.EMPTY_BPM)
        out[tab.edit_pick] = (None if archive  # an API client gets the plain value, not the page's update
                              else gr.Radio(choices=views.edit_choices(report), value=None, visible=False))
    return out


def _halted_updates(ctx: EvaluateContext, settings: Settings, state: logic.Session) -> Updates:
    """Nothing scored: the status area names what is missing (no error toast, no red outputs)."""
    current = model_status(settings)
    halted = logic.Session(**{**state.__dict__, "halted": current.spec})
    out = {**unchanged(ctx.tab.score_outputs), ctx.tab.status_box: status_html(current, check_region_models(settings)),
           ctx.tab.session_state: halted}
    put_on_page(halted)  # the stages of the result before leave the page alone
    return out


@user_facing
def evaluate(ctx: EvaluateContext, source, edits, target, source_text, instruction, provider, src_box_value,
             tgt_box_value, classifier, C, weighting, include_images, clip_model, ground_truth_file=None,
             edit_mask_file=None, caption=None, feature_keys=None, state=None, request: gr.Request = None,
             progress=gr.Progress(), *, archive: bool = False) -> Updates:
    """Evaluate. ``archive=False``: the page's button (a model without weights is shown in the status area,
    and the later stages stand still); ``archive=True``: the /evaluate endpoint (it answers with the error)."""
    page = not archive
    settings = ctx.settings_for(clip_model)
    ctx.folders.check_room("The evaluation")
    state = logic.Session(**{**own_folder(ctx, state, request).__dict__, "halted": None})
    if page and model_status(settings).state == "error":
        return _halted_updates(ctx, settings, state)
    try:
        report, state = logic.evaluate(
            settings, state, source=source, edits=edits,
            target_text=target or "", source_text=source_text or "", provider=provider,
            source_attrs_box=src_box_value or "", target_attrs_box=tgt_box_value or "",
            options=augclip_options(classifier, C, weighting, include_images),
            progress=timed(progress), ground_truth=ground_truth_file or None,
            edit_mask=edit_mask_file or None, output_caption=caption or "",
            feature_metrics=list(feature_keys or []),
            networks=first_contact.demo_networks(settings),
        )
    except WeightsUnavailableError:
        if not page or model_status(settings).state != "error":
            raise  # not the page's CLIP (a feature network): its own message names it and the fix
        return _halted_updates(ctx, settings, state)
    out = _scored_updates(ctx, report, state, clear=True, archive=archive)
    if page:
        out[ctx.tab.status_box] = status_html(model_status(settings), check_region_models(settings))
    ctx.sweep()
    put_on_page(state)  # last (``state`` is in ``out``)
    return out


@user_facing
def rescore(ctx: EvaluateContext, src_box_value, tgt_box_value, classifier, C, weighting, include_images,
            clip_model, state, *, archive: bool = False) -> Updates:
    """Re-score the session's result from its cached embeddings with the edited attributes and options."""
    report, state = logic.rescore(ctx.settings_for(clip_model), state or logic.Session(),
                                  augclip_options(classifier, C, weighting, include_images),
                                  src_box_value or "", tgt_box_value or "")
    out = _scored_updates(ctx, report, state, clear=False, archive=archive)
    put_on_page(state)  # last (``state`` is in ``out``)
    return answered(ctx.tab.score_outputs, out) if archive else out


def rescore_if_evaluated(ctx: EvaluateContext, src_box_value, tgt_box_value, classifier, C, weighting,
                         include_images, clip_model, state) -> Updates:
    """Option changes re-score silently when there is something to re-score, else do nothing."""
    if state is None or state.report is None:
        return unchanged(ctx.tab.score_outputs)
    return rescore(ctx, src_box_value, tgt_box_value, classifier, C, weighting, include_images, clip_model, state)


# ---------------------------------------------------------------------------- explanations


@user_facing
@heavy_stage
def _edit_figure_updates(ctx: EvaluateContext, state, pick, kinds: tuple[str, ...] = views.PER_EDIT_FIGURES,
                        compute: bool = True) -> Updates:
    """The selected edit's relevancy maps and ranking charts (``kinds`` of them), each drawn the
    first time it is shown; ``compute``: its maps not computed yet are computed first."""
    tab = ctx.tab
    index = views.picked_index(pick)
    files = {}
    if index is not None and state is not None:
        if compute and state.report is not None and any(key in views.RELEVANCY_FIGURES for key in kinds):
            logic.edit_maps(ctx.settings_for(state.clip_model), state, index)  # picked before the rest stage
        files = logic.figure_files(state, [f"{edit_tag(index)}_{key}" for key in kinds])
    out = {component: files.get(f"{edit_tag(index)}_{key}") if index is not None else None
           for component, key in zip(tab.figure_outputs, views.PER_EDIT_FIGURES) if key in kinds}
    out[tab.exact_plot] = views.exact_plot(getattr(state, "explained", None), index)
    return out


def _said(text: str, *, plain: bool) -> str:
    """A message under a stage's help: in italics on the page, as text in an API answer."""
    return text_safe(text) if plain else views.emphasis(text)


def _explained_updates(ctx: EvaluateContext, state: logic.Session, *, archive: bool, progress=None) -> Updates:
    """The page's stage (``archive=False``) shows the scores' explanations with the selected edit's
    AugCLIP relevancy maps; its other maps (:func:`show_other_maps`), the UMAP view and the ranking
    charts follow. The API endpoint (``archive=True``) is one call: it makes everything and
    writes figures.zip."""
    tab = ctx.tab
    settings = ctx.settings_for(state.clip_model)
    _, message, state = logic.explain(settings, state, progress)
    kinds = views.PER_EDIT_FIGURES if archive else views.RELEVANCY_FIGURES
    if archive:
        state = logic.explain_rest(settings, state)
    files = views.write_downloads(state.report, Path(state.output_dir), state.figures, archive=archive)
    ctx.sweep()
    choices = views.edit_choices(state.report)
    pick = choices[logic.selected_edit(state.report)]
    out = {tab.edit_pick: pick if archive else gr.Radio(choices=choices, value=pick, visible=True),
           tab.umap_plot: views.umap_plot(state.explained),
           **_edit_figure_updates(ctx, state, pick, kinds, compute=False),
           tab.relevancy_info: views.RELEVANCY_HELP + (f"\n\n{_said(scrub_paths(message), plain=archive)}"
                                                       if message else ""),
           tab.downloads: files, tab.session_state: state}
    if not archive:  # drawn by the next stage; an earlier result's charts must not stay meanwhile
        out.update({component: None for component, key in zip(tab.figure_outputs, views.PER_EDIT_FIGURES)
                    if key not in kinds})
    return out


@user_facing
@_for_the_newest_result
@heavy_stage
def explain(ctx: EvaluateContext, explain_enabled, state, progress=gr.Progress(), *, archive: bool = False) -> Updates:
    """The explanations of the session's scores, when switched on (``archive``: the /explain endpoint)."""
    if not explain_enabled or _stopped(state):
        return unchanged(ctx.tab.explain_outputs)
    out = _explained_updates(ctx, state, archive=archive, progress=timed(progress))
    return answered(ctx.tab.explain_outputs, out) if archive else out


@user_facing
@_for_the_newest_result
@heavy_stage
def show_other_maps(ctx: EvaluateContext, state, pick) -> Updates:
    """Then the selected edit's CLIP-T and CLIPdir maps (the first result showed its AugCLIP maps)."""
    outputs = ctx.tab.relevancy_outputs
    index = views.picked_index(pick)
    if index is None or not _explained(state):
        return unchanged(outputs)
    files = logic.shown_maps(ctx.settings_for(state.clip_model), state, index)
    if state.shown not in (None, index):  # another edit was picked meanwhile: its handler draws it
        return unchanged(outputs)
    return {component: files.get(f"{edit_tag(index)}_{key}")
            for component, key in zip(outputs, views.RELEVANCY_FIGURES)}


@user_facing
@_for_the_newest_result
@heavy_stage
def explain_rest(ctx: EvaluateContext, state) -> Updates:
    """After the first result: the other edits' relevancy maps and the UMAP view (it waits for numba's
    start-up compile, if still running)."""
    if not _explained(state):
        return unchanged(ctx.tab.rest_outputs)
    state = logic.explain_rest(ctx.settings_for(state.clip_model), state, figures=False)  # in place
    return {ctx.tab.umap_plot: views.umap_plot(state.explained)}


@user_facing
@_for_the_newest_result
def show_rankings(ctx: EvaluateContext, state, pick) -> Updates:
    """Then the ranking charts of the edit selected now; the other figures are drawn when their edit
    is picked or when figures.zip is written."""
    if not _explained(state):
        return unchanged(ctx.tab.ranking_outputs)
    out = _edit_figure_updates(ctx, state, pick, views.RANKING_FIGURES)
    out.pop(ctx.tab.exact_plot)
    if state.shown not in (None, views.picked_index(pick)):  # another edit was picked meanwhile
        return unchanged(ctx.tab.ranking_outputs)
    return out


@user_facing
@_for_the_newest_result
def pick_edit(ctx: EvaluateContext, state, pick) -> Updates:
    """A click on another edit: the page shows it from now on, whatever stage is still running."""
    if state is not None:
        state.shown = views.picked_index(pick)
    return _edit_figure_updates(ctx, state, pick)


@user_facing
def show_bpm_pick(ctx: EvaluateContext, state, pick) -> Any:
    """A click on another edit: BPM's headline names it and gives its value (the table has every edit's);
    left as it is when BPM has not run."""
    report = getattr(state, "report", None)
    results = getattr(report.arrays, "bpm", None) if report is not None else None
    if not results:
        return gr.update()
    return views.bpm_caption(views.bpm_panels(results, report), pick=views.picked_index(pick))


# ---------------------------------------------------------------------------- BPM


def _parse_updates(ctx: EvaluateContext, outcome) -> Updates:
    """The parse in the BPM tab's fields and its summary above them."""
    values = logic.fields_of(outcome)
    return {**{component: values[name] for component, name in zip(ctx.tab.parse_fields, logic.BPM_FIELDS)},
            ctx.tab.bpm_parse_info: views.parse_markdown(outcome)}


def _bpm_updates(ctx: EvaluateContext, report: Report, state: logic.Session, message: str | None, *, archive: bool,
                plain: bool | None = None) -> Updates:
    """BPM's result shown: its panels and components, or why it did not run."""
    tab = ctx.tab
    files = views.write_downloads(report, Path(state.output_dir), state.figures, archive=archive)
    plain = archive if plain is None else plain  # the /bpm endpoint: plain values
    out = {tab.verdict: views.verdict_text(report) if plain else views.verdict_markdown(report),
           tab.table: views.score_table(report, plain=plain),
           tab.downloads: files, tab.report_json: views.public_report(report)}
    results = getattr(report.arrays, "bpm", None) or []
    if message or not results:
        why = scrub_paths(message) if message else "BPM has no result for these edits."
        out.update({tab.bpm_info: why if plain else views.BPM_HELP + "\n\n" + views.emphasis(why, "b"),
                    tab.bpm_gallery: None,
                    # the reason it did not run, not the generic "tick BPM ..." (both may be done)
                    tab.bpm_table: empty_table(f"BPM has not run: {scrub_paths(message)}" if message
                                                     else views.EMPTY_BPM)})
        return out
    panels = views.bpm_panels(results, report)
    parse = panels[0][1].parse
    pick = state.shown if state.shown is not None else logic.selected_edit(report)
    frame = views.bpm_components_frame(panels)
    out.update({tab.bpm_info: views.bpm_caption(panels, pick=pick, plain=plain),
                tab.bpm_gallery: views.bpm_items(panels),
                # the page's table: each column as wide as its longest word (an edit's name is not split)
                tab.bpm_table: frame if plain else gr.Dataframe(frame, column_widths=fitted_widths(frame)),
                **{component: parse[name] for component, name in zip(tab.parse_fields, logic.BPM_FIELDS)}})
    return out


@user_facing
def parse_instruction(ctx: EvaluateContext, instruction_value, parser, clip_model) -> Updates:
    """Parse the instruction and show it, editable, before BPM runs."""
    return _parse_updates(ctx, logic.parse_for_bpm(ctx.settings_for(clip_model), instruction_value or "", parser))


@user_facing
@_for_the_newest_result
@heavy_stage
def bpm_stage(ctx: EvaluateContext, bpm_enabled, instruction_value, parser, clip_model, state, progress=gr.Progress(),
              *, archive: bool = False) -> Updates:
    """After Evaluate: parse and show the parse; run BPM on it unless it needs the user first."""
    if not bpm_enabled or _stopped(state):
        return unchanged(ctx.tab.bpm_outputs)
    settings = ctx.settings_for(clip_model)
    outcome = logic.parse_for_bpm(settings, instruction_value or "", parser)
    shown = _parse_updates(ctx, outcome)
    if outcome.parsed is None or outcome.parsed.confidence == "low":
        why = "the instruction has no parse" if outcome.parsed is None else "the parse has low confidence"
        message = (f"BPM waits for you: {why}. Check or fill the fields under Parse, then press Run BPM "
                   "with these fields.")
        report = logic.Evaluator(settings=settings).skip_bpm(state.report, message)
        out = {**_bpm_updates(ctx, report, state, message, archive=archive), **shown}
        return answered(ctx.tab.bpm_outputs, out) if archive else out
    report, message = logic.run_bpm(settings, state, instruction=instruction_value or "", parser=parser,
                                    fields=logic.fields_of(outcome), progress=timed(progress))
    out = {**_bpm_updates(ctx, report, state, message, archive=archive), **shown}
    return answered(ctx.tab.bpm_outputs, out) if archive else out


@user_facing
@_for_the_newest_result
def bpm_on_fields(ctx: EvaluateContext, instruction_value, parser, clip_model, o1, o2, size, position, reference,
                  state, progress=gr.Progress(), *, plain: bool) -> Updates:
    """BPM on the fields as the user left them (the parse, corrected; or typed by hand). ``plain``: the
    /bpm_fields endpoint's plain values (the page's button renders HTML). The refusals come at once, before
    the memory gate (a user is not kept waiting behind another request to hear BPM cannot run)."""
    if why := first_contact.cannot_run(ctx.settings_for(clip_model), "bpm"):  # at once, not after a load
        return {**unchanged(ctx.tab.bpm_outputs), ctx.tab.bpm_info: views.BPM_HELP + "\n\n" + views.emphasis(why, "b")}
    if state is None or state.report is None:
        raise gr.Error("Nothing to run BPM on yet: press Evaluate first.")
    if not any((v or "").strip() not in ("", "None") for v in (o1, o2)) and not (instruction_value or "").strip():
        raise gr.Error("Fill o1 (the object in the source) and/or o2 (the object in the edit) first.")
    fields = {"o1": o1, "o2": o2, "size_state": size, "position_state": position, "reference": reference}
    return _bpm_on_checked_fields(ctx, instruction_value, parser, clip_model, fields, state, progress, plain=plain)


@heavy_stage
def _bpm_on_checked_fields(ctx: EvaluateContext, instruction_value, parser, clip_model, fields, state, progress, *,
                           plain: bool) -> Updates:
    report, message = logic.run_bpm(ctx.settings_for(clip_model), state, instruction=instruction_value or "",
                                    parser=parser, fields=fields, progress=timed(progress))
    out = _bpm_updates(ctx, report, state, message, archive=True, plain=plain)
    return answered(ctx.tab.bpm_outputs, out) if plain else out


# ---------------------------------------------------------------------------- judge, downloads, comparison


@user_facing
@_for_the_newest_result
def judge_stage(ctx: EvaluateContext, judge_enabled, instruction_value, clip_model, state,
                progress=gr.Progress()) -> Updates:
    """After Evaluate, when switched on: the MLLM judge's columns (the rationale on hover below the table)."""
    tab = ctx.tab
    if not judge_enabled or not ctx.judge_ready or _stopped(state):
        return {**unchanged(tab.judge_outputs), tab.judge_info: ""}
    progress(0.05, desc="MLLM judge: asking the chat model")
    report = logic.run_judge(ctx.settings_for(clip_model), state, instruction=instruction_value or "")
    files = views.write_downloads(report, Path(state.output_dir), state.figures, archive=False)
    return {tab.verdict: views.verdict_markdown(report), tab.table: views.score_table(report),
            tab.judge_info: views.judge_html(report), tab.downloads: files,
            tab.report_json: views.public_report(report)}


@user_facing
@_for_the_newest_result
@heavy_stage
def complete_downloads(ctx: EvaluateContext, state) -> Any:
    """The chain's last step: figures.zip, written once with everything the stages made."""
    if _stopped(state) or state.output_dir is None:
        return gr.skip()
    if getattr(state, "explained", None) is not None:
        logic.edit_maps(ctx.settings_for(state.clip_model), state)  # if the rest stage stopped early
    logic.figure_files(state)  # every figure not drawn yet (other edits, the hyperplane PNGs)
    # a copy: a click on another edit may add a figure to the session meanwhile
    return views.write_downloads(state.report, Path(state.output_dir), dict(state.figures), archive=True)


def _comparison(ctx: EvaluateContext, state) -> tuple[str, str | None]:
    """The comparison's HTML fragment and its ``comparison.html`` (None before an evaluation)."""
    if state is None or state.report is None:
        return views.COMPARISON_HELP, None
    if getattr(state, "explained", None) is not None:
        logic.edit_maps(ctx.settings_for(state.clip_model), state)  # asked for before the rest stage ended
    fragment, path = logic.comparison(state)
    state.comparison_of = state.report
    return fragment, str(path)


@user_facing
@heavy_stage
def show_comparison(ctx: EvaluateContext, state) -> tuple[Any, Any]:
    """Built when asked for (tab opened, button), so evaluating costs nothing more."""
    fragment, path = _comparison(ctx, state)
    return fragment, gr.DownloadButton(value=path, visible=path is not None)


@user_facing
@heavy_stage
def comparison_answer(ctx: EvaluateContext, state) -> tuple[str, str | None]:
    """The /comparison endpoint: plain values, the fragment and the path of ``comparison.html`` (which the client
    downloads; None before an evaluation)."""
    return _comparison(ctx, state)


@_for_the_newest_result
def reset_comparison(ctx: EvaluateContext, state) -> tuple[Any, Any]:
    """The results changed: the old comparison goes (it is rebuilt when next asked for)."""
    if state is not None and state.report is not None and state.comparison_of is state.report:
        return gr.skip(), gr.skip()  # opened for these very results already (a quick click)
    return views.COMPARISON_HELP, gr.DownloadButton(visible=False)


@_for_the_newest_result
def refresh_comparison(ctx: EvaluateContext, state) -> tuple[Any, Any]:
    """A comparison the user opened while the stages ran, rebuilt with what came since (BPM, judge)."""
    if state is None or state.report is None or state.comparison_of is not state.report:
        return gr.skip(), gr.skip()
    return show_comparison(ctx, state)


# ---------------------------------------------------------------------------- attributes, inputs, status


@user_facing
def extract_attributes(ctx: EvaluateContext, source, target, source_text, provider, clip_model, state,
                       progress=gr.Progress()) -> tuple[str, str, str, Any]:
    """The provider's attribute lists for the inputs, into the boxes (for the user to edit), and under the provider
    a line that says where they came from (the untrained label when random weights chose them)."""
    fresh = state is None  # else the page's state gains the lists in place and is not put back (see bpm_outputs)
    attrs, state = logic.extract(ctx.settings_for(clip_model), state or logic.Session(), source=source,
                                 target_text=target or "", source_text=source_text or "", provider=provider,
                                 progress=timed(progress))
    prov = attrs.provenance
    line = (f"{len(attrs.source)} source and {len(attrs.target)} target attributes from {prov.provider} "
            f"({prov.fidelity}). Edit them freely, then Evaluate.")
    if prov.extra.get("untrained"):
        line = f"{UNTRAINED_WARNING.upper()} ({prov.model or clip_model}): {line}"
    gr.Info(line)
    return "\n".join(attrs.source), "\n".join(attrs.target), text_safe(line), state if fresh else gr.skip()


@user_facing
def load_attributes(ctx: EvaluateContext, file) -> tuple[str, str]:
    """An attributes JSON file (as Save JSON writes it) into the boxes."""
    attrs = Attributes.load(file)
    return "\n".join(attrs.source), "\n".join(attrs.target)


@user_facing
def save_attributes(ctx: EvaluateContext, src_box_value, tgt_box_value, state, request: gr.Request) -> str:
    """The boxes as an attributes JSON file in the session's folder (for the download button)."""
    return logic.save_attributes(own_folder(ctx, state, request), src_box_value or "", tgt_box_value or "")


def show_edits(ctx: EvaluateContext, files) -> list[Any]:
    """The uploaded edits in the gallery, in scoring order."""
    return views.edit_items(files)


def describe_provider(ctx: EvaluateContext, name: str) -> str:
    return provider_note(ctx.providers, name)


def pick_demo_model(ctx: EvaluateContext) -> str:
    """The demo's first step: its CLIP model (every other model follows it, :func:`page_settings`)."""
    return first_contact.DEMO_CLIP


def load_first_example(ctx: EvaluateContext) -> list[Any]:
    """The demo's second step: its world example (else the first example) into the inputs (then it is
    evaluated)."""
    chosen = next((e for e in ctx.examples if e.id == first_contact.DEMO_EXAMPLE), ctx.examples[0])
    return chosen.row


def refresh_status(ctx: EvaluateContext, clip_model: str | None) -> tuple[str, gr.Timer]:
    """The status area for the model picked now (picking one starts loading it)."""
    try:
        settings = ctx.settings_for(clip_model)
        current, check = model_status(settings), check_region_models(settings)
    except InputError:
        current, check = ctx.startup_status, ctx.startup_region
    busy = current.state == "loading" or check.state == "checking"
    return status_html(current, check), gr.Timer(active=busy)


def end_session(ctx: EvaluateContext, request: gr.Request) -> None:
    """The page was closed (its heartbeat stopped): its session's folders go."""
    ctx.folders.release(getattr(request, "session_hash", None))
