"""The lazy-model base shared by the CLIP encoder, GroundingDINO and SAM wrappers.

A wrapper is cheap to construct: it parses its spec and picks a device, nothing more. The weights
are resolved and the network built on the first :meth:`LazyModel.load` (or the first call that
needs the model), once, however many threads ask at the same time. :meth:`LazyModel.unload` gives
the memory back; the next use loads again.

Loaded models live in the bounded pool of :mod:`augclip_demo.inference.pool`: a load is reported
there (with the model's bytes), and the pool may unload the least recently used model that is not
:meth:`LazyModel.in_use`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .device import autocast, device_description, resolve_amp_dtype, resolve_device
from .pool import POOL, module_bytes, release_memory

if TYPE_CHECKING:
    from .pool import ModelPool

log = logging.getLogger(__name__)

#: Held while any model is built. Builds draw their initial weights from torch's global random
#: generator (``random:`` models seed it), so two builds in parallel threads would interleave their
#: draws and a random model would get different weights depending on timing. Loads are rare (the pool
#: keeps models), so serialising them costs little.
_BUILD_LOCK = threading.RLock()


class LazyModel:
    """Load on first use, on one device and precision, thread-safe; subclasses implement :meth:`_build`.

    ``_build`` returns the network (on the CPU is fine) and may set helper attributes (preprocessing,
    tokenizer, processor) on ``self``; those are dropped again by :meth:`_release`. Every forward pass
    runs under :attr:`inference_lock` (one model, one device, so passes are serialised).
    """

    #: Family name used in log lines ("CLIP", "GroundingDINO", "SAM").
    family: str = "model"
    #: The family's key in :data:`augclip_demo.inference.families.FAMILIES` (its label, untrained, how-to-fix).
    family_key: str = ""
    #: The canonical spec (CLIP: a :class:`~augclip_demo.inference.specs.ModelSpec`).
    spec: Any

    def __init__(self, *, device: str | torch.device | None = "auto", precision: str = "fp32"):
        self.device = resolve_device(device)
        self.precision = precision
        self.amp_dtype = resolve_amp_dtype(self.device, precision)
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._infer_lock = threading.Lock()
        self.load_seconds: float | None = None

    # ------------------------------------------------------------------ to implement
    def _build(self) -> Any:
        """Resolve the weights and return the network with them loaded."""
        raise NotImplementedError

    def _release(self) -> None:
        """Drop the helper objects :meth:`_build` set (called by :meth:`unload`)."""

    # ------------------------------------------------------------------ from the family table
    @property
    def spec_text(self) -> str:
        """The canonical spec as text."""
        return str(getattr(self.spec, "raw", self.spec))

    @property
    def label_text(self) -> str:
        """What the label names (the spec; SAM: its architecture)."""
        return self.spec_text

    @property
    def label_detail(self) -> str:
        """Added to the label in brackets: a weights file given apart from the spec, for every family (the
        label is the one place that says which weights computed a value; SAM, CLIP, LPIPS and FID take one)."""
        checkpoint = getattr(self.spec, "checkpoint", None) or getattr(self, "checkpoint", None)
        return f"weights: {checkpoint}" if checkpoint else ""

    @property
    def untrained(self) -> bool:
        """True when the weights are random: what is computed with them is not meaningful."""
        from .families import FAMILIES

        return FAMILIES[self.family_key].untrained(self.spec_text)

    @property
    def label(self) -> str:
        """The model's name in reports and the UI (says "untrained" when it is)."""
        from .families import FAMILIES

        return FAMILIES[self.family_key].label(self.label_text, self.untrained, self.label_detail)

    def fetch_weights(self, *, progress: bool = True) -> tuple[list[Path], str]:
        """This model's weight files on this machine, downloaded when missing and checked, and a note for the
        ``download`` command, ``doctor`` and a Space's start-up (never loads the model). Each wrapper says how."""
        raise NotImplementedError(f"{type(self).__name__} does not say how its weights are fetched")

    def how_to_fix(self) -> str:
        """What to do when the weights cannot be had (the family's text for this spec)."""
        from .families import FAMILIES

        return FAMILIES[self.family_key].how_to_fix(self.spec, getattr(self, "url", None))

    # ------------------------------------------------------------------ shared behaviour
    @property
    def is_loaded(self) -> bool:
        return self._model is not None

    @property
    def inference_lock(self) -> threading.Lock:
        """Held around every forward pass; code that runs the model itself takes it too."""
        return self._infer_lock

    def autocast(self) -> Any:
        """Autocast context for this wrapper's precision (a no-op in fp32)."""
        return autocast(self.device, self.amp_dtype)

    @contextlib.contextmanager
    def in_use(self) -> Iterator[Any]:
        """Load the model and keep the pool from evicting it until the block ends (re-entrant)."""
        POOL.pin(self)
        try:
            yield self.load()
        finally:
            POOL.unpin(self)

    def load(self) -> Any:
        """Build the model and load its weights (once; later calls return at once).

        The loaded model joins the pool, which may then unload other, unused models to stay
        within its limits (:class:`ConfigError` if this model alone exceeds the byte limit).
        """
        if self._model is not None:
            POOL.touch(self)
            return self
        with self._load_lock:
            if self._model is not None:
                return self
            start = time.perf_counter()
            with _BUILD_LOCK:
                model = self._build()
            model = model.to(self.device).eval()
            for param in model.parameters():
                param.requires_grad_(False)
            try:
                POOL.admit(self, module_bytes(model))
            except Exception:
                del model
                self._release()
                release_memory()
                raise
            self._model = model  # set last: it is the "loaded" flag other threads check
            self.load_seconds = time.perf_counter() - start
            log.info("loaded %s %s on %s in %.1fs", self.family, self.label, self.device, self.load_seconds)
        POOL.enforce(protect=self)
        return self

    def unload(self) -> None:
        """Release the network and its helpers (GPU memory included); the next use loads again."""
        with self._load_lock, self._infer_lock:
            if self._model is None:
                return
            self._model = None
            self._release()
        POOL.forget(self)
        release_memory()
        log.info("unloaded %s %s", self.family, self.label)

    def _evict(self, pool: ModelPool) -> bool:
        """Unload for the pool if it still agrees (not pinned meanwhile); the caller releases memory."""
        with self._load_lock:
            if self._model is None or not pool.confirm_eviction(self):
                return False
            with self._infer_lock:  # a forward pass that is running finishes first
                self._model = None
                self._release()
        log.info("evicted %s %s (least recently used; model pool limits)", self.family, self.label)
        return True

    def device_info(self) -> dict[str, str]:
        return {"device": str(self.device), "device_name": device_description(self.device)}
