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
