"""The Batch tab's components: :func:`build` lays them out and returns them as a :class:`BatchTab`;
what they do is in :mod:`.handlers` (a manifest plus a zip of its images in; per-edit scores, the
protocol table and downloads out), and :mod:`.wiring` connects the two (the ``/batch`` API endpoint included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from ...batch.options import batch_metric_keys
from ...config import Settings
from ...metrics.suite import METRICS, metric_keys
from ..common import empty_table

MAX_SHOWN_ROWS = 500  # per-edit rows shown on the page; the downloads hold all of them
_EMPTY_PROTOCOL = ("No protocol figures yet: choose a manifest and its image zip (or press Load the shipped examples), "
                  "then Run batch.")
EMPTY_SCORES = "No per-edit scores yet: they appear here when a batch has run."


def _batch_help(settings: Settings) -> str:
    return f"""
**Score a whole benchmark.** Upload a **manifest** (JSONL, one item per line: `id`, `source`, `target_text`,
optional `source_text`, `edits` with `path` / `name` / `role` (gt, ep, em, candidate), optional `human`
judgments and `attributes`; docs/batch.md, *Manifests*, has the format) and a **zip of the images** it
names; paths in the manifest are relative to the zip's root (or to its single top-level folder).
Items with `human.preferred` give s2AFC, triplets with gt / ep / em roles give AccBoth, per-edit
`human.scores` give correlations. The zip may be at most {settings.upload_max_zip_mb} MB, hold at most
{settings.upload_max_files} files and expand to at most {settings.upload_max_unzipped_mb} MB; paths with
`..`, absolute paths and links are refused. The same run from a shell:
`python -m augclip_demo batch MANIFEST --out RESULTS.jsonl`, then `python -m augclip_demo protocol RESULTS.jsonl`.
"""


def metric_choices(settings: Settings | None = None) -> list[tuple[str, str]]:
    """Every metric a batch run computes (BPM included: it runs on items with an instruction or a parse); the
    MLLM judge's rows only when ``settings`` name a configured judge endpoint (the operator's, never the client's)."""
    from ...llm.client import endpoint_status

    judge = settings is not None and endpoint_status(settings.judge_base_url).configured
    return [(METRICS[key].label if key in METRICS else key, key) for key in batch_metric_keys()
            if judge or METRICS[key].basis != "judge"]


@dataclass
class BatchTab:
    """Every component of the Batch tab."""

    # inputs
    manifest: gr.File
    images: gr.File
    metrics: gr.CheckboxGroup
    provider: gr.Dropdown
    clip_model: gr.Dropdown
    skip_invalid: gr.Checkbox
    run_btn: gr.Button
    stop_btn: gr.Button  # shown while a run is queued or going
    example_btn: gr.Button
    # results
    needs: gr.HTML
    summary: gr.Markdown
    protocol: gr.Dataframe
    scores: gr.Dataframe
    files: gr.File
    explore_btn: gr.Button  # the latest run (finished or stopped) into the Explore tab, with its images

    @property
    def run_inputs(self) -> list[Any]:
        return [self.manifest, self.images, self.metrics, self.provider, self.clip_model, self.skip_invalid]

    @property
    def run_outputs(self) -> list[Any]:
        return [self.summary, self.protocol, self.scores, self.files]


def build(settings: Settings, *, provider_choices: list[tuple[str, str]], default_provider: str,
          clip_choices: list[str]) -> BatchTab:
    """Lay out the tab (call inside ``gr.Blocks`` / ``gr.Tabs``); nothing is wired here."""
    with gr.Tab("Batch", id="batch"):
        gr.Markdown(_batch_help(settings))
        with gr.Row(equal_height=False):
            manifest = gr.File(label="Manifest (.jsonl)", file_types=[".jsonl", ".json", ".txt"], height=120,
                               elem_id="aug-batch-manifest")
            images = gr.File(label="Images (.zip)", file_types=[".zip"], height=120, elem_id="aug-batch-zip")
            with gr.Column(min_width=300):
                metrics = gr.CheckboxGroup(metric_choices(settings), value=metric_keys(computable=True, primary=True), label="Metrics",
                                           elem_id="aug-batch-metrics")
                provider = gr.Dropdown(provider_choices, value=default_provider, label="Attribute provider",
                                       info="for items without attributes in the manifest")
                clip_model = gr.Dropdown(clip_choices, value=settings.clip_model, label="CLIP model (spec)",
                                         elem_id="aug-batch-clip")
                skip_invalid = gr.Checkbox(False, label="Skip invalid manifest lines (else every problem is listed "
                                                        "and nothing runs)")
        with gr.Row():
            run_btn = gr.Button("Run batch", variant="primary", elem_id="aug-batch-run", scale=3)
            stop_btn = gr.Button("Stop", variant="stop", elem_id="aug-batch-stop", scale=1, visible=False)
            example_btn = gr.Button("Load the shipped examples (a manifest of 7 items and its zip)", scale=2,
                                    elem_id="aug-batch-example")
        # Beside Run: the models the chosen CLIP model and metrics need and lack (not one of first_contact's
        # page notes: those follow the Evaluate tab's CLIP model, this one the tab's own).
        needs = gr.HTML("", elem_id="aug-batch-needs", padding=False, visible=False)
        summary = gr.Markdown(label="Batch summary", elem_id="aug-batch-summary")
        protocol = gr.Dataframe(empty_table(_EMPTY_PROTOCOL),
                                label="Protocols (metric x figure; 95% bootstrap CI in brackets)", interactive=False,
                                wrap=True, elem_id="aug-batch-protocol")
        scores = gr.Dataframe(empty_table(EMPTY_SCORES),
                              label=f"Per-edit scores (first {MAX_SHOWN_ROWS} rows; all in the downloads; click a "
                                    "header to sort)", interactive=False, max_height=420, elem_id="aug-batch-scores")
        files = gr.File(label="Downloads: results (JSONL, CSV), protocols (JSON, CSV)", file_count="multiple",
                        interactive=False, elem_id="aug-batch-files")
        explore_btn = gr.Button("Open these results in the Explore tab (leaderboards, items with their images, "
                                "Explain in Evaluate)", elem_id="aug-batch-explore")
    return BatchTab(manifest=manifest, images=images, metrics=metrics, provider=provider, clip_model=clip_model,
                    skip_invalid=skip_invalid, run_btn=run_btn, stop_btn=stop_btn, example_btn=example_btn,
                    needs=needs, summary=summary, protocol=protocol, scores=scores, files=files,
                    explore_btn=explore_btn)
