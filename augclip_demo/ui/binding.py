"""What an event or a route calls: a top-level handler with its tab's context given.

Every tab's handlers are top-level functions ``handler(ctx, *component_values)`` so that they can be imported
and tested by name; :func:`bind` turns one into the callable a Gradio event takes.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


def bind(handler: Callable[..., Any], ctx: object, **options: Any) -> Callable[..., Any]:
    """``handler`` with its context (and keyword ``options``) given: what an event calls.

    Gradio finds the special parameters (gr.Request by its type hint, gr.Progress by its default) from the
    function it is given; a bare functools.partial hides the hints, so this wrapper carries the handler's
    own (and the partial's signature: the remaining parameters). A coroutine function stays one, so a
    framework that awaits coroutines (FastAPI, for the rater page's routes) still runs it in its event loop."""
    bound = functools.partial(handler, ctx, **options)

    if inspect.iscoroutinefunction(handler):
        @functools.wraps(handler)
        async def event_coroutine(*args: Any, **kwargs: Any) -> Any:
            return await bound(*args, **kwargs)

        event_coroutine.__signature__ = inspect.signature(bound)  # type: ignore[attr-defined]
        return event_coroutine

    @functools.wraps(handler)
    def event_handler(*args: Any, **kwargs: Any) -> Any:
        return bound(*args, **kwargs)

    event_handler.__signature__ = inspect.signature(bound)  # type: ignore[attr-defined]
    return event_handler
