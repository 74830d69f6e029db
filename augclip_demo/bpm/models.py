"""The three models BPM runs: GroundingDINO (boxes), SAM (masks) and CLIP (S_modify).

Two presets (``AUGCLIP_BPM_PRESET``): ``standard`` is the paper's pair, GroundingDINO at its
checkpoint's input size (800 px shortest edge) and segment-anything's SAM; ``fast`` is OWL-ViT
B/32 at its own 768 px (:mod:`augclip_demo.inference.owl_detector`, ``AUGCLIP_FAST_DETECTOR_MODEL``)
and SAM 2.1 Hiera-Tiny through transformers at :data:`_FAST_SAM_SIZE` px
(:mod:`augclip_demo.inference.sam2_segmenter`, ``AUGCLIP_FAST_SAM_MODEL``). Both detect every
phrase of an image in one pass and decode every box of an image from one image embedding; the fast
models also keep the last few images' detections and embeddings by content hash, so the source of
several edits (in one call or across calls) is detected and encoded once.

:func:`get_bpm_models` hands out the process-wide shared instances (one load per model);
:func:`bpm_models_status` says, without loading anything, whether the weights are at hand or
downloadable, so callers such as ``score`` can skip BPM with the reason instead of failing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..config import Settings
from ..errors import AugclipError, MissingWeightsError, WeightsUnavailableError
from ..inference.clip_encoder import ClipEncoder, get_encoder
from ..inference.grounding import KNOWN_HUB_MODELS as GDINO_HUB_MODELS
from ..inference.grounding import RANDOM_SPECS as GDINO_RANDOM_SPECS
from ..inference.grounding import GroundingDetector, get_detector
from ..inference.needs import bpm_region_models
from ..inference.owl_detector import OwlDetector, get_owl_detector
from ..inference.sam2_segmenter import Sam2Segmenter, get_fast_segmenter
from ..inference.segmenter import SamSegmenter, get_segmenter

#: GroundingDINO at a smaller input, (shortest, longest) edge in pixels (the checkpoints use 800 / 1333):
#: the fast preset's detector before OWL-ViT, still used when AUGCLIP_FAST_DETECTOR_MODEL names a GroundingDINO.
FAST_DETECTOR_SIZE = (512, 853)
#: The fast preset's SAM 2 input side in pixels (the checkpoints use 1024; 512 costs ~1/5 of the encoder's compute).
_FAST_SAM_SIZE = 512


#: What :meth:`BPMModels.info` names as the regions' source when they come from given masks.
_GIVEN_MASKS = "given masks"


@dataclass
class BPMModels:
    """Detector, segmenter and CLIP encoder used together by :func:`augclip_demo.bpm.bpm_score`.

    Without a detector and a segmenter (:meth:`for_given_masks`) BPM takes its regions from given masks
    and only the CLIP encoder is loaded."""

    detector: GroundingDetector | OwlDetector | None
    segmenter: SamSegmenter | Sam2Segmenter | None
    encoder: ClipEncoder
    preset: str = "standard"

    @property
    def region_models(self) -> list[Any]:
        """The detector and the segmenter (none for given masks)."""
        return [m for m in (self.detector, self.segmenter) if m is not None]

    @property
    def given_masks(self) -> bool:
        return self.detector is None and self.segmenter is None

    def for_given_masks(self) -> BPMModels:
        """These models without the detector and the segmenter: regions from given masks."""
        return BPMModels(None, None, self.encoder, self.preset)

    @property
    def untrained(self) -> bool:
        """True when any model BPM runs has random weights: BPM values are then not meaningful."""
        return any(bool(m.untrained) for m in (*self.region_models, self.encoder))

    def load(self) -> BPMModels:
        for model in (*self.region_models, self.encoder):
            model.load()
        return self

    def unload(self) -> None:
        """Release the two region models (the CLIP encoder is shared with the other metrics and stays)."""
        for model in self.region_models:
            model.unload()

    def info(self) -> dict[str, Any]:
        regions = ({"regions": _GIVEN_MASKS} if self.given_masks else
                   {"detector": self.detector.info() if self.detector is not None else None,
                    "segmenter": self.segmenter.info() if self.segmenter is not None else None})
        return {
            **regions,
            "clip": {"model": self.encoder.spec.raw, "label": self.encoder.spec.label,
                     "untrained": self.encoder.untrained},
            "untrained": self.untrained,
            "preset": self.preset,
        }


def get_bpm_models(settings: Settings | None = None, *, encoder: ClipEncoder | None = None,
                   regions: str = "detected", **overrides: Any) -> BPMModels:
    """Shared instances for ``settings`` (``gdino_model``, ``sam_model``, ``sam_checkpoint``,
    ``clip_model``, ``device``, ``cache_dir``); ``encoder`` reuses an existing CLIP encoder;
    ``regions="masks"`` leaves the detector and the segmenter out (regions from given masks)."""
    settings = (settings or Settings()).replace(**overrides)
    if regions == "masks":
        return BPMModels(None, None, encoder or get_encoder(settings), preset=settings.bpm_preset)
    detector, segmenter = region_models(settings)
    return BPMModels(detector=detector, segmenter=segmenter, encoder=encoder or get_encoder(settings),
                     preset=settings.bpm_preset)


def region_models(settings: Settings) -> tuple[GroundingDetector | OwlDetector, SamSegmenter | Sam2Segmenter]:
    """The detector and segmenter of ``settings.bpm_preset`` (shared instances, nothing loaded)."""
    if settings.bpm_preset == "fast":
        return _fast_detector(settings), get_fast_segmenter(settings, input_size=_FAST_SAM_SIZE)
    return get_detector(settings), get_segmenter(settings)


def _fast_detector(settings: Settings) -> GroundingDetector | OwlDetector:
    """The fast preset's detector by name: OWL-ViT (default), or GroundingDINO at :data:`FAST_DETECTOR_SIZE`
    when ``AUGCLIP_FAST_DETECTOR_MODEL`` names a GroundingDINO model (``IDEA-Research/grounding-dino-tiny``,
    ``-base``, ``random:swint``, ``random:tiny``): the earlier fast detector, for comparisons."""
    if _is_grounding_spec(settings.fast_detector_model):
        return get_detector(settings.replace(gdino_model=settings.fast_detector_model), input_size=FAST_DETECTOR_SIZE)
    return get_owl_detector(settings)


def _is_grounding_spec(spec: str) -> bool:
    spec = " ".join(str(spec).split())
    return spec in GDINO_HUB_MODELS or spec.lower() in GDINO_RANDOM_SPECS


def preset_weights(settings: Settings, preset: str | None = None) -> list[tuple[str, str]]:
    """``(family, spec)`` of the two region models of ``preset`` (default: the configured one), as the
    weights table (``weights.PRETRAINED``) names them (:mod:`augclip_demo.inference.needs` decides)."""
    return [(need.family, need.spec) for need in bpm_region_models(settings, preset)]


def bpm_models_status(settings: Settings | None = None) -> tuple[bool, str]:
    """``(True, labels)`` when the preset's GroundingDINO and SAM weights are loaded, on disk or downloadable;
    else ``(False, reason)`` with the specific missing-weights message. Loads nothing."""
    settings = settings or Settings()
    try:
        detector, segmenter = region_models(settings)
        require_bpm_weights(settings)
    except AugclipError as exc:
        return False, str(exc)
    return True, f"{detector.label}; {segmenter.label}"


def bpm_missing_weights(settings: Settings | None = None) -> list[WeightsUnavailableError]:
    """Every region model (GroundingDINO, SAM) whose weights are neither loaded, on disk nor
    downloadable: all of them, so a user fixes them in one go. Loads nothing."""
    settings = settings or Settings()
    missing = []
    for model in region_models(settings):
        if model.is_loaded:
            continue
        try:
            model.preflight()
        except WeightsUnavailableError as exc:
            missing.append(exc)
    return missing


def require_bpm_weights(settings: Settings | None = None) -> None:
    """Raise one error naming every missing BPM model (one line each with what provides it)."""
    missing = bpm_missing_weights(settings)
    if len(missing) == 1:
        raise missing[0]
    if missing:
        raise MissingWeightsError(missing, "BPM")
