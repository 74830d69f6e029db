"""What a decode worker process runs: open, hash and prepare an item's images, tokenize its texts.

Why processes: on a GPU the encoder's thread has to launch kernels as fast as the device runs them,
and decode *threads* share Python's GIL with it. On a 16-core H200 machine the image passes of a
batch run took 3.4 s for 3,072 images with 16 decode threads, 1.6 s with 4, and 0.6 s alone
(docs/performance.md, "GPU"); open_clip's tokenizer is pure Python as well (~60 us a text). A worker
process does that work under its own GIL and sends back uint8 pixels and token rows only.

What a worker does is exactly what the thread path does (:func:`~.stages.decode_item` with no pixel
metric, region, judge or attribute stage, and :meth:`ClipEncoder.preprocess_image` /
:meth:`ClipEncoder._token_rows`): the same :func:`~augclip_demo.io.open_image`, the same transform
objects (pickled from the run's encoder) and the same tokenizer object, so the embeddings are
bit-identical (tests/batch/test_decode_processes.py). The module itself imports no model code, but
unpickling the recipe imports what its objects live in: torch, torchvision and open_clip (with its
own imports), once per worker at start-up. That holds ~0.5 GB per worker for the life of the
process that ran the batch (measured with random:tiny), so 16 workers hold ~8 GB: ``--workers``
sets how many.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..config import DEFAULT_MAX_IMAGE_SIDE
from ..errors import AugclipError
from ..io import open_image, prepared_pixels
from .worker_lifetime import end_with_parent

_RECIPE: dict[str, Any] = {}  # this worker's transforms and tokenizer (set by start)


@dataclass(frozen=True)
class ImageRequest:
    """One image an item claimed for encoding: its run key, file, name as written and label in errors."""

    key: str
    path: str
    written: str
    label: str


@dataclass
class PreparedItem:
    """What a worker sends back for one item (pickled; no PIL image, no torch tensor)."""

    # image key -> (content hash, uint8 (H, W, 3) pixels, or the float (3, H, W) tensor of a transform
    # whose PIL steps do not end in RGB): what ClipEncoder.preprocess_image gives
    images: dict[str, tuple[str, Any]] = field(default_factory=dict)
    failed_images: dict[str, str] = field(default_factory=dict)  # image key -> why it could not be opened
    error: str | None = None  # the first failure, labelled as decode_item labels it
    tokens: dict[str, np.ndarray] = field(default_factory=dict)  # stripped text -> token row


def encoder_recipe(encoder: Any) -> tuple[tuple[str, ...], bytes] | None:
    """(:func:`recipe_key`, :func:`recipe_bytes`) of a :class:`ClipEncoder`'s
    :meth:`~ClipEncoder.preparation_recipe`; None when its transform cannot be split (threads only).
    Raises when a part cannot be pickled."""
    recipe = encoder.preparation_recipe()
    if recipe is None:
        return None
    return _recipe_key(encoder.spec.raw, *recipe), recipe_bytes(*recipe)


def recipe_bytes(pil_steps: list[Any], preprocess: Any, tokenizer: Any | None) -> bytes:
    """The pickled recipe every worker of a pool starts from (raises if a part cannot be pickled)."""
    return pickle.dumps({"pil_steps": pil_steps, "preprocess": preprocess, "tokenizer": tokenizer})


def _recipe_key(model: str, pil_steps: list[Any], preprocess: Any, tokenizer: Any | None) -> tuple[str, ...]:
    """What identifies a recipe across runs: the model, its transform and its tokenizer's kind (the
    tokenizer's bytes change as its word cache fills, its output does not)."""
    return model, repr(preprocess), type(tokenizer).__name__, str(getattr(tokenizer, "context_length", ""))


def start(recipe: bytes, barrier: Any) -> None:
    """Each worker's initializer: unpickle the recipe (imports torchvision), then wait for the others."""
    end_with_parent()
    _RECIPE.update(pickle.loads(recipe))
    with contextlib.suppress(threading.BrokenBarrierError):  # a worker that never came: the others go on
        barrier.wait(timeout=300)


def ready() -> int:
    """This worker's process id (a task that runs once :func:`start` has returned)."""
    return os.getpid()


def prepare_item(requests: list[ImageRequest], texts: list[str], max_pixels: int | None,
                 max_side: int = DEFAULT_MAX_IMAGE_SIDE) -> PreparedItem:
    """Open, hash and prepare the requested images; tokenize ``texts`` (already stripped)."""
    out = PreparedItem()
    for request in requests:
        try:
            image = open_image(request.path, name=request.written, max_pixels=max_pixels, max_side=max_side)
        except AugclipError as exc:
            out.failed_images[request.key] = str(exc)
            out.error = out.error or f"{request.label}: {exc}"
            continue
        out.images[request.key] = (image.sha256, _prepare_pixels(image.image))
    tokenizer = _RECIPE.get("tokenizer")
    if texts and tokenizer is not None and out.error is None:
        out.tokens = dict(zip(texts, tokenizer(texts).numpy()))
    return out


def _prepare_pixels(pil: Any) -> Any:
    """The encoder's transform as :meth:`ClipEncoder.preprocess_image` runs it (:func:`prepared_pixels`)."""
    return prepared_pixels(pil, _RECIPE["pil_steps"], _RECIPE["preprocess"])
