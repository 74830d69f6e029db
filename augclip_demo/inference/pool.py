"""The process-wide pool of loaded models: bounded by count and bytes, least recently used out first.

Every :class:`~augclip_demo.inference.lazy.LazyModel` (CLIP encoder, GroundingDINO, SAM) reports to
:data:`POOL` when it has loaded: the pool measures its parameter and buffer bytes, and when more
than ``max_models`` models or ``max_bytes`` bytes are loaded, it unloads the least recently used
models that nobody is using (their memory goes back: the network is dropped, ``gc`` runs, and the
CUDA cache is emptied on a GPU). The wrapper objects stay usable: the next use loads again.

"In use" is a reference count: :meth:`LazyModel.in_use` (a context manager) pins a model for a
block, every encode / detect / segment call pins its model for the call, and the evaluator pins
its encoder for a whole evaluation. A pinned model is never evicted. When every other model is
pinned, a new load still succeeds and the pool runs over its limits until a pin is released (then
it evicts again): the bound is the limits plus the models that running requests hold.

A single model larger than ``max_bytes`` is refused when it has loaded (the error names the
setting to raise).

Locking: the pool has one lock, held only for bookkeeping. A model is unloaded under its own load
lock, taken *before* the pool's lock (never the other way round), so loads and evictions in
several threads cannot deadlock.

The pool also keeps the registry the ``get_encoder`` / ``get_detector`` / ``get_segmenter``
functions hand wrappers out from, keyed by canonical specs, so one model is one wrapper.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..config import DEFAULT_MAX_LOADED_MODELS, DEFAULT_MAX_MODEL_MEMORY_MB
from ..errors import ConfigError

log = logging.getLogger(__name__)

MB = 1024 * 1024
#: Wrappers kept in the registry beyond the loaded ones (unloaded wrappers hold only their small
#: embedding caches; the oldest unused ones are forgotten).
_REGISTRY_SLACK = 16



class LazyModel(Protocol):
    """What the pool needs of a model (:class:`augclip_demo.inference.lazy.LazyModel` has it; this
    module does not import that one, which imports this)."""

    family: str

    @property
    def label(self) -> str: ...

    def unload(self) -> None: ...

    def _evict(self, pool: ModelPool) -> bool: ...


W = TypeVar("W", bound=LazyModel)


@dataclass
class _Entry:
    model: LazyModel
    nbytes: int = 0
    loaded: bool = False
    pins: int = 0


def module_bytes(module: Any) -> int:
    """Bytes of a torch module's parameters and buffers (storages shared by tied weights counted once)."""
    seen: set[tuple[str, int]] = set()
    total = 0
    tensors = list(module.parameters()) + list(module.buffers())
    for tensor in tensors:
        try:
            storage = tensor.untyped_storage()
            key = (str(tensor.device), storage.data_ptr())
            size = storage.nbytes()
        except (RuntimeError, NotImplementedError):  # meta or exotic tensors
            key, size = (str(tensor.device), id(tensor)), tensor.numel() * tensor.element_size()
        if key in seen:
            continue
        seen.add(key)
        total += size
    return total


