"""Which results files the app may open, and the stores opened from them.

On a public server web clients never send a path: the operator names the files (``AUGCLIP_EXPLORE_FILES``,
``--explore-files``, ``augclip-demo explore RESULTS``), the page lists them by file name (and, for several,
all of them together, their runs kept apart), and a client picks one of those names. The first listed file is
opened in the background when the app starts (:meth:`Shelf.warm`), so the first visitor's Open answers at once.

An uploaded results file is bounded like other uploads (the app's zip limit) and opened into a store of the
uploading session under tighter DuckDB bounds (:data:`UPLOAD_MEMORY_MB`, one thread, no temporary files); at
most :data:`MAX_UPLOADED_STORES` such stores stay open, the oldest is closed first, so uploads hold at most
``MAX_UPLOADED_STORES * UPLOAD_MEMORY_MB`` of DuckDB memory together.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .judgments import JudgmentReader
from .store import DEFAULT_MEMORY_MB, OpenedFile, ResultsStore, open_results

log = logging.getLogger(__name__)

MAX_UPLOADED_STORES = 4
#: DuckDB memory of one uploaded store (about 40,000 records of a real run; a larger upload is refused with the
#: reason, and the operator can list such a file instead)
UPLOAD_MEMORY_MB = 256
UPLOAD_THREADS = 1
_UPLOAD_SUFFIXES = (".jsonl", ".parquet")
RECORDED = "recorded (manifest / results)"  # the file's own human judgments


@dataclass(frozen=True)
class NamedFile:
    label: str  # what the page shows and a client sends back: the file name (with a number when names repeat)
    results: Path
    manifest: Path | None


def parse_entries(entries: Sequence[str]) -> list[NamedFile]:
    """``RESULTS`` or ``RESULTS=MANIFEST`` entries as named files; each must exist (checked at start-up)."""
    named: list[NamedFile] = []
    seen: dict[str, int] = {}
    for entry in entries:
        results_text, _, manifest_text = entry.partition("=")
        results = Path(results_text.strip()).expanduser()
        manifest = Path(manifest_text.strip()).expanduser() if manifest_text.strip() else None
        if not results.exists():
            raise InputError(f"explore file {results}: not found (AUGCLIP_EXPLORE_FILES / --explore-files)")
        if manifest is not None and not manifest.is_file():
            raise InputError(f"explore manifest {manifest}: not found (AUGCLIP_EXPLORE_FILES entry {entry!r})")
        label = results.name
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label} ({seen[label]})"
        named.append(NamedFile(label, results, manifest))
    return named


class Shelf:
    """The operator's files (opened on first use, shared by every session) and the sessions' uploads."""

    def __init__(self, entries: Sequence[str], *, memory_limit_mb: int = DEFAULT_MEMORY_MB,
                 judgments: JudgmentReader | None = None):
        files = parse_entries(entries)
        self.named: dict[str, list[NamedFile]] = {item.label: [item] for item in files}
        if len(files) > 1:  # side by side in one store: their runs are numbered and kept apart
            self.named[f"all {len(files)} files together"] = files
        self.memory_limit_mb = memory_limit_mb
        self.judgments = judgments  # other sources of human judgments (the app: the operator's study database)
        self._open: dict[str, ResultsStore] = {}
        self._uploads: OrderedDict[str, ResultsStore] = OrderedDict()
        self._lock = threading.Lock()
        self._gates: dict[str, threading.Lock] = {}  # one per label: opening one file never waits for another

    def warm(self) -> threading.Thread | None:
        """Open the first listed file in a background thread (what the page shows first); a failure is left for
        the visitor's Open to report."""
        if not self.labels:
            return None

        def run() -> None:
            try:
                self.named_store(self.labels[0])
            except Exception:  # noqa: BLE001 - said to the visitor who opens it
                log.info("explore: %s could not be opened ahead", self.labels[0], exc_info=True)

        thread = threading.Thread(target=run, daemon=True, name="augclip-explore-warm")
        thread.start()
        return thread

    @property
    def labels(self) -> list[str]:
        return list(self.named)

    def named_store(self, label: str) -> ResultsStore:
        """The store of an operator file, by the label the page showed (anything else is refused)."""
        if label not in self.named:
            raise InputError("choose one of the listed results files")
        with self._lock:
            gate = self._gates.setdefault(label, threading.Lock())
        with gate:
            if label not in self._open:
                self._open[label] = open_results([OpenedFile(f.results, f.manifest) for f in self.named[label]],
                                                 memory_limit_mb=self.memory_limit_mb)
            return self._open[label]

    def add_upload(self, path: Path, max_mb: float) -> str:
        """Open an uploaded results file (size-checked); returns the token the session keeps."""
        if path.suffix.lower() not in _UPLOAD_SUFFIXES:
            kind = path.suffix or "file without extension"
            raise InputError(f"upload a batch results file ({' or '.join(_UPLOAD_SUFFIXES)}), got a {kind}")
        if not path.is_file():  # the server's space for uploads was full and it went on arrival, or it was swept
            raise InputError("the uploaded results file is no longer on the server (its space for uploads may be "
                             "full): upload it again later")
        size = path.stat().st_size
        if size > max_mb * (1 << 20):
            raise InputError(f"the results file is {size / (1 << 20):.1f} MB; uploads may be at most {max_mb:g} MB "
                             "(the operator can name larger files with AUGCLIP_EXPLORE_FILES)")
        return self.add_session_files(path)

    def add_session_files(self, results: Path, manifest: Path | None = None) -> str:
        """Open a session's results file (an upload, checked by the caller, or a run of the app's Batch tab) with
        its manifest beside its images, under the uploads' bounds; returns the token the session keeps."""
        store = open_results([OpenedFile(results, manifest)],
                             memory_limit_mb=min(self.memory_limit_mb, UPLOAD_MEMORY_MB), threads=UPLOAD_THREADS)
        token = uuid.uuid4().hex
        with self._lock:
            self._uploads[token] = store
            while len(self._uploads) > MAX_UPLOADED_STORES:
                _, oldest = self._uploads.popitem(last=False)
                oldest.close()
        return token

    def has_upload(self, key: str | None) -> bool:
        """Whether ``key`` (``upload:TOKEN``, as a page keeps it) names an upload whose store is still open."""
        kind, _, token = (key or "").partition(":")
        with self._lock:
            return kind == "upload" and token in self._uploads

    def upload_store(self, token: str) -> ResultsStore:
        with self._lock:
            if token not in self._uploads:
                raise InputError("the uploaded results are no longer open (the server keeps the latest few): "
                                 "upload the file again")
            self._uploads.move_to_end(token)
            return self._uploads[token]

    def judgment_choices(self) -> list[str]:
        """The sources of human judgments a page offers: the recorded ones, then the reader's (study questions)."""
        return [RECORDED, *(self.judgments.choices() if self.judgments is not None else [])]

    def store(self, key: str, judgments: str | None = None, *, fresh: bool = False) -> ResultsStore:
        """``named:LABEL`` or ``upload:TOKEN`` (what the page keeps in its state), with the human judgments of
        ``judgments`` (a label of :meth:`judgment_choices`; None or :data:`RECORDED`: the file's own), read from
        their source when first asked for or when ``fresh``, else the view made then."""
        kind, _, value = (key or "").partition(":")
        if kind == "named":
            store = self.named_store(value)
        elif kind == "upload":
            store = self.upload_store(value)
        else:
            raise InputError("open a results file first")
        if not judgments or judgments == RECORDED:
            return store
        if self.judgments is None:
            raise InputError("choose one of the listed sources of human judgments")
        kept = None if fresh else store.judged(judgments)
        # A kept view was read from a listed source: every view of a page reuses it without listing the sources
        # again; reading anew, the reader refuses a label it does not list.
        return kept or store.with_judgments(self.judgments.read(judgments), fresh=fresh)
