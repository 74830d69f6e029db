"""LPIPS through torchmetrics, with its ImageNet backbone fetched by our weights module.

torchmetrics' LPIPS network (``_NoTrainLpips``, the network behind
``LearnedPerceptualImagePatchSimilarity``) has two parts: the learned linear heads, which ship
inside the torchmetrics wheel (LPIPS v0.1), and an ImageNet backbone that torchvision would
download on construction. Here the network is built with a random backbone (no download) and the
backbone's tensors are then loaded from torchvision's published file, resolved like every other
weight (:func:`augclip_demo.inference.weights.resolve.resolve_url_weights`: the cache, torch's hub cache, a
download from the official URL or ``AUGCLIP_FILE_MIRROR``, or a local file). The distance itself is
torchmetrics' own (``_lpips_update``), so values equal ``LearnedPerceptualImagePatchSimilarity``'s.

Specs: ``alex`` (HATIE), ``squeeze`` (PIE-Bench), ``vgg``; ``random:alex`` / ``random:squeeze`` /
``random:vgg``: backbone and heads at random (untrained; tests and speed checks).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..config import Settings, default_cache_dir
from ..errors import ConfigError, InputError, WeightsUnavailableError
from .families import FAMILIES, get_model
from .lazy import LazyModel
from .specs import seeded_random
from .weights.guards import describe_load_error
from .weights.resolve import mirrored_url, resolve_url_weights
from .weights.table import TORCHVISION_BACKBONE_URLS

_NETS = {"alex": "alexnet", "squeeze": "squeezenet1_1", "vgg": "vgg16"}
_SLICE = re.compile(r"^(?:slice\d+|slices\.\d+)\.(\d+)\.(.+)$")


def _backbone_state(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """torchvision's ``features.I.*`` tensors renamed to the LPIPS network's slices (``net.slice1.I.*``)."""
    mapped: dict[str, torch.Tensor] = {}
    missing: list[str] = []
    for key in model.net.state_dict():
        match = _SLICE.match(key)
        if match is None:
            continue
        source = f"features.{match.group(1)}.{match.group(2)}"
        if source in state:
            mapped[f"net.{key}"] = state[source]
        else:
            missing.append(source)
    if missing:
        raise KeyError(f"{len(missing)} backbone tensor(s) missing from the file ({', '.join(missing[:3])}, ...)")
    return mapped


class LpipsNetwork(LazyModel):
    """torchmetrics' LPIPS network with the backbone from our weights module; :meth:`distance` per pair."""

    family = "LPIPS"
    family_key = "lpips"

    def __init__(self, net: str = "alex", *, checkpoint: str | Path | None = None,
                 device: str | torch.device | None = "auto", cache_dir: str | Path | None = None,
                 mirror: str | None = None):
        self.spec = FAMILIES["lpips"].canonical(net)
        self.net, self.random = self.spec.split(":", 1)[-1], self.spec.startswith("random:")
        self.checkpoint = Path(checkpoint).expanduser() if checkpoint else None
        if self.random and self.checkpoint is not None:
            raise ConfigError(f"{self.spec} asks for random weights but a backbone file was also given; drop one")
        self.mirror = mirror
        super().__init__(device=device, precision="fp32")
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()

    @property
    def url(self) -> str:
        return mirrored_url(TORCHVISION_BACKBONE_URLS[self.net], self.mirror)

    def resolve(self, *, progress: bool = False) -> Path | None:
        if self.random:
            return None
        return resolve_url_weights(f"LPIPS {self.net} backbone", self.url, self.checkpoint, self.cache_dir,
                                           "torchvision", self.how_to_fix(), check_name_hash=not self.mirror,
                                           progress=progress)

    def fetch_weights(self, *, progress: bool = True) -> tuple[list[Path], str]:
        path = self.resolve(progress=progress)
        assert path is not None  # random specs are never fetched
        return [path], "the backbone; the linear heads ship with torchmetrics"

    def _build(self) -> Any:
        from torchmetrics.functional.image.lpips import _NoTrainLpips

        with seeded_random():
            # pnet_rand: torchvision builds the backbone without downloading; its tensors come next.
            model = _NoTrainLpips(net=self.net, pretrained=not self.random, pnet_rand=True)
        if self.random:
            return model
        path = self.resolve()
        assert path is not None
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            model.load_state_dict(_backbone_state(model, state), strict=False)
        except Exception as exc:
            raise WeightsUnavailableError(f"LPIPS {self.net} backbone", f"the file {path}: "
                                          f"{describe_load_error(exc, path)}",
                                          f"It must be torchvision's {_NETS[self.net]} ImageNet state dict. "
                                          + self.how_to_fix()) from exc
        return model

    def info(self) -> dict[str, Any]:
        return {"model": self.spec, "label": self.label, "device": str(self.device), "untrained": self.untrained}

    def distance(self, first: Sequence[np.ndarray], second: Sequence[np.ndarray]) -> np.ndarray:
        """LPIPS of each pair of (H, W, 3) float images in [0, 1] (same shape within a pair): (n,) float64."""
        from torchmetrics.functional.image.lpips import _lpips_update

        if len(first) != len(second):
            raise InputError(f"LPIPS needs pairs: {len(first)} and {len(second)} images given")
        out = []
        with self.in_use(), self.inference_lock, torch.inference_mode():
            for a, b in zip(first, second):
                if a.shape != b.shape or a.ndim != 3 or a.shape[2] != 3:
                    raise InputError(f"LPIPS needs two (H, W, 3) images of one size, got {a.shape} and {b.shape}")
                ta = torch.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1), dtype=np.float32))[None]
                tb = torch.from_numpy(np.ascontiguousarray(b.transpose(2, 0, 1), dtype=np.float32))[None]
                value = _lpips_update(ta.to(self.device), tb.to(self.device), net=self._model, normalize=True)
                out.append(float(value.reshape(-1)[0]))
        return np.asarray(out, dtype=np.float64)


def get_lpips(net: str, settings: Settings, checkpoint: str | Path | None = None) -> LpipsNetwork:
    """The process-wide :class:`LpipsNetwork` for ``net`` (:func:`augclip_demo.inference.families.get_model`)."""
    return get_model("lpips", settings, net, checkpoint=checkpoint)
