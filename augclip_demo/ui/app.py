"""The page: layout and wiring. Logic lives in :mod:`.session`, rendering in :mod:`.views`."""

from __future__ import annotations

import functools
import html
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from ..attributes.base import Attributes
from ..attributes.catalog import ProviderStatus, provider_status
from ..config import Settings
from ..errors import AugclipError
from ..inference.device import is_out_of_memory
from ..pipeline import AugCLIPOptions
from . import session as logic
from .examples import load_examples
from .status import model_status, status_html
from .views import score_table, verdict_markdown, write_downloads

log = logging.getLogger(__name__)

CLIP_CHOICES = ["ViT-B-16/openai", "ViT-B-32/openai", "ViT-L-14/openai", "random:ViT-B-16", "random:tiny"]

CSS = """
.aug-status {font-size: 0.95rem; padding: 4px 0;}
.aug-untrained {background: #fff1d6; border: 2px solid #e08a00; color: #5a3600; padding: 8px 12px;
  border-radius: 6px; font-weight: 600; margin: 4px 0;}
.aug-error {background: #fde2e1; border: 2px solid #c0392b; color: #5c1410; padding: 8px 12px; border-radius: 6px;}
.aug-steps {color: #555; font-size: 0.9rem;}
#aug-evaluate {min-height: 48px;}
"""

HEADER = """
# AugCLIP Studio
<div class="aug-steps">Judge text-guided image edits: <b>1.</b> upload a source image and type the target text,
<b>2.</b> add 1-8 edited images, <b>3.</b> (optionally) check the attributes, then press <b>Evaluate</b>.
Or start from an example below. AugCLIP scores each edit against the estimated <i>ideal</i> edit of the
source; CLIPdir, CLIP-I, CLIP-T and L2 are shown beside it.</div>
"""


def user_facing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Show AugclipErrors as their message, anything else as a short notice (details go to the log)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except AugclipError as exc:
            raise gr.Error(str(exc), title="Cannot do that") from None
        except Exception as exc:
            if is_out_of_memory(exc):
                raise gr.Error("The GPU ran out of memory: try fewer edited images or a smaller CLIP model.") from None
            log.exception("unexpected error in %s", fn.__name__)
            raise gr.Error("Something went wrong inside the app (the details are in the server log). "
                           "Your inputs are kept; try again, or report the problem.") from None

    return wrapper


