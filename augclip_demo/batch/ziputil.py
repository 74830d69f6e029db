"""Safe extraction of uploaded zips (the app's batch upload).

Refused, with a message saying what and why: a file over the compressed-size limit, not a zip,
more files than the file-count limit, a total uncompressed size over its limit (declared sizes are
checked first, and the bytes actually written are counted too, so a zip that lies in its headers
is still stopped), absolute paths (``/x``, ``C:\\x``), ``..`` components, symbolic links,
encrypted entries, duplicate names, a name used both as a file and as a folder, names nested more
than :data:`_MAX_DEPTH` folders deep or longer than the file system allows, and control characters in
names. macOS metadata (``__MACOSX/``, ``.DS_Store``) is skipped. Messages name the zip entry, never the
server's folders.
"""

from __future__ import annotations

import re
import stat
import struct
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..config import SETTING, Settings
from ..errors import BatchCancelled, UnsafeArchiveError

MB = 1024 * 1024
_CHUNK = 1024 * 1024
_MAX_DEPTH = 32  # folders above a file inside a zip
_MAX_PART_BYTES = 255  # one file or folder name (the common file-system limit)


@dataclass(frozen=True)
class ZipLimits:
    # the defaults are the settings' (config.SETTINGS), in bytes
    max_zip_bytes: int = SETTING["upload_max_zip_mb"].default * MB
    max_files: int = SETTING["upload_max_files"].default
    max_total_bytes: int = SETTING["upload_max_unzipped_mb"].default * MB
    total_limit: str = "AUGCLIP_UPLOAD_MAX_UNZIPPED_MB"  # what sets max_total_bytes, for the message

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> ZipLimits:
        settings = settings or Settings()
        return cls(max_zip_bytes=settings.upload_max_zip_mb * MB, max_files=settings.upload_max_files,
                   max_total_bytes=settings.upload_max_unzipped_mb * MB)


def _size(n: int) -> str:
    if n >= MB:
        return f"{n / MB:.1f} MB"
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} bytes"


def _is_skipped(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return bool(parts) and (parts[0] == "__MACOSX" or parts[-1] == ".DS_Store")


def _check_member_name(name: str) -> PurePosixPath:
    """The entry's relative path, or :class:`UnsafeArchiveError` for absolute / ``..`` names."""
    text = name.replace("\\", "/")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text):
        raise UnsafeArchiveError(f"the zip entry {name!r} has an absolute path; zips must hold relative paths only")
    path = PurePosixPath(text)
    if ".." in path.parts:
        raise UnsafeArchiveError(f"the zip entry {name!r} contains '..' (it would be written outside the upload "
                                 "folder); the zip was refused")
    if not path.parts:
        raise UnsafeArchiveError(f"the zip entry {name!r} has an empty name")
    if any(ord(char) < 32 for char in text):
        raise UnsafeArchiveError(f"the zip entry {name!r} has a control character in its name")
    if len(path.parts) > _MAX_DEPTH + 1:
        raise UnsafeArchiveError(f"the zip entry {name[:80]!r}... is nested {len(path.parts) - 1} folders deep; "
                                 f"at most {_MAX_DEPTH} are accepted")
    if any(len(part.encode("utf-8", "surrogatepass")) > _MAX_PART_BYTES for part in path.parts):
        raise UnsafeArchiveError(f"the zip entry {name[:80]!r}... has a file or folder name longer than "
                                 f"{_MAX_PART_BYTES} bytes")
    return path


_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_CENTRAL = b"PK\x01\x02"


def count_entries(zip_path: Path, limit: int) -> int:
    """Entries (files, folders, links: every kind) in the zip's central directory, counted by walking its
    headers without building them, so a zip of a million entries is refused in a moment and in constant
    memory (``zipfile`` reads the whole directory into objects first: 41 s and +560 MB for a million
    folder entries). Counting stops past ``limit``; the declared count cannot hide entries, as the walk
    covers the directory's declared size."""
    size = zip_path.stat().st_size
    with open(zip_path, "rb") as handle:
        tail_at = max(0, size - (65536 + 22))
        handle.seek(tail_at)
        tail = handle.read()
        end = tail.rfind(_EOCD)
        if end < 0 or len(tail) - end < 22:
            raise UnsafeArchiveError(f"{zip_path.name} is not a zip file (no end of central directory)")
        declared, cd_size, cd_offset = struct.unpack_from("<HII", tail, end + 10)
        if end >= 20 and tail[end - 20:end - 16] == _ZIP64_LOCATOR:  # zip64: sizes in the zip64 end record
            (record_at,) = struct.unpack_from("<Q", tail, end - 20 + 8)
            handle.seek(record_at)
            record = handle.read(56)
            if len(record) == 56 and record[:4] == b"PK\x06\x06":
                declared, cd_size, cd_offset = struct.unpack_from("<QQQ", record, 32)
        if declared > limit:
            return declared
        if cd_offset + cd_size > size:
            raise UnsafeArchiveError(f"{zip_path.name} is not a readable zip (its directory lies past the file's end)")
        handle.seek(cd_offset)
        count, read, pos, buffer = 0, 0, 0, bytearray()

        def have(n: int) -> bool:  # at least n bytes from pos in the buffer (read on while the directory lasts)
            nonlocal read
            while len(buffer) - pos < n and read < cd_size:
                chunk = handle.read(min(_CHUNK, cd_size - read))
                if not chunk:
                    return False
                read += len(chunk)
                buffer.extend(chunk)
            return len(buffer) - pos >= n

        while have(46) and buffer[pos:pos + 4] == _CENTRAL:
            name_len, extra_len, comment_len = struct.unpack_from("<HHH", buffer, pos + 28)
            skip = 46 + name_len + extra_len + comment_len
            if not have(skip):
                break
            pos += skip
            count += 1
            if count > limit:
                return count
            if pos > _CHUNK:  # drop what was walked (the buffer stays about one chunk)
                del buffer[:pos]
                pos = 0
    return max(count, declared)


