"""The three models BPM runs: GroundingDINO (boxes), SAM (masks) and CLIP (S_modify).

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
from ..inference.grounding import GroundingDetector, get_detector
from ..inference.segmenter import SamSegmenter, get_segmenter


@dataclass
class BPMModels:
    """Detector, segmenter and CLIP encoder used together by :func:`augclip_demo.bpm.bpm_score`."""

    detector: GroundingDetector
    segmenter: SamSegmenter
    encoder: ClipEncoder

    @property
    def untrained(self) -> bool:
        """True when any of the three has random weights: BPM values are then not meaningful."""
        return bool(self.detector.untrained or self.segmenter.untrained or self.encoder.untrained)

    def load(self) -> BPMModels:
        self.detector.load()
        self.segmenter.load()
        self.encoder.load()
        return self

    def unload(self) -> None:
        """Release the two region models (the CLIP encoder is shared with the other metrics and stays)."""
        self.detector.unload()
        self.segmenter.unload()

    def info(self) -> dict[str, Any]:
        return {
            "detector": self.detector.info(),
            "segmenter": self.segmenter.info(),
            "clip": {"model": self.encoder.spec.raw, "label": self.encoder.spec.label,
                     "untrained": self.encoder.untrained},
            "untrained": self.untrained,
        }


def get_bpm_models(settings: Settings | None = None, *, encoder: ClipEncoder | None = None,
                   **overrides: Any) -> BPMModels:
    """Shared instances for ``settings`` (``gdino_model``, ``sam_model``, ``sam_checkpoint``,
    ``clip_model``, ``device``, ``cache_dir``); ``encoder`` reuses an existing CLIP encoder."""
    settings = (settings or Settings.from_env()).replace(**overrides)
    return BPMModels(
        detector=get_detector(settings),
        segmenter=get_segmenter(settings),
        encoder=encoder or get_encoder(settings),
    )


def bpm_models_status(settings: Settings | None = None) -> tuple[bool, str]:
    """``(True, labels)`` when GroundingDINO and SAM weights are loaded, on disk or downloadable;
    else ``(False, reason)`` with the specific missing-weights message. Loads nothing."""
    settings = settings or Settings.from_env()
    try:
        detector, segmenter = get_detector(settings), get_segmenter(settings)
        require_bpm_weights(settings)
    except AugclipError as exc:
        return False, str(exc)
    return True, f"{detector.label}; {segmenter.label}"


def bpm_missing_weights(settings: Settings | None = None) -> list[WeightsUnavailableError]:
    """Every region model (GroundingDINO, SAM) whose weights are neither loaded, on disk nor
    downloadable: all of them, so a user fixes them in one go. Loads nothing."""
    settings = settings or Settings.from_env()
    missing = []
    for model in (get_detector(settings), get_segmenter(settings)):
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
