"""The Evaluate tab's components: :func:`build` lays them out and returns them as an :class:`EvaluateTab`;
what they do is in :mod:`.handlers`, and :mod:`.wiring` connects the two."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ...attributes.catalog import ProviderStatus, provider_status
from ...bpm import POSITION_STATES, SIZE_STATES
from ...choices import CLASSIFIERS
from ...config import Settings
from ...metrics.suite import METRICS
from ...pipeline import FEATURE_METRICS, AugCLIPOptions
from .. import first_contact
from ..common import empty_table
from ..examples import Example
from ..hatie.layout import HatieTab
from ..hatie.layout import build as build_hatie
from ..inputs import image_path_input, number_input
from . import views
from .session import judge_ready as judge_configured

_IMAGE_BUTTONS = ["download", "fullscreen"]
#: The inputs an example fills, in its row's order.
_EXAMPLE_FIELDS = ("source", "edits", "target", "source_text", "instruction", "provider", "src_box", "tgt_box")


@dataclass(frozen=True)
class EvaluateOffer:
    """What the tab offers, decided once from the page's settings: the choice lists and the defaults."""

    clip_choices: list[str]
    providers: dict[str, ProviderStatus]
    default_provider: str
    bpm_on: bool
    bpm_label: str
    parsers: list[str]
    judge_ready: bool
    judge_where: str
    examples: list[Example]

    @property
    def provider_choices(self) -> list[tuple[str, str]]:
        return [(_provider_label(item), item.name) for item in self.providers.values()]


def evaluate_offer(settings: Settings, *, clip_choices: list[str], cuda: bool, examples: list[Example]) -> EvaluateOffer:
    providers = {item.name: item for item in provider_status(settings)}
    llm_ready = providers.get("openai") is not None and providers["openai"].available
    judge_ready, judge_where = judge_configured(settings)
    return EvaluateOffer(
        clip_choices=clip_choices, providers=providers,
        default_provider=settings.attribute_provider if settings.attribute_provider in providers else "manual",
        bpm_on=cuda or settings.bpm_preset == "fast", bpm_label=_bpm_label(settings, cuda),
        parsers=["rules", "llm"] if llm_ready else ["rules"], judge_ready=judge_ready, judge_where=judge_where,
        examples=examples)


def _provider_label(item: ProviderStatus) -> str:
    """Dropdown text: the name plus what the user should know before choosing it."""
    if not item.available:
        return f"{item.name} (not configured)"
    if item.lower_fidelity:
        return f"{item.name} (offline, lower fidelity)"
    return {"manual": "manual (your lists)", "openai": "openai (MLLM, the paper's method)"}.get(item.name, item.name)


def provider_note(providers: dict[str, ProviderStatus], name: str) -> str:
    """The note under the provider dropdown: why the chosen provider is (not) available."""
    item = providers.get(name)
    return f"<small>{html.escape(item.reason)}</small>" if item else ""


def _bpm_label(settings: Settings, cuda: bool) -> str:
    if settings.bpm_preset == "fast":
        return "BPM (fast preset: OWL-ViT + SAM 2.1 at 512 px)"
    return "BPM (GroundingDINO + SAM)" + ("" if cuda else "; slow on CPU")


