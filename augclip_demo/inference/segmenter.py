"""SAM (segment-anything 1.0): box prompt -> instance mask, as Grounded-SAM does for BPM.

Model specs (``--sam-model`` / ``AUGCLIP_SAM_MODEL``) and weights:

* ``vit_b`` (default), ``vit_l``, ``vit_h``: the official checkpoint files
  (``sam_vit_b_01ec64.pth`` ...) downloaded from ``dl.fbaipublicfiles.com`` into
  ``AUGCLIP_CACHE_DIR/sam``, or a local file (``--sam-checkpoint`` / ``AUGCLIP_SAM_CHECKPOINT``);
* ``random:vit_b`` / ``random:vit_l`` / ``random:vit_h``: the real architecture with random
  weights (speed benchmarks); ``random:tiny``: a small SAM (image encoder of 2 blocks, width 32,
  256 px input; prompt encoder and mask decoder of width 32) for tests. ``tiny`` with
  ``--sam-checkpoint`` loads a saved tiny state dict through the same code as a real checkpoint.
  All of these are untrained.

Masks: ``SamPredictor``'s pipeline (``ResizeLongestSide`` to the encoder size, pixel
normalisation, padding, box prompt, ``multimask_output=False``, logits > 0 at the original size),
run through ``Sam.forward``, the library's batched entry point, so several images share one
image-encoder pass. The tests check the masks equal ``SamPredictor.predict``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..config import Settings, default_cache_dir
from ..errors import ConfigError, InputError, WeightsUnavailableError
from ..io import ImageInput, LoadedImage, open_image
from .cpu_matmul import thread_independent_matmuls
from .device import device_description
from .families import FAMILIES, get_model
from .lazy import LazyModel
from .specs import seeded_random
from .weights.fetch import require_url_available
from .weights.guards import describe_load_error
from .weights.resolve import resolve_sam, sam_cache_path, sam_url
from .weights.table import SAM_CHECKPOINT_URLS  # noqa: F401 - re-exported: the official URLs, by architecture

log = logging.getLogger(__name__)


def build_tiny_sam() -> Any:
    """A small SAM with the library's classes (as ``_build_sam`` does, at width 32 and 256 px)."""
    from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    prompt_dim, image_size, patch = 32, 256, 16
    grid = image_size // patch
    sam = Sam(
        image_encoder=ImageEncoderViT(
            depth=2, embed_dim=32, img_size=image_size, mlp_ratio=2, norm_layer=partial(torch.nn.LayerNorm, eps=1e-6),
            num_heads=2, patch_size=patch, qkv_bias=True, use_rel_pos=True, global_attn_indexes=[1],
            window_size=4, out_chans=prompt_dim,
        ),
        prompt_encoder=PromptEncoder(embed_dim=prompt_dim, image_embedding_size=(grid, grid),
                                     input_image_size=(image_size, image_size), mask_in_chans=4),
        mask_decoder=MaskDecoder(
            num_multimask_outputs=3,
            transformer=TwoWayTransformer(depth=2, embedding_dim=prompt_dim, mlp_dim=64, num_heads=2),
            transformer_dim=prompt_dim, iou_head_depth=2, iou_head_hidden_dim=32,
        ),
    )
    return sam.eval()


def _build_sam_architecture(arch: str) -> Any:
    """The SAM architecture with freshly initialised weights (no checkpoint)."""
    if arch == "tiny":
        return build_tiny_sam()
    from segment_anything import sam_model_registry

    if arch not in sam_model_registry:
        raise ConfigError(f"unknown SAM architecture {arch!r}; use one of vit_b, vit_l, vit_h")
    return sam_model_registry[arch](checkpoint=None)


