"""SAM 2.1 (Hiera-Tiny) through transformers (``Sam2Model`` + ``Sam2Processor``): the BPM ``fast`` preset's segmenter.

Model specs (``AUGCLIP_FAST_SAM_MODEL``):

* ``facebook/sam2.1-hiera-tiny`` (default): the transformers-format repository, downloaded by
  huggingface_hub into ``AUGCLIP_CACHE_DIR/huggingface`` (or found in the standard cache);
* a local folder saved with ``save_pretrained`` (config.json, model.safetensors, processor files);
* ``random:hiera-tiny``: the Hiera-Tiny architecture (transformers' default ``Sam2Config``) with
  random weights, for speed benchmarks; ``random:test``: a model of ~120k parameters at 256 px for
  tests. Both are untrained.

Masks: one image-encoder pass per image; every box of that image is decoded from that one
embedding (``multimask_output=False``), and the low-resolution logits are resized to the image and
thresholded at 0 by the processor's ``post_process_masks``. The same ``segment(images, boxes)``
interface as :class:`~augclip_demo.inference.segmenter.SamSegmenter`. The last few image
embeddings are kept by content hash, so the source of several edits is encoded once.

Input size: the checkpoints run at 1024 px. ``input_size`` (the fast preset: 512) runs the same
weights at a smaller square input: :func:`sam2_config_at` sets the sizes the model derives from it
(Hiera feature maps, prompt-encoder grid) and the processor resizes images and boxes to it. No
weight depends on it: Hiera's absolute position embedding is interpolated to the feature map's size
at every call, and the prompt encoder's Fourier positions take coordinates relative to the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..config import DEFAULT_FAST_SAM_MODEL, Settings
from ..errors import ConfigError, InputError
from ..io import ImageInput, LoadedImage, open_image
from ..lru import LRUCache
from .device import device_description
from .families import get_model
from .hub_folder import HubFolderModel
from .specs import seeded_random
from .weights.table import SAM2_FILES

__all__ = ["DEFAULT_FAST_SAM_MODEL", "Sam2Segmenter", "get_fast_segmenter"]


def _random_sam2_config(kind: str) -> Any:
    """``hiera-tiny``: transformers' default ``Sam2Config`` (SAM 2.1 Hiera-Tiny, 1024 px); ``test``: a
    Hiera of 5 blocks (width 8 to 64) at 256 px with prompt encoder and mask decoder of width 32."""
    from transformers import Sam2Config
    from transformers.models.sam2 import (
        Sam2HieraDetConfig,
        Sam2MaskDecoderConfig,
        Sam2PromptEncoderConfig,
        Sam2VisionConfig,
    )

    if kind == "hiera-tiny":
        return Sam2Config()
    if kind != "test":
        raise ConfigError(f"unknown random SAM 2 kind {kind!r}; use hiera-tiny or test")
    # A global-attention block may not open a stage (the stage's first block pools the queries).
    backbone = Sam2HieraDetConfig(hidden_size=8, num_attention_heads=1, blocks_per_stage=[1, 1, 2, 1],
                                  embed_dim_per_stage=[8, 16, 32, 64], num_attention_heads_per_stage=[1, 1, 2, 2],
                                  window_size_per_stage=[4, 4, 4, 4], global_attention_blocks=[3], image_size=[256, 256],
                                  window_positional_embedding_background_size=[4, 4])
    vision = Sam2VisionConfig(backbone_config=backbone, backbone_channel_list=[64, 32, 16, 8], fpn_hidden_size=32,
                              backbone_feature_sizes=[[64, 64], [32, 32], [16, 16]])
    return Sam2Config(vision_config=vision,
                      prompt_encoder_config=Sam2PromptEncoderConfig(hidden_size=32, image_size=256, patch_size=16),
                      mask_decoder_config=Sam2MaskDecoderConfig(hidden_size=32, mlp_dim=64, num_attention_heads=2,
                                                                iou_head_hidden_dim=32))


def sam2_config_at(config: Any, size: int) -> Any:
    """``config`` (a ``Sam2Config``, changed in place and returned) for a square input of ``size`` px.

    The Hiera trunk downsamples by 4 (patch embedding) and then by 2 per stage; the three FPN levels
    the mask decoder reads are the first three strides (4, 8, 16), and the prompt encoder's grid is
    ``size / patch_size`` (16)."""
    size = int(size)
    patch = int(config.prompt_encoder_config.patch_size)
    if size <= 0 or size % 64:
        raise ConfigError(f"the SAM 2 input size must be a positive multiple of 64, got {size}")
    config.vision_config.backbone_config.image_size = [size, size]
    config.vision_config.backbone_feature_sizes = [[size // s, size // s] for s in (4, 8, 16)]
    config.prompt_encoder_config.image_size = size
    assert size // patch == size // 16, "the prompt encoder's grid must match the coarsest feature map"
    return config


def _set_processor_size(processor: Any, size: int) -> None:
    """Resize images and box prompts to ``size`` (the processor keeps its own copy for the boxes)."""
    processor.image_processor.size = {"height": int(size), "width": int(size)}
    processor.target_size = int(size)


def build_random_sam2(kind: str, input_size: int | None = None) -> tuple[torch.nn.Module, Any]:
    """A seeded random SAM 2 of ``kind`` and its processor (input size from the config, or ``input_size``)."""
    from transformers import Sam2Model, Sam2Processor
    from transformers.models.sam2 import Sam2ImageProcessor

    config = _random_sam2_config(kind)
    if input_size:
        sam2_config_at(config, input_size)
    size = int(config.prompt_encoder_config.image_size)
    processor = Sam2Processor(image_processor=Sam2ImageProcessor(size={"height": size, "width": size}))
    with seeded_random():
        model = Sam2Model(config)
    return model.eval(), processor


class Sam2Segmenter(HubFolderModel):
    """Box-prompted SAM 2 masks; lazy, thread-safe; one image embedding per image, reused for every box."""

    family = "SAM 2"
    family_key = "sam2"
    files = SAM2_FILES

    def __init__(self, model: str | Path | None = None, *, device: str | torch.device | None = "auto",
                 cache_dir: str | Path | None = None, precision: str = "fp32", input_size: int | None = None,
                 embedding_cache: int = 4):
        super().__init__(model, device=device, precision=precision, cache_dir=cache_dir)
        # square input side in pixels; None: the checkpoint's own (1024)
        self.input_size = int(input_size) if input_size else None
        if self.input_size is not None and (self.input_size <= 0 or self.input_size % 64):
            raise ConfigError(f"the SAM 2 input size must be a positive multiple of 64, got {self.input_size}")
        self._processor: Any = None
        # image content hash -> (image embeddings, original size); an embedding depends only on the pixels
        self._embeddings: LRUCache[tuple[list[torch.Tensor], Any]] = LRUCache(embedding_cache)

    def load(self) -> Sam2Segmenter:
        super().load()
        return self

    def _release(self) -> None:
        self._processor = None
        self._embeddings.clear()

    def _build(self) -> torch.nn.Module:
        if self.spec.startswith("random:"):
            model, self._processor = build_random_sam2(self.spec.split(":", 1)[1], self.input_size)
            return model
        folder = self._resolve_folder(self.local_folder)
        from transformers import Sam2Config, Sam2Model, Sam2Processor

        def at_input_size(processor: Any) -> dict[str, Any]:
            if not self.input_size:
                return {}
            _set_processor_size(processor, self.input_size)
            return {"config": sam2_config_at(Sam2Config.from_pretrained(str(folder)), self.input_size)}

        model, processor = self._load_pretrained(folder, Sam2Model, Sam2Processor, at_input_size)
        self._processor = processor
        return model.eval()

    def info(self) -> dict[str, Any]:
        return {"model": self.spec, "label": self.label, "checkpoint": None, "device": str(self.device),
                "device_name": device_description(self.device), "untrained": self.untrained,
                "input_size": self.input_size}

    def segment(self, images: Sequence[ImageInput | LoadedImage], boxes: Sequence[Sequence[np.ndarray]]) -> list[list[np.ndarray]]:
        """Boolean ``(H, W)`` masks: ``result[i][j]`` is the mask of ``boxes[i][j]`` (pixel xyxy) in ``images[i]``."""
        if len(images) != len(boxes):
            raise InputError(f"{len(images)} images but {len(boxes)} box lists")
        results: list[list[np.ndarray]] = [[] for _ in images]
        with self.in_use():
            self.load()
            for i, (image, group) in enumerate(zip(images, boxes)):
                if len(group):
                    results[i] = self._segment_one(open_image(image), group)
        return results

    def image_embeddings(self, image: LoadedImage) -> tuple[list[torch.Tensor], Any]:
        """The image encoder's output for ``image`` (cached by content hash) and its original size."""
        key = (image.sha256, self.input_size)
        cached = self._embeddings.get(key)
        if cached is not None:
            return cached
        processor, model = self._processor, self._model
        assert model is not None
        inputs = processor(images=image.image, return_tensors="pt")
        with self._infer_lock, torch.inference_mode(), self.autocast():
            embeddings = model.get_image_embeddings(pixel_values=inputs["pixel_values"].to(self.device))
        value = (list(embeddings), inputs["original_sizes"])
        self._embeddings.put(key, value)
        return value

    def _segment_one(self, image: LoadedImage, group: Sequence[np.ndarray]) -> list[np.ndarray]:
        processor, model = self._processor, self._model
        assert model is not None
        embeddings, original_sizes = self.image_embeddings(image)
        box_list = [[float(v) for v in np.asarray(box, dtype=np.float64).reshape(4)] for box in group]
        # the processor scales the boxes to its input size from the image's original size
        boxes = processor(input_boxes=[box_list], original_sizes=original_sizes, return_tensors="pt")["input_boxes"]
        with self._infer_lock, torch.inference_mode(), self.autocast():
            outputs = model(image_embeddings=embeddings, input_boxes=boxes.to(self.device), multimask_output=False)
        masks = processor.post_process_masks(outputs.pred_masks.float().cpu(), original_sizes)[0]
        return [np.asarray(mask[0], dtype=bool) for mask in masks]


def get_fast_segmenter(settings: Settings, *, input_size: int | None = None,
                       **overrides: Any) -> Sam2Segmenter:
    """The process-wide SAM 2 segmenter for these settings and input size (:func:`augclip_demo.inference.families.get_model`)."""
    return get_model("sam2", settings.replace(**overrides) if overrides else settings, input_size=input_size)