@dataclass
class EvaluateTab:
    """Every component of the Evaluate tab, plus the page's session state and status area its handlers write."""

    session_state: gr.State
    status_box: gr.HTML
    # inputs
    source: Any
    target: gr.Textbox
    source_text: gr.Textbox
    instruction: gr.Textbox
    edits: gr.File
    gallery: gr.Gallery
    provider: gr.Dropdown
    provider_info: gr.HTML
    extract_btn: gr.Button
    src_box: gr.Textbox
    tgt_box: gr.Textbox
    load_btn: gr.UploadButton
    save_btn: gr.DownloadButton
    # options
    classifier: gr.Radio
    C: Any
    weighting: gr.Checkbox
    include_images: gr.Checkbox
    clip_model: gr.Dropdown
    explain_on: gr.Checkbox
    bpm_on: gr.Checkbox
    bpm_parser: gr.Radio
    judge_on: gr.Checkbox
    ground_truth: Any
    edit_mask: Any
    output_caption: gr.Textbox
    feature_metrics: gr.CheckboxGroup
    evaluate_btn: gr.Button
    rescore_btn: gr.Button
    # results
    verdict: gr.Markdown
    table: gr.Dataframe
    judge_info: gr.HTML
    edit_pick: gr.Radio
    relevancy_info: gr.Markdown
    augclip_map: gr.Image
    clip_t_map: gr.Image
    clip_dir_map: gr.Image
    exact_plot: gr.Plot
    umap_plot: gr.Plot
    source_ranking: gr.Image
    target_ranking: gr.Image
    alpha_plot: gr.Image
    bpm_info: gr.Markdown
    bpm_gallery: gr.Gallery
    bpm_table: gr.Dataframe
    bpm_parse_info: gr.Markdown
    bpm_o1: gr.Textbox
    bpm_o2: gr.Textbox
    bpm_size: gr.Dropdown
    bpm_position: gr.Dropdown
    bpm_reference: gr.Textbox
    bpm_parse_btn: gr.Button
    bpm_btn: gr.Button
    hatie: HatieTab
    comparison_tab: gr.Tab
    comparison_btn: gr.Button
    comparison_file: gr.DownloadButton
    comparison_html: gr.HTML
    report_json: gr.JSON
    downloads: gr.File
    example_block: gr.Examples | None
    # hidden buttons: the stand-alone API endpoints
    evaluate_api: gr.Button
    rescore_api: gr.Button
    explain_api: gr.Button
    bpm_api: gr.Button
    bpm_fields_btn: gr.Button
    comparison_api: gr.Button  # /comparison: the file as a plain value (the page's button shows and hides it)

    # ------------------------------------------------------------------ the lists events read and write
    @property
    def figure_outputs(self) -> list[Any]:
        """The per-edit figures, in :data:`views.PER_EDIT_FIGURES` order."""
        return [self.augclip_map, self.clip_t_map, self.clip_dir_map, self.source_ranking, self.target_ranking,
                self.alpha_plot]

    @property
    def relevancy_outputs(self) -> list[Any]:
        return [c for c, key in zip(self.figure_outputs, views.PER_EDIT_FIGURES) if key in views.RELEVANCY_FIGURES]

    @property
    def ranking_outputs(self) -> list[Any]:
        return [self.source_ranking, self.target_ranking, self.alpha_plot]

    @property
    def score_outputs(self) -> list[Any]:
        return [self.verdict, self.table, self.src_box, self.tgt_box, self.downloads, self.report_json,
                self.session_state, self.edit_pick, self.exact_plot, self.umap_plot, *self.figure_outputs,
                self.bpm_gallery, self.bpm_table]

    @property
    def explain_outputs(self) -> list[Any]:
        return [self.edit_pick, self.exact_plot, self.umap_plot, *self.figure_outputs, self.relevancy_info,
                self.downloads, self.session_state]

    @property
    def rest_outputs(self) -> list[Any]:
        return [self.umap_plot]  # the rest stage adds to the page's state in place

    @property
    def parse_fields(self) -> list[Any]:
        """The BPM tab's fields, in :data:`session.BPM_FIELDS` order."""
        return [self.bpm_o1, self.bpm_o2, self.bpm_size, self.bpm_position, self.bpm_reference]

    @property
    def bpm_outputs(self) -> list[Any]:
        # BPM, the judge and HATIE add to the result's report in place and leave the page's state alone: the
        # explanation stage may have replaced the state object while they ran, and writing back the object
        # they read would undo that.
        return [self.verdict, self.table, self.bpm_info, self.bpm_gallery, self.bpm_table, *self.parse_fields,
                self.downloads, self.report_json, self.bpm_parse_info]

    @property
    def judge_outputs(self) -> list[Any]:
        return [self.verdict, self.table, self.judge_info, self.downloads, self.report_json]

    @property
    def comparison_outputs(self) -> list[Any]:
        return [self.comparison_html, self.comparison_file]

    @property
    def example_inputs(self) -> list[Any]:
        return [getattr(self, name) for name in _EXAMPLE_FIELDS]

    @property
    def evaluate_inputs(self) -> list[Any]:
        return [self.source, self.edits, self.target, self.source_text, self.instruction, self.provider,
                self.src_box, self.tgt_box, self.classifier, self.C, self.weighting, self.include_images,
                self.clip_model, self.ground_truth, self.edit_mask, self.output_caption, self.feature_metrics,
                self.session_state]

    @property
    def rescore_inputs(self) -> list[Any]:
        return [self.src_box, self.tgt_box, self.classifier, self.C, self.weighting, self.include_images,
                self.clip_model, self.session_state]

    @property
    def bpm_inputs(self) -> list[Any]:
        return [self.bpm_on, self.instruction, self.bpm_parser, self.clip_model, self.session_state]

    @property
    def bpm_field_inputs(self) -> list[Any]:
        return [self.instruction, self.bpm_parser, self.clip_model, *self.parse_fields, self.session_state]


