"""PIE-Bench's CLIP score inputs: its own CLIP (ViT-L/14 by default) on the whole edits and on their edited parts.

PIE-Bench (``evaluation/matrics_calculator.py``) scores an edit with torchmetrics' ``CLIPScore`` on
OpenAI's CLIP ViT-L/14: the whole edited image against the target prompt, and the edited image
multiplied by the edit mask (every pixel outside it black) against the same prompt. This module
makes the unit embeddings; the score itself (``100 x max(cos, 0)``) is a row of the metric table
(:mod:`augclip_demo.metrics.suite`). The model is its own spec (``FeatureNetworks.pie_clip``), resolved
like every CLIP spec through :mod:`.weights`, never the run's CLIP or its checkpoint file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from PIL import Image

from ..config import Settings
from .clip_encoder import get_encoder


def _masked_edit_part(edited: Image.Image, edit_mask: np.ndarray) -> Image.Image:
    """The edited image with every pixel outside ``edit_mask`` (True = edited part) set to black.

    A mask of another size than the edit is resized to it first (nearest neighbour, so it stays binary).
    """
    rgb = edited.convert("RGB")
    keep = np.asarray(edit_mask, dtype=bool)
    if keep.shape != (rgb.height, rgb.width):
        keep = np.asarray(Image.fromarray(keep.astype(np.uint8) * 255).resize(rgb.size, Image.NEAREST)) >= 128
    return Image.fromarray(np.asarray(rgb) * keep[..., None].astype(np.uint8))


def pie_clip_embeddings(edits: Sequence[Image.Image], edit_mask: np.ndarray | None, target_text: str,
                        wanted: Collection[str], spec: str, settings: Settings) -> tuple[dict[str, Any], str | None]:
    """Raw embedding rows by :class:`MetricInputs` field (the target text's as one row) for
    ``clip_score_whole`` / ``clip_score_edited`` (the edited part needs ``edit_mask``), and the model's
    label when its weights are random (None when trained)."""
    clip = get_encoder(dataclasses.replace(settings, clip_model=spec, clip_checkpoint=None))
    rows: dict[str, Any] = {"pie_clip_target_embedding": clip.encode_texts([target_text])}
    if "clip_score_whole" in wanted:
        rows["pie_clip_edit_embeddings"] = clip.encode_images(list(edits))
    if "clip_score_edited" in wanted and edit_mask is not None:
        rows["pie_clip_masked_edit_embeddings"] = clip.encode_images([_masked_edit_part(e, edit_mask) for e in edits])
    return rows, (clip.label if clip.untrained else None)
