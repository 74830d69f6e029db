"""What the transformers models share: a spec that is a Hub id, a local folder or ``random:KIND``.

GroundingDINO, OWL-ViT, SAM 2 and the DINO feature networks are all loaded with ``from_pretrained`` from a folder in the
published layout (downloaded, or given by the operator); ``random:`` builds a seeded random model of
the real architecture, and a folder saved from one carries :data:`RANDOM_MARKER`, so whoever loads it
is told it is untrained. The wrappers differ in their resolver and their forward pass only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import default_cache_dir
from ..errors import ConfigError, WeightsUnavailableError
from .families import FAMILIES, RANDOM_MARKER, is_path_spec
from .lazy import LazyModel
from .specs import RANDOM_INIT_SEED
from .weights.fetch import require_hub_available
from .weights.guards import describe_load_error, quiet_transformers
from .weights.resolve import resolve_transformers_folder
from .weights.table import TRANSFORMERS_WEIGHT_FILES

__all__ = ["RANDOM_MARKER", "HubFolderModel", "save_random_folder"]


def save_random_folder(folder: Path, model: Any, processor: Any, kind: str) -> Path:
    """``model`` and ``processor`` in the ``save_pretrained`` layout plus the marker: loadable like a download."""
    folder = Path(folder)
    model.save_pretrained(str(folder))
    processor.save_pretrained(str(folder))
    (folder / RANDOM_MARKER).write_text(json.dumps({"kind": kind, "seed": RANDOM_INIT_SEED}) + "\n", encoding="utf-8")
    return folder


class HubFolderModel(LazyModel):
    """A lazy model whose ``spec`` names a Hub repository, a local folder or ``random:KIND``.

    The spec is read by the family's grammar (:data:`augclip_demo.inference.families.FAMILIES`);
    subclasses set :attr:`files` (the folder layout their resolver checks).
    """

    spec: str
    cache_dir: Path
    #: The files of a folder of this family: ``(alternatives, required)`` pairs (weights.table).
    files: tuple[tuple[tuple[str, ...], bool], ...]

    def __init__(self, model: str | Path | None, *, device: Any = "auto", precision: str = "fp32",
                 cache_dir: str | Path | None = None):
        row = FAMILIES[self.family_key]
        self.spec = row.canonical(str(model) if model else row.default)
        super().__init__(device=device, precision=precision)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()

    def _resolve_folder(self, folder: Path | None, *, progress: bool = False) -> Path:
        """The local folder holding the weights (``folder``, or the Hub snapshot); raises if unavailable."""
        return resolve_transformers_folder(f"{self.family} {self.spec}", self.spec, folder, self.cache_dir,
                                           self.how_to_fix(), files=self.files, progress=progress)

    @property
    def local_folder(self) -> Path | None:
        """The spec as a folder on this machine (absolute, ``./``, ``~`` or existing), else None (a Hub id)."""
        return Path(self.spec).expanduser() if is_path_spec(self.spec) else None

    @property
    def hub_cache(self) -> Path:
        return self.cache_dir / "huggingface"

    def fetch_weights(self, *, progress: bool = True) -> tuple[list[Path], str]:
        folder = self._resolve_folder(self.local_folder, progress=progress)
        return sorted(p for p in folder.iterdir() if p.is_file()), ""

    def preflight(self) -> None:
        """Raise :class:`WeightsUnavailableError` now if the weights can be neither found nor downloaded."""
        if self.spec.startswith("random:"):
            return
        if (folder := self.local_folder) is not None:
            self._resolve_folder(folder)
            return
        require_hub_available(f"{self.family} {self.spec}", self.spec, TRANSFORMERS_WEIGHT_FILES, self.hub_cache,
                              self.how_to_fix())

    def _load_pretrained(self, folder: Path, model_class: Any, processor_class: Any = None,
                         prepare: Callable[[Any], dict[str, Any]] | None = None) -> tuple[Any, Any]:
        """(model, processor) from ``folder`` in the published layout, every tensor from the files (no
        ``processor_class``: the processor is None).

        ``prepare(processor)`` may adjust the processor and returns extra ``from_pretrained`` arguments
        (SAM 2's config at another input size). Any failure (format, architecture, a tensor missing:
        transformers would initialise it randomly and carry on, a wrong model that looks right) is a
        :class:`WeightsUnavailableError` naming the folder and the fix.
        """
        quiet_transformers()
        try:
            processor = processor_class.from_pretrained(str(folder)) if processor_class is not None else None
            extra = prepare(processor) if prepare is not None else {}
            model, info = model_class.from_pretrained(str(folder), output_loading_info=True, **extra)
            missing = list(info.get("missing_keys") or []) + list(info.get("mismatched_keys") or [])
            if missing:
                raise RuntimeError("Error(s) in loading state_dict: Missing key(s) in state_dict: "
                                   + ", ".join(f'"{k if isinstance(k, str) else k[0]}"' for k in missing) + ".")
        except ConfigError:  # our own refusal (a folder of another kind of model) says it already
            raise
        except Exception as exc:  # the files are all local by now: format and architecture errors end here
            weight_file = next((folder / n for n in TRANSFORMERS_WEIGHT_FILES if (folder / n).is_file()), None)
            raise WeightsUnavailableError(f"{self.family} {self.spec}", f"the folder {folder}: "
                                          + describe_load_error(exc, weight_file), self.how_to_fix()) from exc
        return model, processor
