"""Fetch a model's weight files ahead of use (the ``download`` command, and a Space's start-up).

Separate from :mod:`.weights` because it builds the detector and segmenter wrappers to learn their
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
    """The local files of one model (downloaded when missing), checked. Raises WeightsUnavailableError."""
    from . import weights
    from .grounding import GroundingDetector
    from .segmenter import SamSegmenter
    from .specs import parse_model_spec

    cache = settings.cache_dir
    if spec.strip().startswith("random:"):
        return Fetched(f"{family} {spec}", [], "random weights: nothing to download")
    if family == "clip":
        checkpoint = settings.clip_checkpoint if spec == settings.clip_model else None
        parsed = parse_model_spec(spec, checkpoint)
        files = weights.resolve_clip(parsed, cache, progress=progress)
        return Fetched(f"CLIP {spec}", weights.clip_file_list(files))
    if family == "gdino":
        detector = GroundingDetector(spec, device="cpu", cache_dir=cache)
        folder = weights.resolve_gdino(spec, detector.local_folder, cache, progress=progress)
        return Fetched(f"GroundingDINO {spec}", sorted(p for p in folder.iterdir() if p.is_file()))
    if family == "sam":
        checkpoint = settings.sam_checkpoint if spec == settings.sam_model else None
        segmenter = SamSegmenter(spec, checkpoint=checkpoint, device="cpu", cache_dir=cache, url=settings.sam_url,
                                 sha256=settings.sam_sha256)
        entry = weights.pretrained_entry("sam", segmenter.arch)
        sha256 = segmenter.sha256 or (entry.sha256 if entry and not settings.sam_url else None)
        path = weights.resolve_sam(segmenter.arch, segmenter.checkpoint, segmenter.url, cache, sha256=sha256,
                                   progress=progress)
        return Fetched(f"SAM {spec}", [path], "SHA-256 checked" if sha256 else "")
    if family == "sam2":
        from .sam2_segmenter import Sam2Segmenter

        segmenter = Sam2Segmenter(spec, device="cpu", cache_dir=cache)
        folder = weights.resolve_sam2(segmenter.spec, segmenter.local_folder, cache, progress=progress)
        return Fetched(f"SAM 2 {spec}", sorted(p for p in folder.iterdir() if p.is_file()))
    if family == "owlvit":
        from .owl_detector import OwlDetector

        detector = OwlDetector(spec, device="cpu", cache_dir=cache)
        folder = weights.resolve_owl(detector.spec, detector.local_folder, cache, progress=progress)
        return Fetched(f"OWL-ViT {spec}", sorted(p for p in folder.iterdir() if p.is_file()))
    if family == "dino":
        from .dino import DinoFeatures

        folder = DinoFeatures(spec, device="cpu", cache_dir=cache).resolve(progress=progress)
        assert folder is not None
        return Fetched(f"DINO {spec}", sorted(p for p in folder.iterdir() if p.is_file()))
    if family == "lpips":
        from .lpips import LpipsNetwork

        path = LpipsNetwork(spec, device="cpu", cache_dir=cache, mirror=settings.file_mirror).resolve(progress=progress)
        assert path is not None
        return Fetched(f"LPIPS {spec} backbone", [path], "linear heads ship with torchmetrics")
    if family == "fid":
        from .fid import FidInception

        path = FidInception(spec, device="cpu", cache_dir=cache, mirror=settings.file_mirror).resolve(progress=progress)
        assert path is not None
        return Fetched(f"FID {spec}", [path])
    raise AugclipError(f"unknown model family {family!r}")


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
