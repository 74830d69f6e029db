"""Preservation measures on the unedited region, computed with torchmetrics as PIE-Bench does.

PIE-Bench (``evaluation/evaluate.py`` + ``matrics_calculator.py``) scores the unedited part by
multiplying *both* images by ``1 - mask`` (the edit region becomes black in both) and computing the
whole-image measure on the results: PSNR (``data_range=1``), MSE, SSIM (``data_range=1``, Gaussian
11 x 11, sigma 1.5) and LPIPS (SqueezeNet by default; inputs scaled to [-1, 1]). The mean therefore
runs over every pixel, the blacked-out ones included (they add zero error): a named choice, see
docs/method-notes.md. An empty unedited region gives no value (PIE-Bench writes "nan").

The results are plain floats per edit; :mod:`augclip_demo.metrics.suite` reads them like embeddings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PIL import Image

#: The measures this module fills, by the suite's metric keys.
UNEDITED_MEASURES = ("psnr_unedited", "mse_unedited", "ssim_unedited", "lpips_unedited")


def _unit(image: Image.Image, size: tuple[int, int] | None = None) -> np.ndarray:
    rgb = image.convert("RGB")
    if size is not None and rgb.size != size:
        rgb = rgb.resize(size, Image.BICUBIC)
    return np.asarray(rgb, dtype=np.float64) / 255.0


def masked_pair(source: Image.Image, edited: Image.Image, edit_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both images (the edit resized to the source, bicubic) as [0, 1] float arrays times ``1 - edit_mask``."""
    keep = ~np.asarray(edit_mask, dtype=bool)
    src = _unit(source)
    if keep.shape != src.shape[:2]:
        raise ValueError(f"the edit mask is {keep.shape[1]}x{keep.shape[0]} but the source is "
                         f"{src.shape[1]}x{src.shape[0]}; give a mask of the source's size")
    factor = keep[..., None].astype(np.float64)
    return src * factor, _unit(edited, size=source.size) * factor


def unedited_measures(source: Image.Image, edited: Image.Image, edit_mask: np.ndarray,
                      lpips: Any | None = None) -> dict[str, float | None]:
    """PSNR, MSE, SSIM (torchmetrics) and, with an :class:`~.lpips.LpipsNetwork`, LPIPS outside ``edit_mask``.

    ``None`` for every measure when the mask covers the whole image (nothing unedited to compare).
    """
    import torch
    from torchmetrics.functional.image import peak_signal_noise_ratio, structural_similarity_index_measure
    from torchmetrics.functional.regression import mean_squared_error

    if np.asarray(edit_mask, dtype=bool).all():
        return dict.fromkeys(UNEDITED_MEASURES)
    src, edit = masked_pair(source, edited, edit_mask)
    a = torch.from_numpy(np.ascontiguousarray(src.transpose(2, 0, 1), dtype=np.float32))[None]
    b = torch.from_numpy(np.ascontiguousarray(edit.transpose(2, 0, 1), dtype=np.float32))[None]
    out: dict[str, float | None] = {
        "psnr_unedited": float(peak_signal_noise_ratio(b, a, data_range=1.0)),
        "mse_unedited": float(mean_squared_error(b, a)),
        "ssim_unedited": float(structural_similarity_index_measure(b, a, data_range=1.0)),
        "lpips_unedited": None,
    }
    if lpips is not None:
        out["lpips_unedited"] = float(lpips.distance([edit], [src])[0])
    return out
