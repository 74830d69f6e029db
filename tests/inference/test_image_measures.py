"""Preservation measures outside the edit mask (torchmetrics) against PIE-Bench's definitions re-derived in numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image
from scipy.ndimage import correlate1d

pytestmark = pytest.mark.slow  # importing torchmetrics takes seconds on 2 cores


def _numpy_ssim(a: np.ndarray, b: np.ndarray) -> float:
    """SSIM as torchmetrics 1.x computes it: Gaussian 11 x 11 (sigma 1.5), reflect padding of 5, the map
    averaged over every pixel, variances clamped at 0; K1 = 0.01, K2 = 0.03, data range 1."""
    x = np.arange(11) - 5.0
    g = np.exp(-x ** 2 / (2 * 1.5 ** 2))
    g /= g.sum()

    def blur(img: np.ndarray) -> np.ndarray:
        return correlate1d(correlate1d(img, g, axis=0, mode="constant"), g, axis=1, mode="constant")[5:-5, 5:-5]

    c1, c2 = 0.01 ** 2, 0.03 ** 2
    maps = []
    for c in range(3):
        p, q = np.pad(a[..., c], 5, mode="reflect"), np.pad(b[..., c], 5, mode="reflect")
        mp, mq = blur(p), blur(q)
        spp, sqq = np.maximum(blur(p * p) - mp ** 2, 0), np.maximum(blur(q * q) - mq ** 2, 0)
        spq = blur(p * q) - mp * mq
        maps.append(((2 * mp * mq + c1) * (2 * spq + c2)) / ((mp ** 2 + mq ** 2 + c1) * (spp + sqq + c2)))
    return float(np.mean(maps))


def test_unedited_measures_match_pie_bench_definitions_on_a_constructed_pair():
    from augclip_demo.inference.image_measures import unedited_measures

    rng = np.random.default_rng(11)
    source = (rng.random((32, 40, 3)) * 200).astype(np.uint8)
    edited = source.copy()
    edited[:, :20] = 255 - edited[:, :20]  # the edit region: left half, changed completely
    edited[:, 20:] = np.clip(edited[:, 20:].astype(int) + 20, 0, 255)  # the unedited half drifts by 20 levels
    mask = np.zeros((32, 40), bool)
    mask[:, :20] = True
    out = unedited_measures(Image.fromarray(source), Image.fromarray(edited), mask)
    # PIE-Bench: both images times (1 - mask), then the whole-image measure
    a = source / 255.0 * (~mask)[..., None]
    b = edited / 255.0 * (~mask)[..., None]
    mse = float(((a - b) ** 2).mean())
    assert mse == pytest.approx(0.5 * (20 / 255) ** 2, rel=1e-9)  # half the pixels, each 20 levels off
    assert out["mse_unedited"] == pytest.approx(mse, rel=1e-5)
    assert out["psnr_unedited"] == pytest.approx(10 * math.log10(1 / mse), rel=1e-5)
    assert out["ssim_unedited"] == pytest.approx(_numpy_ssim(b, a), abs=1e-5)
    assert out["lpips_unedited"] is None  # no LPIPS network given
    everything = unedited_measures(Image.fromarray(source), Image.fromarray(edited), np.ones((32, 40), bool))
    assert all(v is None for v in everything.values())
    with pytest.raises(ValueError, match="source's size"):
        unedited_measures(Image.fromarray(source), Image.fromarray(edited), mask[:10])
