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


DEFAULT_DINO = "facebook/dinov2-base"  # HATIE: DINOv2-base, token features mean-pooled
DEFAULT_LPIPS = "alex"
DEFAULT_FID = "inception-v3-compat"


class HatieFeatures:
    """The shared DINOv2, LPIPS and FID networks (:mod:`augclip_demo.inference`), as HATIE uses them.

    Specs take the loaders' forms: a hub id or folder for DINO, ``alex`` / ``random:alex`` for LPIPS,
    ``inception-v3-compat`` / ``random:inception-v3-compat`` for FID; nothing loads until used.
    """

    def __init__(self, settings: Any = None, *, dino: str | None = None, lpips: str | None = None,
                 fid: str = DEFAULT_FID):
        from ..inference.dino import get_dino
        from ..inference.fid import get_fid_network
        from ..inference.lpips import get_lpips

        self.dino_network = get_dino(dino or getattr(settings, "hatie_dino", None) or DEFAULT_DINO, settings)
        self.lpips_network = get_lpips(lpips or getattr(settings, "hatie_lpips", None) or DEFAULT_LPIPS, settings)
        self._fid_spec, self._settings = fid, settings
        self._get_fid = get_fid_network
        self._fid: Any = None

    @property
    def untrained(self) -> bool:
        return bool(self.dino_network.untrained or self.lpips_network.untrained)

    def load(self) -> HatieFeatures:
        self.dino_network.load()
        self.lpips_network.load()
        return self

    def dino(self, images: Sequence[Image.Image]) -> np.ndarray:
        return self.dino_network.embed(list(images), pooling="mean")

    def lpips(self, first: Sequence[Image.Image], second: Sequence[Image.Image]) -> np.ndarray:
        def arrays(items: Sequence[Image.Image]) -> list[np.ndarray]:
            return [np.asarray(i.convert("RGB"), dtype=np.float64) / 255.0 for i in items]
        return self.lpips_network.distance(arrays(first), arrays(second))

    @property
    def fid_network(self) -> Any:
        if self._fid is None:
            self._fid = self._get_fid(self._fid_spec, self._settings)
        return self._fid

    def fid_features(self, images: Sequence[Image.Image]) -> np.ndarray:
        return self.fid_network.features(list(images))

    def info(self) -> dict[str, Any]:
        return {"dino": self.dino_network.info(), "lpips": self.lpips_network.info(), "fid": self._fid_spec,
                "untrained": self.untrained}
