"""Fetch a model's weight files ahead of use (the ``download`` command, and a Space's start-up).

Separate from :mod:`.weights` because it builds the wrappers (from the family table) to learn their
file names, and those wrappers import :mod:`.weights`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import AugclipError, WeightsUnavailableError

log = logging.getLogger(__name__)


@dataclass
class Fetched:
    model: str
    files: list[Path]
    note: str = ""


def fetch_model(family: str, spec: str, settings: Settings, *, progress: bool = True) -> Fetched:
    """The local files of one model (downloaded when missing), checked. Raises WeightsUnavailableError.

    The model's wrapper (from the family table) is built, not loaded, to know its files; a checkpoint
    file in the settings counts for the spec the settings choose only."""
    from .families import family as family_row
    from .families import settings_arguments
    from .weights.resolve import clip_file_list, resolve_clip, resolve_sam
    from .weights.table import pretrained_entry

    row = family_row(family)
    if spec.strip().startswith("random:"):
        return Fetched(f"{family} {spec}", [], "random weights: nothing to download")
    args = {**settings_arguments(family, settings), "device": "cpu"}
    if "checkpoint" in args and spec != row.spec_of(settings):
        args["checkpoint"] = None
    model = row.wrapper_class(spec, **args)
    cache = settings.cache_dir
    if family == "clip":
        files = resolve_clip(model.spec, cache, model.how_to_fix(), progress=progress)
        return Fetched(f"CLIP {spec}", clip_file_list(files))
    if family == "sam":
        entry = pretrained_entry("sam", model.arch)
        sha256 = model.sha256 or (entry.sha256 if entry and not settings.sam_url else None)
        path = resolve_sam(model.arch, model.checkpoint, model.url, cache, model.how_to_fix(), sha256=sha256,
                           progress=progress)
        return Fetched(f"SAM {spec}", [path], "SHA-256 checked" if sha256 else "")
    if family in ("gdino", "sam2", "owlvit"):
        folder = model._resolve_folder(model.local_folder, progress=progress)
        return Fetched(f"{model.family} {spec}", sorted(p for p in folder.iterdir() if p.is_file()))
    found = model.resolve(progress=progress)  # DINO: a folder; LPIPS, FID: a file
    assert found is not None
    if family == "dino":
        return Fetched(f"DINO {spec}", sorted(p for p in found.iterdir() if p.is_file()))
    if family == "lpips":
        return Fetched(f"LPIPS {spec} backbone", [found], "linear heads ship with torchmetrics")
    return Fetched(f"FID {spec}", [found])


def prefetch_in_background(settings: Settings, models: Sequence[tuple[str, str]]) -> threading.Thread:
    """Fetch ``models`` (``(family, spec)`` pairs) in a daemon thread, so a request finds them later.

    Used at a Hugging Face Space's start with the page's models (:func:`.needs.models_needed` of the
    scores and BPM): ``preload_from_hub`` puts them in the Hub cache when the Space is built, so this
    finds them there (and fetches whatever the build could not, such as SAM's checkpoint, which is not
    on the Hub, where the page runs the standard preset). Failures are logged, never raised: the request
    that needs the model then reports the error itself.
    """
    wanted = list(dict.fromkeys(models))

    def work() -> None:
        for family, spec in wanted:
            try:
                fetched = fetch_model(family, spec, settings, progress=False)
                log.info("prefetched %s: %s", fetched.model, fetched.note or f"{len(fetched.files)} file(s)")
            except (WeightsUnavailableError, AugclipError) as exc:
                log.warning("could not prefetch %s %s: %s", family, spec, exc)

    thread = threading.Thread(target=work, name="augclip-prefetch", daemon=True)
    thread.start()
    return thread