class SamSegmenter(LazyModel):
    """Box-prompted SAM masks; lazy, thread-safe, batched across images.

    Weights: ``checkpoint`` (a local file), else ``url`` (default: the official file for the
    architecture; ``AUGCLIP_SAM_URL`` points at a mirror) downloaded into ``AUGCLIP_CACHE_DIR/sam``;
    ``sha256`` (``AUGCLIP_SAM_SHA256``) is checked against the file when given.
    """

    family = "SAM"
    family_key = "sam"

    def __init__(self, model: str | None = None, *, checkpoint: str | Path | None = None,
                 device: str | torch.device | None = "auto", cache_dir: str | Path | None = None,
                 batch_size: int = 4, url: str | None = None, sha256: str | None = None, precision: str = "fp32"):
        self.spec = FAMILIES["sam"].canonical(model or FAMILIES["sam"].default)
        self.arch, self.random = self.spec.split(":", 1)[-1], self.spec.startswith("random:")
        self.checkpoint = Path(checkpoint).expanduser() if checkpoint else None
        self.url_override = url
        self.sha256 = sha256 or None
        if self.random and self.checkpoint is not None:
            raise ConfigError(f"{self.spec} asks for random weights but a checkpoint file was also given "
                              f"({self.checkpoint}); drop one of the two")
        if self.arch == "tiny" and not self.random and self.checkpoint is None and not self.url_override:
            raise ConfigError("SAM 'tiny' is a test architecture with no published weights: use random:tiny, "
                              "or give its saved state dict with --sam-checkpoint (or AUGCLIP_SAM_URL)")
        super().__init__(device=device, precision=precision)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.batch_size = max(1, int(batch_size))
        self._transform: Any = None

    # ------------------------------------------------------------------ loading
    @property
    def label_text(self) -> str:
        return self.arch

    @property
    def url(self) -> str | None:
        return sam_url(self.arch, self.url_override) if not self.random else None

    @property
    def checkpoint_path(self) -> Path | None:
        """Where the weights are read from: the given file, else the cache download target."""
        if self.random:
            return None
        if self.checkpoint is not None:
            return self.checkpoint
        assert self.url is not None
        return sam_cache_path(self.cache_dir, self.url)

    def preflight(self) -> None:
        """Raise :class:`WeightsUnavailableError` now if the checkpoint is neither here nor downloadable."""
        if self.random:
            return
        path = self.checkpoint_path
        assert path is not None
        if self.checkpoint is not None:
            resolve_sam(self.arch, self.checkpoint, None, self.cache_dir, self.how_to_fix())
            return
        assert self.url is not None
        require_url_available(f"SAM {self.arch}", self.url, path, self.how_to_fix())

    def fetch_weights(self, *, progress: bool = True) -> tuple[list[Path], str]:
        """The checkpoint, checked against the SHA-256 given, else the published one for the official URL."""
        from .weights.table import pretrained_entry

        entry = pretrained_entry("sam", self.arch)
        sha256 = self.sha256 or (entry.sha256 if entry and not self.url_override else None)
        path = resolve_sam(self.arch, self.checkpoint, self.url, self.cache_dir, self.how_to_fix(), sha256=sha256,
                           progress=progress)
        return [path], "SHA-256 checked" if sha256 else ""

    def load(self) -> SamSegmenter:
        super().load()
        return self

    def _release(self) -> None:
        self._transform = None

    def _build(self) -> Any:
        from segment_anything.utils.transforms import ResizeLongestSide

        if self.random:
            with seeded_random():
                model = _build_sam_architecture(self.arch)
        else:
            path = resolve_sam(self.arch, self.checkpoint, self.url, self.cache_dir, self.how_to_fix(), sha256=self.sha256)
            try:
                state = torch.load(path, map_location="cpu", weights_only=True)
                model = _build_sam_architecture(self.arch)
                model.load_state_dict(state)
            except Exception as exc:  # unreadable file, wrong architecture, missing keys
                raise WeightsUnavailableError(
                    f"SAM {self.arch}", f"the file {path}: {describe_load_error(exc, path)}",
                    f"Check that it is the official SAM checkpoint for {self.arch} "
                    f"({self.url or 'a saved tiny state dict'}). " + self.how_to_fix()) from exc
        self._transform = ResizeLongestSide(model.image_encoder.img_size)
        return model

    def info(self) -> dict[str, Any]:
        return {"model": self.spec, "label": self.label, "checkpoint": str(self.checkpoint) if self.checkpoint else None,
                "device": str(self.device), "device_name": device_description(self.device), "untrained": self.untrained}

    # ------------------------------------------------------------------ masks
    def segment(self, images: Sequence[ImageInput | LoadedImage], boxes: Sequence[Sequence[np.ndarray]]) -> list[list[np.ndarray]]:
        """Boolean ``(H, W)`` masks: ``result[i][j]`` is the mask of ``boxes[i][j]`` (pixel xyxy) in ``images[i]``."""
        if len(images) != len(boxes):
            raise InputError(f"{len(images)} images but {len(boxes)} box lists")
        arrays = [np.asarray(open_image(image).image) for image in images]
        results: list[list[np.ndarray]] = [[] for _ in arrays]
        todo = [i for i, group in enumerate(boxes) if len(group)]
        with self.in_use():
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start:start + self.batch_size]
                masks = self._segment_batch([arrays[i] for i in chunk], [boxes[i] for i in chunk])
                for i, group in zip(chunk, masks):
                    results[i] = group
        return results

    def _segment_batch(self, arrays: list[np.ndarray], boxes: list[Sequence[np.ndarray]]) -> list[list[np.ndarray]]:
        self.load()
        model, transform = self._model, self._transform
        batched = []
        for array, group in zip(arrays, boxes):
            resized = transform.apply_image(array)
            image = torch.as_tensor(resized, device=self.device).permute(2, 0, 1).contiguous()
            box = transform.apply_boxes(np.asarray(group, dtype=np.float64).reshape(-1, 4), array.shape[:2])
            batched.append({"image": image, "original_size": array.shape[:2],
                            "boxes": torch.as_tensor(box, dtype=torch.float, device=self.device)})
        # oneDNN's products: a box's mask is then the same at any thread count (MKL's 7-row products are not)
        with self._infer_lock, torch.inference_mode(), thread_independent_matmuls(self.device):
            outputs = model(batched, multimask_output=False)
        return [[mask[0].cpu().numpy().astype(bool) for mask in out["masks"]] for out in outputs]


def get_segmenter(settings: Settings, **overrides: Any) -> SamSegmenter:
    """The process-wide segmenter for these settings (:func:`augclip_demo.inference.families.get_model`)."""
    return get_model("sam", settings.replace(**overrides) if overrides else settings)
