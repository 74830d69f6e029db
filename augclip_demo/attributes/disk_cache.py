"""On-disk JSON cache of extracted attributes.

One file per extraction under ``AUGCLIP_CACHE_DIR/attributes/<provider>/``, named by the SHA-256
of its key: (source image content hash, target text, source text, provider, model, prompt
version, seed, samples, plus any provider option that changes the result). The key is stored in
the file too and checked on read. Files are written atomically (temporary file + rename), so
concurrent runs never see half a file. A file that cannot be read back (truncated, edited, from
another version) is ignored with a warning and rewritten: a broken cache never fails a run.

Nothing secret goes in: provenance carries the base URL without user info or query, never a key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..config import Settings
from ..errors import AugclipError
from .base import Attributes

log = logging.getLogger(__name__)
T = TypeVar("T")

_CACHE_FORMAT = 1


def cache_key(parts: dict[str, Any]) -> str:
    """SHA-256 of the key parts as canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class KeyedJsonCache:
    """Values stored one per JSON file, named by the SHA-256 of their key parts, under ``root``.

    Each file holds ``{"format", "key", ...the value's fields}``. A file that cannot be read, is of
    another format, whose stored key does not match its name, or whose value does not parse is a
    miss, warned about and rewritten; a write failure (read-only or full disk) is warned about, never
    raised: a broken cache never fails a run. Subclasses name the folder and parse their values.
    """

    #: The cache's name in messages ("attribute", "judge") and its folder under ``AUGCLIP_CACHE_DIR``.
    what = "value"
    folder = "values"

    def __init__(self, root: str | Path | None = None, settings: Settings | None = None):
        if root is None:
            root = (settings or Settings()).cache_dir / self.folder
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def path_for(self, parts: dict[str, Any]) -> Path:
        return self.root / f"{cache_key(parts)}.json"

    def _read(self, parts: dict[str, Any], parse: Callable[[dict[str, Any], Path], T],
              errors: tuple[type[Exception], ...] = ()) -> T | None:
        """``parse(entry, path)`` of the entry for ``parts``, or None on a miss; ``errors`` are parse failures."""
        path = self.path_for(parts)
        if not path.is_file():
            self.misses += 1
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != _CACHE_FORMAT:
                raise ValueError(f"not a format-{_CACHE_FORMAT} {self.what} cache entry")
            if data.get("key") != json.loads(json.dumps(parts, default=str)):
                raise ValueError("its stored key does not match its name")
            value = parse(data, path)
        except (OSError, UnicodeDecodeError, ValueError, *errors) as exc:
            log.warning("%s cache file %s is unreadable (%s); ignoring it, it will be rewritten",
                        self.what, path, str(exc).splitlines()[0][:200])
            self.misses += 1
            return None
        self.hits += 1
        return value

    def _write(self, parts: dict[str, Any], fields: dict[str, Any]) -> Path | None:
        """Store ``fields`` under ``parts``; the file's path, or None when it could not be written (warned)."""
        path = self.path_for(parts)
        entry = {"format": _CACHE_FORMAT, "key": parts, **fields}
        try:
            write_atomic(path, json.dumps(entry, ensure_ascii=False, indent=1, default=str).encode("utf-8"))
        except OSError as exc:
            log.warning("could not write the %s cache file %s (%s); continuing without caching it", self.what, path,
                        exc)
            return None
        return path


class AttributeCache(KeyedJsonCache):
    """Get and put :class:`Attributes` by key parts. ``root`` defaults to ``AUGCLIP_CACHE_DIR/attributes``."""

    what = "attribute"
    folder = "attributes"

    def path_for(self, parts: dict[str, Any]) -> Path:
        provider = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(parts.get("provider", "any")))
        return self.root / provider / f"{cache_key(parts)}.json"

    def get(self, parts: dict[str, Any]) -> Attributes | None:
        """The cached attributes, or ``None`` on a miss or an unreadable file (warned about)."""
        def parse(data: dict[str, Any], path: Path) -> Attributes:
            attributes = Attributes.from_dict(data.get("attributes"), origin=str(path))
            attributes.validate()
            return attributes

        return self._read(parts, parse, (AugclipError,))

    def put(self, parts: dict[str, Any], attributes: Attributes) -> Path | None:
        """Store ``attributes``; a write failure (read-only disk, full disk) is warned about, not raised."""
        return self._write(parts, {"attributes": attributes.to_dict()})


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, so that readers (other
    processes sharing the cache) see the old file or the whole new one, never a half-written one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
