"""The model status line: loads the configured CLIP backbone in the background at start-up.

The app starts even when the weights cannot be loaded: the status panel then says what is missing
and how to provide it, and every evaluation answers with the same message.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass

from ..config import Settings
from ..errors import AugclipError
from ..inference import ClipEncoder, get_encoder
from ..report import UNTRAINED_WARNING
from .guard import scrub_paths


@dataclass
class ModelStatus:
    spec: str
    state: str = "loading"  # loading | ready | error
    message: str = ""
    device: str = ""
    untrained: bool = False
    encoder: ClipEncoder | None = None


_STATUSES: dict[str, ModelStatus] = {}
_LOCK = threading.Lock()


def model_status(settings: Settings, *, background: bool = True) -> ModelStatus:
    """The status of ``settings.clip_model``; the first call starts loading it (in a thread)."""
    key = f"{settings.clip_model}|{settings.clip_checkpoint}|{settings.device}|{settings.precision}"
    with _LOCK:
        status = _STATUSES.get(key)
        if status is not None:
            return status
        status = ModelStatus(spec=settings.clip_model)
        _STATUSES[key] = status
    if background:
        threading.Thread(target=_load, args=(settings, status), daemon=True, name="augclip-model-load").start()
        # numba compiles UMAP's kernels on the first fit (~11 s on 2 cores); do it before anyone waits for it.
        threading.Thread(target=_warm_up_umap, daemon=True, name="augclip-umap-warmup").start()
    else:
        _load(settings, status)
    return status


def _load(settings: Settings, status: ModelStatus) -> None:
    try:
        encoder = get_encoder(settings)
        status.untrained = encoder.untrained
        status.device = str(encoder.device)
        encoder.warmup()
        status.encoder = encoder
        status.device = encoder.info().device_name
        status.state = "ready"
        _preload_vocabulary(settings)
    except AugclipError as exc:
        status.state, status.message = "error", str(exc)
    except Exception as exc:  # noqa: BLE001 - shown in the panel; the app keeps running
        status.state, status.message = "error", f"{type(exc).__name__}: {exc}"


def _preload_vocabulary(settings: Settings) -> None:
    """Read the clip-vocab embedding store into memory when it was built ahead (encodes nothing)."""
    if settings.attribute_provider != "clip-vocab":
        return
    try:
        from ..attributes.clip_vocab import build_vocabulary_store

        build_vocabulary_store(settings, build=False)
    except Exception:  # noqa: BLE001 - only a speed-up; the first extraction then reads or builds it
        pass


def _warm_up_umap() -> None:
    try:
        from ..explain import warm_up_umap

        warm_up_umap()
    except Exception:  # noqa: BLE001 - only a speed-up; the first UMAP view then compiles itself
        pass


def status_html(status: ModelStatus) -> str:
    """The status line (and, when needed, a warning or an error panel) as HTML."""
    spec = html.escape(status.spec)
    if status.state == "loading":
        return f'<div class="aug-status">CLIP model <b>{spec}</b>: loading&hellip;</div>'
    if status.state == "error":
        return (
            f'<div class="aug-status aug-error"><b>The CLIP model {spec} could not be loaded.</b><br>'
            f"{html.escape(scrub_paths(status.message))}<br>The app keeps running: fix the weights and restart, "
            "or pick another model under <i>Advanced options</i>.</div>"
        )
    line = f'<div class="aug-status">CLIP model <b>{spec}</b> on <b>{html.escape(status.device)}</b></div>'
    if status.untrained:
        line += (
            f'<div class="aug-untrained">&#9888; {html.escape(UNTRAINED_WARNING.upper())}. '
            "Random weights exercise the whole pipeline, but the numbers mean nothing.</div>"
        )
    return line
