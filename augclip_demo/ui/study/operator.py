"""The operator token's check, for the Study tab's actions and the Explore tab's "study from this slice".

The tab works only when ``AUGCLIP_STUDY_OPERATOR_TOKEN`` is set and the token is typed in; wrong tokens are
counted per client address (:class:`~augclip_demo.study.limits.OperatorLimits`), with no pause in a worker
thread.
"""

from __future__ import annotations

import hmac
import threading
from typing import Any

from ...config import study_operator_token
from ...errors import ConfigError
from ...study import store
from ...study.limits import OperatorLimits
from .routes import client_address

NOT_OPERATOR = "The operator token is not right."
NO_TOKEN_TYPED = "Type the operator token first (the value of AUGCLIP_STUDY_OPERATOR_TOKEN on this server)."
NOT_SET = ("AUGCLIP_STUDY_OPERATOR_TOKEN is not set on this server, so the operator's actions are off: run the "
           "study from the command line (`python -m augclip_demo study`, docs/study.md).")


def operator_off() -> str | None:
    """Why the operator's actions are off on this server (the variable is not set, or not valid), or None
    when the token is set: the Study tab then shows its controls."""
    try:
        return None if study_operator_token() else NOT_SET
    except ConfigError as exc:
        return str(exc)


class Operator:
    """The operator token's check.

    A wrong token is counted against the client's address (:class:`~augclip_demo.study.limits.OperatorLimits`);
    an address that used up its tries is refused at once, without comparing anything, until its bucket refills.
    Nothing sleeps, so a burst of wrong tokens holds no worker thread."""

    def __init__(self, limits: OperatorLimits | None = None):
        self.limits = limits or OperatorLimits()
        self._lock = threading.Lock()  # the look at the bucket and the count of a miss are one step

    def check(self, given: str | None, request: Any = None) -> None:
        """Return when ``given`` is the operator token; else raise :class:`StudyError` (403, or 429 when the
        client's address has sent too many wrong ones)."""
        address = _request_address(request)
        expected = study_operator_token()
        if expected is None:  # nothing to guess: no try is counted
            raise store.StudyError(NOT_SET, 403)
        with self._lock:  # microseconds: a compare of two short strings
            refusal = self.limits.blocked(address)
            if refusal is None and (not given or not hmac.compare_digest(str(given).encode(), expected.encode())):
                self.limits.missed(address)
                raise store.StudyError(NOT_OPERATOR if given else NO_TOKEN_TYPED, 403)
        if refusal is not None:
            raise store.StudyError(refusal.message[0].upper() + refusal.message[1:] + ".", 429)


def _request_address(request: Any) -> str:
    """The client's address of a Gradio request (``gr.Request``), as the rater routes count it."""
    inner = getattr(request, "request", request)
    client = getattr(inner, "client", None) or getattr(request, "client", None)
    return client_address(getattr(client, "host", None))


#: the app's operator check (one per process: the tab and the Explore control share its counts)
OPERATOR = Operator()
