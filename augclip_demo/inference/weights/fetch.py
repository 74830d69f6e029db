"""Getting weight files onto this machine: the Hub client, the URL downloader and their checks.

Hub files go through ``huggingface_hub`` (so ``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HUB_OFFLINE``
work as everywhere else); a file already in the standard Hugging Face cache is used from there.
Every failure is one :class:`~augclip_demo.errors.WeightsUnavailableError` that names the model,
the file and what to do (the caller's how-to-fix text, from :mod:`augclip_demo.inference.families`).
:func:`local_only` makes every fetch look on disk only (``doctor``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import sys
import threading
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ...errors import WeightsUnavailableError

log = logging.getLogger(__name__)

MB = 1024 * 1024


# ---------------------------------------------------------------------- endpoint, offline, reachability


def hub_endpoint() -> str:
    """The Hub endpoint in effect: ``HF_ENDPOINT`` (read now, so a test or mirror can set it) or the default."""
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


_LOCAL_ONLY = threading.local()


@contextlib.contextmanager
def local_only() -> Iterator[None]:
    """Within this block the resolvers use what is on disk and never touch the network (``doctor``)."""
    previous = getattr(_LOCAL_ONLY, "on", False)
    _LOCAL_ONLY.on = True
    try:
        yield
    finally:
        _LOCAL_ONLY.on = previous


def hub_offline() -> bool:
    from huggingface_hub import constants

    if getattr(_LOCAL_ONLY, "on", False):
        return True
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    if value is not None:
        return value.strip().upper() in {"1", "ON", "YES", "TRUE"}
    return bool(constants.HF_HUB_OFFLINE)


def _offline_phrase() -> str:
    return "only the disk was searched" if getattr(_LOCAL_ONLY, "on", False) else "HF_HUB_OFFLINE is set"


def standard_hub_cache() -> Path:
    """Hugging Face's own cache folder (``HF_HUB_CACHE`` / ``HF_HOME``), read now."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def unreachable_reason(url: str, timeout: float = 3.0) -> str | None:
    """Why the host of ``url`` cannot be reached right now (name does not resolve, connection refused,
    time-out), or ``None`` when a TCP connection opens. Costs one connection attempt, so a dead endpoint
    fails in seconds instead of after a minute of the libraries' retries."""
    parsed = urlparse(url)
    host = parsed.hostname
    if not host:
        return f"{url!r} is not a URL"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror:
        return f"the host name {host} does not resolve (no network?)"
    except ConnectionRefusedError:
        return f"{host}:{port} refuses connections"
    except TimeoutError:
        return f"{host}:{port} did not answer within {timeout:g} s"
    except OSError as exc:
        return f"{host}:{port} cannot be reached ({exc.strerror or exc})"


def _host(url: str) -> str:
    return urlparse(url).netloc or url


# ---------------------------------------------------------------------- file checks


def check_weight_file(path: Path) -> str | None:
    """A reason why ``path`` is not a complete weight/config file, judged by its format; ``None`` if it looks whole.

    safetensors: the header's byte ranges must end exactly at the file's end. PyTorch zip
    checkpoints: the zip directory must be readable (it sits at the end, so truncation breaks it).
    JSON: must parse. Other formats are only checked to be non-empty.
    """
    try:
        size = path.stat().st_size
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if size == 0:
        return "is empty"
    name = path.name
    try:
        if name.endswith(".safetensors"):
            with open(path, "rb") as handle:
                header_len = int.from_bytes(handle.read(8), "little")
                if header_len <= 0 or 8 + header_len > size:
                    return f"is truncated or not safetensors ({size} bytes, header claims {header_len})"
                header = json.loads(handle.read(header_len))
            end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
            if 8 + header_len + end != size:
                return f"is truncated ({size} bytes; its header describes {8 + header_len + end})"
        elif name.endswith((".bin", ".pth", ".pt")):
            if zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as archive:
                    archive.infolist()
            else:
                with open(path, "rb") as handle:
                    magic = handle.read(2)
                if magic != b"\x80\x02":  # legacy (non-zip) torch.save files start with a pickle protocol 2 opcode
                    return "is not a PyTorch checkpoint (no zip directory: truncated or a different file)"
        elif name.endswith(".json"):
            json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        return f"is truncated or corrupt ({type(exc).__name__}: {str(exc)[:120]})"
    return None


