"""The status area: the chosen CLIP backbone (loaded in the background) and every missing model.

The app starts even when weights cannot be loaded: the one status area at the top of the page then
names every model without weights (the chosen CLIP model, GroundingDINO and SAM for BPM), each with
the command or variable that provides it, and clears as soon as the user picks a model that works.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..config import Settings
from ..errors import AugclipError, WeightsUnavailableError
from ..inference import ClipEncoder, get_encoder
from ..inference.needs import missing_line
from ..inference.specs import shipped_note
from ..report import UNTRAINED_WARNING
from .first_contact import ReadinessCheck, demo_offered, readiness
from .guard import scrub_paths


@dataclass
class ModelStatus:
    spec: str
    state: str = "loading"  # loading | ready | error
    message: str = ""
    device: str = ""
    untrained: bool = False
    encoder: ClipEncoder | None = None
    brief: str = ""  # one line: the model and what provides its weights (errors only)


_STATUSES: dict[str, ModelStatus] = {}
_LOCK = threading.Lock()


def model_status(settings: Settings, *, background: bool = True) -> ModelStatus:
    """The status of ``settings.clip_model``; the first call starts loading it (in a thread)."""
    key = f"{settings.clip_model}|{settings.clip_checkpoint}|{settings.device}|{settings.precision}|{settings.cpu_matmul}"
    with _LOCK:
        status = _STATUSES.get(key)
        if status is not None:
            return status
        status = ModelStatus(spec=settings.clip_model)
        _STATUSES[key] = status
    if background:
        threading.Thread(target=_load, args=(settings, status), daemon=True, name="augclip-model-load").start()
        # numba compiles UMAP's kernels on the first fit (~11 s on 2 cores); do it before anyone waits for it.
        threading.Thread(target=_warm_up_umap, args=(status,), daemon=True, name="augclip-umap-warmup").start()
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
        threading.Thread(target=_import_first_result_modules, daemon=True, name="augclip-first-imports").start()
        _preload_vocabulary(settings)
    except WeightsUnavailableError as exc:
        status.state, status.message, status.brief = "error", str(exc), exc.brief()
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


# What a first result imports beyond the app: scikit-learn's SVM for the hyperplane fit (importing it takes
# 0.5-0.9 s on 2 cores) and matplotlib for its figures (about 0.4 s). Imported once the CLIP model is ready,
# while a first press extracts attributes and encodes images, so its fit and drawing need not wait for them.
# (Imported during the CLIP load, they made the load a second longer on 2 cores, and a press waits for it.)
_FIRST_RESULT_MODULES = ("sklearn.svm", "augclip_demo.explain.figures")


def _import_first_result_modules() -> None:
    import contextlib
    import importlib

    for name in _FIRST_RESULT_MODULES:
        # Only a speed-up: a failure here shows again, with its message, when a request imports the module.
        with contextlib.suppress(Exception):
            importlib.import_module(name)


_IN_FLIGHT = [0]  # requests computing a first result (scores, relevancy maps) right now
_LAST_ENDED = [float("-inf")]  # time.monotonic() when the last of them ended
# A page asks for its result in stages, each a new request: between two of them nothing computes for the time
# of a round trip through the browser. The compile starts only after this much quiet, not in such a gap.
_QUIET_S = 1.5
UMAP_WARM_UP_BEGAN: list[float | None] = [None]  # time.time() when the warm-up stopped waiting (cold_start_bench)


@contextmanager
def first_result_work() -> Iterator[None]:
    """Marks a request computing scores or explanations: the start-up compile waits while one runs, and for
    :data:`_QUIET_S` after the last one ends."""
    with _LOCK:
        _IN_FLIGHT[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _IN_FLIGHT[0] -= 1
            _LAST_ENDED[0] = time.monotonic()


def _warm_up_umap(status: ModelStatus | None = None) -> None:
    # On 2 cores the compile (one thread, 10-40 s) would take a core from the CLIP load and from a first
    # request's encoding and relevancy maps, so it starts after the load, once no request has computed for
    # _QUIET_S. The first result never waits for it (the page asks for the UMAP view in a later stage); a
    # UMAP view asked for before the warm-up ran compiles the kernels itself. (Not a niced thread: the UMAP
    # stage would wait on it, and a lowest-priority thread starves on a busy host.)
    while ((status is not None and status.state == "loading") or _IN_FLIGHT[0] > 0
           or time.monotonic() - _LAST_ENDED[0] < _QUIET_S):
        time.sleep(0.2)
    UMAP_WARM_UP_BEGAN[0] = time.time()
    try:
        from ..explain import warm_up_umap

        warm_up_umap()
    except Exception:  # noqa: BLE001 - only a speed-up; the first UMAP view then compiles itself
        pass


@dataclass
class RegionModelsCheck:
    """What BPM and HATIE lack for one configuration (:mod:`augclip_demo.inference.needs`' table), checked
    once per configuration in the background (:func:`.first_contact.readiness`)."""

    settings: Settings
    check: ReadinessCheck

    @property
    def state(self) -> str:  # checking | done
        return "done" if self.check.done.is_set() else "checking"

    @property
    def missing(self) -> list[str]:
        """One line per feature beyond the scores that lacks a model: the models, then the one command."""
        if not self.check.done.is_set():
            return []
        return [missing_line(self.settings, feature, self.check.missing[feature])
                for feature in ("bpm", "hatie") if self.check.missing.get(feature)]


def check_region_models(settings: Settings, *, background: bool = True) -> RegionModelsCheck:
    return RegionModelsCheck(settings, readiness(settings, background=background))


def status_html(status: ModelStatus, region: RegionModelsCheck | None = None) -> str:
    """The status area as HTML: the CLIP model's state, then every missing model with what provides it.

    The demo is named only where the server offers it (:func:`.first_contact.demo_offered` of
    ``region``'s settings; without ``region`` it is not named)."""
    spec = html.escape(status.spec)
    bpm_missing = region.missing if region is not None else []
    demo = region is not None and demo_offered(region.settings)
    if status.state == "loading":
        return f'<div class="aug-status">CLIP model <b>{spec}</b>: loading&hellip;</div>' + _bpm_note(bpm_missing, demo)
    if status.state == "error":
        what = status.brief or status.message.splitlines()[0][:300]
        items = [f"<li>{_code(html.escape(scrub_paths(what)))}</li>"]
        items += [f"<li>{_code(html.escape(scrub_paths(line)))}</li>" for line in bpm_missing]
        details = html.escape(scrub_paths(status.message))
        return (
            f'<div class="aug-status aug-error" id="aug-status-error"><b>The CLIP model {spec} could not be loaded.</b> '
            f"Missing here:<ul>{''.join(items)}</ul>The app keeps running: "
            + ("press <b>Try the demo</b> above to see every feature work offline (a toy CLIP trained on synthetic "
               "shapes, random region and feature networks), " if demo else "")
            + "pick another CLIP model under <i>Advanced options</i>, or provide the files and restart."
            f"<details><summary>details</summary>{details}</details></div>"
        )
    line = f'<div class="aug-status">CLIP model <b>{spec}</b> on <b>{html.escape(status.device)}</b></div>'
    if shipped_note(status.spec):
        line += f'<div class="aug-untrained">&#9888; {html.escape(shipped_note(status.spec) or "")}.</div>'
    if status.untrained:
        line += (
            f'<div class="aug-untrained">&#9888; {html.escape(UNTRAINED_WARNING.upper())}. '
            "Random weights exercise the whole pipeline, but the numbers mean nothing.</div>"
        )
    return line + _bpm_note(bpm_missing, demo)


def _bpm_note(missing: list[str], demo: bool) -> str:
    if not missing:
        return ""
    items = "".join(f"<li>{_code(html.escape(scrub_paths(line)))}</li>" for line in missing)
    return (f'<div class="aug-status aug-bpm-missing">The scores work; these need models first:<ul>{items}</ul>'
            + ("Or press the demo button to see them run offline with random weights." if demo else "") + "</div>")


def _code(text: str) -> str:
    """`command` spans as <code>."""
    parts = text.split("`")
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))
