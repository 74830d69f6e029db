"""Preservation measures on the unedited region, computed with torchmetrics as PIE-Bench does.

PIE-Bench (``evaluation/evaluate.py`` + ``matrics_calculator.py``) scores the unedited part by
multiplying *both* images by ``1 - mask`` (the edit region becomes black in both) and computing the
whole-image measure on the results: PSNR (``data_range=1``), MSE, SSIM (``data_range=1``, Gaussian
11 x 11, sigma 1.5) and LPIPS (SqueezeNet by default; inputs scaled to [-1, 1]). The mean therefore
runs over every pixel, the blacked-out ones included (they add zero error): a named choice, see
docs/method-notes.md. An empty unedited region gives no value (PIE-Bench writes "nan").

The per-pixel values are torchmetrics' float32 ones; each mean over the image is summed in float64 by
numpy (:func:`_fixed_order_mean`), where torch's float32 sum splits the pixels among its threads and
so moved with the thread count (a Ray actor runs one). The results are plain floats per edit;
:mod:`augclip_demo.metrics.suite` reads them like embeddings.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PIL import Image

#: The measures this module fills, by the suite's metric keys.
_UNEDITED_MEASURES = ("psnr_unedited", "mse_unedited", "ssim_unedited", "lpips_unedited")
#: Output rows of one SSIM band (:func:`banded_ssim`): its working memory is about 0.5 MB per row and
#: 1000 px of width, where the whole image at once took 2.3 GB at 1800 x 1800 px.
_SSIM_BAND_ROWS = 128


def _unit(image: Image.Image, size: tuple[int, int] | None = None) -> np.ndarray:
    rgb = image.convert("RGB")
    if size is not None and rgb.size != size:
        rgb = rgb.resize(size, Image.BICUBIC)
    return np.asarray(rgb, dtype=np.float64) / 255.0


def _masked_pair(source: Image.Image, edited: Image.Image, edit_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both images (the edit resized to the source, bicubic) as [0, 1] float arrays times ``1 - edit_mask``."""
    keep = ~np.asarray(edit_mask, dtype=bool)
    src = _unit(source)
    if keep.shape != src.shape[:2]:
        raise ValueError(f"the edit mask is {keep.shape[1]}x{keep.shape[0]} but the source is "
                         f"{src.shape[1]}x{src.shape[0]}; give a mask of the source's size")
    factor = keep[..., None].astype(np.float64)
    return src * factor, _unit(edited, size=source.size) * factor


def _fixed_order_mean(values: Any) -> float:
    """Mean of a CPU tensor's elements summed in float64 by numpy: one order whatever torch's thread count."""
    return float(np.mean(values.detach().cpu().numpy(), dtype=np.float64))


def unedited_measures(source: Image.Image, edited: Image.Image, edit_mask: np.ndarray,
                      lpips: Any | None = None) -> dict[str, float | None]:
    """PSNR, MSE, SSIM (torchmetrics) and, with an :class:`~.lpips.LpipsNetwork`, LPIPS outside ``edit_mask``.

    ``None`` for every measure when the mask covers the whole image (nothing unedited to compare).
    """
    import torch

    if np.asarray(edit_mask, dtype=bool).all():
        return dict.fromkeys(_UNEDITED_MEASURES)
    src, edit = _masked_pair(source, edited, edit_mask)
    a = torch.from_numpy(np.ascontiguousarray(src.transpose(2, 0, 1), dtype=np.float32))[None]
    b = torch.from_numpy(np.ascontiguousarray(edit.transpose(2, 0, 1), dtype=np.float32))[None]
    diff = b - a  # torchmetrics' MSE and PSNR square this float32 difference; the mean is _fixed_order_mean's
    mse = _fixed_order_mean(diff * diff)
    out: dict[str, float | None] = {
        "psnr_unedited": 10.0 * math.log10(1.0 / mse) if mse > 0 else math.inf,  # data_range 1
        "mse_unedited": mse,
        "ssim_unedited": banded_ssim(b, a),
        "lpips_unedited": None,
    }
    if lpips is not None:
        out["lpips_unedited"] = float(lpips.distance([edit], [src])[0])
    return out


def banded_ssim(preds: Any, target: Any, rows: int = _SSIM_BAND_ROWS) -> float:
    """torchmetrics' ``structural_similarity_index_measure(preds, target, data_range=1.0)`` of two
    ``(1, C, H, W)`` float tensors (Gaussian 11 x 11, sigma 1.5, reflected borders), computed ``rows``
    output rows at a time.

    torchmetrics filters five padded copies of the whole image at once (2.3 GB at 1800 x 1800 px).
    Here each band takes the padded rows its outputs need and runs the same operations on them, so
    every pixel of the SSIM map is the same value (tests/security compare the maps bit for bit). The mean
    over the whole map, as torchmetrics takes it, is summed in float64 (:func:`_fixed_order_mean`): the
    same value at any thread count, within 1e-7 of torchmetrics' float32 mean.
    """
    import torch
    import torch.nn.functional as F
    from torchmetrics.functional.image.utils import _gaussian_kernel_2d

    sigma = (1.5, 1.5)
    size = [int(3.5 * s + 0.5) * 2 + 1 for s in sigma]  # torchmetrics' Gaussian size for sigma: 11
    pad_h, pad_w = (size[0] - 1) // 2, (size[1] - 1) // 2
    c1, c2 = pow(0.01 * 1.0, 2), pow(0.03 * 1.0, 2)
    channel, dtype = preds.size(1), preds.dtype
    preds = F.pad(preds, (pad_w, pad_w, pad_h, pad_h), mode="reflect")
    target = F.pad(target, (pad_w, pad_w, pad_h, pad_h), mode="reflect")
    kernel = _gaussian_kernel_2d(channel, size, sigma, dtype, preds.device)
    height, width = preds.shape[2] - 2 * pad_h, preds.shape[3] - 2 * pad_w
    ssim = torch.empty((preds.shape[0], channel, height, width), dtype=dtype, device=preds.device)
    for top in range(0, height, max(1, int(rows))):
        bottom = min(height, top + rows)
        p, t = preds[:, :, top:bottom + 2 * pad_h], target[:, :, top:bottom + 2 * pad_h]
        outputs = F.conv2d(torch.cat((p, t, p * p, t * t, p * t)), kernel, groups=channel).split(p.shape[0])
        mu_pred_sq, mu_target_sq = outputs[0].pow(2), outputs[1].pow(2)
        mu_pred_target = outputs[0] * outputs[1]
        sigma_pred_sq = torch.clamp(outputs[2] - mu_pred_sq, min=0.0)
        sigma_target_sq = torch.clamp(outputs[3] - mu_target_sq, min=0.0)
        sigma_pred_target = outputs[4] - mu_pred_target
        upper = 2 * sigma_pred_target.to(dtype) + c2
        lower = (sigma_pred_sq + sigma_target_sq).to(dtype) + c2
        ssim[:, :, top:bottom] = ((2 * mu_pred_target + c1) * upper) / ((mu_pred_sq + mu_target_sq + c1) * lower)
    return _fixed_order_mean(ssim)