def build_app(settings: Settings | None = None) -> gr.Blocks:
    base_settings = settings or Settings.from_env()
    status = model_status(base_settings)
    examples = load_examples()
    statuses = {item.name: item for item in provider_status(base_settings)}
    default_provider = base_settings.attribute_provider if base_settings.attribute_provider in statuses else "manual"
    provider_choices = [(provider_label(item), item.name) for item in statuses.values()]

    def settings_for(clip_model: str | None) -> Settings:
        return base_settings.replace(clip_model=(clip_model or "").strip() or None)

    def options_for(classifier: str, C: float | None, weighting: bool, include_images: bool) -> AugCLIPOptions:
        return AugCLIPOptions(classifier=classifier, C=float(C) if C else 1.0, weighting=bool(weighting),
                              include_images=bool(include_images))

    # ------------------------------------------------------------------ handlers
    def refresh_status() -> tuple[str, gr.Timer]:
        return status_html(status), gr.Timer(active=status.state == "loading")

    def describe_provider(name: str) -> str:
        item = statuses.get(name)
        return f"<small>{html.escape(item.reason)}</small>" if item else ""

    def show_edits(files: list[str] | None) -> list[tuple[str, str]]:
        return [(path, f"{i + 1}. {Path(path).name}") for i, path in enumerate(files or [])]

    @user_facing
    def evaluate(source, edits, target, source_text, provider, src_box, tgt_box, classifier, C, weighting,
                 include_images, clip_model, state, progress=gr.Progress()):
        settings = settings_for(clip_model)
        report, state = logic.evaluate(
            settings, state or logic.Session(), source=source, edits=edits, target_text=target or "",
            source_text=source_text or "", provider=provider, source_attrs_box=src_box or "",
            target_attrs_box=tgt_box or "", options=options_for(classifier, C, weighting, include_images),
            progress=lambda f, stage: progress(f, desc=stage),
        )
        progress(0.8, desc="writing downloads")
        return present(report, state)

    @user_facing
    def rescore(src_box, tgt_box, classifier, C, weighting, include_images, clip_model, state):
        report, state = logic.rescore(settings_for(clip_model), state, options_for(classifier, C, weighting, include_images),
                                      src_box or "", tgt_box or "")
        return present(report, state)

    def rescore_if_evaluated(*args):
        """Option changes re-score silently when there is something to re-score, else do nothing."""
        state = args[-1]
        if state is None or state.report is None:
            return [gr.skip()] * 7
        return rescore(*args)

    def present(report, state):
        files = write_downloads(report, Path(state.output_dir), state.figures)
        attrs = report.attributes
        return (verdict_markdown(report), score_table(report), "\n".join(attrs.source), "\n".join(attrs.target),
                files, report.to_dict(), state)

    @user_facing
    def extract(source, target, source_text, provider, clip_model, state, progress=gr.Progress()):
        progress(0.1, desc=f"extracting attributes ({provider})")
        attrs, state = logic.extract(settings_for(clip_model), state or logic.Session(), source=source,
                                     target_text=target or "", source_text=source_text or "", provider=provider)
        prov = attrs.provenance
        gr.Info(f"{len(attrs.source)} source and {len(attrs.target)} target attributes from {prov.provider} "
                f"({prov.fidelity}). Edit them freely, then Evaluate.")
        return "\n".join(attrs.source), "\n".join(attrs.target), state

    @user_facing
    def load_attributes(file):
        attrs = Attributes.load(file)
        return "\n".join(attrs.source), "\n".join(attrs.target)

    @user_facing
    def save_attributes(src_box, tgt_box, state):
        return logic.save_attributes(state or logic.Session(), src_box or "", tgt_box or "")

    # ------------------------------------------------------------------ layout
    with gr.Blocks(title="AugCLIP Studio", delete_cache=(3600, 3600)) as demo:
        state = gr.State(logic.Session())
        gr.Markdown(HEADER)
        status_box = gr.HTML(status_html(status))
        timer = gr.Timer(1.0, active=status.state == "loading")

        with gr.Tabs():
            with gr.Tab("Evaluate", id="evaluate"):
                examples_area = gr.Column()  # filled below, once the inputs exist: shown on top
                with gr.Row(equal_height=False):
                    with gr.Column(scale=4, min_width=280):
                        source = gr.Image(type="filepath", label="1. Source image", height=230,
                                          sources=["upload", "clipboard"], elem_id="aug-source")
                        target = gr.Textbox(label="Target text", elem_id="aug-target", lines=1,
                                            placeholder="an instruction (make the flower pink) or a description (a pink dahlia)")
                        source_text = gr.Textbox(label="Source text (optional: enables CLIPdir)", elem_id="aug-source-text",
                                                 placeholder="e.g. an orange dahlia flower")
                    with gr.Column(scale=5, min_width=320):
                        edits = gr.File(file_count="multiple", file_types=["image"], allow_reordering=True,
                                        label=f"2. Edited images (1-{logic.MAX_EDITS}; drag to reorder, x to remove)",
                                        elem_id="aug-edits", height=150)
                        gallery = gr.Gallery(label="Edits in scoring order", columns=4, height=170, allow_preview=True,
                                             object_fit="contain", format="png", elem_id="aug-gallery")
                    with gr.Column(scale=4, min_width=280):
                        provider = gr.Dropdown(provider_choices, value=default_provider, label="3. Attribute provider",
                                               info="fills empty lists on Evaluate; or type / edit the lists below",
                                               elem_id="aug-provider")
                        provider_info = gr.HTML(describe_provider(default_provider))
                        extract_btn = gr.Button("Extract attributes", size="sm")
                        src_box = gr.Textbox(label="Source attributes (one per line)", lines=4, max_lines=10,
                                             elem_id="aug-src-attrs")
                        tgt_box = gr.Textbox(label="Target attributes (one per line)", lines=3, max_lines=10,
                                             elem_id="aug-tgt-attrs")
                        with gr.Row():
                            load_btn = gr.UploadButton("Load JSON", file_types=[".json"], size="sm")
                            save_btn = gr.DownloadButton("Save JSON", size="sm")
                with gr.Accordion("Advanced options (changing one re-scores from cached embeddings)", open=False):
                    with gr.Row():
                        classifier = gr.Radio(["svm", "logistic", "lda"], value="svm", label="Classifier (App. A.3)")
                        C = gr.Number(1.0, label="C (svm / logistic)", minimum=1e-4)
                        weighting = gr.Checkbox(True, label="Weight samples by alpha (Eq. 6)")
                        include_images = gr.Checkbox(True, label="Images in the fit (App. B)")
                        clip_model = gr.Dropdown(sorted({base_settings.clip_model, *CLIP_CHOICES}),
                                                 value=base_settings.clip_model, allow_custom_value=True,
                                                 label="CLIP model (spec)")
                with gr.Row():
                    evaluate_btn = gr.Button("Evaluate", variant="primary", size="lg", elem_id="aug-evaluate", scale=3)
                    rescore_btn = gr.Button("Re-score with the edited attributes", size="lg", scale=2)
                verdict = gr.Markdown(elem_id="aug-verdict")
                table = gr.Dataframe(label="Scores (one row per edit; best per column highlighted)",
                                     interactive=False, elem_id="aug-table", wrap=True)
                with gr.Tabs():
                    with gr.Tab("Report (JSON)"):
                        report_json = gr.JSON(label="Full report")
                downloads = gr.File(label="Downloads: report.json, report.csv, figures.zip", file_count="multiple",
                                    interactive=False, elem_id="aug-downloads")
                with examples_area:
                    example_block = gr.Examples(
                        examples=[ex.row for ex in examples],
                        example_labels=[ex.label for ex in examples],
                        inputs=[source, edits, target, source_text, provider, src_box, tgt_box],
                        label="Start from an example (one click loads and runs it)",
                        examples_per_page=8,
                    ) if examples else None
            with gr.Tab("Help"):
                gr.Markdown(help_markdown())

        result_outputs = [verdict, table, src_box, tgt_box, downloads, report_json, state]
        eval_inputs = [source, edits, target, source_text, provider, src_box, tgt_box, classifier, C, weighting,
                       include_images, clip_model, state]
        evaluate_btn.click(evaluate, eval_inputs, result_outputs, api_name="evaluate")
        rescore_inputs = [src_box, tgt_box, classifier, C, weighting, include_images, clip_model, state]
        rescore_btn.click(rescore, rescore_inputs, result_outputs, api_name="rescore")
        for control in (classifier, weighting, include_images):
            control.change(rescore_if_evaluated, rescore_inputs, result_outputs, api_name=False)
        C.submit(rescore_if_evaluated, rescore_inputs, result_outputs, api_name=False)
        extract_btn.click(extract, [source, target, source_text, provider, clip_model, state], [src_box, tgt_box, state],
                          api_name="extract_attributes")
        load_btn.upload(load_attributes, load_btn, [src_box, tgt_box], api_name=False)
        save_btn.click(save_attributes, [src_box, tgt_box, state], save_btn, api_name=False)
        if example_block is not None:
            # Load the example into the inputs, then evaluate it with the page's current options.
            example_block.load_input_event.then(evaluate, eval_inputs, result_outputs, api_name=False)
        edits.change(show_edits, edits, gallery, api_name=False)
        provider.change(describe_provider, provider, provider_info, api_name=False)
        timer.tick(refresh_status, None, [status_box, timer], api_name=False)
        demo.load(refresh_status, None, [status_box, timer], api_name=False)
    demo.queue(default_concurrency_limit=2, max_size=64)
    return demo