def build(settings: Settings, offer: EvaluateOffer, *, session_state: gr.State,
          status_box: gr.HTML) -> EvaluateTab:
    """Lay out the Evaluate tab (call inside the page's ``gr.Tabs``); nothing is wired here."""
    parts: dict[str, Any] = {"session_state": session_state, "status_box": status_box}
    with gr.Tab("Evaluate", id="evaluate"):
        examples_area = gr.Column()  # filled below, once the inputs exist: shown on top
        parts.update(_inputs(settings, offer))
        parts.update(_options(settings, offer))
        parts.update(_results())
        with gr.Tabs():
            parts.update(_explanations())
            parts.update(_bpm_tab())
            parts["hatie"] = build_hatie(session_state, parts["instruction"], parts["clip_model"])
            parts.update(_comparison_and_report())
        parts["downloads"] = gr.File(label="Downloads: report.json, report.csv, figures.zip", file_count="multiple",
                                     interactive=False, elem_id="aug-downloads")
        with examples_area:
            first_contact.note("scores", "examples")
            parts["example_block"] = gr.Examples(
                examples=[ex.row for ex in offer.examples],
                example_labels=[ex.label for ex in offer.examples],
                inputs=[parts[name] for name in _EXAMPLE_FIELDS],
                label="Start from an example (one click loads and runs it)",
                examples_per_page=8,
            ) if offer.examples else None
        for name in ("evaluate_api", "rescore_api", "explain_api", "bpm_api", "bpm_fields_btn", "comparison_api"):
            parts[name] = gr.Button(visible=False)
    return EvaluateTab(**parts)


def _inputs(settings: Settings, offer: EvaluateOffer) -> dict[str, Any]:
    """Steps 1-3: the source and texts, the edits, the attributes."""
    parts: dict[str, Any] = {}
    with gr.Row(equal_height=False):
        with gr.Column(scale=4, min_width=280):
            parts["source"] = image_path_input(label="1. Source image", height=230, sources=["upload", "clipboard"],
                                               elem_id="aug-source")
            parts["target"] = gr.Textbox(label="Target text", elem_id="aug-target", lines=1,
                                         placeholder="an instruction (make the flower pink) or a description "
                                                     "(a pink dahlia)")
            parts["source_text"] = gr.Textbox(label="Source text (optional: enables CLIPdir)",
                                              elem_id="aug-source-text", placeholder="e.g. an orange dahlia flower")
            parts["instruction"] = gr.Textbox(label="Editing instruction (optional: for BPM)",
                                              elem_id="aug-instruction", placeholder="e.g. make the flower pink")
        with gr.Column(scale=5, min_width=320):
            parts["edits"] = gr.File(file_count="multiple", file_types=["image"], allow_reordering=True,
                                     label=f"2. Edited images (1-{settings.max_edits}; drag to reorder, x to remove)",
                                     elem_id="aug-edits")  # as tall as its files: all 8 in view
            parts["gallery"] = gr.Gallery(label="Edits in scoring order", columns=4, height="auto", allow_preview=True,
                                          object_fit="contain", format="png", elem_id="aug-gallery")
        with gr.Column(scale=4, min_width=280):
            parts["provider"] = gr.Dropdown(offer.provider_choices, value=offer.default_provider,
                                            label="3. Attribute provider",
                                            info="fills empty lists on Evaluate; or type / edit the lists below",
                                            elem_id="aug-provider")
            parts["provider_info"] = gr.HTML(provider_note(offer.providers, offer.default_provider),
                                             label="Attributes: where they came from")
            parts["extract_btn"] = gr.Button("Extract attributes", size="sm")
            first_contact.note("scores", "extract")
            parts["src_box"] = gr.Textbox(label="Source attributes (one per line)", lines=4, max_lines=10,
                                          elem_id="aug-src-attrs")
            parts["tgt_box"] = gr.Textbox(label="Target attributes (one per line)", lines=3, max_lines=10,
                                          elem_id="aug-tgt-attrs")
            with gr.Row():
                parts["load_btn"] = gr.UploadButton("Load JSON", file_types=[".json"], size="sm")
                parts["save_btn"] = gr.DownloadButton("Save JSON", size="sm")
    return parts


