"""The app's files on disk: per-session work folders and Gradio's cache, deleted and bounded.

Every evaluation writes its downloads and figures into a work folder (``augclip-app-*``) and every
batch run into one of its own (``augclip-batch-*``), in the system's temporary folder. Gradio keeps
a copy of every file it serves (and every upload) in its cache. Without care both grow forever.

:class:`WorkFolders` deletes

* a session's folders when the session ends (the page is closed: Gradio's ``unload`` event, or the
  session state expires: ``gr.State(delete_callback=...)``);
* any ``augclip-app-*`` / ``augclip-batch-*`` folder not changed for ``max_age_s`` seconds (also ones
  left behind by an earlier process that was killed);
* the oldest files once the total (the folders this process made plus Gradio's cache of this app)
  is over ``max_bytes``; files younger than :data:`MIN_AGE_S` are never evicted (a request may be
  reading them), so the total may exceed the cap by what was written in that time. Folders of other
  processes sharing the temporary folder are only ever deleted by age.

Gradio's own age-based cleanup (``gr.Blocks(delete_cache=...)``) stays on beside this.

:meth:`WorkFolders.watch_uploads` makes the cap hold between requests too: every upload is counted
when it arrives (one arriving while the total is over the cap is deleted at once and its request
refused), and the sweep also runs every :data:`_SWEEP_INTERVAL_S` seconds. :meth:`WorkFolders.check_room`
refuses a request, with a message, while the total is at the cap; :meth:`WorkFolders.room` is what a
zip may still expand to.

Uploads are also counted while they arrive. :class:`UploadGate`, an ASGI middleware in front of Gradio's
routes, refuses a multipart body larger than :attr:`UploadBounds.request_bytes` (the largest request the
page makes) with 413 before reading it, and reserves its bytes against the cap and against its client's
share (:attr:`WorkFolders.client_bytes`) as they are declared or streamed: one that would pass either is cut
off with 413, and Gradio deletes its partial file. The reservation turns into the counted upload when Gradio
adds the file to its set, and what is left of it is given back when the request ends, however it ends. An
upload that no event has used within :attr:`WorkFolders.unused_s` seconds is deleted.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .asgi import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from ..batch.ziputil import ZipLimits
    from ..config import Settings

log = logging.getLogger(__name__)

BATCH_PREFIX = "augclip-batch-"  # a batch run's folder (the Batch tab makes them; ours() lists them)
_PREFIXES = ("augclip-app-", BATCH_PREFIX)
MIN_AGE_S = 120.0
_SWEEP_INTERVAL_S = 30.0
MB = 1 << 20


def _tree_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def _last_change(path: Path) -> float:
    latest = 0.0
    for root, _dirs, files in os.walk(path):
        for name in [*files, "."]:
            try:
                latest = max(latest, os.lstat(os.path.join(root, name)).st_mtime)
            except OSError:
                continue
    return latest


@dataclass(frozen=True)
class UploadBounds:
    """What one upload may be, from the operator limits (``augclip_demo/config.py``).

    Gradio serves every component's uploads through one route and its request does not say which component
    a file is for, so the route's bounds are the largest any component takes: a file is at most the larger
    of the image bound and the zip / results-file bound, plus 1 MB (a file a little over its component's
    bound reaches the handler, whose message names it); a request holds at most one such file, or the
    evaluation's edited images together (the page sends them in one request), plus room for the multipart
    framing. The image bound itself is checked by the handler, before the file is opened.
    """

    file_bytes: int  # Gradio's ``max_file_size``
    request_bytes: int  # the largest multipart body :class:`UploadGate` lets in

    @classmethod
    def of(cls, settings: Any) -> UploadBounds:
        margin = MB
        image, largest = int(settings.max_upload_mb * MB), max(int(settings.max_upload_mb * MB),
                                                               settings.upload_max_zip_mb * MB)
        file_bytes = largest + margin
        return cls(file_bytes, max(file_bytes, settings.max_edits * (image + margin)) + _FRAMING_BYTES)


_FRAMING_BYTES = 64 << 10  # multipart boundaries and part headers around the files, with room to spare
_HASH_FOLDER = re.compile(r"[0-9a-f]{32,128}")


@dataclass(eq=False)
class _Flight:
    """One multipart request while its body arrives: whose it is and what it has reserved."""

    client: str
    admitted: int = 0  # bytes of the body reserved so far (declared up front, or streamed)
    reserved: int = 0  # of those, what is still held in flight (not yet turned into counted uploads)
    refusal: str | None = None  # why the request was cut off (413), once it was


@dataclass
class _Upload:
    client: str
    size: int
    at: float  # time.time() when it arrived
    used: bool = False  # an event has taken it


#: The request whose body is arriving in this task (set by :class:`UploadGate`, read by :meth:`WorkFolders.arrived`).
_FLIGHT: contextvars.ContextVar[_Flight | None] = contextvars.ContextVar("augclip_upload_flight", default=None)


class WorkFolders:
    """Work folders per session id, with deletion on session end, by age and by total size; uploads counted
    while they arrive, per client, and deleted when no event uses them."""

    def __init__(self, root: str | Path | None = None, *, max_age_s: float = 3600, max_bytes: int = 1 << 30,
                 client_bytes: int | None = None, unused_s: float = 600):
        self.root = Path(root or tempfile.gettempdir())
        self.max_age_s = float(max_age_s)
        self.max_bytes = int(max_bytes)
        self.client_bytes = self.max_bytes if client_bytes is None else int(client_bytes)  # one client's share
        self.unused_s = float(unused_s)
        self._lock = threading.Lock()
        self._by_session: dict[str, list[Path]] = {}
        self._made: set[Path] = set()  # every folder this process made or adopted (the size cap's scope)
        self._total = 0  # bytes counted at the last sweep
        self._arrived = 0  # bytes uploaded since
        self._in_flight = 0  # bytes reserved by requests whose bodies are arriving
        self._client_flight: dict[str, int] = {}
        self._uploads: dict[str, _Upload] = {}  # uploads still on disk, by path
        self._upload_set: set[str] | None = None  # Gradio's set of uploads (see watch_uploads)
        self._blocks: Any = None
        self.refused_uploads: set[str] = set()  # uploads deleted on arrival (the total was at the cap)
        self._wake = threading.Event()

    # ----------------------------------------------------------------- folders
    def new(self, session_id: str | None, prefix: str = "augclip-app-") -> Path:
        """A fresh folder owned by ``session_id`` (``None``: owned by nobody; only age and size delete it)."""
        folder = Path(tempfile.mkdtemp(prefix=prefix, dir=self.root))
        self.adopt(session_id, folder)
        return folder

    def adopt(self, session_id: str | None, folder: str | Path) -> None:
        """Make ``folder`` (created elsewhere, e.g. by a batch run) part of ``session_id``'s files, and no other
        session's: a batch run resumed by another page (or after a restart) belongs to that page."""
        path = Path(folder)
        with self._lock:
            self._made.add(path)
            for folders in self._by_session.values():
                if path in folders:
                    folders.remove(path)
            if session_id:
                self._by_session.setdefault(session_id, []).append(path)

    def release(self, session_id: str | None) -> int:
        """Delete every folder of ``session_id``; returns how many were deleted."""
        if not session_id:
            return 0
        with self._lock:
            folders = self._by_session.pop(session_id, [])
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        return len(folders)

    def release_folder(self, folder: str | Path | None) -> None:
        """Delete one folder (a session state that expired) if it is one of ours."""
        if not folder:
            return
        path = Path(folder)
        if path.parent == self.root and path.name.startswith(_PREFIXES):
            with self._lock:
                for folders in self._by_session.values():
                    if path in folders:
                        folders.remove(path)
            shutil.rmtree(path, ignore_errors=True)

    def ours(self) -> list[Path]:
        """Every ``augclip-app-*`` / ``augclip-batch-*`` folder under the root."""
        try:
            return [p for p in self.root.iterdir() if p.name.startswith(_PREFIXES) and p.is_dir() and not p.is_symlink()]
        except OSError:
            return []

    # ----------------------------------------------------------------- bounds
    def sweep(self, cache_files: Iterable[str | Path] = (), keep: Iterable[str | Path] = ()) -> dict[str, int]:
        """Delete folders older than ``max_age_s``, then the oldest files until the total fits ``max_bytes``.

        ``cache_files`` are Gradio's cached copies for this app (counted and evicted like ours);
        ``keep`` are paths never deleted (the examples, files a request is using).
        """
        now = time.time()
        kept = {Path(p) for p in keep}
        removed_folders = removed_files = 0
        entries: list[tuple[float, int, Path]] = []  # (last change, bytes, path) of what may be evicted
        for folder in self.ours():
            if folder in kept:
                continue
            changed = _last_change(folder)
            if now - changed > self.max_age_s:
                shutil.rmtree(folder, ignore_errors=True)
                removed_folders += 1
                continue
            if folder in self._made:
                entries.append((changed, _tree_bytes(folder), folder))
        for file in cache_files:
            path = Path(file)
            if path in kept:
                continue
            try:
                info = path.lstat()
            except OSError:
                continue
            entries.append((max(info.st_mtime, info.st_ctime), info.st_size, path))
        total = sum(size for _, size, _ in entries)
        for changed, size, path in sorted(entries, key=lambda entry: entry[0]):
            if total <= self.max_bytes:
                break
            if now - changed < MIN_AGE_S:
                continue
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
                removed_folders += 1
            else:
                try:
                    path.unlink()
                except OSError:
                    continue
                removed_files += 1
            total -= size
        with self._lock:
            self._total, self._arrived = total, 0
        if removed_folders or removed_files:
            log.info("storage sweep: %d folder(s) and %d cached file(s) deleted; %d bytes left", removed_folders,
                     removed_files, total)
        return {"folders_removed": removed_folders, "files_removed": removed_files, "bytes": total}

    # ----------------------------------------------------------------- the cap between requests
    def used(self) -> int:
        """Bytes counted: at the last sweep, plus uploads since, plus what uploads arriving now have reserved."""
        with self._lock:
            return self._total + self._arrived + self._in_flight

    def room(self) -> int:
        """Bytes that may still be written before the cap."""
        return max(0, self.max_bytes - self.used())

    def check_room(self, what: str = "This request") -> None:
        """Refuse work while the files on disk are at the cap (a request would pass it)."""
        from ..errors import InputError

        if self.room() <= 0:
            raise InputError(f"{what} was refused: the server's space for uploads and results is full "
                             f"({self.used() / MB:.0f} of {self.max_bytes / MB:.0f} MB, AUGCLIP_APP_DISK_MB). "
                             "Try again in a few minutes, when older files have been deleted.")

    def arrived(self, paths: Iterable[str | Path]) -> None:
        """Count uploads as they arrive; one arriving while the total is at the cap is deleted at once. Inside a
        request that :class:`UploadGate` let in, the bytes its body reserved become the counted upload."""
        flight = _FLIGHT.get()
        for path in paths:
            try:
                size = os.lstat(path).st_size
            except OSError:
                continue
            with self._lock:
                taken = min(size, flight.reserved) if flight is not None else 0
                if flight is not None:
                    self._unreserve(flight, taken)
                full = self._total + self._arrived + self._in_flight + size - taken > self.max_bytes
                if not full:
                    self._arrived += size
                    client = flight.client if flight is not None else "unknown"
                    self._uploads[_key(path)] = _Upload(client, size, time.time())
            if full:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                if len(self.refused_uploads) >= 10_000:  # a record for messages and tests, not a log: bounded
                    self.refused_uploads.clear()
                self.refused_uploads.add(str(path))
                log.warning("upload of %d bytes refused: the app's files are at their cap", size)
        self._wake.set()  # the timer sweeps now (evicting old files makes room)

    # ----------------------------------------------------------------- uploads in flight, per client
    def admit(self, flight: _Flight, size: int) -> str | None:
        """Reserve ``size`` more bytes of ``flight``'s body; ``None`` if they fit, else why not (nothing reserved).
        They must fit both the cap (with every other request in flight) and the client's share (its uploads on
        disk and its other requests in flight). A client over its share first loses its own oldest uploads that
        are at least :data:`MIN_AGE_S` old (as the cap evicts the oldest files): one user keeps working, and
        nobody holds more than a share."""
        for attempt in range(2):
            with self._lock:
                used = self._total + self._arrived + self._in_flight
                if used + size > self.max_bytes:
                    refusal = (f"Upload refused: the server's space for uploads and results is full ({used / MB:.1f} "
                               f"of {self.max_bytes / MB:.0f} MB, AUGCLIP_APP_DISK_MB). Try again in a few minutes, "
                               "when older files have been deleted.")
                    break
                held = self._held(flight.client) + self._client_flight.get(flight.client, 0)
                if held + size <= self.client_bytes:
                    flight.admitted += size
                    flight.reserved += size
                    self._in_flight += size
                    self._client_flight[flight.client] = self._client_flight.get(flight.client, 0) + size
                    return None
                refusal = (f"Upload refused: your uploads would hold {(held + size) / MB:.1f} MB; one client address "
                           f"may hold {self.client_bytes / MB:.1f} MB (AUGCLIP_APP_CLIENT_DISK_PERCENT of "
                           f"AUGCLIP_APP_DISK_MB). Uploads that no request uses are deleted after "
                           f"{self.unused_s / 60:g} minutes, others after {MIN_AGE_S / 60:g} minutes when their "
                           "client needs the room; try again then.")
            if attempt or not self._evict_own(flight.client, held + size - self.client_bytes):
                break
        self._wake.set()  # the timer sweeps now: evicting old files and expiring unused uploads makes room
        return refusal

    def _evict_own(self, client: str, needed: int) -> bool:
        """Delete ``client``'s oldest uploads (gone ones forgotten, others at least :data:`MIN_AGE_S` old) until
        ``needed`` bytes are free; none when they would not free enough. Whether they did."""
        now = time.time()
        with self._lock:
            own = sorted((upload.at, path, upload.size) for path, upload in self._uploads.items()
                         if upload.client == client)
        victims, freed = [], 0
        for at, path, size in own:
            if freed >= needed:
                break
            if now - at >= MIN_AGE_S or not os.path.lexists(path):
                victims.append(path)
                freed += size
        if freed < needed:
            return False
        for path in victims:
            self._delete_upload(path)
        return True

    def _delete_upload(self, path: str) -> None:
        """Delete a counted upload (if still there) with Gradio's folder named after its hash, and forget it."""
        deleted = False
        with contextlib.suppress(OSError):
            os.unlink(path)
            deleted = True
        folder = os.path.dirname(path)
        if _HASH_FOLDER.fullmatch(os.path.basename(folder)):
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # when empty
        with self._lock:
            upload = self._uploads.pop(path, None)
            if deleted and upload is not None:
                self._arrived -= upload.size  # counted until the next sweep otherwise
        if self._upload_set is not None:
            self._upload_set.discard(path)

    def land(self, flight: _Flight) -> None:
        """The request ended (answered, refused or its client gone): give back what it still reserves."""
        with self._lock:
            self._unreserve(flight, flight.reserved)

    def _unreserve(self, flight: _Flight, size: int) -> None:  # under the lock
        flight.reserved -= size
        self._in_flight -= size
        left = self._client_flight.get(flight.client, 0) - size
        if left > 0:
            self._client_flight[flight.client] = left
        else:
            self._client_flight.pop(flight.client, None)

    def _held(self, client: str) -> int:  # under the lock
        return sum(upload.size for upload in self._uploads.values() if upload.client == client)

    def held_by(self, client: str) -> int:
        """Bytes ``client``'s uploads hold on disk and in flight (its share's use)."""
        with self._lock:
            return self._held(client) + self._client_flight.get(client, 0)

    def expire_unused(self, used: Iterable[str] | None = None) -> int:
        """Forget uploads that are gone, and delete those that no event has used for :attr:`unused_s` seconds.
        ``used``: the files events have taken (default: every file set of the watched page but its uploads).
        Returns how many were deleted."""
        taken = {_key(path) for path in (self._files_used() if used is None else used)}
        now, deleted = time.time(), 0
        with self._lock:
            uploads = list(self._uploads.items())
        for path, upload in uploads:
            if upload.used or path in taken:
                upload.used = True
            if not os.path.lexists(path) or (not upload.used and now - upload.at > self.unused_s):
                deleted += os.path.lexists(path)
                self._delete_upload(path)
        if deleted:
            log.info("%d upload(s) that no event used within %g s deleted", deleted, self.unused_s)
        return deleted

    def _files_used(self) -> set[str]:
        upload_set = self._upload_set
        files: set[str] = set()
        for file_set in list(getattr(self._blocks, "temp_file_sets", ())):
            if file_set is not upload_set:
                files.update(list(file_set))
        return files

    def _next_expiry(self) -> float:
        """Seconds until the oldest upload no event has used may expire (``inf``: none waits)."""
        with self._lock:
            waiting = [upload.at for upload in self._uploads.values() if not upload.used]
        return max(0.0, min(waiting) + self.unused_s - time.time()) + 0.5 if waiting else float("inf")

    def watch_uploads(self, blocks: object, sweep: Callable[[], object], interval: float = _SWEEP_INTERVAL_S) -> None:
        """Count ``blocks``' uploads on arrival and run ``sweep`` every ``interval`` seconds (and after an
        upload, and when an unused upload is due to expire), in a daemon thread, for as long as the process
        lives."""
        counted = _CountedSet(self, getattr(blocks, "upload_file_set", ()))
        sets = getattr(blocks, "temp_file_sets", [])
        for i, file_set in enumerate(sets):
            if file_set is getattr(blocks, "upload_file_set", None):
                sets[i] = counted
        blocks.upload_file_set = counted  # type: ignore[attr-defined]
        self._upload_set, self._blocks = counted, blocks

        def run() -> None:
            while True:
                self._wake.wait(min(interval, self._next_expiry()))
                self._wake.clear()
                try:
                    self.expire_unused()
                    sweep()
                except Exception:  # noqa: BLE001 - a set changed while counted: the next turn counts again
                    log.debug("timed sweep skipped", exc_info=True)

        threading.Thread(target=run, daemon=True, name="augclip-disk-sweep").start()