def sha256_of(path: Path, chunk: int = 4 * MB) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------- hub files


def _try_cached(repo_id: str, filename: str, cache_dirs: Sequence[Path]) -> tuple[Path, Path] | None | bool:
    """``(path, cache_dir)`` of a cached copy; ``False`` when a cache records the file as absent; else ``None``."""
    from huggingface_hub import try_to_load_from_cache

    known_missing = False
    for cache_dir in cache_dirs:
        found = try_to_load_from_cache(repo_id, filename, cache_dir=str(cache_dir))
        if isinstance(found, str):
            return Path(found), cache_dir
        if found is not None:  # the cache's "does not exist at this commit" marker
            known_missing = True
    return False if known_missing else None


@dataclass
class HubFetch:
    """Where hub files go and how to talk about them."""

    model: str  # e.g. "CLIP ViT-B-16/openai"
    repo_id: str
    cache_dir: Path  # our cache for new downloads
    how_to_fix: str
    progress: bool = False
    reuse_standard_cache: bool = True
    downloaded: list[Path] = field(default_factory=list)

    @property
    def cache_dirs(self) -> list[Path]:
        dirs = [self.cache_dir]
        if self.reuse_standard_cache:
            standard = standard_hub_cache()
            if standard.resolve() != self.cache_dir.resolve():
                dirs.append(standard)
        return dirs

    def url(self, filename: str) -> str:
        return f"{hub_endpoint()}/{self.repo_id}/resolve/main/{filename}"

    def fail(self, filename: str, what: str, extra: str = "", cause: BaseException | None = None) -> WeightsUnavailableError:
        return WeightsUnavailableError(self.model, f"{self.url(filename)}: {what}", (extra + " " + self.how_to_fix).strip(),
                                       cause)

    def fetch(self, alternatives: Sequence[str], *, required: bool = True) -> Path | None:
        """The local path of the first of ``alternatives`` the repository has (cached or downloaded).

        ``required=False`` returns ``None`` when the repository has none of them; every other
        problem (refused, rate-limited, unreachable, corrupt) raises for optional files too.
        """
        names = list(alternatives)
        recorded_missing = 0
        for name in names:
            cached = _try_cached(self.repo_id, name, self.cache_dirs)
            if cached is False:
                recorded_missing += 1
                continue
            if cached:
                path, _ = cached
                problem = check_weight_file(path)
                if problem is None:
                    return path
                if hub_offline():
                    raise WeightsUnavailableError(
                        self.model, f"the cached file {path} ({name} of {self.repo_id})",
                        f"The cached copy {problem}. Delete {path.resolve()} and run again with a network "
                        "(HF_HUB_OFFLINE unset) to download it again.")
                log.warning("cached %s of %s %s; downloading it again", name, self.repo_id, problem)
                return self._download(name, force=True)
        if hub_offline():
            if not required and recorded_missing:
                return None
            if not required:
                return None
            raise WeightsUnavailableError(
                self.model,
                f"{' or '.join(names)} of {self.repo_id}: not in the local caches ({', '.join(map(str, self.cache_dirs))}) "
                f"and {_offline_phrase()}",
                self.how_to_fix)
        self._require_endpoint(names[0])
        for name in names:
            path = self._download(name, force=False, missing_ok=True)
            if path is not None:
                return path
        if not required:
            return None
        raise self.fail(names[0], f"the repository has no {' or '.join(names)}",
                        "It is not a complete model repository (the weights may have been moved or deleted).")

    def _require_endpoint(self, filename: str) -> None:
        reason = unreachable_reason(hub_endpoint())
        if reason is not None:
            raise self.fail(filename, f"not in the local caches ({', '.join(map(str, self.cache_dirs))}), and {reason}",
                            "Check the network (and HF_ENDPOINT, now " + (os.environ.get("HF_ENDPOINT") or "unset") + ").")

    def _download(self, name: str, *, force: bool, missing_ok: bool = False) -> Path | None:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import (
            GatedRepoError,
            HfHubHTTPError,
            LocalEntryNotFoundError,
            RemoteEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        endpoint = hub_endpoint()
        try:
            # One HEAD without retries first: a refusal, rate limit or missing file is known at once
            # (hf_hub_download retries 429s for about 20 s and reports every failure as "not cached").
            from huggingface_hub import get_hf_file_metadata

            get_hf_file_metadata(self.url(name), timeout=10, retry_on_errors=False)
            found = hf_hub_download(self.repo_id, name, cache_dir=str(self.cache_dir), endpoint=endpoint,
                                    force_download=force, tqdm_class=None if self.progress else _SilentTqdm)
        except RemoteEntryNotFoundError as exc:
            if missing_ok:
                return None
            raise self.fail(name, "the file does not exist in the repository", cause=exc) from exc
        except GatedRepoError as exc:
            raise self.fail(name, "the repository is gated (HTTP "
                            f"{_status(exc)}): its licence must be accepted on the model page first",
                            f"Accept the terms at {endpoint}/{self.repo_id} and set HF_TOKEN to a token of that account.",
                            ) from exc
        except RepositoryNotFoundError as exc:
            raise self.fail(name, f"the repository {self.repo_id} does not exist on {_host(endpoint)} (or is private; "
                            f"HTTP {_status(exc)})",
                            "Check the model name; for a private repository set HF_TOKEN.") from exc
        except RevisionNotFoundError as exc:
            raise self.fail(name, "the revision main does not exist", cause=exc) from exc
        except HfHubHTTPError as exc:
            status = _status(exc)
            what = {401: "access refused (HTTP 401: not authorised)",
                    403: "access refused (HTTP 403: forbidden)",
                    429: "the server is rate-limiting requests (HTTP 429)"}.get(status, f"HTTP error {status}")
            extra = ("Wait a minute and try again, or log in (HF_TOKEN) for a higher limit." if status == 429 else
                     "Set HF_TOKEN to a token that may read this repository, or check the mirror's permissions."
                     if status in (401, 403) else "")
            raise self.fail(name, what, extra) from exc
        except (LocalEntryNotFoundError, OSError) as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, HfHubHTTPError) and cause is not exc:
                raise self.fail(name, f"HTTP error {_status(cause)} ({_first_line(cause)})") from exc
            raise self.fail(name, f"the download from {_host(endpoint)} failed ({type(exc).__name__}: "
                            f"{_first_line(exc)})") from exc
        path = Path(found)
        problem = check_weight_file(path)
        if problem is not None:
            raise self.fail(name, f"the downloaded file {problem}",
                            f"Delete {path.resolve()} and try again; if it persists, the server sends a broken file.")
        self.downloaded.append(path)
        return path


