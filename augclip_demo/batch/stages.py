"""The stages of a batch item as functions over plain data: decode -> attributes -> encode -> score -> record.

Each function takes and returns plain values (items, arrays, dicts), so an engine can run it
where it likes: the streaming runner (:mod:`.runner`) runs decoding in threads and scoring in a
thread or process pool; another engine can run the same functions as its own tasks.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..attributes.base import AttributeProvider, Attributes
from ..errors import AugclipError, InputError
from ..inference.clip_encoder import ClipEncoder
from ..io import LoadedImage, open_image
from ..metrics.suite import ItemScores, MetricInputs, score_item
from ..metrics.vectors import unit_rows
from ..pipeline import Evaluator
from .manifest import ManifestItem
from .plan import image_key


# ---------------------------------------------------------------------------------------------- attributes
class AttributeSource:
    """A run's attribute provider, built once on first use; its failure becomes each item's error."""

    def __init__(self, evaluator: Evaluator, name: str):
        self.evaluator = evaluator
        self.name = name
        self._provider: AttributeProvider | None = None
        self._error: str | None = None
        self._build_lock = threading.Lock()
        self._call_lock = threading.Lock()

    def extract(self, source: LoadedImage, item: ManifestItem) -> Attributes:
        with self._build_lock:
            if self._provider is None and self._error is None:
                try:
                    self._provider = self.evaluator.provider(self.name)
                except AugclipError as exc:
                    self._error = f"no attributes in the manifest, and attribute provider {self.name!r} is not available: {exc}"
        if self._error is not None:
            raise InputError(self._error)
        assert self._provider is not None
        if getattr(self._provider, "thread_safe", False):
            return self.evaluator.resolve_attributes(self._provider, source, item.target_text, item.source_text)
        with self._call_lock:  # providers are serialised unless they declare ``thread_safe = True``
            return self.evaluator.resolve_attributes(self._provider, source, item.target_text, item.source_text)


# ---------------------------------------------------------------------------------------------- decode
@dataclass
class DecodedItem:
    """What decoding one item produced (no full-size image outlives the decode task)."""

    # image key -> (content hash, prepared pixels or None, embedding from the encoder's cache or None)
    images: dict[str, tuple[str, Any, np.ndarray | None]] = field(default_factory=dict)
    shas: dict[str, str] = field(default_factory=dict)  # every decoded image key -> content hash
    failed_images: dict[str, str] = field(default_factory=dict)  # image key -> why it could not be opened
    pixel_scores: ItemScores | None = None
    attributes: Attributes | None = None
    error: str | None = None


def decode_item(item: ManifestItem, claim: set[str], encoder: ClipEncoder, pixel_metrics: Sequence[str],
                attributes: AttributeSource | None, max_pixels: int | None) -> DecodedItem:
    """Decode an item's images, prepare the ``claim``\\ ed ones for the encoder, score the pixel-stage
    metrics and extract attributes (when ``attributes`` is given); runs in a decode worker."""
    out = DecodedItem()
    need_all = bool(pixel_metrics)
    paths = [("source", item.source_path, item.source)] + [
        (f"edits[{i}] ({edit.name})", edit.resolved, edit.path) for i, edit in enumerate(item.edits)]
    loaded: dict[str, LoadedImage] = {}
    for label, path, written in paths:
        key = image_key(path)
        if key in loaded or key in out.failed_images:
            continue
        if not (need_all or key in claim or (label == "source" and attributes is not None)):
            continue
        try:
            image = open_image(path, name=written, max_pixels=max_pixels)
        except AugclipError as exc:
            out.failed_images[key] = str(exc)
            out.error = out.error or f"{label}: {exc}"
            continue
        loaded[key] = image
        sha = image.sha256
        out.shas[key] = sha
        if key in claim:
            cached = encoder.image_cache.get(sha)
            out.images[key] = (sha, None, cached) if cached is not None else (sha, encoder.preprocess_image(image), None)
    if out.error is not None:
        return out
    if need_all:
        source = loaded[image_key(item.source_path)]
        edits = [loaded[image_key(edit.resolved)] for edit in item.edits]
        out.pixel_scores = score_pixels(item, source, edits, pixel_metrics)
    if attributes is not None:
        try:
            out.attributes = attributes.extract(loaded[image_key(item.source_path)], item)
        except AugclipError as exc:
            out.error = str(exc)
    return out


def score_pixels(item: ManifestItem, source: LoadedImage, edits: list[LoadedImage], keys: Sequence[str]) -> ItemScores:
    """The pixel-stage metrics of one item's decoded images."""
    inputs = MetricInputs(source_image=source.image, edit_images=[edit.image for edit in edits],
                          instruction=item.instruction or None, target_text=item.target_text)
    return score_item(inputs, keys)


