"""The evaluation pipeline: inputs -> embeddings -> metrics -> report.

:meth:`Evaluator.embed` is the only stage that runs a model; :meth:`Evaluator.score` is pure
metric math on the embeddings it produced, so changing an AugCLIP option re-scores in
milliseconds (:meth:`Evaluator.rescore`) without touching the model.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .. import __version__
from ..attributes.base import AttributeProvider, Attributes
from ..attributes.catalog import build_provider
from ..choices import FEATURE_METRICS, FeatureNetworks
from ..config import Settings
from ..errors import InputError
from ..hatie.criteria import HATIE_KEYS
from ..inference.clip_encoder import ClipEncoder, get_encoder
from ..io import ImageInput, LoadedImage, has_own_name, open_image, open_source_and_edits
from ..metrics.augclip import AUGCLIP_DEFAULTS, CLASSIFIERS, PROJECTIONS, WEIGHT_SCALINGS, AugCLIPResult
from ..metrics.suite import ItemScores, MetricInputs, metric_keys, score_item
from ..metrics.vectors import unit_rows
from ..report import AttributeChange, AugCLIPDetails, EditResult, Report
from .features import load_edit_mask, load_object_masks
from .stages import (
    BpmStage,
    HatieStage,
    ItemImages,
    ItemStage,
    JudgeStage,
    PixelStage,
    StageOutput,
    hatie_models,
    merge_scores,
    pixel_family_keys,
)

__all__ = ["AugCLIPOptions", "Attributes", "EvaluationArrays", "Evaluator", "Report"]

ProgressCallback = Callable[[float, str], None]

TRUNCATION_NOTE = "text cut to CLIP's first {limit} tokens (the rest was not scored): {texts}"


@dataclass(frozen=True)
class AugCLIPOptions:
    """The AugCLIP choices a user can change (see :func:`augclip_score`)."""

    classifier: str = AUGCLIP_DEFAULTS["classifier"]
    C: float = AUGCLIP_DEFAULTS["C"]
    weighting: bool = AUGCLIP_DEFAULTS["weighting"]
    include_images: bool = AUGCLIP_DEFAULTS["include_images"]
    weight_scaling: str = AUGCLIP_DEFAULTS["weight_scaling"]  # "raw" (App. B) or "mean" (alpha rescaled to mean 1)
    projection: str = AUGCLIP_DEFAULTS["projection"]  # "clamped" (Eq. 8) or "plain" (App. B, v = c w)

    def __post_init__(self) -> None:
        if self.classifier not in CLASSIFIERS:
            raise InputError(f"classifier must be one of {', '.join(CLASSIFIERS)}, got {self.classifier!r}")
        if self.weight_scaling not in WEIGHT_SCALINGS:
            raise InputError(f"weight_scaling must be one of {', '.join(WEIGHT_SCALINGS)}, got {self.weight_scaling!r}")
        if self.projection not in PROJECTIONS:
            raise InputError(f"projection must be one of {', '.join(PROJECTIONS)}, got {self.projection!r}")
        # strict types: JSON's true is not C = 1, and "no" is not a true weighting
        if isinstance(self.C, bool) or not (isinstance(self.C, (int, float)) and np.isfinite(self.C) and self.C > 0):
            raise InputError(f"C must be a positive number, got {self.C!r}")
        for name in ("weighting", "include_images"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InputError(f"{name} must be true or false, got {getattr(self, name)!r}")


@dataclass(kw_only=True)
class EvaluationArrays(MetricInputs):
    """Embeddings and loaded images of one evaluation, kept for explanations and re-scoring: the metric
    inputs (the :class:`MetricInputs` fields, filled by ``embed``, ``add_references`` and the stages) with
    the loaded images and each stage's full results.

    Embeddings are unit float64 rows, normalised once by :func:`~.metrics.vectors.unit_rows` as they
    come from the encoder; the metrics take them as they are.
    """

    source: LoadedImage
    edits: list[LoadedImage]
    ground_truth: LoadedImage | None = None  # (Evaluator.add_references; ground_truth_image is its pixels)
    augclip: list[AugCLIPResult] = field(default_factory=list)
    bpm: list[Any] = field(default_factory=list)  # BPMResult per edit (masks, boxes) after Evaluator.add_bpm
    hatie: list[Any] = field(default_factory=list)  # HatieResult per edit after Evaluator.add_hatie
    # pixel-stage metrics (L2), filled by the first score(): no AugCLIP option or attribute changes them
    pixel_scores: ItemScores | None = None
    mask_origin: str | None = None  # "given" (uploaded / passed) or "bpm" (BPM's regions, per edit)
    feature_metrics: tuple[str, ...] = ()  # the feature metrics asked for (add_bpm reuses the choice)
    networks: FeatureNetworks | None = None  # the networks they loaded (add_bpm's LPIPS is the same one)

    def __post_init__(self) -> None:
        self.source_image = self.source.image
        self.edit_images = [edit.image for edit in self.edits]
        self.ground_truth_image = self.ground_truth.image if self.ground_truth is not None else None

    def item(self, target_text: str | None = None, instruction: str | None = None, parsed: Any = None,
             edit_type: str | None = None, object_masks: Any = None) -> ItemImages:
        """This evaluation as the stages read it (one item's loaded images and inputs)."""
        return ItemImages(source=self.source, edits=self.edits, target_text=target_text, instruction=instruction,
                          parsed=parsed, edit_type=edit_type, ground_truth=self.ground_truth, edit_mask=self.mask,
                          object_masks=object_masks)

    def metric_inputs(self, options: AugCLIPOptions | None = None) -> MetricInputs:
        """What the metric suite reads for this evaluation (its :class:`MetricInputs` part)."""
        inputs = {name.name: getattr(self, name.name) for name in dataclasses.fields(MetricInputs)}
        inputs["augclip_options"] = asdict(options) if options is not None else None
        return MetricInputs(**inputs)


class Evaluator:
    """Scores edited images against a source image and a target text with every metric.

    Args:
        clip_model: backbone spec (default: ``AUGCLIP_CLIP_MODEL`` or ``ViT-B-16/openai``).
        device: ``auto`` / ``cpu`` / ``cuda`` ... (default: ``AUGCLIP_DEVICE`` or auto).
        checkpoint: local CLIP weights file (default: ``AUGCLIP_CLIP_CHECKPOINT``).
        options: AugCLIP classifier options.
        encoder: an existing :class:`ClipEncoder` to use (shared between evaluators).
        settings: explicit settings instead of the environment.
        networks: the DINO / LPIPS networks of the feature metrics (:class:`FeatureNetworks`).
    """

    def __init__(
        self,
        clip_model: str | None = None,
        device: str | None = None,
        *,
        checkpoint: str | None = None,
        precision: str | None = None,
        options: AugCLIPOptions | None = None,
        encoder: ClipEncoder | None = None,
        settings: Settings | None = None,
        networks: FeatureNetworks | None = None,
    ):
        self.settings = (settings or Settings.from_env()).replace(
            clip_model=clip_model, device=device, clip_checkpoint=checkpoint, precision=precision
        )
        self.options = options or AugCLIPOptions()
        self.encoder = encoder or get_encoder(self.settings)
        self.networks = networks or FeatureNetworks()

    # ------------------------------------------------------------------ stages
    def resolve_attributes(
        self,
        attributes: Attributes | AttributeProvider | str | None,
        source: LoadedImage,
        target_text: str,
        source_text: str | None,
        progress: ProgressCallback | None = None,
    ) -> Attributes:
        """An :class:`Attributes` as given, or extracted by a provider instance or provider name
        (``progress(fraction, message)`` then hears of each step of the extraction)."""
        if attributes is None:
            attributes = self.settings.attribute_provider
        if isinstance(attributes, str):
            attributes = self.provider(attributes)
        if isinstance(attributes, AttributeProvider):
            if "progress" in inspect.signature(attributes.extract).parameters:  # extracting providers report steps
                attributes = attributes.extract(source, target_text, source_text, progress=progress)
            else:
                attributes = attributes.extract(source, target_text, source_text)
        if not isinstance(attributes, Attributes):
            raise InputError(f"attributes must be Attributes, a provider or a provider name, got {type(attributes).__name__}")
        return attributes.validate()

    def provider(self, name: str) -> AttributeProvider:
        """A provider by name, configured from this evaluator's settings (clip-vocab shares its encoder)."""
        if name == "manual":
            raise InputError("provider 'manual' needs the attribute lists themselves: pass Attributes(source=[...], target=[...])")
        return build_provider(name, self.settings, encoder=self.encoder)

    def embed(
        self,
        source: LoadedImage,
        edits: list[LoadedImage],
        target_text: str,
        source_text: str | None,
        attributes: Attributes,
        timings: dict[str, float] | None = None,
        progress: ProgressCallback | None = None,
    ) -> EvaluationArrays:
        """Encode every image once (one batch) and every text once (one batch)."""
        timings = timings if timings is not None else {}
        say = progress or (lambda fraction, stage: None)
        start = time.perf_counter()
        say(0.0, f"encoding {1 + len(edits)} images")
        images = self.encoder.encode_images([source, *edits])
        timings["image_encoding"] = time.perf_counter() - start
        texts = [target_text] + ([source_text] if source_text else []) + attributes.source + attributes.target
        say(0.7, f"encoding {len(texts)} texts")
        start = time.perf_counter()
        text_emb = self.encoder.encode_texts(texts)
        timings["text_encoding"] = time.perf_counter() - start
        # the one normalisation of these embeddings (float64; the metrics take them as they are)
        images = unit_rows(images, "image embeddings")
        text_emb = unit_rows(text_emb, "text embeddings", images.shape[1])
        offset = 2 if source_text else 1
        n_src = len(attributes.source)
        return EvaluationArrays(
            source=source,
            edits=edits,
            source_embedding=images[0],
            edit_embeddings=images[1:],
            target_text_embedding=text_emb[0],
            source_text_embedding=text_emb[1] if source_text else None,
            source_attr_embeddings=text_emb[offset:offset + n_src],
            target_attr_embeddings=text_emb[offset + n_src:],
        )

    def add_references(self, arrays: EvaluationArrays, *, ground_truth: ImageInput | LoadedImage | None = None,
                       output_caption: str | None = None, edit_mask: Any = None,
                       feature_metrics: Sequence[str] = (), timings: dict[str, float] | None = None,
                       target_text: str | None = None) -> list[str]:
        """Fill the reference and preservation inputs of ``arrays``; returns notes (untrained networks).

        The ground truth and the output caption are encoded with this evaluator's CLIP; the feature
        networks run only for the metrics in ``feature_metrics`` (:data:`FEATURE_METRICS`).
        """
        timings = timings if timings is not None else {}
        unknown = sorted(set(feature_metrics) - set(FEATURE_METRICS))
        if unknown:
            raise InputError(f"unknown feature metric(s) {', '.join(unknown)}; choose from {', '.join(FEATURE_METRICS)}")
        wanted = set(feature_metrics)
        notes: list[str] = []
        start = time.perf_counter()
        dim = arrays.edit_embeddings.shape[1]
        if ground_truth is not None:
            arrays.ground_truth = open_image(ground_truth, name=None if has_own_name(ground_truth) else "ground truth",
                                             max_pixels=self.settings.max_image_pixels,
                                             max_side=self.settings.max_image_side)
            arrays.ground_truth_image = arrays.ground_truth.image
            arrays.ground_truth_embedding = unit_rows(self.encoder.encode_images([arrays.ground_truth]),
                                                      "ground-truth embedding", dim)[0]
        caption = (output_caption or "").strip() or None
        if caption is not None:
            arrays.output_caption = caption
            arrays.output_caption_embedding = unit_rows(self.encoder.encode_texts([caption]), "caption embedding",
                                                        dim)[0]
        arrays.feature_metrics = tuple(sorted(wanted))
        arrays.networks = self.networks
        if edit_mask is not None:
            arrays.mask = load_edit_mask(edit_mask, arrays.source.image.size)
            arrays.mask_origin = "given"
        notes.extend(self._score_pixels(arrays, target_text))  # the pixel stage reads these inputs: computed again
        timings["references"] = time.perf_counter() - start
        return notes

    def _score_pixels(self, arrays: EvaluationArrays, target_text: str | None = None) -> list[str]:
        """The pixel stage of this evaluation (pixel metrics and the feature networks asked for): its values kept
        in ``arrays.pixel_scores``, the inputs it made in ``arrays``; returns its notes."""
        stage = PixelStage(pixel_family_keys(), arrays.networks or self.networks, self.settings,
                           run_networks=arrays.feature_metrics, strict=True)
        output = stage.run(arrays.item(target_text))
        for name, value in output.fields.items():
            setattr(arrays, name, value)
        arrays.pixel_scores = output.scores
        return output.notes

    def score(self, arrays: EvaluationArrays, attributes: Attributes, options: AugCLIPOptions) -> list[EditResult]:
        """Every computable metric of the suite for every edit, from the embeddings (no model involved).

        Pixel-stage metrics are computed once per evaluation and kept in ``arrays``; a metric's
        ValueError (e.g. a degenerate AugCLIP fit) propagates.
        """
        inputs = arrays.metric_inputs(options)
        if arrays.pixel_scores is None:
            self._score_pixels(arrays)
        assert arrays.pixel_scores is not None
        pixel_family = set(pixel_family_keys())
        fitted = score_item(inputs, [key for key in metric_keys(basis="embeddings", computable=True)
                                     if key not in pixel_family], strict=True)
        scores = fitted.merged(arrays.pixel_scores, order=metric_keys(computable=True))
        arrays.augclip = [details["augclip"] for details in scores.details]
        results = []
        for i, (edit, emb, res) in enumerate(zip(arrays.edits, arrays.edit_embeddings, arrays.augclip)):
            results.append(
                EditResult(
                    index=i,
                    name=edit.name,
                    image_sha256=edit.sha256,
                    metrics=scores.values[i],
                    unavailable=scores.unavailable[i],
                    augclip=_details(res, arrays, emb, attributes, options),
                    source_changes=_ranked(attributes.source, res.source_deltas,
                                           res.source_alpha[1:] if options.include_images else res.source_alpha),
                    target_changes=_ranked(attributes.target, res.target_deltas,
                                           res.target_alpha[1:] if options.include_images else res.target_alpha),
                    notes=list(edit.notes),
                )
            )
        return results

    # ------------------------------------------------------------------ entry points
    def evaluate(
        self,
        source: ImageInput | LoadedImage,
        edited: ImageInput | LoadedImage | Sequence[ImageInput | LoadedImage],
        target_text: str,
        source_text: str | None = None,
        attributes: Attributes | AttributeProvider | str | None = None,
        *,
        options: AugCLIPOptions | None = None,
        names: Sequence[str] | None = None,
        progress: ProgressCallback | None = None,
        ground_truth: ImageInput | LoadedImage | None = None,
        output_caption: str | None = None,
        edit_mask: Any = None,
        feature_metrics: Sequence[str] = (),
        network_metrics: Sequence[str] | None = None,
    ) -> Report:
        """Score one or more edited images of ``source`` for ``target_text``.

        ``attributes`` is an :class:`Attributes`, a provider instance, or a provider name
        (default: ``AUGCLIP_ATTRIBUTE_PROVIDER``). ``progress(fraction, stage)`` is called as
        each stage starts (loading models, extracting attributes, encoding, scoring) and, within the
        attribute extraction, at each of the provider's steps (e.g. each batch of vocabulary phrases).

        Reference and preservation metrics (docs/metrics.md): ``ground_truth`` (a target image, as
        MagicBrush has per turn) enables L1 / L2 / CLIP-I to it, ``output_caption`` CLIP-T to it,
        ``edit_mask`` (white = the region the edit should change, source-sized) PSNR / MSE / SSIM
        outside it; ``feature_metrics`` adds those that load a network of their own
        (``dino_gt``, ``structure_distance``, ``lpips_unedited``; see :data:`FEATURE_METRICS`);
        ``network_metrics`` is its former name, still accepted.
        """
        if network_metrics is not None:
            if feature_metrics:
                raise InputError("give feature_metrics or network_metrics (its former name), not both")
            feature_metrics = network_metrics
        report_progress = progress or (lambda fraction, stage: None)
        total_start = time.perf_counter()
        timings: dict[str, float] = {}
        options = options or self.options
        target_text = _require_text(target_text)
        source_text = (source_text or "").strip() or None
        edit_inputs = list(edited) if isinstance(edited, (list, tuple)) else [edited]
        src, edits = open_source_and_edits(source, edit_inputs, names, max_pixels=self.settings.max_image_pixels,
                                           max_side=self.settings.max_image_side)

        start = time.perf_counter()
        report_progress(0.0, "loading models")
        with self.encoder.in_use():  # pinned: the model pool does not unload it mid-evaluation
            timings["model_load"] = time.perf_counter() - start
            start = time.perf_counter()
            extracting = not isinstance(attributes, Attributes)
            if extracting:
                report_progress(0.05, "extracting attributes")
            attrs = self.resolve_attributes(attributes, src, target_text, source_text,
                                            progress=_forward_only(report_progress, 0.05, 0.6))
            if extracting:  # given attributes have no extraction time (the timing line says "given")
                timings["attributes"] = time.perf_counter() - start
            arrays = self.embed(src, edits, target_text, source_text, attrs, timings,
                                progress=lambda fraction, stage: report_progress(0.6 + 0.25 * fraction, stage))
            reference_notes: list[str] = []
            if ground_truth is not None or output_caption or edit_mask is not None or feature_metrics:
                report_progress(0.85, "reference and preservation inputs")
                reference_notes = self.add_references(arrays, ground_truth=ground_truth, output_caption=output_caption,
                                                      edit_mask=edit_mask, feature_metrics=feature_metrics,
                                                      timings=timings, target_text=target_text)
        start = time.perf_counter()
        report_progress(0.9, "scoring")
        results = self.score(arrays, attrs, options)
        timings["metrics"] = time.perf_counter() - start
        timings["total"] = time.perf_counter() - total_start
        truncated, truncation_notes = self._truncation([target_text, source_text or "", *attrs.source, *attrs.target])
        return Report(
            source_name=src.name,
            source_sha256=src.sha256,
            target_text=target_text,
            source_text=source_text,
            attributes=attrs,
            model=self.encoder.info().to_dict(),
            untrained=self.encoder.untrained,
            options=asdict(options),
            edits=results,
            timings=timings,
            notes=list(src.notes) + truncation_notes + reference_notes,
            version=__version__,
            created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            truncated_texts=truncated,
            arrays=arrays,
        )

    def _truncation(self, texts: list[str]) -> tuple[list[str], list[str]]:
        """(texts the tokenizer cuts, the report note saying so) for the texts of one evaluation."""
        truncated = self.encoder.truncated_texts(texts)
        if not truncated:
            return [], []
        shown = "; ".join(repr(t if len(t) <= 60 else t[:57] + "...") for t in truncated)
        return truncated, [TRUNCATION_NOTE.format(limit=self.encoder.context_length, texts=shown)]

    def add_bpm(self, report: Report, instruction: str | None = None, parsed: Any = None, *, models: Any = None,
                options: Any = None, parser: str = "rules", client: Any = None,
                progress: ProgressCallback | None = None, object_masks: Any = None) -> Report:
        """Add BPM (metric ``bpm``, details in ``EditResult.bpm``, results in ``report.arrays.bpm``).

        ``instruction`` is parsed with ``parser`` (``rules`` / ``llm``), or ``parsed`` gives the parse
        (``ParsedInstruction`` or o1/o2 fields, e.g. for description-style targets). ``models``
        defaults to the shared GroundingDINO / SAM for these settings with this evaluator's CLIP. With
        ``options.regions == "masks"`` the regions come from ``object_masks`` (a :class:`~augclip_demo.bpm.ObjectMasks`
        or :func:`~.features.load_object_masks`' input) and / or the evaluation's edit mask, and no detector or
        segmenter is loaded. With no edit mask given, PSNR / MSE / SSIM (and LPIPS when asked for) are measured
        outside each edit's BPM regions (:class:`~.stages.BpmStage`).
        """
        from ..bpm.models import get_bpm_models

        arrays = _arrays_of(report)
        regions = getattr(options, "regions", "detected")
        models = models or get_bpm_models(self.settings, encoder=self.encoder, regions=regions)
        object_masks = load_object_masks(object_masks, arrays.source.image.size, len(arrays.edits))
        if parser == "llm" and client is None:  # the parser's chat model comes from this evaluator's settings
            from ..llm import OpenAICompatibleClient

            client = OpenAICompatibleClient(self.settings)
        networks = arrays.networks or self.networks
        stage = BpmStage(lambda: models, options, parser=parser, client=client, settings=self.settings,
                         lpips=networks.spec_of("lpips_unedited") if "lpips_unedited" in arrays.feature_metrics else None,
                         strict=True)
        item = arrays.item(report.target_text, instruction, parsed, object_masks=object_masks)
        output = self._run_stage(report, stage, item, progress)
        for edit, result in zip(report.edits, output.results):
            edit.bpm = result.to_dict()
        arrays.bpm = output.results
        if "unedited_measures" in output.fields:  # BPM's regions are the edit mask, edit by edit
            arrays.unedited_measures = output.fields["unedited_measures"]
            arrays.mask_origin = "bpm"
            assert arrays.pixel_scores is not None
            pixel_scores = copy.deepcopy(arrays.pixel_scores)  # a re-scored report's copy shares the original's
            merge_scores(pixel_scores, output.scores)
            arrays.pixel_scores = pixel_scores  # rescore keeps them
        return report

    def _run_stage(self, report: Report, stage: ItemStage, item: ItemImages,
                   progress: ProgressCallback | None = None) -> StageOutput:
        """Run one stage on this report's images and write its values, reasons and notes into the report."""
        start = time.perf_counter()
        output = stage.run(item, progress)
        for i, edit in enumerate(report.edits):
            values, reasons = output.scores.values[i], output.scores.unavailable[i]
            for key in values.keys() | reasons.keys():  # a key the stage left alone keeps what it had
                edit.unavailable.pop(key, None)
            edit.metrics.update(values)
            edit.unavailable.update(reasons)
        report.timings[stage.name.lower()] = time.perf_counter() - start
        report.notes.extend(note for note in output.notes if note not in report.notes)
        return output

    def add_hatie(self, report: Report, instruction: str | None = None, *, edit_type: str | None = None,
                  models: Any = None, options: Any = None, target_text: str | None = None,
                  object_masks: Any = None) -> Report:
        """Add HATIE's per-edit criteria (metrics ``hatie``, ``hatie_of`` ... ``hatie_bc``; ``hatie_iq`` needs a
        set) with results in ``report.arrays.hatie``. ``models`` defaults to GroundingDINO + SAM with this
        evaluator's CLIP and the shared DINOv2 / LPIPS networks (:func:`~.stages.hatie_models`); ``object_masks``
        (as :meth:`add_bpm` takes them) give the objects' regions in the images they cover instead of them."""
        arrays = _arrays_of(report)
        models = models or hatie_models(self.settings, self.encoder)
        stage = HatieStage(models.load, tuple(HATIE_KEYS), options=options)
        object_masks = load_object_masks(object_masks, arrays.source.image.size, len(arrays.edits))
        item = arrays.item(target_text or report.target_text, instruction, edit_type=edit_type,
                           object_masks=object_masks)
        arrays.hatie = self._run_stage(report, stage, item).results
        return report

    @staticmethod
    def skip_bpm(report: Report, reason: str) -> Report:
        """Mark BPM unavailable for every edit, with the reason shown in tables and JSON."""
        for edit in report.edits:
            edit.metrics["bpm"] = None
            edit.unavailable["bpm"] = reason
            edit.bpm = None
        return report

    def add_judge(self, report: Report, judge: Any = None, *, instruction: str | None = None,
                  options: Any = None) -> Report:
        """Add the MLLM judge's rows (``judge_sc``, ``judge_pq``, ``judge_overall``; details in ``EditResult.judge``).

        ``judge`` is an :class:`~augclip_demo.judge.MLLMJudge` (default: one built from ``options``, a
        :class:`~augclip_demo.judge.JudgeOptions`, or from this evaluator's settings). The request
        judged is ``instruction`` when given, else the report's target text. A judge that cannot be
        built (no endpoint configured) or a question that fails (refused, filtered, invalid JSON,
        server error) leaves the row unavailable with the reason; nothing is scored as 0.
        """
        from ..judge import MLLMJudge

        arrays = _arrays_of(report)
        stage = JudgeStage(lambda: judge or MLLMJudge(options, settings=self.settings))
        output = self._run_stage(report, stage, arrays.item(report.target_text, instruction))
        for edit, result in zip(report.edits, output.results):
            edit.judge = result.to_dict()
        return report

    def rescore(self, report: Report, options: AugCLIPOptions | None = None,
                attributes: Attributes | None = None) -> Report:
        """Re-score a report with other options and/or edited attribute lists, reusing embeddings.

        Only texts not seen before are encoded (the text cache makes the rest free).
        """
        if report.arrays is None:
            raise InputError("this report has no in-memory embeddings (loaded from JSON?); run evaluate() again")
        options = options or AugCLIPOptions(**report.options)
        # A copy: score() refills ``augclip`` with the new fits, and the given report must keep its own.
        arrays = dataclasses.replace(report.arrays, augclip=[])
        timings: dict[str, float] = {}
        if attributes is not None:
            attributes = attributes.validate()
            start = time.perf_counter()
            text_emb = unit_rows(self.encoder.encode_texts(attributes.source + attributes.target), "attribute embeddings",
                                 arrays.edit_embeddings.shape[1])
            timings["text_encoding"] = time.perf_counter() - start
            arrays = dataclasses.replace(arrays, source_attr_embeddings=text_emb[:len(attributes.source)],
                                         target_attr_embeddings=text_emb[len(attributes.source):])
        attrs = attributes or report.attributes
        start = time.perf_counter()
        results = self.score(arrays, attrs, options)
        timings["metrics"] = time.perf_counter() - start
        supplied = metric_keys(computable=False)  # e.g. BPM: no AugCLIP option or attribute list changes them
        for old, new in zip(report.edits, results):
            for key in supplied:
                if key in old.metrics:
                    new.metrics[key] = old.metrics[key]
                    if key in old.unavailable:
                        new.unavailable[key] = old.unavailable[key]
            new.bpm = old.bpm
            new.judge = old.judge
        truncated, truncation_notes = self._truncation(
            [report.target_text, report.source_text or "", *attrs.source, *attrs.target])
        notes = [n for n in report.notes if not n.startswith(TRUNCATION_NOTE.split("{", 1)[0])] + truncation_notes
        return Report(**{**report.__dict__, "edits": results, "options": asdict(options), "attributes": attrs,
                         "arrays": arrays, "timings": {**report.timings, "rescore": sum(timings.values())},
                         "notes": notes, "truncated_texts": truncated})


def _arrays_of(report: Report) -> EvaluationArrays:
    if report.arrays is None:
        raise InputError("this report has no in-memory images (loaded from JSON?); run evaluate() again")
    return report.arrays


def _require_text(text: str | None) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InputError("the target text is empty: type the instruction or the description of the edit")
    return text.strip()


def _details(res: AugCLIPResult, arrays: EvaluationArrays, edit_embedding: np.ndarray, attributes: Attributes,
             options: AugCLIPOptions) -> AugCLIPDetails:
    samples = (["[source image]"] if options.include_images else []) + [f"S: {t}" for t in attributes.source]
    samples += (["[edited image]"] if options.include_images else []) + [f"T: {t}" for t in attributes.target]
    return AugCLIPDetails(
        c=res.c,
        v_norm=float(np.linalg.norm(res.v)),
        w_norm=res.w_norm,
        b=res.b,
        # the embeddings are unit vectors already (res.signed_distance would normalise them again)
        source_distance=float((np.dot(res.w, arrays.source_embedding) + res.b) / res.w_norm),
        edit_distance=float((np.dot(res.w, edit_embedding) + res.b) / res.w_norm),
        ideal_distance=float((np.dot(res.w, res.ideal) + res.b) / res.w_norm),
        fit_accuracy=res.fit_accuracy,
        classifier=res.classifier,
        C=res.C,
        weighting=res.weighting,
        include_images=res.include_images,
        weight_scaling=res.weight_scaling,
        projection=res.projection,
        fit_samples=samples,
        alpha=[float(x) for x in res.alpha],
        sample_weight=[float(x) for x in res.sample_weight],
    )


def _ranked(texts: list[str], deltas: np.ndarray, alphas: np.ndarray) -> list[AttributeChange]:
    """Attributes from most to least changed by v (by |delta|, as the paper's Fig. 9-10 rank them)."""
    changes = [AttributeChange(text=t, delta=float(d), alpha=float(a)) for t, d, a in zip(texts, deltas, alphas)]
    return sorted(changes, key=lambda c: abs(c.delta), reverse=True)


def _forward_only(progress: ProgressCallback, low: float, high: float) -> ProgressCallback:
    """``progress`` for a sub-step mapped onto [low, high] that never moves back (a provider's own
    fractions may restart, e.g. after encoding its vocabulary it starts ranking at a lower one)."""
    furthest = [low]

    def report(fraction: float, stage: str) -> None:
        furthest[0] = max(furthest[0], low + (high - low) * min(max(float(fraction), 0.0), 1.0))
        progress(furthest[0], stage)

    return report
