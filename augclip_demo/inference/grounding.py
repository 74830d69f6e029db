"""GroundingDINO through transformers (``GroundingDinoForObjectDetection`` + ``GroundingDinoProcessor``).

Model specs (``--gdino-model`` / ``AUGCLIP_GDINO_MODEL``):

* ``IDEA-Research/grounding-dino-tiny`` (default, the Swin-T model the BPM paper uses) or
  ``IDEA-Research/grounding-dino-base``: downloaded by huggingface_hub into
  ``AUGCLIP_CACHE_DIR/huggingface``;
* a local folder saved with ``save_pretrained`` (config.json, model.safetensors, tokenizer and
  preprocessor files), e.g. a copy of the hub repository;
* ``random:tiny`` (a few hundred thousand parameters, tests) and ``random:swint`` (the real Swin-T
  architecture, BERT-base text encoder, random weights: speed benchmarks). Both are untrained.

Why not ``groundingdino-py``: see the README's "Dependency notes" (it breaks with transformers 5
and cannot be installed beside gradio 6).

Detection of a phrase: the image and "phrase." go through the model; each of the queries gets the
score max over the phrase's tokens of sigmoid(logit); the highest-scoring query is the phrase's box
when its score exceeds ``box_threshold`` (default 0.3, Grounded-SAM's value), else the phrase is
"not found" (the best score is still reported). Several phrases for one image share one forward
pass ("cup. table."); several images are batched (padded by the processor).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..config import DEFAULT_GDINO_MODEL, Settings
from ..errors import ConfigError, InputError
from ..io import ImageInput, LoadedImage, open_image
from .cpu_matmul import thread_independent_matmuls
from .device import device_description
from .families import FAMILIES, get_model
from .hub_folder import HubFolderModel, save_random_folder
from .specs import seeded_random
from .weights.table import GDINO_FILES

log = logging.getLogger(__name__)

DEFAULT_BOX_THRESHOLD = 0.3
RANDOM_SPECS = tuple(f"random:{kind}" for kind in FAMILIES["gdino"].random_kinds)
KNOWN_HUB_MODELS = (DEFAULT_GDINO_MODEL, "IDEA-Research/grounding-dino-base")
# GroundingDINO splits its text at these BERT ids ([CLS], [SEP], ".", "?"), so a vocabulary for
# random models puts those tokens at the same places (transformers' SPECIAL_TOKENS).
_BERT_SPECIAL_IDS = {"[PAD]": 0, "[UNK]": 100, "[CLS]": 101, "[SEP]": 102, "[MASK]": 103, ".": 1012, "?": 1029}


@dataclass(frozen=True)
class Detection:
    """The best box for one phrase in one image (pixel ``[x0, y0, x1, y1]`` of that image)."""

    phrase: str
    box: np.ndarray | None
    score: float
    found: bool
    threshold: float

    def to_dict(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "box": None if self.box is None else [float(v) for v in self.box],
                "score": float(self.score), "found": self.found, "threshold": self.threshold}


def clean_detection_phrase(phrase: str) -> str:
    """Lower case without "." / "?" (they separate phrases in GroundingDINO's text input)."""
    cleaned = " ".join(str(phrase).lower().replace(".", " ").replace("?", " ").split())
    if not cleaned:
        raise InputError(f"the detection phrase {phrase!r} is empty")
    return cleaned


# ---------------------------------------------------------------------- random models
def _write_wordpiece_vocab(folder: Path, size: int | None = None, words: Sequence[str] = ()) -> Path:
    """Write a BERT WordPiece ``vocab.txt`` whose special tokens sit at BERT's ids.

    Letters, digits and their ``##`` continuations are included, so every lower-case word
    tokenises (into characters) without [UNK]; ``words`` adds whole words. ``size`` pads with
    ``[unusedN]`` entries up to that many (30522 = bert-base-uncased).
    """
    tokens: dict[int, str] = {index: token for token, index in _BERT_SPECIAL_IDS.items()}
    extra = [c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    extra += [",", "'", "-", "!", "(", ")", ":", ";", "/"] + [w for w in words if w not in extra]
    vocab: list[str] = []
    next_extra = iter(extra)
    position = 0
    total = max(size or 0, max(tokens) + 1 + len(extra))
    unused = 0
    while position < total:
        if position in tokens:
            vocab.append(tokens[position])
        elif position > max(tokens):
            token = next(next_extra, None)
            if token is None:
                vocab.append(f"[unused{unused}]")
                unused += 1
            else:
                vocab.append(token)
        else:
            vocab.append(f"[unused{unused}]")
            unused += 1
        position += 1
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return path


def _random_grounding_config(kind: str, vocab_size: int) -> Any:
    """``tiny``: a Swin of 4 one-block stages (width 16) and a 1-layer BERT (width 32); ``swint``:
    the default ``GroundingDinoConfig`` (Swin-T backbone, BERT-base text encoder, 900 queries,
    6+6 layers), i.e. the architecture of IDEA-Research/grounding-dino-tiny."""
    from transformers import BertConfig, GroundingDinoConfig, SwinConfig

    if kind == "swint":
        return GroundingDinoConfig(text_config=BertConfig(vocab_size=vocab_size))
    if kind != "tiny":
        raise ConfigError(f"unknown random GroundingDINO kind {kind!r}; use tiny or swint")
    backbone = SwinConfig(image_size=64, patch_size=4, embed_dim=16, depths=[1, 1, 1, 1], num_heads=[1, 1, 2, 2],
                          window_size=4, out_features=["stage2", "stage3", "stage4"])
    text = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=64)
    # decoder_layers >= 2: the detection head ties layers 1.. to layer 0 and needs one to tie.
    return GroundingDinoConfig(backbone_config=backbone, text_config=text, num_queries=20, encoder_layers=1,
                               decoder_layers=2, d_model=32, encoder_ffn_dim=64, decoder_ffn_dim=64,
                               encoder_attention_heads=2, decoder_attention_heads=2, encoder_n_points=1,
                               decoder_n_points=1, max_text_len=64)


def build_random_grounding(kind: str, vocab_dir: Path) -> tuple[torch.nn.Module, Any]:
    """A randomly initialised GroundingDINO (seeded) and its processor (vocabulary written to ``vocab_dir``)."""
    from transformers import BertTokenizer, GroundingDinoForObjectDetection, GroundingDinoProcessor
    from transformers.models.grounding_dino import GroundingDinoImageProcessor

    size = 30522 if kind == "swint" else None
    vocab_path = _write_wordpiece_vocab(Path(vocab_dir), size=size)
    tokenizer = BertTokenizer.from_pretrained(str(vocab_path.parent))
    if kind == "tiny":
        image_processor = GroundingDinoImageProcessor(size={"shortest_edge": 128, "longest_edge": 192})
    else:
        image_processor = GroundingDinoImageProcessor()  # 800 / 1333, as the hub checkpoints
    processor = GroundingDinoProcessor(image_processor=image_processor, tokenizer=tokenizer)
    config = _random_grounding_config(kind, vocab_size=len(tokenizer))
    with seeded_random():
        model = GroundingDinoForObjectDetection(config)
    return model, processor


def save_random_grounding(folder: Path, kind: str = "tiny") -> Path:
    """Save a random GroundingDINO as a local model folder (``save_pretrained`` layout + marker file).

    Loading that folder goes through the same ``from_pretrained`` code as a downloaded checkpoint.
    """
    folder = Path(folder)
    model, processor = build_random_grounding(kind, folder)
    return save_random_folder(folder, model, processor, kind)


# ---------------------------------------------------------------------- the detector
class GroundingDetector(HubFolderModel):
    """Open-vocabulary detection of short phrases; lazy, thread-safe, one model per instance."""

    family = "GroundingDINO"
    family_key = "gdino"
    files = GDINO_FILES
    #: The BPMOptions field holding this detector's threshold.
    threshold_option = "box_threshold"
    default_threshold = DEFAULT_BOX_THRESHOLD

    def __init__(self, model: str | Path | None = None, *, device: str | torch.device | None = "auto",
                 cache_dir: str | Path | None = None, batch_size: int = 4, precision: str = "fp32",
                 input_size: tuple[int, int] | None = None):
        super().__init__(model, device=device, precision=precision, cache_dir=cache_dir)
        # (shortest, longest) edge the processor resizes to; None: the checkpoint's own (800, 1333)
        self.input_size = (int(input_size[0]), int(input_size[1])) if input_size else None
        self.batch_size = max(1, int(batch_size))
        self._processor: Any = None

    # ------------------------------------------------------------------ loading
    def load(self) -> GroundingDetector:
        super().load()
        return self

    def _release(self) -> None:
        self._processor = None

    def _build(self) -> torch.nn.Module:
        if self.spec.startswith("random:"):
            kind = self.spec.split(":", 1)[1]
            model, self._processor = build_random_grounding(kind, self.cache_dir / "bpm" / f"random-gdino-{kind}")
            self._resize_input(self._processor)
            return model
        folder = self._resolve_folder(self.local_folder)
        from transformers import GroundingDinoForObjectDetection, GroundingDinoProcessor

        model, processor = self._load_pretrained(folder, GroundingDinoForObjectDetection, GroundingDinoProcessor)
        self._resize_input(processor)
        self._processor = processor
        return model

    def _resize_input(self, processor: Any) -> None:
        """Apply :attr:`input_size` to the image processor (never enlarging a smaller configured size)."""
        if self.input_size is None:
            return
        size = dict(getattr(processor.image_processor, "size", None) or {})
        shortest, longest = self.input_size
        if int(size.get("shortest_edge", shortest + 1)) > shortest:
            processor.image_processor.size = {"shortest_edge": shortest, "longest_edge": longest}

    def info(self) -> dict[str, Any]:
        return {"model": self.spec, "label": self.label, "device": str(self.device),
                "device_name": device_description(self.device), "untrained": self.untrained,
                "input_size": list(self.input_size) if self.input_size else None}

    # ------------------------------------------------------------------ detection
    def detect(self, images: Sequence[ImageInput | LoadedImage], phrases: Sequence[Sequence[str]],
               box_threshold: float = DEFAULT_BOX_THRESHOLD) -> list[list[Detection]]:
        """The best box for every phrase of every image: ``result[i][j]`` is ``phrases[i][j]`` in ``images[i]``."""
        if len(images) != len(phrases):
            raise InputError(f"{len(images)} images but {len(phrases)} phrase lists")
        if not 0.0 < box_threshold < 1.0:
            raise InputError(f"box_threshold must be between 0 and 1, got {box_threshold}")
        pil = [open_image(image).image for image in images]
        cleaned = [[clean_detection_phrase(p) for p in group] for group in phrases]
        results: list[list[Detection]] = [[] for _ in pil]
        todo = [i for i, group in enumerate(cleaned) if group]
        with self.in_use():
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start:start + self.batch_size]
                for i, detections in zip(chunk, self._detect_batch([pil[i] for i in chunk],
                                                                   [cleaned[i] for i in chunk], box_threshold)):
                    results[i] = detections
        return results

    def _detect_batch(self, images: list[Any], groups: list[list[str]], threshold: float) -> list[list[Detection]]:
        self.load()
        processor, model = self._processor, self._model
        assert model is not None
        texts = [". ".join(group) + "." for group in groups]
        inputs = processor(images=images, text=texts, padding=True, truncation=True,
                           max_length=int(model.config.max_text_len), return_tensors="pt")
        period = processor.tokenizer.convert_tokens_to_ids(".")
        # oneDNN's products: the boxes are then the same at any thread count (the text side has few rows)
        with self._infer_lock, torch.inference_mode(), self.autocast(), thread_independent_matmuls(self.device):
            outputs = model(**{k: v.to(self.device) for k, v in inputs.items()})
        probs = outputs.logits.float().sigmoid().cpu()  # (batch, queries, max_text_len); -inf -> 0
        boxes = outputs.pred_boxes.float().cpu()  # (batch, queries, 4): cx, cy, w, h relative to the image
        input_ids = inputs["input_ids"].cpu()
        attention = inputs["attention_mask"].cpu().bool()
        special = set(processor.tokenizer.all_special_ids)
        results = []
        for b, (image, group) in enumerate(zip(images, groups)):
            spans = _phrase_token_spans(input_ids[b].tolist(), attention[b].tolist(), period, special, len(group))
            width, height = image.size
            detections = []
            for phrase, positions in zip(group, spans):
                positions = [p for p in positions if p < probs.shape[-1]]
                if not positions:
                    detections.append(Detection(phrase, None, 0.0, False, threshold))
                    continue
                scores = probs[b][:, positions].max(dim=1).values
                best = int(scores.argmax())
                score = float(scores[best])
                cx, cy, w, h = boxes[b, best].tolist()
                box = np.array([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2]) * np.array([width, height, width, height])
                box = np.clip(box, 0.0, [width, height, width, height])
                found = score > threshold
                detections.append(Detection(phrase, box if found else None, score, found, threshold))
            results.append(detections)
        return results


def _phrase_token_spans(ids: list[int], mask: list[bool], period: int, special: set[int], count: int) -> list[list[int]]:
    """Token positions of each "."-separated phrase in ``[CLS] p1 . p2 . [SEP]``."""
    spans: list[list[int]] = [[]]
    for position, (token, valid) in enumerate(zip(ids, mask)):
        if not valid or token in special:
            continue
        if token == period:
            spans.append([])
            continue
        spans[-1].append(position)
    spans = [s for s in spans if s] + [[] for _ in range(count)]
    return spans[:count]


def get_detector(settings: Settings, *, input_size: tuple[int, int] | None = None,
                 **overrides: Any) -> GroundingDetector:
    """The process-wide detector for these settings and input size (:func:`augclip_demo.inference.families.get_model`)."""
    extra = {"input_size": tuple(input_size)} if input_size else {}
    return get_model("gdino", settings.replace(**overrides) if overrides else settings, **extra)
