"""Input components that leave checking to us: their values reach the handlers unopened.

Gradio's own components decode or convert a value before a handler sees it, and when that fails the
web client only learns that "the upstream app raised an exception". The two functions here replace
a component's ``preprocess`` (on the instance: subclassing a component makes Gradio write a ``.pyi``
stub beside this file), so :mod:`augclip_demo.io` (images) or the handler (numbers) can say
precisely what is wrong.
"""

from __future__ import annotations

import math
from typing import Any

import gradio as gr


def image_path_input(**kwargs: Any) -> gr.Image:
    """``gr.Image(type="filepath")`` that hands over the uploaded file's path without opening it.

    Gradio opens every uploaded image (and converts non-RGB ones at full size) before the handler
    runs; a file that is not an image, or a decompression bomb, then fails inside Gradio. Here the
    path goes straight to :func:`~augclip_demo.io.open_image`, which decodes large images reduced and
    words every failure.
    """
    component = gr.Image(type="filepath", image_mode=None, **kwargs)
    original = component.preprocess

    def preprocess(payload: Any) -> str | None:
        if payload is None:
            return None
        path = getattr(payload, "path", None)
        url = getattr(payload, "url", None) or ""
        if path and not url.startswith("data:"):
            return str(path)
        try:
            return original(payload)
        except Exception:  # noqa: BLE001 - a data URL that is not an image
            raise gr.Error("The image could not be read: send a PNG, JPEG, WebP, GIF, BMP or TIFF file.") from None

    component.preprocess = preprocess  # type: ignore[method-assign]
    return component


def number_input(value: float | None, **kwargs: Any) -> gr.Number:
    """``gr.Number`` whose value arrives as a float, ``None`` when empty, or a clear error.

    Gradio's own check compares the raw value with the bounds, which fails with an unreadable error
    when an API client sends text. The label names the field in the messages.
    """
    component = gr.Number(value, **kwargs)

    def preprocess(payload: Any) -> float | None:
        if payload is None or (isinstance(payload, str) and not payload.strip()):
            return None
        name = component.label or "the number"
        if isinstance(payload, bool):  # JSON true is not the number 1
            raise gr.Error(f"{name}: {str(payload).lower()} is not a number.")
        try:
            number = float(payload)
        except (TypeError, ValueError):
            raise gr.Error(f"{name}: {str(payload)[:40]!r} is not a number.") from None
        if not math.isfinite(number):
            raise gr.Error(f"{name}: must be a finite number, got {number}.")
        if component.minimum is not None and number < component.minimum:
            raise gr.Error(f"{name}: must be at least {component.minimum:g}, got {number:g}.")
        if component.maximum is not None and number > component.maximum:
            raise gr.Error(f"{name}: must be at most {component.maximum:g}, got {number:g}.")
        return number

    component.preprocess = preprocess  # type: ignore[method-assign]
    return component


#: Text boxes that hold one attribute per line (bounded per line and in count, not in total characters).
_ATTRIBUTE_BOXES = frozenset({"aug-src-attrs", "aug-tgt-attrs"})


def bound_inputs(blocks: gr.Blocks, settings: Any) -> int:
    """Give every text box and checkbox of ``blocks`` a strict type and a bound, checked
    when a request arrives (before the handler runs) and refused with a message naming the field.

    Text: a string of at most ``settings.max_text_chars`` characters (a box may set its own
    ``augclip_max_chars``); attribute lists (:data:`_ATTRIBUTE_BOXES`): at most ``max_attributes``
    non-empty lines of at most ``max_attribute_chars`` each. Checkboxes: ``true`` or ``false`` only
    (the string ``"no"`` is not true). Checkbox groups keep Gradio's own check (a list of offered
    values; their choices may change per session, which a wrapper here would not see); the batch
    drops repeated metrics itself. Returns how many inputs were bound.
    """
    count = 0
    for block in list(blocks.blocks.values()):
        if isinstance(block, gr.Textbox):
            _bound_text(block, settings)
        elif isinstance(block, gr.Checkbox):
            _strict_checkbox(block)
        else:
            continue
        count += 1
    return count


def _name(component: Any) -> str:
    return component.label or component.elem_id or "a field"


def _bound_text(component: gr.Textbox, settings: Any) -> None:
    original = component.preprocess
    attributes = component.elem_id in _ATTRIBUTE_BOXES

    def preprocess(payload: Any) -> str | None:
        if payload is None:
            return original(payload)
        name = _name(component)
        if not isinstance(payload, str):
            raise gr.Error(f"{name}: must be text, got {type(payload).__name__}.")
        if attributes:
            lines = [line for line in payload.splitlines() if line.strip()]
            if len(lines) > settings.max_attributes:
                raise gr.Error(f"{name}: {len(lines)} attributes; the limit is {settings.max_attributes} "
                               "(AUGCLIP_MAX_ATTRIBUTES). Keep the most telling ones.")
            longest = max((len(line) for line in lines), default=0)
            if longest > settings.max_attribute_chars:
                raise gr.Error(f"{name}: an attribute of {longest} characters; the limit is "
                               f"{settings.max_attribute_chars} (AUGCLIP_MAX_ATTRIBUTE_CHARS).")
        else:
            limit = getattr(component, "augclip_max_chars", None) or settings.max_text_chars
            if len(payload) > limit:
                raise gr.Error(f"{name}: {len(payload)} characters; the limit is {limit} (AUGCLIP_MAX_TEXT_CHARS).")
        return original(payload)

    component.preprocess = preprocess  # type: ignore[method-assign]


def _strict_checkbox(component: gr.Checkbox) -> None:
    original = component.preprocess

    def preprocess(payload: Any) -> bool | None:
        if payload is not None and not isinstance(payload, bool):
            raise gr.Error(f"{_name(component)}: must be true or false, got {str(payload)[:40]!r}.")
        return original(payload)

    component.preprocess = preprocess  # type: ignore[method-assign]
