"""The networks of HATIE's measures: its own CLIP (ViT-B/32), DINOv2, LPIPS and FID's Inception.

They load through :mod:`augclip_demo.inference.weights` (the loaders); this module states what HATIE
asks of them (:class:`FeatureNetworks`) and feeds them as the published code does: DINOv2 on a direct
224 x 224 resize with every output token averaged, LPIPS on 64 x 64 bilinear resizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class FeatureNetworks(Protocol):
    """What HATIE needs: DINOv2 embeddings, LPIPS distances, FID features, and optionally its own CLIP."""

    @property
    def untrained(self) -> bool: ...

    def dino(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """(n, d) embeddings of float (H, W, 3) images, one row per image."""
        ...

    def lpips(self, first: Sequence[np.ndarray], second: Sequence[np.ndarray]) -> np.ndarray:
        """(n,) LPIPS distances of the pairs (first[i], second[i]) of float (H, W, 3) images."""
        ...

    def fid_features(self, images: Sequence[Any]) -> np.ndarray:
        """(n, 2048) pooled Inception features for FID."""
        ...

    def info(self) -> dict[str, Any]: ...


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b`` (float64); 0 where either row is zero.

    Both squared norms are summed as the dot product is, and divided under one square root, so two equal rows
    give exactly 1 (numpy's norm sums in another order, which left 1 - 1e-16 for the same image). The product of
    the squared norms stays finite for rows of float32 range, where every network's embedding comes from."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    aa, bb = np.einsum("ij,ij->i", a, a), np.einsum("ij,ij->i", b, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.einsum("ij,ij->i", a, b) / np.sqrt(aa * bb)
    return np.where((aa > 0) & (bb > 0), out, 0.0)


_DEFAULT_DINO = "facebook/dinov2-base"  # HATIE: DINOv2-base, token features mean-pooled
_DEFAULT_LPIPS = "alex"
_DEFAULT_FID = "inception-v3-compat"
_DEFAULT_CLIP = "ViT-B-32/openai"  # HATIE's CLIP for every CLIP measure (published code)


class HatieFeatures:
    """The shared DINOv2, LPIPS and FID networks (:mod:`augclip_demo.inference`), as HATIE uses them.

    Specs take the loaders' forms: a hub id or folder for DINO, ``alex`` / ``random:alex`` for LPIPS,
    ``inception-v3-compat`` / ``random:inception-v3-compat`` for FID, a CLIP model spec for HATIE's CLIP
    (``ViT-B-32/openai``; ``random:tiny`` in tests; ``clip=""`` leaves it out and the run's CLIP is used).
    Nothing loads until used: :meth:`load` loads DINOv2 and LPIPS; HATIE's CLIP and FID's Inception are built
    and loaded at their first use (a run that measures with the run's CLIP, :attr:`HatieOptions.clip` ``"run"``,
    never loads HATIE's; :meth:`HatieModels.clip_for <augclip_demo.hatie.hatie_score.HatieModels.clip_for>`
    is where that is decided).
    """

    def __init__(self, settings: Any = None, *, dino: str | None = None, lpips: str | None = None,
                 fid: str = _DEFAULT_FID, clip: str | None = None):
        from ..inference.dino import get_dino
        from ..inference.fid import get_fid_network
        from ..inference.lpips import get_lpips

        if settings is None:  # omitted settings are the declared defaults (the models take explicit ones)
            from ..config import Settings

            settings = Settings()
        self.dino_network = get_dino(dino or getattr(settings, "hatie_dino", None) or _DEFAULT_DINO, settings)
        self.lpips_network = get_lpips(lpips or getattr(settings, "hatie_lpips", None) or _DEFAULT_LPIPS, settings)
        clip_spec = clip if clip is not None else (getattr(settings, "hatie_clip", None) or _DEFAULT_CLIP)
        self.clip_spec = clip_spec or ""  # "" = not configured: the run's CLIP measures instead
        self._clip: Any = None
        self._fid_spec, self._settings = fid, settings
        self._get_fid = get_fid_network
        self._fid: Any = None

    @property
    def clip_network(self) -> Any:
        """HATIE's own CLIP encoder (None when not configured); built on first use, its weights loaded by its
        first encoding."""
        if self._clip is None and self.clip_spec:
            self._clip = _clip_encoder(self.clip_spec, self._settings)
        return self._clip

    @property
    def untrained(self) -> bool:
        """Whether DINOv2 or LPIPS has random weights (HATIE's CLIP counts where it is used: HatieModels.untrained_for)."""
        return bool(self.dino_network.untrained or self.lpips_network.untrained)

    def load(self) -> HatieFeatures:
        self.dino_network.load()
        self.lpips_network.load()
        return self

    def dino(self, images: Sequence[np.ndarray]) -> np.ndarray:
        return self.dino_network.embed(list(images), pooling="all", preprocess="resize")

    def lpips(self, first: Sequence[np.ndarray], second: Sequence[np.ndarray]) -> np.ndarray:
        from .images import LPIPS_SIZE, bilinear_resize

        def small(items: Sequence[np.ndarray]) -> list[np.ndarray]:
            return [bilinear_resize(np.asarray(i, dtype=np.float64), (LPIPS_SIZE, LPIPS_SIZE)) for i in items]
        return self.lpips_network.distance(small(first), small(second))

    @property
    def fid_network(self) -> Any:
        if self._fid is None:
            self._fid = self._get_fid(self._fid_spec, self._settings)
        return self._fid

    def fid_features(self, images: Sequence[Any]) -> np.ndarray:
        return self.fid_network.features(list(images))

    def info(self) -> dict[str, Any]:
        clip = None
        if self.clip_spec:  # from the spec: reporting HATIE's CLIP does not build it
            from ..inference.families import FAMILIES

            row = FAMILIES["clip"]
            spec = row.canonical(self.clip_spec)
            clip = {"model": spec, "untrained": row.untrained(spec)}
        return {"dino": self.dino_network.info(), "lpips": self.lpips_network.info(), "clip": clip,
                "fid": self._fid_spec, "untrained": self.untrained}


def _clip_encoder(spec: str, settings: Any) -> Any:
    """HATIE's own CLIP encoder (through the weights module like the run's), without the run's checkpoint."""
    from ..inference.clip_encoder import get_encoder

    return get_encoder(settings, clip_model=spec, clip_checkpoint=None)