def safe_extract(zip_path: str | Path, dest: str | Path, limits: ZipLimits | None = None, *,
                 cancel: threading.Event | None = None) -> list[Path]:
    """Extract ``zip_path`` into ``dest`` after every check above; returns the files written. Setting
    ``cancel`` stops between entries (:class:`~augclip_demo.errors.BatchCancelled`)."""
    limits = limits or ZipLimits()  # the declared defaults
    zip_path, dest = Path(zip_path), Path(dest)
    if not zip_path.is_file():
        raise UnsafeArchiveError(f"uploaded zip {zip_path.name}: file not found")
    size = zip_path.stat().st_size
    if size > limits.max_zip_bytes:
        raise UnsafeArchiveError(f"the zip is {_size(size)}, over the upload limit of {_size(limits.max_zip_bytes)} "
                                 "(AUGCLIP_UPLOAD_MAX_ZIP_MB)")
    if not zipfile.is_zipfile(zip_path):
        raise UnsafeArchiveError(f"{zip_path.name} is not a zip file; upload a .zip of the manifest's images")
    entries = count_entries(zip_path, limits.max_files)
    if entries > limits.max_files:
        raise UnsafeArchiveError(f"the zip holds more than {limits.max_files} entries (files and folders), over the "
                                 "limit (AUGCLIP_UPLOAD_MAX_FILES)")
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UnsafeArchiveError(f"{zip_path.name} is not a readable zip ({exc})") from None
    with archive:
        members = [m for m in archive.infolist() if not _is_skipped(m.filename)]
        files = [m for m in members if not m.is_dir()]
        if len(files) > limits.max_files:
            raise UnsafeArchiveError(f"the zip holds {len(files)} files, over the limit of {limits.max_files} "
                                     "(AUGCLIP_UPLOAD_MAX_FILES)")
        declared = sum(m.file_size for m in files)
        if declared > limits.max_total_bytes:
            raise UnsafeArchiveError(f"the zip expands to {_size(declared)}, over the limit of "
                                     f"{_size(limits.max_total_bytes)} ({limits.total_limit})")
        seen: set[str] = set()
        folders: set[str] = set()
        planned: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
        for member in members:
            relative = _check_member_name(member.filename)
            mode = member.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise UnsafeArchiveError(f"the zip entry {member.filename!r} is a symbolic link; links are refused "
                                         "(they could point outside the upload)")
            if member.flag_bits & 0x1:
                raise UnsafeArchiveError(f"the zip entry {member.filename!r} is encrypted; upload an unencrypted zip")
            key = relative.as_posix().lower()
            parents = [p.as_posix().lower() for p in relative.parents if p.parts]
            folders.update(parents + ([key] if member.is_dir() else []))
            if member.is_dir():
                continue
            if key in seen:
                raise UnsafeArchiveError(f"the zip has two entries named {member.filename!r}")
            seen.add(key)
            planned.append((member, relative))
        clashes = seen & folders
        if clashes:
            raise UnsafeArchiveError(f"the zip uses {min(clashes)!r} both as a file and as a folder; rename one "
                                     "of them")
        dest.mkdir(parents=True, exist_ok=True)
        root = dest.resolve()
        written: list[Path] = []
        total = 0
        for member, relative in planned:
            if cancel is not None and cancel.is_set():
                raise BatchCancelled("the batch was cancelled while its zip was extracted")
            target = root.joinpath(*relative.parts)
            if root not in target.resolve().parents:
                raise UnsafeArchiveError(f"the zip entry {member.filename!r} would be written outside the upload folder")
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member) as src, open(target, "wb") as dst:
                    while chunk := src.read(_CHUNK):
                        total += len(chunk)
                        if total > limits.max_total_bytes:
                            raise UnsafeArchiveError(
                                f"the zip expands to more than {_size(limits.max_total_bytes)} (its headers understate "
                                f"the sizes); refused ({limits.total_limit})")
                        dst.write(chunk)
            except (zipfile.BadZipFile, EOFError, NotImplementedError, RuntimeError) as exc:
                raise UnsafeArchiveError(f"the zip entry {member.filename!r} could not be read ({exc})") from None
            except OSError as exc:  # strerror only: the full text would show the server's folder
                raise UnsafeArchiveError(f"the zip entry {member.filename!r} could not be extracted "
                                         f"({exc.strerror or type(exc).__name__})") from None
            written.append(target)
    return written