class _CountedSet(set):
    """Gradio's set of uploaded files, telling :class:`WorkFolders` of each file added."""

    def __init__(self, folders: WorkFolders, items: Iterable[str] = ()):
        super().__init__(items)
        self._folders = folders

    def add(self, item: str) -> None:
        super().add(item)
        self._folders.arrived([item])

    def update(self, *others: Iterable[str]) -> None:
        items = [item for other in others for item in other]
        super().update(items)
        self._folders.arrived(items)


def _key(path: str | Path) -> str:
    """One spelling of a file's path (Gradio's sets and the upload route may differ in links and dots)."""
    return os.path.realpath(path)


# ---------------------------------------------------------------------------------- the upload gate
class UploadGate:
    """ASGI middleware: multipart bodies (Gradio's upload routes) bounded and counted while they arrive.

    The client is ``scope["client"]``: the peer's address, or the one uvicorn took from ``X-Forwarded-For``
    when the peer is one of the operator's proxies (``AUGCLIP_FORWARDED_ALLOW_IPS``), so a client cannot
    choose the address its share is counted against. A body declared larger than ``request_bytes`` is refused
    at once; one whose declared size does not fit the cap or the client's share likewise, before a byte is
    read. A body without a declared size (chunked) is reserved as it streams and cut off at the first chunk
    that does not fit. A cut-off body ends Gradio's multipart parser with its own error, so Gradio deletes
    the partial file; so does a client that leaves mid-body. The client is then answered 413 with the reason.
    """

    def __init__(self, app: ASGIApp, folders: WorkFolders,
                 request_bytes: int):
        self.app, self.folders, self.request_bytes = app, folders, int(request_bytes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or not _multipart(scope):
            await self.app(scope, receive, send)
            return
        from gradio.route_utils import MultiPartException

        declared = _content_length(scope)
        waits = _header(scope, b"expect").lower() == b"100-continue"  # the client sends its body only if asked
        if declared is not None and declared > self.request_bytes:
            await self._refuse(receive, send, waits, f"Upload refused: {declared / MB:.1f} MB is more than the "
                               f"{self.request_bytes / MB:.1f} MB one upload may bring to this server (the largest "
                               "file the page takes: AUGCLIP_UPLOAD_MAX_ZIP_MB, AUGCLIP_MAX_UPLOAD_MB per image).")
            return
        client = str((scope.get("client") or ("unknown",))[0])[:64]
        flight = _Flight(client)
        try:
            if declared:
                flight.refusal = self.folders.admit(flight, declared)
                if flight.refusal:
                    await self._refuse(receive, send, waits, flight.refusal)
                    return
            answered = complete = left = False

            async def counted() -> Message:
                nonlocal complete, left
                message = await receive()
                if message.get("type") == "http.disconnect" and not complete:
                    left = True
                    raise MultiPartException("the client left before its upload arrived")  # Gradio deletes the part
                if message.get("type") == "http.request":
                    body = len(message.get("body", b""))
                    complete = not message.get("more_body", False)
                    if declared is None and flight.admitted + body > self.request_bytes:
                        flight.refusal = (f"Upload refused: more than the {self.request_bytes / MB:.1f} MB one upload "
                                          "may bring to this server.")
                    elif declared is None and body:  # chunked: reserved as it streams
                        flight.refusal = self.folders.admit(flight, body)
                    if flight.refusal:
                        raise MultiPartException("File size exceeded maximum allowed size: " + flight.refusal)
                return message

            async def guarded(message: Message) -> None:
                nonlocal answered
                if flight.refusal is None:
                    await send(message)
                elif message.get("type") == "http.response.start" and not answered:
                    answered = True  # the route's own answer to the parser's error is replaced by the reason
                    await self._refuse(receive, send, complete, flight.refusal)

            token = _FLIGHT.set(flight)
            try:
                await self.app(scope, counted, guarded)
            except MultiPartException:
                if left and flight.refusal is None:
                    return  # a route that did not answer the parser's error: nobody is there to read an answer
                if flight.refusal is None or answered:
                    raise
                await self._refuse(receive, send, complete, flight.refusal)
            finally:
                _FLIGHT.reset(token)
        finally:
            self.folders.land(flight)
            if flight.refusal:
                log.warning("upload from %s refused: %s", client, flight.refusal)


    async def _refuse(self, receive: Receive, send: Send, read: bool, text: str) -> None:
        """Answer 413 with ``text``. Unless the body was read (``read``) or the client waits to be asked for
        it (``Expect: 100-continue``), what is left of it is read and dropped first (at most ``request_bytes``,
        never stored): a server that closes with the body unread makes the client's system reset the
        connection, and the client would see that instead of the answer."""
        left = 0 if read else self.request_bytes
        while left > 0:
            message = await receive()
            left -= len(message.get("body", b""))
            if message.get("type") != "http.request" or not message.get("more_body", False):
                break
        await _answer(send, 413, text)


def _header(scope: Scope, wanted: bytes) -> bytes:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return bytes(value)
    return b""


def _multipart(scope: Scope) -> bool:
    return _header(scope, b"content-type").split(b";", 1)[0].strip().lower() == b"multipart/form-data"


def _content_length(scope: Scope) -> int | None:
    value = _header(scope, b"content-length").strip()
    return int(value) if value.isdigit() else None


async def _answer(send: Send, status: int, text: str) -> None:
    body = text.encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def upload_zip_limits(settings: Settings, folders: WorkFolders | None, what: str) -> ZipLimits:
    """The settings' limits on an uploaded zip (``AUGCLIP_UPLOAD_MAX_*``: its size, entries and expanded size), the
    expanded size also within the room left under the app's disk cap; ``what`` (e.g. "The batch") is refused at
    once when that room is gone. Every zip the page unpacks takes its limits from here."""
    import dataclasses

    from ..batch.ziputil import ZipLimits

    limits = ZipLimits.from_settings(settings)
    if folders is not None:
        folders.check_room(what)
        if folders.room() < limits.max_total_bytes:
            limits = dataclasses.replace(limits, max_total_bytes=folders.room(),
                                         total_limit="the room left under the app's disk cap, AUGCLIP_APP_DISK_MB")
    return limits
