"""Download preflight shared by every model loader (CLIP, GroundingDINO, SAM).

Without a network, huggingface_hub retries each file with exponential backoff for close to a
minute before it gives up. When the weights are not already in the local cache and the download
host cannot even be resolved, waiting is pointless: we fail at once with the same specific
:class:`~augclip_demo.errors.WeightsUnavailableError` the slow path would end in. With a network,
or with the files cached, the libraries' normal download path runs unchanged.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlparse

from ..errors import WeightsUnavailableError

_REACHABLE: dict[str, tuple[float, bool]] = {}
_LOCK = threading.Lock()
_TTL_SECONDS = 60.0


def host_resolves(url_or_host: str, timeout: float = 3.0) -> bool:
    """True when the host name resolves (result memoised for a minute)."""
    host = urlparse(url_or_host).hostname if "://" in url_or_host else url_or_host
    if not host:
        return False
    now = time.monotonic()
    with _LOCK:
        cached = _REACHABLE.get(host)
        if cached and now - cached[0] < _TTL_SECONDS:
            return cached[1]
    result: list[bool] = []

    def resolve() -> None:
        try:
            socket.getaddrinfo(host, 443)
            result.append(True)
        except OSError:
            result.append(False)

    worker = threading.Thread(target=resolve, daemon=True)
    worker.start()
    worker.join(timeout)
    ok = bool(result and result[0])
    with _LOCK:
        _REACHABLE[host] = (now, ok)
    return ok


def hub_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def hub_offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.is_offline_mode())


def cached_hub_file(repo_id: str, filenames: Iterable[str], cache_dir: Path | str | None) -> str | None:
    """Path of the first of ``filenames`` already in the hub cache, else ``None``."""
    from huggingface_hub import try_to_load_from_cache

    for filename in filenames:
        found = try_to_load_from_cache(repo_id, filename, cache_dir=str(cache_dir) if cache_dir else None)
        if isinstance(found, str):
            return found
    return None


def require_hub_files(
    model: str,
    repo_id: str,
    filenames: Iterable[str],
    cache_dir: Path | str | None,
    how_to_fix: str,
) -> None:
    """Raise at once if none of ``filenames`` is cached and the hub cannot be reached."""
    names = list(filenames)
    if cached_hub_file(repo_id, names, cache_dir) is not None:
        return
    endpoint = hub_endpoint()
    where = f"{endpoint}/{repo_id} (files: {', '.join(names)}), not found in the local cache {cache_dir}"
    if hub_offline():
        raise WeightsUnavailableError(model, where + " while HF_HUB_OFFLINE is set", how_to_fix)
    if not host_resolves(endpoint):
        raise WeightsUnavailableError(model, where + f", and {urlparse(endpoint).hostname} cannot be reached (no network)", how_to_fix)


def require_url_reachable(model: str, url: str, local_target: Path, how_to_fix: str) -> None:
    """Raise at once if ``local_target`` is missing and the host of ``url`` cannot be resolved."""
    if local_target.is_file():
        return
    if not host_resolves(url):
        raise WeightsUnavailableError(
            model,
            f"{url} (not found at {local_target}, and {urlparse(url).hostname} cannot be reached: no network)",
            how_to_fix,
        )
