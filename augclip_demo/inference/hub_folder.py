"""What the transformers region models share: a spec that is a Hub id, a local folder or ``random:KIND``.

GroundingDINO, OWL-ViT and SAM 2 are all loaded with ``from_pretrained`` from a folder in the
published layout (downloaded, or given by the operator); ``random:`` builds a seeded random model of
the real architecture, and a folder saved from one carries :data:`RANDOM_MARKER`, so whoever loads it
is told it is untrained. The wrappers differ in their resolver and their forward pass only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import WeightsUnavailableError
from . import weights
from .lazy import LazyModel

#: Written into folders saved from random models: loading such a folder says the weights are untrained.
RANDOM_MARKER = "augclip_random_weights.json"
#: Seed of every ``random:`` region model, so two processes build identical random weights.
RANDOM_INIT_SEED = 0


def save_random_folder(folder: Path, model: Any, processor: Any, kind: str) -> Path:
    """``model`` and ``processor`` in the ``save_pretrained`` layout plus the marker: loadable like a download."""
    folder = Path(folder)
    model.save_pretrained(str(folder))
    processor.save_pretrained(str(folder))
    (folder / RANDOM_MARKER).write_text(json.dumps({"kind": kind, "seed": RANDOM_INIT_SEED}) + "\n", encoding="utf-8")
    return folder


class HubFolderModel(LazyModel):
    """A lazy model whose ``spec`` names a Hub repository, a local folder or ``random:KIND``.

    Subclasses set ``spec`` and ``cache_dir`` and implement :meth:`_resolve_folder` (the weights
    module's resolver for their family) and :meth:`how_to_fix`.
    """

    spec: str
    cache_dir: Path

    def _resolve_folder(self, folder: Path | None) -> Path:
        """The local folder holding the weights (``folder``, or the Hub snapshot); raises if unavailable."""
        raise NotImplementedError

    def how_to_fix(self) -> str:
        raise NotImplementedError

    @property
    def local_folder(self) -> Path | None:
        """The spec as a folder on this machine (absolute, ``./``, ``~`` or existing), else None (a Hub id)."""
        if self.spec.startswith("random:"):
            return None
        path = Path(self.spec).expanduser()
        return path if path.is_absolute() or self.spec.startswith((".", "~")) or path.exists() else None

    @property
    def hub_cache(self) -> Path:
        return self.cache_dir / "huggingface"

    @property
    def untrained(self) -> bool:
        if self.spec.startswith("random:"):
            return True
        folder = self.local_folder
        return folder is not None and (folder / RANDOM_MARKER).is_file()

    @property
    def label(self) -> str:
        return f"{self.family} {self.spec}" + (" (random weights, untrained)" if self.untrained else "")

    def preflight(self) -> None:
        """Raise :class:`WeightsUnavailableError` now if the weights can be neither found nor downloaded."""
        if self.spec.startswith("random:"):
            return
        if (folder := self.local_folder) is not None:
            self._resolve_folder(folder)
            return
        weights.require_hub_available(f"{self.family} {self.spec}", self.spec, weights.GDINO_WEIGHT_ALTERNATIVES,
                                      self.hub_cache, self.how_to_fix())

    def _load_pretrained(self, folder: Path, model_class: Any, processor_class: Any,
                         prepare: Callable[[Any], dict[str, Any]] | None = None) -> tuple[Any, Any]:
        """(model, processor) from ``folder`` in the published layout, every tensor from the files.

        ``prepare(processor)`` may adjust the processor and returns extra ``from_pretrained`` arguments
        (SAM 2's config at another input size). Any failure (format, architecture, a tensor missing:
        transformers would initialise it randomly and carry on, a wrong model that looks right) is a
        :class:`WeightsUnavailableError` naming the folder and the fix.
        """
        weights.quiet_transformers()
        try:
            processor = processor_class.from_pretrained(str(folder))
            extra = prepare(processor) if prepare is not None else {}
            model, info = model_class.from_pretrained(str(folder), output_loading_info=True, **extra)
            missing = list(info.get("missing_keys") or []) + list(info.get("mismatched_keys") or [])
            if missing:
                raise RuntimeError("Error(s) in loading state_dict: Missing key(s) in state_dict: "
                                   + ", ".join(f'"{k if isinstance(k, str) else k[0]}"' for k in missing) + ".")
        except Exception as exc:  # the files are all local by now: format and architecture errors end here
            weight_file = next((folder / n for n in weights.GDINO_WEIGHT_ALTERNATIVES if (folder / n).is_file()), None)
            raise WeightsUnavailableError(f"{self.family} {self.spec}", f"the folder {folder}: "
                                          + weights.describe_load_error(exc, weight_file), self.how_to_fix()) from exc
        return model, processor
