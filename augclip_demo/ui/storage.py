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
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..batch.ziputil import ZipLimits
    from ..config import Settings

log = logging.getLogger(__name__)

_PREFIXES = ("augclip-app-", "augclip-batch-")
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


class WorkFolders:
    """Work folders per session id, with deletion on session end, by age and by total size."""

    def __init__(self, root: str | Path | None = None, *, max_age_s: float = 3600, max_bytes: int = 1 << 30):
        self.root = Path(root or tempfile.gettempdir())
        self.max_age_s = float(max_age_s)
        self.max_bytes = int(max_bytes)
        self._lock = threading.Lock()
        self._by_session: dict[str, list[Path]] = {}
        self._made: set[Path] = set()  # every folder this process made or adopted (the size cap's scope)
        self._total = 0  # bytes counted at the last sweep
        self._arrived = 0  # bytes uploaded since
        self.refused_uploads: set[str] = set()  # uploads deleted on arrival (the total was at the cap)
        self._wake = threading.Event()

    # ----------------------------------------------------------------- folders
    def new(self, session_id: str | None, prefix: str = "augclip-app-") -> Path:
        """A fresh folder owned by ``session_id`` (``None``: owned by nobody; only age and size delete it)."""
        folder = Path(tempfile.mkdtemp(prefix=prefix, dir=self.root))
        self.adopt(session_id, folder)
        return folder

    def adopt(self, session_id: str | None, folder: str | Path) -> None:
        """Make ``folder`` (created elsewhere, e.g. by a batch run) part of ``session_id``'s files."""
        with self._lock:
            self._made.add(Path(folder))
            if session_id:
                self._by_session.setdefault(session_id, []).append(Path(folder))

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
        """Bytes counted: at the last sweep, plus uploads since."""
        with self._lock:
            return self._total + self._arrived

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
        """Count uploads as they arrive; one arriving while the total is at the cap is deleted at once."""
        for path in paths:
            try:
                size = os.lstat(path).st_size
            except OSError:
                continue
            with self._lock:
                full = self._total + self._arrived + size > self.max_bytes
                if not full:
                    self._arrived += size
            if full:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                if len(self.refused_uploads) >= 10_000:  # a record for messages and tests, not a log: bounded
                    self.refused_uploads.clear()
                self.refused_uploads.add(str(path))
                log.warning("upload of %d bytes refused: the app's files are at their cap", size)
        self._wake.set()  # the timer sweeps now (evicting old files makes room)

    def watch_uploads(self, blocks: object, sweep: Callable[[], object], interval: float = _SWEEP_INTERVAL_S) -> None:
        """Count ``blocks``' uploads on arrival and run ``sweep`` every ``interval`` seconds (and after an
        upload), in a daemon thread, for as long as the process lives."""
        counted = _CountedSet(self, getattr(blocks, "upload_file_set", ()))
        sets = getattr(blocks, "temp_file_sets", [])
        for i, file_set in enumerate(sets):
            if file_set is getattr(blocks, "upload_file_set", None):
                sets[i] = counted
        blocks.upload_file_set = counted  # type: ignore[attr-defined]

        def run() -> None:
            while True:
                self._wake.wait(interval)
                self._wake.clear()
                try:
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