# ---------------------------------------------------------------------------------------------- encode
def encode_images(encoder: ClipEncoder, pixels: list[Any], shas: list[str], batch_size: int) -> np.ndarray:
    """Unit float64 rows for prepared images (the one normalisation of the run's image embeddings)."""
    return unit_rows(encoder.encode_preprocessed(pixels, keys=shas, batch_size=batch_size), "image embeddings")


def encode_texts(encoder: ClipEncoder, texts: list[str], batch_size: int) -> np.ndarray:
    """Unit float64 rows for texts (the one normalisation of the run's text embeddings)."""
    return unit_rows(encoder.encode_texts(texts, batch_size=batch_size), "text embeddings")


def unit_row(row: np.ndarray, what: str) -> np.ndarray:
    """One embedding from the encoder's cache, normalised like :func:`encode_images` rows."""
    return unit_rows(np.asarray(row)[None, :], what)[0]


# ---------------------------------------------------------------------------------------------- score
def embedding_inputs(item: ManifestItem, attributes: Attributes | None, images: Sequence[np.ndarray],
                     texts: dict[str, np.ndarray], needs: set[str], augclip_options: dict[str, Any]) -> MetricInputs:
    """The embedding-stage inputs of one item: ``images`` are its unit rows, source first; ``texts``
    maps every text the item needs to its unit row."""
    with_attributes = "attribute_embeddings" in needs and attributes is not None
    return MetricInputs(
        source_embedding=images[0],
        edit_embeddings=np.stack(images[1:]),
        target_text_embedding=texts[item.target_text] if "target_text_embedding" in needs else None,
        source_text_embedding=(texts[item.source_text] if "source_text_embedding" in needs and item.source_text
                               else None),
        source_attr_embeddings=np.stack([texts[t] for t in attributes.source]) if with_attributes else None,  # type: ignore[union-attr]
        target_attr_embeddings=np.stack([texts[t] for t in attributes.target]) if with_attributes else None,  # type: ignore[union-attr]
        instruction=item.instruction or None,
        target_text=item.target_text,
        augclip_options=augclip_options,
    )


def score_embeddings(inputs: MetricInputs, keys: Sequence[str]) -> ItemScores:
    """The embedding-stage metrics of one item, details summarised for the record (no model: any process)."""
    return score_item(inputs, keys).summarised()


# ---------------------------------------------------------------------------------------------- records
def ok_record(item: ManifestItem, dataset: str, scores: ItemScores, shas: Sequence[str | None],
              attributes: Attributes | None, order: Sequence[str], run: dict[str, Any]) -> dict[str, Any]:
    """The results line of a scored item (``shas``: the edits' content hashes)."""
    edits = []
    for i, edit in enumerate(item.edits):
        values, reasons = scores.values[i], scores.unavailable[i]
        entry: dict[str, Any] = {
            "index": i, "path": edit.path, "name": edit.name, "role": edit.role, "sha256": shas[i],
            "metrics": {key: values.get(key) for key in order},
            "unavailable": {key: reasons[key] for key in order if key in reasons},
        }
        entry.update(scores.details[i])
        edits.append(entry)
    return {
        "id": item.id, "dataset": item.dataset or dataset, "status": "ok", "source": item.source,
        "target_text": item.target_text, "source_text": item.source_text, "instruction": item.instruction,
        "edits": edits, "human": item.human.to_dict() if item.human else None,
        "attributes": attributes.to_dict() if attributes is not None else None,
        "meta": item.meta, "run": run,
    }


def error_record(item: ManifestItem, dataset: str, error: str, run: dict[str, Any]) -> dict[str, Any]:
    """The results line of an item that could not be scored."""
    return {"id": item.id, "dataset": item.dataset or dataset, "status": "error", "error": error,
            "source": item.source, "target_text": item.target_text,
            "edits": [{"index": i, "path": e.path, "name": e.name, "role": e.role} for i, e in enumerate(item.edits)],
            "human": item.human.to_dict() if item.human else None, "meta": item.meta, "run": run}