def provider_label(item: ProviderStatus) -> str:
    """Dropdown text: the name plus what the user should know before choosing it."""
    if not item.available:
        return f"{item.name} (not configured)"
    if item.lower_fidelity:
        return f"{item.name} (offline, lower fidelity)"
    return {"manual": "manual (your lists)", "openai": "openai (MLLM, the paper's method)"}.get(item.name, item.name)


def help_markdown() -> str:
    return """
### What the scores mean
* **AugCLIP**: cosine similarity between the edit and the estimated *ideal* edit, the smallest change of
  the source that a weighted SVM puts on the target side of the source/target attribute hyperplane
  (higher is better). It rewards edits that change what the text asks and keep the rest.
* **CLIPdir**: cosine between the image change and the text change (needs a source text).
* **CLIP-I**: similarity of edit and source (preservation only). **CLIP-T**: similarity of edit and
  target text (modification only). **L2**: pixel RMSE to the source (lower is better).

### Attributes
Short visual attributes work best (paper Table 8). `clip-vocab` ranks a built-in vocabulary with
CLIP (offline, lower fidelity than an MLLM); `openai` asks any OpenAI-compatible vision model
(configure `OPENAI_API_KEY` / `OPENAI_BASE_URL` / `AUGCLIP_MLLM_MODEL` on the server); `manual`
uses the lists you type. Edit the lists and press *Re-score* to see the effect without re-encoding images.

### API
Every button is also an API endpoint (`/evaluate`, `/rescore`, `/extract_attributes`): see *Use via API*
at the bottom of the page, or the README for a `gradio_client` example.
"""


def launch_kwargs(settings: Settings | None = None) -> dict[str, Any]:
    """Arguments for ``demo.launch``: GRADIO_SERVER_NAME / GRADIO_SERVER_PORT are read by Gradio itself."""
    settings = settings or Settings.from_env()
    return {
        "server_name": os.environ.get("GRADIO_SERVER_NAME") or None,
        # Gradio refuses bigger uploads itself (with a margin, so our own message names the file).
        "max_file_size": f"{int(settings.max_upload_mb * 2) + 1}mb",
        "css": CSS,
        "theme": gr.themes.Soft(),
        "show_error": False,
    }

