"""The evaluation pipeline: inputs -> embeddings -> metrics -> report.

:mod:`.evaluator` holds the :class:`Evaluator` (one evaluation from images to a :class:`Report`);
:mod:`.stages` the per-item stages every path runs (the Evaluator, batch runs, the Ray engine);
:mod:`.features` the feature networks of the reference metrics and the edit mask.
"""

from __future__ import annotations

from ..attributes.base import Attributes
from ..choices import FEATURE_METRICS, FeatureNetworks
from ..report import Report
from .evaluator import TRUNCATION_NOTE, AugCLIPOptions, EvaluationArrays, Evaluator, ProgressCallback
from .features import feature_inputs, load_edit_mask, load_object_masks
from .stages import (
    BpmStage,
    HatieStage,
    ItemImages,
    ItemStage,
    JudgeStage,
    PixelStage,
    StageOutput,
)

__all__ = ["AugCLIPOptions", "Attributes", "BpmStage", "EvaluationArrays", "Evaluator", "FeatureNetworks",
           "HatieStage", "ItemImages", "ItemStage", "JudgeStage", "FEATURE_METRICS", "PixelStage",
           "ProgressCallback", "Report", "StageOutput", "TRUNCATION_NOTE", "feature_inputs", "load_edit_mask",
           "load_object_masks"]
