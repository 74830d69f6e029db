"""DINO and DINOv2 feature networks (transformers ``ViTModel`` / ``Dinov2Model``).

Model specs (the ``model`` argument; there is no environment variable: each metric names the network
its benchmark used, see docs/metrics.md, and :class:`augclip_demo.pipeline.FeatureNetworks` overrides it):

* ``facebook/dino-vits16`` (MagicBrush's DINO similarity), ``facebook/dino-vitb8`` (PIE-Bench's
  structure distance), ``facebook/dinov2-base`` (HATIE): hub repositories in transformers' layout
  (``config.json`` + ``model.safetensors`` or ``pytorch_model.bin``), fetched through
  :mod:`augclip_demo.inference.weights.resolve` into ``AUGCLIP_CACHE_DIR/huggingface``;
* a local folder saved with ``save_pretrained`` (a copy of such a repository);
* ``random:dino-vits16`` / ``random:dino-vitb8`` / ``random:dinov2-base``: the real architectures
  with seeded random weights (speed checks); ``random:tiny`` (a 2-layer ViT, width 32, patch 16)
  and ``random:tiny-v2`` (the same as a DINOv2) for tests. All are untrained.

Two read-outs:

* :meth:`DinoFeatures.embed`: one vector per image, after the final layer norm: the class token
  (``pooling="cls"``, what DINO's own ``forward`` returns and MagicBrush compares), the mean of
  the patch tokens (``pooling="mean"``; register tokens, where a model has them, are left out) or
  the mean of every output token, class token included (``pooling="all"``: HATIE's published code).
  Preprocessing ``"resize-crop"``: shorter side to 256 (bicubic, PIL), centre crop 224, ImageNet
  mean/std: MagicBrush's DINO transform and DINOv2's published image processor. ``"resize"``:
  float (H, W, 3) arrays in [0, 1] resized straight to 224 x 224 (bilinear on the tensor, no crop),
  ImageNet mean/std: HATIE's published code.
* :meth:`DinoFeatures.keys`: the attention keys of one block for every token (class token first),
  heads concatenated: the input of the "splicing ViT features" self-similarity that PIE-Bench's
  structure distance compares. Preprocessing: shorter side to ``size`` (224), the longer capped at
  ``max_size`` (480), bilinear on the tensor, ImageNet mean/std applied to pixels scaled by
  ``pixel_scale`` (PIE-Bench's script passes 0-255 values: ``pixel_scale=255``; see method notes).
  Positional embeddings are interpolated for non-square inputs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from ..config import Settings
from ..errors import ConfigError, InputError
from ..io import ImageInput, open_image
from .families import get_model
from .hub_folder import HubFolderModel
from .specs import RANDOM_INIT_SEED, seeded_random
from .weights.table import DINO_FILES

log = logging.getLogger(__name__)

_IMAGENET_MEAN = (0.485, 0.456, 0.406)
_IMAGENET_STD = (0.229, 0.224, 0.225)
KNOWN_HUB_MODELS = ("facebook/dino-vits16", "facebook/dino-vitb8", "facebook/dinov2-base")
#: The default network: MagicBrush's DINO similarity (docs/metrics.md); other uses name theirs.
_MAGICBRUSH_DINO = "facebook/dino-vits16"

Pooling = Literal["cls", "mean", "all"]
Preprocess = Literal["resize-crop", "resize", "none"]


def _vit_config(hidden: int, layers: int, heads: int, patch: int, image: int = 224) -> Any:
    from transformers import ViTConfig

    return ViTConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     intermediate_size=4 * hidden, patch_size=patch, image_size=image, qkv_bias=True,
                     layer_norm_eps=1e-6, hidden_act="gelu")


def _dinov2_config(hidden: int, layers: int, heads: int, patch: int = 14, image: int = 518) -> Any:
    from transformers import Dinov2Config

    return Dinov2Config(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads, mlp_ratio=4,
                        patch_size=patch, image_size=image, layerscale_value=1.0, layer_norm_eps=1e-6)


#: ``random:NAME`` -> the configuration it builds (the real architectures, or small ones for tests;
#: the family table's random kinds name the same ones).
_RANDOM_ARCHITECTURES: dict[str, Any] = {
    "dino-vits16": lambda: _vit_config(384, 12, 6, 16),
    "dino-vitb8": lambda: _vit_config(768, 12, 12, 8),
    "dinov2-base": lambda: _dinov2_config(768, 12, 12),
    "tiny": lambda: _vit_config(32, 2, 2, 16),
    "tiny-v2": lambda: _dinov2_config(32, 2, 2, 14, 56),
}


def _build_dino_model(config: Any) -> torch.nn.Module:
    """The transformers model for a ViT (DINO) or DINOv2 configuration, without a pooling head."""
    from transformers import Dinov2Model, ViTModel

    if config.model_type == "vit":
        return ViTModel(config, add_pooling_layer=False)
    if config.model_type == "dinov2":
        return Dinov2Model(config)
    raise ConfigError(f"a DINO feature network must be a ViT or DINOv2 model, this one is {config.model_type!r}")


def save_random_dino(name: str, folder: Path, seed: int = RANDOM_INIT_SEED) -> Path:
    """A ``random:NAME`` network saved with ``save_pretrained`` (tests publish such folders)."""
    with seeded_random(seed):
        model = _build_dino_model(_RANDOM_ARCHITECTURES[name]())
    model.save_pretrained(str(folder))
    return folder


def _patch_tokens_start(model: torch.nn.Module) -> int:
    """Index of the first patch token: after the class token and any register tokens."""
    return 1 + int(getattr(model.config, "num_register_tokens", 0) or 0)


class _DinoFromFolder:
    """``from_pretrained`` of a folder holding a ViT (DINO, without its pooling head) or a DINOv2 model."""

    @staticmethod
    def from_pretrained(folder: str, **kwargs: Any) -> Any:
        from transformers import AutoConfig, Dinov2Model, ViTModel

        kind = AutoConfig.from_pretrained(folder).model_type
        if kind == "vit":
            return ViTModel.from_pretrained(folder, add_pooling_layer=False, **kwargs)
        if kind == "dinov2":
            return Dinov2Model.from_pretrained(folder, **kwargs)
        raise ConfigError(f"{folder} holds a {kind!r} model; a DINO network is a ViT or DINOv2")


class DinoFeatures(HubFolderModel):
    """One DINO / DINOv2 network: image vectors (:meth:`embed`) and attention keys (:meth:`keys`)."""

    family = "DINO"
    family_key = "dino"
    files = DINO_FILES

    def __init__(self, model: str = _MAGICBRUSH_DINO, *, device: str | torch.device | None = "auto",
                 cache_dir: str | Path | None = None, precision: str = "fp32"):
        super().__init__(model, device=device, precision=precision, cache_dir=cache_dir)
        self.random = self.spec.startswith("random:")

    # ------------------------------------------------------------------ loading
    def resolve(self, *, progress: bool = False) -> Path | None:
        """The local folder of the weights (downloaded when missing); ``None`` for random weights."""
        return None if self.random else self._resolve_folder(self.local_folder, progress=progress)

    def _build(self) -> Any:
        if self.random:
            name = self.spec.split(":", 1)[1]
            with seeded_random():
                return _build_dino_model(_RANDOM_ARCHITECTURES[name]())
        folder = self.resolve()
        assert folder is not None
        return self._load_pretrained(folder, _DinoFromFolder)[0]

    def info(self) -> dict[str, Any]:
        return {"model": self.spec, "label": self.label, "device": str(self.device), "untrained": self.untrained}

    # ------------------------------------------------------------------ preprocessing
    @staticmethod
    def preprocess_crop(images: Sequence[ImageInput], resize: int = 256, crop: int = 224) -> torch.Tensor:
        """Shorter side to ``resize`` (bicubic, PIL), centre crop ``crop``, ImageNet mean/std: (n, 3, crop, crop)."""
        from torchvision import transforms

        transform = transforms.Compose([
            transforms.Resize(resize, interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.CenterCrop(crop), transforms.ToTensor(), transforms.Normalize(_IMAGENET_MEAN, _IMAGENET_STD)])
        return torch.stack([transform(open_image(image).image.convert("RGB")) for image in images])

    @staticmethod
    def preprocess_resize(arrays: Sequence[np.ndarray], size: int = 224) -> torch.Tensor:
        """Float (H, W, 3) arrays in [0, 1] resized to size x size (bilinear, antialiased, on the tensor: no
        crop), ImageNet mean/std: (n, 3, size, size)."""
        from torchvision.transforms import functional as tvf

        out = []
        for array in arrays:
            a = np.asarray(array, dtype=np.float32)
            if a.ndim != 3 or a.shape[2] != 3:
                raise InputError(f"DINO's resize preprocessing takes (H, W, 3) arrays, got {a.shape}")
            tensor = torch.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1)))
            tensor = tvf.resize(tensor, [size, size], interpolation=tvf.InterpolationMode.BILINEAR, antialias=True)
            out.append(tvf.normalize(tensor, list(_IMAGENET_MEAN), list(_IMAGENET_STD)))
        return torch.stack(out)

    @staticmethod
    def preprocess_structure(image: ImageInput, size: int = 224, max_size: int = 480,
                             pixel_scale: float = 255.0) -> torch.Tensor:
        """Pixels times ``pixel_scale / 255``, shorter side to ``size`` (longer at most ``max_size``, bilinear,
        antialiased), ImageNet mean/std: (1, 3, h, w)."""
        from torchvision.transforms import functional as tvf

        rgb = np.asarray(open_image(image).image.convert("RGB"), dtype=np.float32) * np.float32(pixel_scale / 255.0)
        tensor = torch.from_numpy(np.ascontiguousarray(rgb.transpose(2, 0, 1)))[None]
        tensor = tvf.resize(tensor, [size], max_size=max_size, antialias=True)
        return tvf.normalize(tensor, list(_IMAGENET_MEAN), list(_IMAGENET_STD))

    # ------------------------------------------------------------------ read-outs
    def _hidden(self, pixels: torch.Tensor) -> torch.Tensor:
        model = self._model
        kwargs = {"interpolate_pos_encoding": True} if model.config.model_type == "vit" else {}
        with torch.inference_mode(), self.autocast():
            return model(pixel_values=pixels.to(self.device), **kwargs).last_hidden_state.float().cpu()

    def embed(self, images: Sequence[ImageInput], *, pooling: Pooling = "cls", preprocess: Preprocess = "resize-crop",
              batch_size: int = 16) -> np.ndarray:
        """One float64 vector per image, not normalised: (n, hidden size).

        ``preprocess="none"`` takes ``images`` as a ready (n, 3, H, W) tensor.
        """
        if pooling not in ("cls", "mean", "all"):
            raise InputError(f"DINO pooling must be 'cls', 'mean' or 'all', got {pooling!r}")
        with self.in_use():
            if preprocess == "none":
                batches = [images[i:i + batch_size] for i in range(0, len(images), batch_size)]  # type: ignore[misc]
            elif preprocess == "resize-crop":
                batches = [self.preprocess_crop(images[i:i + batch_size]) for i in range(0, len(images), batch_size)]
            elif preprocess == "resize":
                batches = [self.preprocess_resize(images[i:i + batch_size])  # type: ignore[arg-type]
                           for i in range(0, len(images), batch_size)]
            else:
                raise InputError(f"unknown DINO preprocessing {preprocess!r}; use 'resize-crop', 'resize' or 'none'")
            out = []
            start = _patch_tokens_start(self._model)
            with self.inference_lock:
                for batch in batches:
                    hidden = self._hidden(torch.as_tensor(batch))
                    pooled = {"cls": lambda h: h[:, 0], "mean": lambda h: h[:, start:].mean(dim=1),
                              "all": lambda h: h.mean(dim=1)}[pooling]
                    out.append(pooled(hidden))
        return torch.cat(out).double().numpy() if out else np.zeros((0, 0))

    def keys(self, images: Sequence[ImageInput], *, layer: int = -1, size: int = 224, max_size: int = 480,
             pixel_scale: float = 255.0) -> list[np.ndarray]:
        """The attention keys of block ``layer`` (default: the last), (tokens, hidden) float32 per image."""
        with self.in_use():
            projections = [m for n, m in self._model.named_modules() if n.endswith("attention.k_proj")]
            if not projections:
                raise ConfigError(f"{self.label}: no attention key projections found (transformers changed?)")
            captured: list[torch.Tensor] = []
            handle = projections[layer].register_forward_hook(lambda _m, _i, out: captured.append(out.detach()))
            try:
                with self.inference_lock:
                    for image in images:
                        self._hidden(self.preprocess_structure(image, size, max_size, pixel_scale))
            finally:
                handle.remove()
        return [keys[0].float().cpu().numpy() for keys in captured]


def get_dino(model: str, settings: Settings) -> DinoFeatures:
    """The process-wide :class:`DinoFeatures` for ``model`` (:func:`augclip_demo.inference.families.get_model`)."""
    return get_model("dino", settings, model)
