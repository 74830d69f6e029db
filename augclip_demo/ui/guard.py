"""One wrapper for every event handler (users see a message, never a traceback), and the memory gate of the
heavy stages (their requests share one bound)."""

from __future__ import annotations

import collections
import contextlib
import functools
import html
import inspect
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from ..config import DEFAULT_STAGE_MEMORY_MB
from ..errors import AugclipError
from ..inference.device import is_out_of_memory

log = logging.getLogger(__name__)

_SESSION_FOLDER_PREFIX = "augclip-app-"  # storage.WorkFolders' page sessions


def page_was_left(exc: BaseException) -> bool:
    """A file missing because its session folder is gone: the page ended (reload, close) and its folder was
    deleted while a stage still ran. Not an error of the app: nobody is there to see a message."""
    filename = getattr(exc, "filename", None)
    if not isinstance(exc, FileNotFoundError) or not filename:
        return False
    path = Path(str(filename))
    for folder in (path, *path.parents):
        if folder.name.startswith(_SESSION_FOLDER_PREFIX):
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
            raise gr.Error(_as_html(scrub_paths(str(exc))), title="Cannot do that", print_exception=False) from None
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


def _as_html(message: str) -> str:
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


# ---------------------------------------------------------------------------- memory of the heavy stages

#: Estimated bytes a heavy stage holds per pixel of its request's images at the working resolution (the
#: relevancy maps placed on each image, the figures drawn over it, BPM's masks), and for the stage itself
#: (the relevancy pass's graph, a figure's canvas). Measured with random:ViT-B-16 (docs/security.md).
STAGE_BYTES_PER_PIXEL = 40
STAGE_BASE_BYTES = 256 << 20


def stage_bytes(report: Any) -> int:
    """The memory one heavy stage of ``report``'s request is estimated to hold: by the pixels of its images
    at the working resolution (source, edits, ground truth), as the session keeps them."""
    arrays = getattr(report, "arrays", None)
    images = [getattr(arrays, "source_image", None), *(getattr(arrays, "edit_images", None) or []),
              getattr(arrays, "ground_truth_image", None)]
    pixels = sum(image.width * image.height for image in images if image is not None)
    return STAGE_BASE_BYTES + STAGE_BYTES_PER_PIXEL * pixels


class MemoryGate:
    """The memory that the requests' heavy stages hold at once, kept within :attr:`budget` bytes.

    A stage reserves its estimate (:func:`stage_bytes`) before it runs and gives it back when it ends.
    One that would pass the budget waits, in order of arrival, for the stages before it; one whose estimate
    is larger than the whole budget runs when no other holds any (alone). So small requests still run side
    by side while two of the largest take turns. Reentrant in a thread: a stage that calls another holds
    only its own reservation.
    """

    def __init__(self, budget: int):
        self.budget = budget
        self.held = 0  # bytes reserved now
        self.peak = 0  # most bytes reserved at once
        self.holders = 0
        self._queue: collections.deque[object] = collections.deque()  # waiting stages, oldest first
        self._changed = threading.Condition()
        self._thread = threading.local()

    @property
    def waiting(self) -> int:
        return len(self._queue)

    @contextlib.contextmanager
    def hold(self, cost: int, wait: Callable[[], threading.Event | None] | None = None) -> Iterator[None]:
        """Reserve ``cost`` bytes for the block. ``wait`` is called once if the stage must wait; the event
        it returns (the request was cancelled or its client left) stops the wait with :class:`RequestStopped`."""
        if getattr(self._thread, "depth", 0):
            self._thread.depth += 1
            try:
                yield
            finally:
                self._thread.depth -= 1
            return
        cost = min(max(int(cost), 0), self.budget)  # over the budget: the whole budget, so it runs alone
        ticket, stop, told = object(), None, False
        with self._changed:
            self._queue.append(ticket)
            try:
                while self._queue[0] is not ticket or (self.holders and self.held + cost > self.budget):
                    if not told and wait is not None:
                        told, stop = True, wait()
                    if stop is not None and stop.is_set():
                        raise RequestStopped("the request was cancelled or its client left while it waited")
                    self._changed.wait(0.25)
            finally:
                self._queue.remove(ticket)
                self._changed.notify_all()  # the next in line may fit now
            self.held += cost
            self.holders += 1
            self.peak = max(self.peak, self.held)
        self._thread.depth = 1
        try:
            yield
        finally:
            self._thread.depth = 0
            with self._changed:
                self.held -= cost
                self.holders -= 1
                self._changed.notify_all()


class RequestStopped(Exception):
    """A request stopped waiting for memory: it was cancelled or its client left."""


#: One gate for the server process: every session's stages draw on the same memory.
MEMORY_GATE = MemoryGate(DEFAULT_STAGE_MEMORY_MB << 20)

WAITING_TEXT = "waiting for another request's explanations or BPM to finish (the server's memory bound)"


def heavy_stage(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An Evaluate handler whose work grows with its request's images (relevancy maps, figures, BPM):
    it runs inside :data:`MEMORY_GATE` (its budget set by :func:`.app.build_app`). While it waits, its
    progress text says so, and it stops if its request is cancelled or its client leaves. The handler
    takes ``state`` (the session, whose report holds the images)."""
    if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        # the reservation would be given back when the call returns, before the work runs
        raise TypeError(f"heavy_stage takes a plain function; {fn.__name__} is a generator or coroutine")
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind_partial(*args, **kwargs).arguments
        report = getattr(arguments.get("state"), "report", None)
        if report is None:  # nothing to compute: the handler answers at once
            return fn(*args, **kwargs)
        watch: list[CancelWatch] = []

        def waiting() -> threading.Event:
            gr.Progress()(0.0, desc=WAITING_TEXT)
            watch.append(CancelWatch())
            return watch[0].event

        try:
            with MEMORY_GATE.hold(stage_bytes(report), waiting):
                if watch:
                    watch[0].close()
                return fn(*args, **kwargs)
        except RequestStopped:
            log.info("%s: %s", fn.__name__, "stopped waiting for memory: its request was cancelled or its client left")
            raise gr.Error("Stopped: the request was cancelled or its page closed while it waited.",
                           print_exception=False) from None
        finally:
            for item in watch:
                item.close()

    return wrapper
