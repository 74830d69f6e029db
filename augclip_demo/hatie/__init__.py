"""HATIE (Ryu et al., CVPR 2025), everything but its views (cli/hatie.py, ui/hatie/layout.py, explain/hatie_panel.py).

* :mod:`.criteria` - the criteria as pure math over measured numbers (torch-free: an import-linter contract)
* :mod:`.images` - model-free image preparation (masks, crops, the three ways); :mod:`.calibration` - fitted
  weights and correlations with human judgments (both torch-free too)
* :mod:`.hatie_score` - :func:`hatie_score_many`: type -> detect (BPM's GroundingDINO) -> segment (SAM)
  -> measures (CLIP, DINOv2, LPIPS, pixels, optional VQA) -> criteria
* :mod:`.networks` - what HATIE asks of the feature networks (DINOv2, LPIPS, FID's Inception)
* :mod:`.vqa` - yes / no questions through the OpenAI-compatible client
* :mod:`.tables` - the per-model table, Image Quality and weight sets over a results file's records

HATIE's own benchmark files become a manifest in :mod:`augclip_demo.batch.benchmarks.hatie_bench`, beside the
other benchmark loaders (a manifest is the batch layer's).
"""

from .criteria import EDIT_TYPES, HatieOptions
from .hatie_score import HatieModels, HatieResult, hatie_score, hatie_score_many

__all__ = ["EDIT_TYPES", "HatieModels", "HatieOptions", "HatieResult", "hatie_score", "hatie_score_many"]
