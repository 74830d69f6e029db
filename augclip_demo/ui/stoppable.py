"""Work that stops when its client cancels: a handler's computation in a worker thread with a stop signal.

Gradio cancels an event by cancelling the task that awaits it; a plain (synchronous) handler's thread would
still run to its end and hold a worker. :func:`run_stoppable` runs the computation in a thread under
:func:`augclip_demo.explore.store.stopping`; when the awaiting task is cancelled it sets the stop signal,
which interrupts the Explore store's DuckDB query in flight and makes the computation's next check raise.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

from ..explore.store import Stop, stopping


async def run_stoppable(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a worker thread; stopped (:class:`Stop`) when this task is cancelled."""
    stop = Stop()

    def work() -> Any:
        with stopping(stop):
            return fn(*args, **kwargs)

    future = asyncio.get_running_loop().run_in_executor(None, functools.partial(work))
    try:
        return await future
    except asyncio.CancelledError:
        stop.set()  # the thread stops at its next check or query; the cancelled task does not wait for it
        raise
