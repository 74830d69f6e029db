"""A first visit without weights: a note beside every button that cannot work, and the demo.

Which models each feature needs comes from :mod:`augclip_demo.inference.needs` (the same table as
``doctor``, ``download`` and the CLI). The page checks them once per configuration in the background;
a note beside Evaluate, the examples, BPM's and HATIE's buttons then says what is missing and the one
command that fetches it, or the one click that shows the tool working anyway: the demo, which switches
CLIP to ``shapes:tiny`` (the toy model the package ships, trained on the synthetic shapes world) and the
region and feature networks to random weights, and evaluates a shipped world example. Picking
``random:tiny`` does the same with an untrained CLIP (for plumbing); each result says what its model is.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from ..config import Settings
from ..inference.needs import FEATURES, MissingModel, download_command, feature_readiness
from ..pipeline import FeatureNetworks

#: The demo's CLIP model: the shipped toy model (meaningful on the world examples only).
DEMO_CLIP = "shapes:tiny"
#: The untrained CLIP model: with it, as with the demo's, every other model is a random one.
_UNTRAINED_CLIP = "random:tiny"
_OFFLINE_CLIPS = (DEMO_CLIP, _UNTRAINED_CLIP)
#: The example the demo evaluates first: a world example (the toy model knows its scenes) on which AugCLIP ranks
#: the correct edit first; on world-recolour it ranks the partial edit first (docs/world.md says why).
DEMO_EXAMPLE = "world-move"
#: The demo's other models: tiny random networks of each family (nothing to download, seconds on a CPU).
_DEMO_MODELS: dict[str, str] = {"gdino_model": "random:tiny", "sam_model": "random:tiny",
                               "fast_detector_model": "random:tiny", "fast_sam_model": "random:test",
                               "hatie_clip": "random:tiny", "hatie_dino": "random:tiny-v2",
                               "hatie_lpips": "random:alex"}
#: The demo's reference / preservation networks (the Evaluate tab's optional network metrics).
_DEMO_NETWORKS = FeatureNetworks.demo(DEMO_CLIP)
_DEMO_BUTTON = "Try the demo (offline: a toy CLIP trained on synthetic shapes, on a shipped shapes example)"
#: How long a note waits for the background check before it shows nothing (it is redrawn on the next change).
_CHECK_WAIT_S = 20.0

CSS = """
.aug-needs {background: #fff7e0; border-left: 4px solid #e08a00; color: #4a3000; padding: 4px 10px; margin: 2px 0;
  font-size: 0.9rem; border-radius: 4px;}
