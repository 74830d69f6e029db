"""FID's Inception-v3 through torchmetrics / torch-fidelity, its weights fetched by our weights module.

``FrechetInceptionDistance`` would download torch-fidelity's Inception weights (the TensorFlow FID
network, converted) from GitHub when built; here the file is resolved like every other weight
(cache, torch's hub cache, the official URL or ``AUGCLIP_FILE_MIRROR``, or a local file) and handed
to torchmetrics' ``NoTrainInceptionV3`` as ``feature_extractor_weights_path``. The distance is
torchmetrics' own (:func:`frechet_distance`).

FID compares two *sets* of images (it needs several per set, and hundreds for a stable value), so
it is a per-model column of batch runs and protocols, not a per-edit metric.

Specs: ``inception-v3-compat`` (the only published one); ``random:inception-v3-compat`` builds the
same architecture with seeded random weights (untrained; tests).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..config import Settings, default_cache_dir
from ..errors import ConfigError, InputError, WeightsUnavailableError
from ..io import ImageInput, open_image
from .families import FAMILIES, get_model
from .lazy import LazyModel
from .specs import seeded_random
from .weights.guards import describe_load_error
from .weights.resolve import mirrored_url, resolve_url_weights
from .weights.table import FID_INCEPTION_URL

_NETWORK = "inception-v3-compat"
FEATURES = "2048"  # the pool features FID uses


def build_inception(path: Path | None) -> torch.nn.Module:
    """torchmetrics' ``NoTrainInceptionV3`` with the file's weights, or with seeded random ones (``None``)."""
    from torchmetrics.image.fid import NoTrainInceptionV3

    if path is not None:
        return NoTrainInceptionV3(name=_NETWORK, features_list=[FEATURES], feature_extractor_weights_path=str(path))

    class _Untrained(NoTrainInceptionV3):
        def load_state_dict(self, *args: Any, **kwargs: Any) -> Any:  # keep the fresh initialisation
            return None

    empty = io.BytesIO()
    torch.save({}, empty)
    empty.seek(0)
    with seeded_random():
        model = _Untrained(name=_NETWORK, features_list=[FEATURES], feature_extractor_weights_path=empty)  # type: ignore[arg-type]
        # PyTorch's default initialisation shrinks activations layer by layer (the pool features end near
        # 1e-8); He initialisation keeps them at a usable scale, so untrained features still vary.
        for module in model.modules():
            if isinstance(module, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
    return model


def _to_uint8_batch(images: Sequence[ImageInput]) -> torch.Tensor:
    """RGB images of one size as an (n, 3, H, W) uint8 tensor (what torchmetrics' FID takes)."""
    arrays = [np.asarray(open_image(image).image.convert("RGB"), dtype=np.uint8) for image in images]
    if len({a.shape for a in arrays}) > 1:
        raise InputError("FID batches need images of one size; resize them first (e.g. to the source's size)")
    return torch.from_numpy(np.stack(arrays).transpose(0, 3, 1, 2).copy())


class FidInception(LazyModel):
    """The FID Inception network; :meth:`features` per image, :func:`frechet_distance` per pair of sets."""

    family = "FID Inception"
    family_key = "fid"

    def __init__(self, model: str = _NETWORK, *, checkpoint: str | Path | None = None,
                 device: str | torch.device | None = "auto", cache_dir: str | Path | None = None,
                 mirror: str | None = None):
        self.spec = FAMILIES["fid"].canonical(model)
        self.random = self.spec.startswith("random:")
        self.checkpoint = Path(checkpoint).expanduser() if checkpoint else None
        if self.random and self.checkpoint is not None:
            raise ConfigError(f"{self.spec} asks for random weights but a weight file was also given; drop one")
        self.mirror = mirror
        super().__init__(device=device, precision="fp32")
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()

    @property
    def url(self) -> str:
        return mirrored_url(FID_INCEPTION_URL, self.mirror)

    def resolve(self, *, progress: bool = False) -> Path | None:
        if self.random:
            return None
        return resolve_url_weights("FID Inception-v3", self.url, self.checkpoint, self.cache_dir,
                                           "torch-fidelity", self.how_to_fix(), progress=progress)

    def fetch_weights(self, *, progress: bool = True) -> tuple[list[Path], str]:
        path = self.resolve(progress=progress)
        assert path is not None  # random specs are never fetched
        return [path], ""

    def _build(self) -> Any:
        path = self.resolve()
        try:
            return build_inception(path)
        except Exception as exc:
            if path is None:
                raise
            raise WeightsUnavailableError("FID Inception-v3", f"the file {path}: "
                                          f"{describe_load_error(exc, path)}",
                                          "It must be torch-fidelity's converted Inception state dict. "
                                          + self.how_to_fix()) from exc

    def info(self) -> dict[str, Any]:
        return {"model": self.spec, "label": self.label, "device": str(self.device), "untrained": self.untrained}

    def features(self, images: Sequence[ImageInput]) -> np.ndarray:
        """The 2048 pool features of each image (any size; the network resizes to 299): (n, 2048) float64."""
        out = []
        with self.in_use(), self.inference_lock, torch.inference_mode():
            for image in images:  # one at a time: sizes may differ, and the network resizes each itself
                out.append(self._model(_to_uint8_batch([image]).to(self.device)).double().cpu())
        return torch.cat(out).numpy() if out else np.zeros((0, int(FEATURES)))


def frechet_distance(network: FidInception, real: Sequence[ImageInput], generated: Sequence[ImageInput],
                     batch_size: int = 16) -> float:
    """torchmetrics' FID between two sets of images (each set at least 2 images; each set of one size)."""
    from torchmetrics.image.fid import FrechetInceptionDistance

    if len(real) < 2 or len(generated) < 2:
        raise InputError(f"FID needs at least 2 images per set (got {len(real)} and {len(generated)}); its "
                         "covariances need hundreds for a stable value")
    with network.in_use(), network.inference_lock:
        metric = FrechetInceptionDistance(feature=network._model, normalize=False).to(network.device)
        for images, is_real in ((real, True), (generated, False)):
            for start in range(0, len(images), batch_size):
                metric.update(_to_uint8_batch(images[start:start + batch_size]).to(network.device), real=is_real)
        return float(metric.compute())


def get_fid_network(model: str, settings: Settings, checkpoint: str | Path | None = None) -> FidInception:
    """The process-wide :class:`FidInception` (:func:`augclip_demo.inference.families.get_model`)."""
    return get_model("fid", settings, model, checkpoint=checkpoint)