def _options(settings: Settings, offer: EvaluateOffer) -> dict[str, Any]:
    """The advanced options (AugCLIP's, the model, the later stages, the reference metrics) and the buttons."""
    parts: dict[str, Any] = {}
    with gr.Accordion("Advanced options (AugCLIP changes re-score from cached embeddings)", open=False):
        with gr.Row():
            defaults = AugCLIPOptions()
            parts["classifier"] = gr.Radio(list(CLASSIFIERS), value=defaults.classifier, label="Classifier (App. A.3)")
            parts["C"] = number_input(defaults.C, label="C (svm / logistic)", minimum=1e-4, maximum=settings.max_c)
            parts["weighting"] = gr.Checkbox(defaults.weighting, label="Weight samples by alpha (Eq. 6)")
            parts["include_images"] = gr.Checkbox(defaults.include_images, label="Images in the fit (App. B)")
            # Only the offered models: a spec typed by a web client could name a folder on
            # the server (local-dir:...) or any model on the Hub.
            parts["clip_model"] = gr.Dropdown(offer.clip_choices, value=settings.clip_model, label="CLIP model (spec)",
                                              elem_id="aug-clip-model")
        with gr.Row():
            parts["explain_on"] = gr.Checkbox(True, label="Explanations (relevancy maps, hyperplane views, rankings)",
                                              elem_id="aug-explain-on")
            parts["bpm_on"] = gr.Checkbox(offer.bpm_on, label=offer.bpm_label, elem_id="aug-bpm-on")
            parts["bpm_parser"] = gr.Radio(offer.parsers, value="rules", label="BPM instruction parser")
            parts["judge_on"] = gr.Checkbox(False, label="MLLM judge (SC / PQ / overall)", elem_id="aug-judge-on",
                                            interactive=offer.judge_ready, info=offer.judge_where)
        gr.Markdown("**Reference and preservation metrics** (MagicBrush, PIE-Bench; docs/metrics.md): "
                    "each input switches on its columns. The edit mask is white where the edit may change the "
                    "image; PSNR / MSE / SSIM are measured outside it.")
        with gr.Row():
            # unopened, like the source: our loader names the input in every error
            parts["ground_truth"] = image_path_input(label="Ground-truth edit (L1 / L2 / CLIP-I to it)",
                                                     elem_id="aug-ground-truth", height=150)
            parts["edit_mask"] = image_path_input(label="Edit mask (PSNR / MSE / SSIM outside it)",
                                                  elem_id="aug-edit-mask", height=150)
            with gr.Column():
                parts["output_caption"] = gr.Textbox(label="Output caption (CLIP-T to it)",
                                                     elem_id="aug-output-caption")
                parts["feature_metrics"] = gr.CheckboxGroup(
                    [(f"{METRICS[key].label}: {what}", key) for key, what in FEATURE_METRICS.items()],
                    value=[], label="Columns that load a network of their own", elem_id="aug-feature-metrics")
    with gr.Row():
        parts["evaluate_btn"] = gr.Button("Evaluate", variant="primary", size="lg", elem_id="aug-evaluate", scale=3)
        parts["rescore_btn"] = gr.Button("Re-score with the edited attributes", size="lg", scale=2)
    first_contact.note("scores", "evaluate")
    return parts


def _results() -> dict[str, Any]:
    return {
        "verdict": gr.Markdown(label="Verdict", elem_id="aug-verdict"),
        "table": gr.Dataframe(empty_table(views.EMPTY_SCORES), label=views.SCORE_LABEL,
                              datatype=views.SCORE_DATATYPES, interactive=False, elem_id="aug-table", wrap=True),
        "judge_info": gr.HTML(elem_id="aug-judge"),
        "edit_pick": gr.Radio([], label="Explanations for edit", elem_id="aug-edit-pick", visible=False),
    }


def _figure(label: str, elem_id: str, scale: int | None = None) -> gr.Image:
    return gr.Image(label=label, type="filepath", elem_id=elem_id, show_label=False, buttons=_IMAGE_BUTTONS,
                    scale=scale)


