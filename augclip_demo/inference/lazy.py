"""The lazy-model base shared by the CLIP encoder, GroundingDINO and SAM wrappers.

A wrapper is cheap to construct: it parses its spec and picks a device, nothing more. The weights
are resolved and the network built on the first :meth:`LazyModel.load` (or the first call that
needs the model), once, however many threads ask at the same time. :meth:`LazyModel.unload` gives
the memory back; the next use loads again.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from typing import Any

import torch

from .device import autocast, device_description, resolve_amp_dtype, resolve_device

log = logging.getLogger(__name__)


class LazyModel:
    """Load on first use, on one device and precision, thread-safe; subclasses implement :meth:`_build`.

    ``_build`` returns the network (on the CPU is fine) and may set helper attributes (preprocessing,
    tokenizer, processor) on ``self``; those are dropped again by :meth:`_release`. Every forward pass
    runs under :attr:`inference_lock` (one model, one device, so passes are serialised).
    """

    #: Family name used in log lines ("CLIP", "GroundingDINO", "SAM").
    family: str = "model"

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

    @property
    def label(self) -> str:
        raise NotImplementedError

    @property
    def untrained(self) -> bool:
        raise NotImplementedError

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

    def load(self) -> Any:
        """Build the model and load its weights (once; later calls return at once)."""
        if self._model is not None:
            return self
        with self._load_lock:
            if self._model is not None:
                return self
            start = time.perf_counter()
            model = self._build()
            model = model.to(self.device).eval()
            for param in model.parameters():
                param.requires_grad_(False)
            self._model = model  # set last: it is the "loaded" flag other threads check
            self.load_seconds = time.perf_counter() - start
            log.info("loaded %s %s on %s in %.1fs", self.family, self.label, self.device, self.load_seconds)
        return self

    def unload(self) -> None:
        """Release the network and its helpers (GPU memory included); the next use loads again."""
        with self._load_lock, self._infer_lock:
            if self._model is None:
                return
            self._model = None
            self._release()
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        log.info("unloaded %s %s", self.family, self.label)

    def device_info(self) -> dict[str, str]:
        return {"device": str(self.device), "device_name": device_description(self.device)}