def _status(exc: Any) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


try:  # a tqdm that shows nothing, for loads (``download`` shows progress)
    from tqdm.auto import tqdm as _tqdm

    class _SilentTqdm(_tqdm):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)
except ImportError:  # pragma: no cover - tqdm comes with huggingface_hub
    _SilentTqdm = None  # type: ignore[assignment,misc]


# ---------------------------------------------------------------------- URL files (SAM, old open_clip tags)


def fetch_url(model: str, url: str, target: Path, how_to_fix: str, *, sha256: str | None = None,
              progress: bool = False, timeout: float = 30.0) -> Path:
    """``target`` when it is already there and whole, else ``url`` downloaded to it (atomically), checked.

    ``sha256`` (hex) is compared with the file's digest, cached or new; a mismatch names the file.
    """
    if target.is_file():
        problem = check_weight_file(target)
        if problem is None and sha256 and sha256_of(target) != sha256.lower():
            problem = f"has SHA-256 {sha256_of(target)[:12]}..., expected {sha256.lower()[:12]}..."
        if problem is None:
            return target
        if hub_offline():
            raise WeightsUnavailableError(model, f"the cached file {target}",
                                          f"It {problem}. Delete it and run again with a network. {how_to_fix}")
        log.warning("cached %s %s; downloading it again", target, problem)
        target.unlink()
    if hub_offline():
        raise WeightsUnavailableError(model, f"{url} (not found at {target}, and {_offline_phrase()})", how_to_fix)
    reason = unreachable_reason(url)
    if reason is not None:
        raise WeightsUnavailableError(model, f"{url} (not found at {target}, and {reason})", how_to_fix)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "augclip-demo"})
        with urllib.request.urlopen(request, timeout=timeout) as response, open(partial, "wb") as out:
            total = int(response.headers.get("Content-Length") or 0)
            done = 0
            shown = -1
            while block := response.read(MB):
                out.write(block)
                done += len(block)
                if progress and total and (pct := done * 100 // total) // 5 != shown:
                    shown = pct // 5
                    print(f"\r  {target.name}: {done / MB:,.1f} / {total / MB:,.1f} MiB ({pct}%)", end="",
                          file=sys.stderr, flush=True)
            if progress and total:
                print(file=sys.stderr)
        if total and done != total:
            raise OSError(f"the connection closed after {done} of {total} bytes")
    except urllib.error.HTTPError as exc:
        partial.unlink(missing_ok=True)
        hint = {401: "access refused (HTTP 401)", 403: "access refused (HTTP 403)", 404: "no such file (HTTP 404)",
                429: "rate-limited (HTTP 429): try again later"}.get(exc.code, f"HTTP error {exc.code}")
        raise WeightsUnavailableError(model, f"{url}: {hint}", how_to_fix) from exc
    except (OSError, urllib.error.URLError) as exc:
        partial.unlink(missing_ok=True)
        raise WeightsUnavailableError(model, f"{url} (downloading into {target})", how_to_fix, exc) from exc
    problem = check_weight_file(partial)
    if problem is None and sha256:
        digest = sha256_of(partial)
        if digest != sha256.lower():
            problem = f"has SHA-256 {digest}, expected {sha256.lower()} (corrupt or a different file)"
    if problem is not None:
        partial.unlink(missing_ok=True)
        raise WeightsUnavailableError(model, f"{url}: the downloaded file {problem}",
                                      "Try again; if it persists, check AUGCLIP_SAM_URL / AUGCLIP_SAM_SHA256 or the "
                                      "mirror. " + how_to_fix)
    partial.replace(target)
    return target


# ---------------------------------------------------------------------- preflight (no download, no load)


def require_hub_available(model: str, repo_id: str, alternatives: Sequence[str], cache_dir: Path, how_to_fix: str) -> None:
    """Raise at once if none of ``alternatives`` is cached and the hub cannot be reached (loads nothing)."""
    fetch = HubFetch(model, repo_id, Path(cache_dir), how_to_fix)
    for name in alternatives:
        cached = _try_cached(repo_id, name, fetch.cache_dirs)
        if cached:
            return
    if hub_offline():
        raise WeightsUnavailableError(
            model, f"{' or '.join(alternatives)} of {repo_id}: not in the local caches "
            f"({', '.join(map(str, fetch.cache_dirs))}) and {_offline_phrase()}", how_to_fix)
    fetch._require_endpoint(alternatives[0])


def require_url_available(model: str, url: str, target: Path, how_to_fix: str) -> None:
    """Raise at once if ``target`` is missing and ``url`` cannot be reached (downloads nothing)."""
    if target.is_file():
        return
    if hub_offline():
        raise WeightsUnavailableError(model, f"{url} (not found at {target}, and {_offline_phrase()})", how_to_fix)
    if (reason := unreachable_reason(url)) is not None:
        raise WeightsUnavailableError(model, f"{url} (not found at {target}, and {reason})", how_to_fix)
