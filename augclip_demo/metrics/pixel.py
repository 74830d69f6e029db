"""Pixel-space baseline: L2 distance between source and edit (preservation only)."""

from __future__ import annotations

import numpy as np
from PIL import Image


def to_unit_array(image: Image.Image, size: tuple[int, int] | None = None) -> np.ndarray:
    """RGB float64 array in [0, 1], resized (bicubic, as most editing code does) when ``size`` is given."""
    rgb = image.convert("RGB")
    if size is not None and rgb.size != size:
        rgb = rgb.resize(size, Image.BICUBIC)
    return np.asarray(rgb, dtype=np.float64) / 255.0


def l2_distance(source: Image.Image, edited: Image.Image, mask: np.ndarray | None = None) -> float:
    """Root-mean-square pixel difference in [0, 1] after resizing the edit to the source's size.

    Lower is better (0 = identical). ``mask`` (H, W of the source, True = counted) restricts the mean
    to some pixels; an all-False mask gives NaN (nothing to compare).
    """
    src = to_unit_array(source)
    edit = to_unit_array(edited, size=source.size)
    squared = (src - edit) ** 2
    if mask is not None:
        keep = np.asarray(mask, dtype=bool)
        if keep.shape != src.shape[:2]:
            raise ValueError(f"mask shape {keep.shape} does not match the source image {src.shape[:2]}")
        if not keep.any():
            return float("nan")
        squared = squared[keep]
    return float(np.sqrt(squared.mean()))
