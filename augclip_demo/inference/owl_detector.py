"""OWL-ViT through transformers (``OwlViTForObjectDetection`` + ``OwlViTProcessor``): the BPM ``fast`` preset's detector.

Model specs (``AUGCLIP_FAST_DETECTOR_MODEL``):

* ``google/owlvit-base-patch32`` (default: a plain ViT-B/32 at 768 px, the cheapest OWL-ViT) or
  ``google/owlvit-base-patch16``: downloaded by huggingface_hub into ``AUGCLIP_CACHE_DIR/huggingface``;
* a local folder saved with ``save_pretrained`` (config.json, model.safetensors or
  pytorch_model.bin, preprocessor_config.json, the CLIP tokenizer files);
* ``random:owlvit-b32`` (the real ViT-B/32 architecture at 768 px, random weights: speed
  benchmarks) and ``random:test`` (a few hundred thousand parameters at 64 px, tests). Both are untrained.

Why OWL-ViT on CPU: it is a CLIP ViT whose every output patch token predicts one box, so the
whole detector is one ViT pass over 576 patches plus a small text pass; GroundingDINO adds a Swin
backbone, a six-layer deformable encoder with cross-attention to the text and a six-layer decoder.
Measured on 2 CPU cores (docs/performance.md, "BPM"): ~3 CPU s per image at 768 px against ~11.5
for GroundingDINO Swin-T at 512 px.

Detection of a phrase: every phrase of an image is one text query of the same forward pass. Each
output patch gets, per query, sigmoid(logit) where the logit is the patch's class embedding
against the query's text embedding, shifted and scaled per patch by the model (OWL-ViT's learned
logit shift and scale). The phrase's box is the best patch's box when that score exceeds
``box_threshold``, else the phrase is "not found" (the best score is still reported). The default
threshold (:data:`DEFAULT_OWL_BOX_THRESHOLD`, 0.1) is the score threshold of OWL-ViT's own
text-query examples; it is not on GroundingDINO's scale (docs/method-notes.md, "BPM fast preset").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..config import DEFAULT_FAST_DETECTOR_MODEL, DEFAULT_OWL_BOX_THRESHOLD, Settings
from ..errors import ConfigError, InputError
from ..io import ImageInput, LoadedImage, open_image
from ..lru import LRUCache
from .device import device_description
from .families import get_model
from .grounding import Detection, clean_detection_phrase
from .hub_folder import HubFolderModel
from .specs import seeded_random
from .weights.table import OWL_FILES

__all__ = ["DEFAULT_FAST_DETECTOR_MODEL", "DEFAULT_OWL_BOX_THRESHOLD", "OwlDetector", "get_owl_detector"]


def _byte_symbols() -> list[str]:
    """The 256 printable stand-ins byte-level BPE uses for the bytes 0..255 (GPT-2 / CLIP convention)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    symbols = dict((b, chr(b)) for b in printable)
    extra = 0
    for byte in range(256):
        if byte not in symbols:
            symbols[byte] = chr(256 + extra)
            extra += 1
    return [symbols[b] for b in range(256)]


def _write_clip_bpe_vocab(folder: Path) -> int:
    """A CLIP BPE vocabulary without merges (every word tokenises into its bytes): vocab.json + merges.txt.

    Enough for random models: the real tokenizer files come with downloaded checkpoints. Returns its size."""
    symbols = _byte_symbols()
    tokens = symbols + [s + "</w>" for s in symbols] + ["<|startoftext|>", "<|endoftext|>"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return len(tokens)


def _random_owlvit_config(kind: str, vocab_size: int) -> Any:
    """``owlvit-b32``: transformers' default ``OwlViTConfig`` (ViT-B/32 at 768 px, the architecture of
    google/owlvit-base-patch32); ``test``: a 2-layer ViT of width 32 at 64 px (patch 16)."""
    from transformers import OwlViTConfig

    if kind == "owlvit-b32":
        return OwlViTConfig(text_config={"vocab_size": max(vocab_size, 49408)})
    if kind != "test":
        raise ConfigError(f"unknown random OWL-ViT kind {kind!r}; use owlvit-b32 or test")
    text = {"vocab_size": vocab_size, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "max_position_embeddings": 16}
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
              "image_size": 64, "patch_size": 16}
    return OwlViTConfig(text_config=text, vision_config=vision, projection_dim=32)


def build_random_owlvit(kind: str, vocab_dir: Path) -> tuple[torch.nn.Module, Any]:
    """A seeded random OWL-ViT of ``kind`` and its processor (tokenizer files written to ``vocab_dir``)."""
    from transformers import CLIPTokenizer, OwlViTForObjectDetection, OwlViTImageProcessor, OwlViTProcessor

    vocab_dir = Path(vocab_dir)
    size = _write_clip_bpe_vocab(vocab_dir)
    tokenizer = CLIPTokenizer(vocab=str(vocab_dir / "vocab.json"), merges=str(vocab_dir / "merges.txt"))
    config = _random_owlvit_config(kind, size)
    side = int(config.vision_config.image_size)
    image_processor = OwlViTImageProcessor(size={"height": side, "width": side},
                                           crop_size={"height": side, "width": side})
    processor = OwlViTProcessor(image_processor=image_processor, tokenizer=tokenizer)
    with seeded_random():
        model = OwlViTForObjectDetection(config)
    return model.eval(), processor


