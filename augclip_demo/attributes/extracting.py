"""Base class of the providers that compute attributes (``openai``, ``clip-vocab``): input checks,
timing, provenance and the on-disk cache live here, the extraction itself in each subclass."""

from __future__ import annotations

import logging
import time
from abc import abstractmethod
from typing import Any

from ..config import Settings
from ..errors import InputError
from ..io import ImageInput, LoadedImage, open_image
from .base import AttributeProvider, Attributes, ProgressCallback, Provenance
from .disk_cache import AttributeCache

log = logging.getLogger(__name__)


class ExtractingProvider(AttributeProvider):
    """A provider whose results are cached on disk by (image hash, texts, provider, model, prompt
    version, seed, samples and options).

    Args:
        settings: configuration (cache directory, models); default: the declared defaults (``Settings()``).
        use_cache: ``False`` bypasses the cache entirely (no read, no write): ``--no-cache``.
        cache: an explicit :class:`AttributeCache` (tests, or a shared one).
        progress: ``progress(fraction, message)`` called as the extraction advances.

    ``provenance.extra["cache"]`` of a result says ``"hit"``, ``"miss"`` (computed and stored)
    or ``"off"``; on a hit ``provenance.seconds`` is the time the original extraction took.
    """

    def __init__(self, *, settings: Settings | None = None, use_cache: bool = True,
                 cache: AttributeCache | None = None, progress: ProgressCallback | None = None):
        self.settings = settings or Settings()
        self.cache = (cache or AttributeCache(settings=self.settings)) if use_cache else None
        self.progress = progress

    # ------------------------------------------------------------------ to implement
    @abstractmethod
    def cache_identity(self) -> dict[str, Any]:
        """Key parts besides the inputs: ``model``, ``prompt_version``, ``seed``, ``samples`` and
        any option that changes the result."""

    @abstractmethod
    def _extract(self, source: LoadedImage, target_text: str, source_text: str | None,
                 progress: ProgressCallback) -> Attributes:
        """Compute the attributes (provenance ``seconds`` and ``cache`` are filled in by the caller)."""

    # ------------------------------------------------------------------ the shared part
    def cache_parts(self, source: LoadedImage, target_text: str, source_text: str | None) -> dict[str, Any]:
        return {"source_sha256": source.sha256, "target_text": target_text, "source_text": source_text,
                "provider": self.name, **self.cache_identity()}

    def extract(self, source_image: ImageInput | LoadedImage, target_text: str, source_text: str | None = None,
                *, progress: ProgressCallback | None = None) -> Attributes:
        """Attributes for this pair, from the cache when possible. ``progress`` overrides the constructor's."""
        if not isinstance(target_text, str) or not target_text.strip():
            raise InputError("the target text is empty: attribute extraction needs the edit's target text")
        target_text = target_text.strip()
        source_text = source_text.strip() if isinstance(source_text, str) and source_text.strip() else None
        source = source_image if isinstance(source_image, LoadedImage) else open_image(
            source_image, name="source", max_pixels=self.settings.max_image_pixels,
            max_side=self.settings.max_image_side)
        report = progress or self.progress or _no_progress
        parts = self.cache_parts(source, target_text, source_text)
        if self.cache is not None:
            cached = self.cache.get(parts)
            if cached is not None:
                cached.provenance.extra["cache"] = "hit"
                report(1.0, f"{self.name}: attributes from the cache")
                return cached
        start = time.perf_counter()
        attributes = self._extract(source, target_text, source_text, report)
        attributes.provenance.seconds = time.perf_counter() - start
        attributes.validate()
        if self.cache is not None:
            self.cache.put(parts, attributes)
            attributes.provenance.extra["cache"] = "miss"
        else:
            attributes.provenance.extra["cache"] = "off"
        report(1.0, f"{self.name}: done")
        return attributes

    def provenance(self, **fields: Any) -> Provenance:
        return Provenance(provider=self.name, fidelity=self.fidelity, **fields)


def _no_progress(fraction: float, message: str) -> None:
    log.debug("%s (%.0f%%)", message, 100 * fraction)