def _explanations() -> dict[str, Any]:
    """The relevancy maps, hyperplane views and attribute rankings tabs."""
    parts: dict[str, Any] = {}
    with gr.Tab("Relevancy maps", id="relevancy"):
        parts["relevancy_info"] = gr.Markdown(views.RELEVANCY_HELP, label="Explanations: notes")
        with gr.Row():
            # AugCLIP's figure holds two maps: twice the width, so its maps show as large as CLIP-T's one
            parts["augclip_map"] = _figure("AugCLIP maps (toward the ideal edit; along the modification v)",
                                           "aug-map-augclip", scale=2)
            parts["clip_t_map"] = _figure("CLIP-T map (toward the target text)", "aug-map-clip-t")
        parts["clip_dir_map"] = _figure("CLIPdir signed map with its two components (App. D.5)", "aug-map-clip-dir")
    with gr.Tab("Hyperplane views", id="hyperplane"):
        gr.Markdown(views.HYPERPLANE_HELP)
        # Interactive (Plotly, bundled with Gradio): hover names a point and gives its alpha
        # and signed distance; the legend hides / shows sets; drag to zoom, double-click to reset.
        parts["exact_plot"] = gr.Plot(label="Exact view (the selected edit's fit)", elem_id="aug-exact",
                                      show_label=False)
        parts["umap_plot"] = gr.Plot(label="UMAP view (illustrative; all edits)", elem_id="aug-umap", show_label=False)
    with gr.Tab("Attribute rankings", id="rankings"):
        gr.Markdown(views.RANKINGS_HELP)
        with gr.Row():
            parts["source_ranking"] = _figure("Source attributes (Eq. 11)", "aug-rank-source")
            parts["target_ranking"] = _figure("Target attributes (Eq. 12)", "aug-rank-target")
        parts["alpha_plot"] = _figure("Alpha weights (Eq. 6)", "aug-alpha")
    return parts


def _bpm_tab() -> dict[str, Any]:
    """BPM's panels and its parse, editable before it runs."""
    parts: dict[str, Any] = {}
    with gr.Tab("BPM", id="bpm"):
        parts["bpm_info"] = gr.Markdown(views.BPM_HELP, label="BPM: verdict and notes", elem_id="aug-bpm-info")
        parts["bpm_gallery"] = gr.Gallery(label="Per edit: source with M_origin / B_origin, edit with M_edit / "
                                                "B_edit, preserved region", columns=3, height=420,
                                          object_fit="contain", elem_id="aug-bpm-gallery")
        parts["bpm_table"] = gr.Dataframe(empty_table(views.EMPTY_BPM), label="BPM components",
                                          interactive=False, wrap=True, elem_id="aug-bpm-table")
        parts["bpm_parse_info"] = gr.Markdown("**Parse**: press *Parse the instruction* (Evaluate does it "
                                              "when BPM is on) to see o1 / o2 and the states before BPM runs; "
                                              "correct any field, or fill them for a description-style "
                                              "target.", label="BPM: the parse", elem_id="aug-bpm-parse-info")
        with gr.Row():
            parts["bpm_o1"] = gr.Textbox(label="o1 (object in the source; None to add)", elem_id="aug-bpm-o1")
            parts["bpm_o2"] = gr.Textbox(label="o2 (object in the edit; None to remove)", elem_id="aug-bpm-o2")
            parts["bpm_size"] = gr.Dropdown(list(SIZE_STATES), value="unchanged", label="size state")
            parts["bpm_position"] = gr.Dropdown(list(POSITION_STATES), value="unchanged", label="position state")
            parts["bpm_reference"] = gr.Textbox(label="reference object (optional)")
        with gr.Row():
            parts["bpm_parse_btn"] = gr.Button("Parse the instruction", size="sm", elem_id="aug-bpm-parse")
            parts["bpm_btn"] = gr.Button("Run BPM with these fields", size="sm", elem_id="aug-bpm-run")
        first_contact.note("bpm", "tab")
    return parts


def _comparison_and_report() -> dict[str, Any]:
    parts: dict[str, Any] = {}
    with gr.Tab("Comparison", id="comparison") as parts["comparison_tab"]:
        with gr.Row():
            parts["comparison_btn"] = gr.Button("Show / refresh the comparison", size="sm",
                                                elem_id="aug-comparison-refresh")
            parts["comparison_file"] = gr.DownloadButton("Download the HTML report", size="sm", visible=False,
                                                         elem_id="aug-comparison-download")
        parts["comparison_html"] = gr.HTML(views.COMPARISON_HELP, label="Comparison", elem_id="aug-comparison")
    with gr.Tab("Report (JSON)", id="json"):
        parts["report_json"] = gr.JSON(label="Full report")
    return parts
