"""One wrapper for every event handler: users see a message, never a traceback."""

from __future__ import annotations

import functools
import html
import logging
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from ..errors import AugclipError
from ..inference.device import is_out_of_memory

log = logging.getLogger(__name__)

SESSION_FOLDER_PREFIX = "augclip-app-"  # storage.WorkFolders' page sessions


def page_was_left(exc: BaseException) -> bool:
    """A file missing because its session folder is gone: the page ended (reload, close) and its folder was
    deleted while a stage still ran. Not an error of the app: nobody is there to see a message."""
    filename = getattr(exc, "filename", None)
    if not isinstance(exc, FileNotFoundError) or not filename:
        return False
    path = Path(str(filename))
    for folder in (path, *path.parents):
        if folder.name.startswith(SESSION_FOLDER_PREFIX):
            return not folder.exists()
    return False


def user_facing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Show AugclipErrors as their message, anything else as a short notice (details go to the log)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except AugclipError as exc:
            # The message is the whole story: no traceback in the server console for an expected error.
            raise gr.Error(as_html(scrub_paths(str(exc))), title="Cannot do that", print_exception=False) from None
        except RecursionError:
            log.exception("recursion too deep in %s", fn.__name__)
            raise gr.Error("The input is nested too deeply to be read.") from None
        except Exception as exc:
            if page_was_left(exc):  # a reload or close mid-stage deleted the session's folder: nothing to say
                raise gr.Error("The page was reloaded or closed while this ran.", print_exception=False) from None
            if is_out_of_memory(exc):
                raise gr.Error("The GPU ran out of memory: try fewer edited images or a smaller CLIP model.") from None
            log.exception("unexpected error in %s", fn.__name__)
            raise gr.Error("Something went wrong inside the app (the details are in the server log). "
                           "Your inputs are kept; try again, or report the problem.") from None

    return wrapper


# An absolute POSIX path: a "/" after no word character, "." or "/", before no "/" or space (URLs, "a / b" stay).
_ABSOLUTE_PATH = re.compile(r"(?<![\w/.])/(?![/\s])(?:[^\s'\"/()\[\]<>,;]+/)*([^\s'\"/()\[\]<>,;]*)")


def scrub_paths(message: str) -> str:
    """``message`` with every absolute path cut to its last component: a web client learns the file's
    name, never the server's folders (temporary folders, caches, the installation)."""
    return _ABSOLUTE_PATH.sub(lambda match: f"…/{match.group(1)}" if match.group(1) else "…/", message)


def scrub_paths_in(value: Any, known: Sequence[str] = ()) -> Any:
    """``value`` (JSON-like: dicts, lists, strings, numbers) with :func:`scrub_paths` applied to every string,
    numbers untouched: a report or stored record shown to a web client (its texts can name server folders).
    ``known``: server paths replaced by their names first, whole (a folder name with spaces defeats the
    pattern)."""
    if isinstance(value, str):
        for path in known:
            value = value.replace(path, Path(path).name)
        return scrub_paths(value)
    if isinstance(value, dict):
        return {key: scrub_paths_in(item, known) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_paths_in(item, known) for item in value]
    return value


def as_html(message: str) -> str:
    """Gradio renders error messages as HTML: escape markup (file names may hold any text), keep line breaks."""
    return html.escape(message, quote=False).replace("\n", "<br>")


class CancelWatch:
    """A ``threading.Event`` set once the running request is cancelled or its client has gone.

    Gradio cancels the asyncio task of a cancelled or abandoned event, but a handler already running
    in a worker thread carries on. Made inside a handler (it reads the event from Gradio's context),
    a watch polls the queue every ``interval`` seconds until :meth:`close`: the event is gone from the
    running jobs (``/cancel``) or marked not alive (the client disconnected). Long work (a batch) passes
    :attr:`event` on and stops when it is set. Outside a Gradio request it never fires.
    """

    def __init__(self, interval: float = 0.5):
        from gradio.context import LocalContext

        self.event = threading.Event()
        self._done = threading.Event()
        blocks, self._event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
        self._queue = getattr(blocks, "_queue", None)
        if self._queue is not None and self._event_id:
            threading.Thread(target=self._watch, args=(interval,), daemon=True, name="augclip-cancel-watch").start()

    def _gone(self) -> bool:
        for job in list(self._queue.active_jobs):
            for event in job or ():
                if event._id == self._event_id:
                    return not event.alive
        return True  # no longer running: its task was cancelled

    def _watch(self, interval: float) -> None:
        while not self._done.wait(interval):
            try:
                gone = self._gone()
            except Exception:  # noqa: BLE001 - Gradio's internals moved: never stop a request for it
                log.exception("cancel watch failed; the request runs to its end")
                return
            if gone:
                log.info("request %s cancelled or its client left: stopping its work", self._event_id)
                self.event.set()
                return

    def close(self) -> None:
        self._done.set()

    def __enter__(self) -> CancelWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