class OwlDetector(HubFolderModel):
    """Open-vocabulary detection of short phrases with OWL-ViT; the same ``detect`` interface as
    :class:`~augclip_demo.inference.grounding.GroundingDetector`. Lazy and thread-safe; the last few
    images' detections are kept by (content hash, phrases, threshold), so the source of several
    edits is detected once."""

    family = "OWL-ViT"
    family_key = "owlvit"
    files = OWL_FILES
    #: The BPMOptions field holding this detector's threshold (its scores are not on GroundingDINO's scale).
    threshold_option = "fast_box_threshold"
    default_threshold = DEFAULT_OWL_BOX_THRESHOLD

    def __init__(self, model: str | Path | None = None, *, device: str | torch.device | None = "auto",
                 cache_dir: str | Path | None = None, precision: str = "fp32", detection_cache: int = 8):
        super().__init__(model, device=device, precision=precision, cache_dir=cache_dir)
        self.input_size = None  # OWL-ViT runs at its checkpoint's own square size
        self._processor: Any = None
        self._detections: LRUCache[list[Detection]] = LRUCache(detection_cache)

    def load(self) -> OwlDetector:
        super().load()
        return self

    def _release(self) -> None:
        self._processor = None
        self._detections.clear()

    def _build(self) -> torch.nn.Module:
        if self.spec.startswith("random:"):
            kind = self.spec.split(":", 1)[1]
            model, self._processor = build_random_owlvit(kind, self.cache_dir / "bpm" / f"random-owlvit-{kind}")
            return model
        folder = self._resolve_folder(self.local_folder)
        from transformers import OwlViTForObjectDetection, OwlViTProcessor

        model, processor = self._load_pretrained(folder, OwlViTForObjectDetection, OwlViTProcessor)
        self._processor = processor
        return model.eval()

    def info(self) -> dict[str, Any]:
        return {"model": self.spec, "label": self.label, "device": str(self.device),
                "device_name": device_description(self.device), "untrained": self.untrained, "input_size": None,
                "family": self.family}

    # ------------------------------------------------------------------ detection
    def detect(self, images: Sequence[ImageInput | LoadedImage], phrases: Sequence[Sequence[str]],
               box_threshold: float = DEFAULT_OWL_BOX_THRESHOLD) -> list[list[Detection]]:
        """The best box for every phrase of every image: ``result[i][j]`` is ``phrases[i][j]`` in ``images[i]``;
        one forward pass per image with all of its phrases."""
        if len(images) != len(phrases):
            raise InputError(f"{len(images)} images but {len(phrases)} phrase lists")
        if not 0.0 < box_threshold < 1.0:
            raise InputError(f"box_threshold must be between 0 and 1, got {box_threshold}")
        loaded = [open_image(image) for image in images]
        cleaned = [[clean_detection_phrase(p) for p in group] for group in phrases]
        results: list[list[Detection]] = [[] for _ in loaded]
        with self.in_use():
            for i, (image, group) in enumerate(zip(loaded, cleaned)):
                if not group:
                    continue
                key = (image.sha256, tuple(group), float(box_threshold))
                found = self._detections.get(key)
                if found is None:
                    self.load()
                    found = self._detect_one(image.image, group, box_threshold)
                    self._detections.put(key, found)
                results[i] = [Detection(d.phrase, None if d.box is None else d.box.copy(), d.score, d.found,
                                        d.threshold) for d in found]
        return results

    def _detect_one(self, image: Any, group: list[str], threshold: float) -> list[Detection]:
        processor, model = self._processor, self._model
        assert model is not None
        max_length = int(model.config.text_config.max_position_embeddings)
        inputs = processor(text=[group], images=image, return_tensors="pt", padding="max_length",
                           truncation=True, max_length=max_length)
        with self._infer_lock, torch.inference_mode(), self.autocast():
            outputs = model(**{k: v.to(self.device) for k, v in inputs.items()})
        probs = outputs.logits[0].float().sigmoid().cpu()  # (patches, queries)
        boxes = outputs.pred_boxes[0].float().cpu()  # (patches, 4): cx, cy, w, h relative to the (squashed) image
        width, height = image.size
        detections = []
        for q, phrase in enumerate(group):
            best = int(probs[:, q].argmax())
            score = float(probs[best, q])
            cx, cy, w, h = boxes[best].tolist()
            box = np.array([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]) * np.array([width, height, width, height])
            box = np.clip(box, 0.0, [width, height, width, height])
            found = score > threshold
            detections.append(Detection(phrase, box if found else None, score, found, threshold))
        return detections


def get_owl_detector(settings: Settings, **overrides: Any) -> OwlDetector:
    """The process-wide OWL-ViT detector for these settings (:func:`augclip_demo.inference.families.get_model`)."""
    return get_model("owlvit", settings.replace(**overrides) if overrides else settings)
