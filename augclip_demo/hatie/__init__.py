"""HATIE's criteria per edit (Ryu et al., CVPR 2025): the model layer over :mod:`augclip_demo.hatie.criteria`.

* :mod:`.score` - :func:`hatie_score_many`: type -> detect (BPM's GroundingDINO) -> segment (SAM)
  -> measures (CLIP, DINOv2, LPIPS, pixels, optional VQA) -> criteria
* :mod:`.features` - what HATIE asks of the feature networks (DINOv2, LPIPS, FID's Inception)
* :mod:`.vqa` - yes / no questions through the OpenAI-compatible client
"""

from ..hatie.criteria import EDIT_TYPES, HatieOptions
from .score import HatieModels, HatieResult, hatie_score, hatie_score_many

__all__ = ["EDIT_TYPES", "HatieModels", "HatieOptions", "HatieResult", "hatie_score", "hatie_score_many"]
