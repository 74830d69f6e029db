"""The feature networks HATIE's measures need besides CLIP: DINOv2, LPIPS and FID's Inception.

They load through :mod:`augclip_demo.inference.weights` (the feature-network loaders); this module
only states what HATIE asks of them (:class:`FeatureNetworks`) and turns their outputs into the
[0, 1] similarities of :mod:`augclip_demo.metrics.hatie`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from PIL import Image


class FeatureNetworks(Protocol):
    """What HATIE needs: DINOv2 embeddings (mean-pooled tokens), LPIPS distances, FID features."""

    @property
    def untrained(self) -> bool: ...

    def dino(self, images: Sequence[Image.Image]) -> np.ndarray:
        """(n, d) embeddings, one row per image."""
        ...

    def lpips(self, first: Sequence[Image.Image], second: Sequence[Image.Image]) -> np.ndarray:
        """(n,) LPIPS distances of the pairs (first[i], second[i])."""
        ...

    def fid_features(self, images: Sequence[Image.Image]) -> np.ndarray:
        """(n, 2048) pooled Inception features for FID."""
        ...

    def info(self) -> dict[str, Any]: ...


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b`` (float64)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.einsum("ij,ij->i", a, b) / (na * nb)
    return np.where((na > 0) & (nb > 0), out, 0.0)