class ModelPool:
    """Loaded models under a count and a byte limit; thread-safe (see the module docstring)."""

    def __init__(self, max_models: int = DEFAULT_MAX_LOADED_MODELS,
                 max_bytes: int = DEFAULT_MAX_MODEL_MEMORY_MB * MB):
        self._lock = threading.RLock()
        self._entries: OrderedDict[int, _Entry] = OrderedDict()  # id(model) -> entry, LRU first
        self._registry: OrderedDict[Hashable, LazyModel] = OrderedDict()
        self.max_models = max_models
        self.max_bytes = max_bytes
        self.evictions = 0
        self.configure(max_models, max_bytes)

    # ------------------------------------------------------------------ limits
    def configure(self, max_models: int | None = None, max_bytes: int | None = None) -> None:
        """Change the limits (``None`` keeps one); evicts at once if the pool is over the new ones."""
        if max_models is not None and (not isinstance(max_models, int) or max_models < 1):
            raise ConfigError(f"the most loaded models must be a positive integer, got {max_models!r}")
        if max_bytes is not None and (not isinstance(max_bytes, int) or max_bytes < 1):
            raise ConfigError(f"the model memory limit must be a positive number of bytes, got {max_bytes!r}")
        with self._lock:
            changed = (max_models is not None and max_models != self.max_models) or\
                      (max_bytes is not None and max_bytes != self.max_bytes)
            if max_models is not None:
                self.max_models = max_models
            if max_bytes is not None:
                self.max_bytes = max_bytes
        if changed:
            self.enforce()

    def configure_from(self, settings: Any) -> None:
        """Limits from :class:`~augclip_demo.config.Settings` (``max_loaded_models``, ``max_model_memory_mb``)."""
        self.configure(settings.max_loaded_models, settings.max_model_memory_mb * MB)

    # ------------------------------------------------------------------ registry
    def lookup(self, key: Hashable, factory: Callable[[], W]) -> W:
        """The wrapper registered under ``key`` (a canonical spec tuple), created by ``factory`` if none is."""
        with self._lock:
            model = self._registry.get(key)
            if model is None:
                model = factory()
                self._registry[key] = model
            self._registry.move_to_end(key)
            self._trim_registry()
            return model  # type: ignore[return-value]

    def _trim_registry(self) -> None:
        excess = len(self._registry) - (self.max_models + _REGISTRY_SLACK)
        if excess <= 0:
            return
        for key in list(self._registry):
            if excess <= 0:
                break
            entry = self._entries.get(id(self._registry[key]))
            if entry is None or (not entry.loaded and entry.pins == 0):
                del self._registry[key]
                excess -= 1

    # ------------------------------------------------------------------ called by LazyModel
    def _entry(self, model: LazyModel) -> _Entry:
        entry = self._entries.get(id(model))
        if entry is None or entry.model is not model:
            entry = _Entry(model)
            self._entries[id(model)] = entry
        return entry

    def pin(self, model: LazyModel) -> None:
        with self._lock:
            entry = self._entry(model)
            entry.pins += 1
            self._entries.move_to_end(id(model))

    def unpin(self, model: LazyModel) -> None:
        with self._lock:
            entry = self._entries.get(id(model))
            if entry is not None and entry.pins > 0:
                entry.pins -= 1
                self._drop_if_idle(entry)
        self.enforce()

    def touch(self, model: LazyModel) -> None:
        """Mark ``model`` most recently used."""
        with self._lock:
            if id(model) in self._entries:
                self._entries.move_to_end(id(model))

    def admit(self, model: LazyModel, nbytes: int) -> None:
        """Record a model that has just loaded (called under its load lock, before it is marked loaded).

        Raises :class:`ConfigError` if this one model is larger than the byte limit.
        """
        if nbytes > self.max_bytes:
            raise ConfigError(
                f"{model.family} {model.label} holds {nbytes / MB:,.0f} MB of weights, more than the "
                f"{self.max_bytes / MB:,.0f} MB allowed for loaded models (AUGCLIP_MAX_MODEL_MEMORY_MB); "
                "raise that limit to load it")
        with self._lock:
            entry = self._entry(model)
            entry.nbytes, entry.loaded = nbytes, True
            self._entries.move_to_end(id(model))

    def forget(self, model: LazyModel) -> None:
        """Record that ``model`` unloaded itself (:meth:`LazyModel.unload`)."""
        with self._lock:
            entry = self._entries.get(id(model))
            if entry is not None:
                entry.loaded, entry.nbytes = False, 0
                self._drop_if_idle(entry)

    def _drop_if_idle(self, entry: _Entry) -> None:
        if not entry.loaded and entry.pins == 0:
            self._entries.pop(id(entry.model), None)

    def confirm_eviction(self, model: LazyModel) -> bool:
        """Under ``model``'s load lock: True (and the entry is dropped) if it may be unloaded now."""
        with self._lock:
            entry = self._entries.get(id(model))
            if entry is None or not entry.loaded or entry.pins > 0 or not self._over_limits():
                return False
            entry.loaded, entry.nbytes = False, 0
            self._drop_if_idle(entry)
            return True

    # ------------------------------------------------------------------ eviction
    def _over_limits(self) -> bool:
        loaded = [e for e in self._entries.values() if e.loaded]
        return len(loaded) > self.max_models or sum(e.nbytes for e in loaded) > self.max_bytes

    def enforce(self, protect: LazyModel | None = None) -> int:
        """Unload least recently used, unpinned models until the pool is within its limits (or only
        pinned ones and ``protect`` are left); returns how many were unloaded. Call with no model lock held."""
        evicted, tried = 0, set()
        while True:
            with self._lock:
                if not self._over_limits():
                    break
                victim = next((e.model for e in self._entries.values()
                               if e.loaded and e.pins == 0 and e.model is not protect and id(e.model) not in tried),
                              None)
            if victim is None:
                with self._lock:
                    if self._over_limits():
                        log.warning("loaded models exceed the limits (%d models, %.0f MB) while in use",
                                    *self._totals_unlocked())
                break
            tried.add(id(victim))
            if victim._evict(self):
                evicted += 1
        if evicted:
            with self._lock:
                self.evictions += evicted
            release_memory()
        return evicted

    # ------------------------------------------------------------------ reporting
    def _totals_unlocked(self) -> tuple[int, float]:
        loaded = [e for e in self._entries.values() if e.loaded]
        return len(loaded), sum(e.nbytes for e in loaded) / MB

    def loaded_models(self) -> list[LazyModel]:
        """Loaded models, least recently used first."""
        with self._lock:
            return [e.model for e in self._entries.values() if e.loaded]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            count, megabytes = self._totals_unlocked()
            return {"loaded": count, "megabytes": round(megabytes, 1), "max_models": self.max_models,
                    "max_megabytes": round(self.max_bytes / MB, 1), "evictions": self.evictions,
                    "pinned": sum(1 for e in self._entries.values() if e.pins), "registered": len(self._registry)}

    def clear(self) -> None:
        """Unload every unpinned model and forget the registry (tests)."""
        for model in self.loaded_models():
            model.unload()
        with self._lock:
            self._registry.clear()


def release_memory() -> None:
    """Hand freed model memory back: collect cycles, return free heap pages to the system (glibc),
    empty the CUDA allocator's cache."""
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass


def _load_libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _load_libc()

#: The process-wide pool; its limits come from the settings given to ``get_encoder`` & co.
POOL = ModelPool()
