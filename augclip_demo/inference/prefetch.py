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
    """The local files of one model (downloaded when missing), checked. Raises WeightsUnavailableError, and
    ConfigError for a family the table does not know.

    The model's wrapper (from the family table) is built on the CPU, not loaded, and says how its weights are
    fetched (``fetch_weights``); a checkpoint file in the settings counts for the spec the settings choose only."""
    from .families import family as family_row
    from .families import settings_arguments

    row = family_row(family)
    if spec.strip().startswith("random:"):
        return Fetched(f"{family} {spec}", [], "random weights: nothing to download")
    args = settings_arguments(family, settings, device="cpu")
    if "checkpoint" in args and spec != row.spec_of(settings):
        args["checkpoint"] = None
    model = row.wrapper_class(spec, **args)
    files, note = model.fetch_weights(progress=progress)
    return Fetched(f"{model.family} {spec}", files, note)


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
