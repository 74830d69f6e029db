"""One-call entry points of the public API (``from augclip_demo import evaluate``).

The classes they use (:class:`~augclip_demo.pipeline.Evaluator` and friends) are public too; these
functions only spare a caller the two lines that build an evaluator, in the spirit of
``requests.get`` beside ``requests.Session``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .attributes.base import AttributeProvider, Attributes
from .bpm import BPMOptions, ObjectMasks
from .io import ImageInput, LoadedImage
from .judge import JudgeOptions
from .metrics.augclip import AUGCLIP_DEFAULTS
from .pipeline import AugCLIPOptions, Evaluator, FeatureNetworks
from .report import Report

__all__ = ["evaluate"]


def evaluate(
    source: ImageInput | LoadedImage,
    edited: ImageInput | LoadedImage | Sequence[ImageInput | LoadedImage],
    target_text: str,
    source_text: str | None = None,
    attributes: Attributes | AttributeProvider | str | None = None,
    *,
    instruction: str | None = None,
    clip_model: str | None = None,
    device: str | None = None,
    classifier: str = AUGCLIP_DEFAULTS["classifier"],
    C: float = AUGCLIP_DEFAULTS["C"],
    weighting: bool = AUGCLIP_DEFAULTS["weighting"],
    include_images: bool = AUGCLIP_DEFAULTS["include_images"],
    ground_truth: ImageInput | LoadedImage | None = None,
    output_caption: str | None = None,
    edit_mask: ImageInput | None = None,
    feature_metrics: Sequence[str] = (),
    networks: FeatureNetworks | None = None,
    hatie: bool = False,
    hatie_type: str | None = None,
    judge: bool | JudgeOptions = False,
    bpm_regions: str = "detected",
    object_masks: ObjectMasks | dict | None = None,
) -> Report:
    """Score edited images of ``source`` for ``target_text`` with every metric, in one call.

    The same as ``Evaluator(clip_model, device).evaluate(...)`` (plus ``add_bpm`` when an
    ``instruction`` is given). The CLIP model is loaded once per process and shared, so calling
    this in a loop does not reload it; keep an :class:`Evaluator` when you also want to re-score
    (:meth:`Evaluator.rescore`) or explain a report.

    Args:
        source: the source image (path, bytes, PIL image, array or :class:`LoadedImage`).
        edited: one edited image or a list of them, in the order their results are reported.
        target_text: what the edit should achieve (a description or an instruction).
        source_text: a description of the source; CLIPdir needs it and is reported unavailable without.
        attributes: :class:`Attributes`, an attribute provider, or a provider name
            (default: ``AUGCLIP_ATTRIBUTE_PROVIDER``).
        instruction: an editing instruction; when given, BPM is added (loads GroundingDINO and SAM).
        clip_model: CLIP spec such as ``"ViT-B-16/openai"`` or ``"random:tiny"``
            (default: ``AUGCLIP_CLIP_MODEL``).
        device: ``auto`` / ``cpu`` / ``cuda`` ... (default: ``AUGCLIP_DEVICE``).
        classifier, C, weighting, include_images: AugCLIP's options (see :func:`augclip_score`).
        ground_truth: a ground-truth edited image: adds L1 / L2 / CLIP-I to it (MagicBrush).
        output_caption: a caption of the wanted result: adds CLIP-T to it (MagicBrush).
        edit_mask: white = the region the edit should change: adds PSNR / MSE / SSIM outside it (PIE-Bench).
        feature_metrics: metrics that load a network of their own: ``dino_gt``, ``structure_distance``,
            ``lpips_unedited`` (docs/metrics.md).
        networks: the networks those metrics load (default :class:`~augclip_demo.pipeline.FeatureNetworks`, the
            benchmarks' own).
        hatie: add HATIE's per-edit criteria (``hatie``, ``hatie_of`` ... ``hatie_bc``; Image Quality needs a set),
            from ``instruction``; ``hatie_type`` names HATIE's edit type (default: from the instruction).
        bpm_regions: where BPM takes its regions: ``"detected"`` (GroundingDINO + SAM) or ``"masks"``
            (``object_masks`` and / or ``edit_mask``; no detector or segmenter is loaded; docs/bpm.md).
        object_masks: named objects' masks, :class:`~augclip_demo.bpm.ObjectMasks` or ``{"source": {name: mask},
            "edits": [{name: mask} or None per edit]}`` (each mask a path, PIL image or array); HATIE takes the
            regions of the images they cover from them whenever they are given (docs/hatie.md).
        judge: ``True`` or a :class:`~augclip_demo.judge.JudgeOptions` to add the MLLM judge's rows
            (``judge_sc``, ``judge_pq``, ``judge_overall``; an OpenAI-compatible endpoint, see docs/judge.md),
            judged against ``instruction`` when given, else ``target_text``.

    Returns:
        A :class:`Report`: one :class:`EditResult` per edit, ``report.verdict()``, ``report.to_json()``.
    """
    options = AugCLIPOptions(classifier=classifier, C=C, weighting=weighting, include_images=include_images)
    evaluator = Evaluator(clip_model, device, options=options, networks=networks)
    report = evaluator.evaluate(source, edited, target_text, source_text, attributes, ground_truth=ground_truth,
                                output_caption=output_caption, edit_mask=edit_mask, feature_metrics=feature_metrics)
    if instruction is not None:
        evaluator.add_bpm(report, instruction, options=BPMOptions(regions=bpm_regions), object_masks=object_masks)
    if hatie:
        evaluator.add_hatie(report, instruction, edit_type=hatie_type, object_masks=object_masks)
    if judge:
        evaluator.add_judge(report, options=judge if isinstance(judge, JudgeOptions) else None,
                            instruction=instruction)
    return report