.aug-demo-on {background: #fff1d6; border: 2px solid #e08a00; color: #5a3600; padding: 4px 10px; border-radius: 6px;}
.aug-demo-on summary {font-weight: 600; cursor: pointer;}
.aug-demo-on .aug-more {font-weight: 400; text-decoration: underline;}
/* while the demo's banner is on, the status line's own warning says the same: one is enough */
body:has(#aug-demo-on) #aug-status .aug-untrained {display: none;}
/* long commands and model names wrap inside their panel (a phone is narrower than one command) */
.aug-status, .aug-needs, .aug-demo-on {overflow-wrap: anywhere;}
.aug-status code, .aug-needs code {white-space: normal; overflow-wrap: anywhere;}
@media (max-width: 700px) {
  /* a phone: one "no weights" note (beside Evaluate) besides the panel at the top, not one per control */
  #aug-note-scores-examples, #aug-note-scores-extract {display: none !important;}
  /* the score table scrolls sideways: say so above it */
  #aug-table::before {content: "Swipe the table sideways for more columns →"; display: block;
    font-size: 0.85rem; color: #555; padding: 2px 8px;}
}
/* Gradio leaves a red "Error" pill over each output of a failed event after its toast fades: our notes say why. */
.wrap:has(> span.error) {display: none !important;}
"""


def demo_settings(settings: Settings) -> Settings:
    """With the demo's CLIP model or the untrained one, every other model is a random one, so every feature
    runs offline."""
    if settings.clip_model.strip() in _OFFLINE_CLIPS:
        return settings.replace(**_DEMO_MODELS)
    return settings


def demo_offered(settings: Settings) -> bool:
    """Whether this server offers the demo: web clients may pick its CLIP model (no allow-list, or one that
    names :data:`DEMO_CLIP`). The page shows the demo button, and every message names it, only then."""
    return not settings.allowed_models or DEMO_CLIP in (settings.clip_model.strip(), *settings.allowed_models)


#: How the page's messages name the demo: its button at the top (hidden while the demo is on).
_PAGE_HINT = ", or press the demo button at the top"
#: How the Batch tab's note names it: the tab's own CLIP model menu, there whether or not the demo is on.
BATCH_HINT = f", or pick {DEMO_CLIP} (the demo's toy CLIP, for the world examples) as this tab's CLIP model"


def demo_hint(settings: Settings, text: str = _PAGE_HINT) -> str:
    """``text`` when the demo is offered (:func:`demo_offered`), else "": a message never names a button
    the page does not show."""
    return text if demo_offered(settings) else ""


def demo_networks(settings: Settings) -> FeatureNetworks | None:
    """The demo's random feature networks with the demo's or the untrained CLIP model (``settings`` from
    :func:`demo_settings`), else None: the benchmarks' own networks."""
    return _DEMO_NETWORKS if settings.clip_model.strip() in _OFFLINE_CLIPS else None


@dataclass
class ReadinessCheck:
    """Every feature's missing models for one configuration, checked once in the background."""

    done: threading.Event = field(default_factory=threading.Event)
    missing: dict[str, list[MissingModel]] = field(default_factory=dict)


_CHECKS: dict[tuple, ReadinessCheck] = {}
_LOCK = threading.Lock()


def _key(settings: Settings) -> tuple:
    return (settings.clip_model, settings.clip_checkpoint, settings.bpm_preset, settings.gdino_model,
            settings.sam_model, settings.fast_detector_model, settings.fast_sam_model, settings.hatie_clip,
            settings.hatie_dino, settings.hatie_lpips, str(settings.cache_dir))


def readiness(settings: Settings, *, background: bool = True) -> ReadinessCheck:
    """The check of ``settings`` (started on first request; one per configuration for the process)."""
    with _LOCK:
        check = _CHECKS.get(_key(settings))
        if check is not None:
            return check
        check = _CHECKS[_key(settings)] = ReadinessCheck()

    def run() -> None:
        try:
            check.missing = feature_readiness(settings)
        except Exception:  # noqa: BLE001 - the check only informs; a run reports its own error
            check.missing = {}
        check.done.set()

    if background:
        threading.Thread(target=run, daemon=True, name="augclip-readiness").start()
    else:
        run()
    return check


def cannot_run(settings: Settings, feature: str, *, wait_s: float = 0.0, hint: str = _PAGE_HINT) -> str | None:
    """Why ``feature`` cannot run with ``settings`` (one line with the fix), or None (ready, or still checking).
    ``hint``: how the message names the demo (when the server offers it)."""
    check = readiness(settings)
    if not check.done.wait(wait_s):
        return None
    missing = check.missing.get(feature) or []
    if not missing:
        return None
    names = ", ".join(m.need.label for m in missing)
    return (f"{FEATURES[feature][0].upper() + FEATURES[feature][1:]} cannot run here: no weights for {names} "
            f"({missing[0].reason}). Fix: run `{download_command(settings, feature)}` where there is internet and "
            f"restart{demo_hint(settings, hint)}.")


def _note_text(message: str) -> str:
    """``message`` as HTML: escaped, its `commands` as code."""
    parts = html.escape(message).split("`")
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def _note_html(message: str | None) -> str:
    if not message:
        return ""
    return f'<div class="aug-needs">&#9888; {_note_text(message)}</div>'


def note(feature: str, where: str) -> gr.HTML:
    """An empty note to place beside a button of ``feature`` ("scores", "bpm", "hatie"); :func:`wire` fills it."""
    return gr.HTML("", elem_id=f"{_NOTE_PREFIX}{feature}-{where}", padding=False, visible=False)


_NOTE_PREFIX = "aug-note-"


def _draw_note(feature: str, settings: Settings, status_of: Callable[[Settings], Any], *,
              what: str = "Evaluate, the examples and the attribute extraction cannot run",
              hint: str = _PAGE_HINT) -> str:
    """The note of ``feature`` for ``settings``: empty when it can run (waits for the checks, bounded).
    ``what``: the scores note's words for what cannot run; ``hint``: how it names the demo."""
    if feature == "scores":
        status = status_of(settings)
        deadline = time.monotonic() + _CHECK_WAIT_S
        while status.state == "loading" and time.monotonic() < deadline:
            time.sleep(0.2)
        return _note_html(scores_message(settings, status, what=what, hint=hint))
    return _note_html(cannot_run(settings, feature, wait_s=_CHECK_WAIT_S, hint=hint))


def _batch_features(metric_keys: list[str] | None) -> list[str]:
    """The features (keys of :data:`FEATURES`) a batch with ``metric_keys`` runs: the scores always (CLIP
    embeds every item), BPM and HATIE when one of their metrics is chosen."""
    chosen = set(metric_keys or [])
    return ["scores"] + [feature for feature in ("bpm", "hatie")
                         if any(key == feature or key.startswith(f"{feature}_") for key in chosen)]


def batch_note(settings: Settings, metric_keys: list[str] | None, status_of: Callable[[Settings], Any]) -> str:
    """The note beside the Batch tab's Run button: every chosen feature that cannot run with ``settings``
    (the batch's, from :func:`demo_settings`), one line each; empty when all can. The way out it names is the
    tab's own CLIP model menu (the page's demo button is hidden while the demo is on)."""
    return "".join(_draw_note(feature, settings, status_of, what="a batch cannot run", hint=BATCH_HINT)
                   for feature in _batch_features(metric_keys))


def wire(demo: gr.Blocks, clip_model: Any, settings_for: Callable[[str | None], Settings],
         status_of: Callable[[Settings], Any]) -> None:
    """Fill every note (and the demo banner) when the page loads and whenever the CLIP model changes."""
    notes = [(block, block.elem_id[len(_NOTE_PREFIX):].split("-")[0]) for block in list(demo.blocks.values())
             if isinstance(block, gr.HTML) and str(getattr(block, "elem_id", "") or "").startswith(_NOTE_PREFIX)]
    banners = [block for block in demo.blocks.values() if getattr(block, "elem_id", None) == "aug-demo-banner"]
    buttons = [block for block in demo.blocks.values()
               if getattr(block, "elem_id", None) == "aug-demo" and getattr(block, "visible", False)]
    outputs = [block for block, _ in notes] + banners + buttons

    def shown(text: str) -> Any:
        return gr.update(value=text, visible=bool(text))  # an empty note takes no room

    def draw(clip: str | None) -> list[Any]:
        demo_on = (clip or "").strip() in _OFFLINE_CLIPS
        try:
            settings = settings_for(clip)
        except Exception:  # noqa: BLE001 - a model the page does not offer: the status area says so
            return [shown("")] * len(notes + banners) + [gr.update(visible=not demo_on)] * len(buttons)
        return ([shown(_draw_note(feature, settings, status_of)) for _, feature in notes]
                + [shown(_demo_banner(clip))] * len(banners) + [gr.update(visible=not demo_on)] * len(buttons))

    for event in (demo.load, clip_model.change):
        event(draw, clip_model, outputs, api_name=False, show_progress="hidden")


def scores_message(settings: Settings, status: Any, *,
                   what: str = "Evaluate, the examples and the attribute extraction cannot run",
                   hint: str = _PAGE_HINT) -> str | None:
    """Why ``what`` (by default Evaluate) cannot score with the CLIP model of ``status`` (and the fix), or None.
    ``hint``: how it names the demo."""
    if status.state != "error":
        return None
    return (f"No weights for the CLIP model {settings.clip_model} here: {what}. Fix: run "
            f"`{download_command(settings, 'scores')}` where there is internet and restart{demo_hint(settings, hint)}.")


def _demo_banner(clip: str | None) -> str:
    """Shown while the demo's or the untrained CLIP model is on: one line that says what the models are (the
    status line's own warning is hidden meanwhile, CSS), opened for the details and how to leave. One line, so
    the banner does not fill a phone's first screen."""
    clip = (clip or "").strip()
    leave = " Pick another CLIP model (the CLIP model setting, under the inputs) to leave it."
    if clip == DEMO_CLIP:
        return _banner("TOY DEMO: a toy CLIP (shapes:tiny) for the shapes examples, random region networks",
                       "CLIP is shapes:tiny, a toy model trained on synthetic scenes of flat shapes, so its scores "
                       "and maps mean something for such scenes (the world examples) only; the detector, SAM and "
                       "feature networks have random weights, so BPM's detected regions and the network metrics "
                       "show how the tool works, not how good an edit is." + leave)
    if clip == _UNTRAINED_CLIP:
        return _banner("UNTRAINED: every model has random weights",
                       "Every score, region and figure shows how the tool works, not how good an edit is." + leave)
    return ""


def _banner(line: str, more: str) -> str:
    return (f'<details class="aug-demo-on" id="aug-demo-on"><summary>&#9888; {html.escape(line)} '
            f'<span class="aug-more">(more)</span></summary>{html.escape(more)}</details>')


def build_demo_controls(*, visible: bool = True) -> gr.Button:
    """The demo button and its banner (above the status area: on a phone too the button is on the first
    screen); the caller wires the button to run an example."""
    button = gr.Button(_DEMO_BUTTON, size="sm", variant="secondary", elem_id="aug-demo", visible=visible)
    gr.HTML("", elem_id="aug-demo-banner", padding=False, visible=False)
    return button
