"""Which of a page's results it shows: a number per result, shared by the rooms that work on the page's state
(Evaluate's stages and the HATIE tab), so work for a result the page no longer shows leaves the page alone."""

from __future__ import annotations

import threading
from typing import Any


class Newest:
    """The number of the result a page shows, shared by every copy of its session state made with
    ``Session(**session.__dict__)`` (each browser page starts from its own deep copy of the empty state).
    Each Evaluate, re-score or halted Evaluate takes the next number as the last step before it reaches the
    page, so the one that ends last is shown. A stage still running for a result with a lower number then
    leaves the page alone: its updates would put the older result back, and the newer explanation removes
    the older figures' folder."""

    _lock = threading.Lock()  # on the class, not each page: gr.State deep-copies the empty state at build time

    def __init__(self) -> None:
        self.shown = 0

    def show(self) -> int:
        """The number of the result about to be put on the page."""
        with Newest._lock:
            self.shown += 1
            return self.shown


def put_on_page(session: Any) -> None:
    """``session`` (a state with ``result`` and ``newest``) is the result the page shows from now on: it takes
    the page's next number (the last step of an Evaluate, a re-score or a halt before its updates reach the
    page)."""
    session.result = session.newest.show()


def superseded(session: Any) -> bool:
    """The page shows a newer result than ``session`` holds (a later stage of it then stands still)."""
    return session is not None and session.result < session.newest.shown
