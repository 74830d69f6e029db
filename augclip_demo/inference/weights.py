"""Model weights: one table of facts and one resolver from a model spec to local files.

The table (:data:`PRETRAINED`) is the one place that says, for every model this tool knows by name,
where its files come from, which files they are, roughly how large, under which licence, and
(where published) their checksum. The resolvers turn a spec into local paths:

* CLIP (open_clip): ``ARCH/TAG`` -> the tag's Hugging Face repository (or URL) in open_clip's own
  pretrained table; ``hf-hub:ORG/REPO`` -> ``open_clip_config.json`` + weights; ``local-dir:PATH``
  and checkpoint files -> checked on disk; ``random:`` -> nothing to fetch.
* GroundingDINO (transformers): a hub id -> the files ``from_pretrained`` needs, fetched one by one
  into a snapshot folder; a local folder -> checked on disk.
* SAM (segment-anything): an official checkpoint URL (overridable with ``AUGCLIP_SAM_URL``, checked
  against ``AUGCLIP_SAM_SHA256`` when given) or a local file.

Hub files go through ``huggingface_hub`` (so ``HF_ENDPOINT``, ``HF_TOKEN`` and ``HF_HUB_OFFLINE``
work as everywhere else); a file already in the standard Hugging Face cache is used from there.
Every failure ends in one :class:`~augclip_demo.errors.WeightsUnavailableError` that names the model,
the file and what to do. Nothing here ever hands back "no weights" for a non-``random:`` spec: a
model whose files cannot be had stops the run.
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..errors import WeightsUnavailableError

log = logging.getLogger(__name__)

MB = 1024 * 1024

# ---------------------------------------------------------------------- the table


@dataclass(frozen=True)
class PretrainedWeights:
    """Facts about one published set of weights."""

    family: str  # "clip", "gdino", "owlvit", "sam" or "sam2" (and the feature networks)
    spec: str  # what the user types (--clip-model / --gdino-model / --sam-model)
    source: str  # "hf-hub:ORG/REPO" or a URL
    files: tuple[str, ...]  # the weight file(s) first, then configs
    size_mb: float  # the weight file, MiB (parameters x 4 bytes, rounded; approximate)
    licence: str
    sha256: str | None = None  # of the weight file, where published
    note: str = ""

    @property
    def repo_id(self) -> str | None:
        return self.source[len("hf-hub:"):] if self.source.startswith("hf-hub:") else None


#: SAM's official checkpoints (segment-anything's README), by architecture.
SAM_CHECKPOINT_URLS: dict[str, str] = {
    "vit_h": "https://dl.fbaipublicfiles.com/segment_anything/sam_vit_h_4b8939.pth",
    "vit_l": "https://dl.fbaipublicfiles.com/segment_anything/sam_vit_l_0b3195.pth",
    "vit_b": "https://dl.fbaipublicfiles.com/segment_anything/sam_vit_b_01ec64.pth",
}

#: Files a GroundingDINO folder in transformers' layout holds: (alternatives, required). The hub
#: repositories have preprocessor_config.json; transformers 5's save_pretrained writes processor_config.json.
GDINO_WEIGHT_ALTERNATIVES = ("model.safetensors", "pytorch_model.bin")
GDINO_FILES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("config.json",), True),
    (GDINO_WEIGHT_ALTERNATIVES, True),
    (("preprocessor_config.json", "processor_config.json"), True),
    (("tokenizer_config.json",), True),
    (("vocab.txt",), False),
    (("tokenizer.json",), False),
    (("special_tokens_map.json",), False),
)
#: open_clip looks for these weight files in a hub repository, in this order.
OPEN_CLIP_WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
OPEN_CLIP_CONFIG = "open_clip_config.json"

#: Files of a transformers ViT / DINOv2 repository: (alternatives, required).
DINO_WEIGHT_ALTERNATIVES = ("model.safetensors", "pytorch_model.bin")
DINO_FILES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("config.json",), True),
    (DINO_WEIGHT_ALTERNATIVES, True),
)
_DINO_PUBLISHED = ("model.safetensors", "config.json")
#: torchvision's ImageNet weights for the LPIPS backbones (torchvision's own weight tables; the file
#: name's 8 hex digits are the start of its SHA-256, which torchvision checks and so do we).
TORCHVISION_BACKBONE_URLS: dict[str, str] = {
    "alex": "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth",
    "squeeze": "https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth",
    "vgg": "https://download.pytorch.org/models/vgg16-397923af.pth",
}
#: torch-fidelity's Inception-v3 (TensorFlow FID weights, converted): torch_fidelity.URL_INCEPTION_V3.
FID_INCEPTION_URL = ("https://github.com/toshas/torch-fidelity/releases/download/v0.2.0/"
                     "weights-inception-2015-12-05-6726825d.pth")

_GDINO_PUBLISHED = ("model.safetensors", "config.json", "preprocessor_config.json", "tokenizer_config.json",
                    "vocab.txt", "tokenizer.json", "special_tokens_map.json")

#: A SAM 2 folder in transformers' layout (Sam2Model + Sam2Processor): (alternatives, required).
SAM2_FILES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("config.json",), True),
    (GDINO_WEIGHT_ALTERNATIVES, True),
    (("preprocessor_config.json", "processor_config.json"), True),
)
_SAM2_PUBLISHED = ("model.safetensors", "config.json", "preprocessor_config.json")

#: An OWL-ViT folder in transformers' layout (OwlViTForObjectDetection + OwlViTProcessor with CLIP's tokenizer).
OWL_FILES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("config.json",), True),
    (GDINO_WEIGHT_ALTERNATIVES, True),
    (("preprocessor_config.json", "processor_config.json"), True),
    (("tokenizer_config.json",), True),
    (("vocab.json",), True),
    (("merges.txt",), True),
    (("tokenizer.json",), False),
    (("special_tokens_map.json",), False),
)
# the hub repositories: model.safetensors (and the older pytorch_model.bin), no tokenizer.json
_OWL_PUBLISHED = ("model.safetensors", "config.json", "preprocessor_config.json", "tokenizer_config.json",
                  "vocab.json", "merges.txt", "special_tokens_map.json")

PRETRAINED: tuple[PretrainedWeights, ...] = (
    PretrainedWeights("clip", "ViT-B-16/openai", "hf-hub:timm/vit_base_patch16_clip_224.openai",
                      OPEN_CLIP_WEIGHT_FILES[:1], 571.0, "MIT (OpenAI CLIP)",
                      note="the AugCLIP paper's backbone; the default"),
    PretrainedWeights("clip", "ViT-B-32/openai", "hf-hub:timm/vit_base_patch32_clip_224.openai",
                      OPEN_CLIP_WEIGHT_FILES[:1], 577.0, "MIT (OpenAI CLIP)",
                      note="HATIE's CLIP (every HATIE CLIP measure; AUGCLIP_HATIE_CLIP)"),
    PretrainedWeights("clip", "ViT-L-14/openai", "hf-hub:timm/vit_large_patch14_clip_224.openai",
                      OPEN_CLIP_WEIGHT_FILES[:1], 1632.0, "MIT (OpenAI CLIP)",
                      note="PIE-Bench's CLIP score (clip_score_whole / clip_score_edited)"),
    PretrainedWeights("gdino", "IDEA-Research/grounding-dino-tiny", "hf-hub:IDEA-Research/grounding-dino-tiny",
                      _GDINO_PUBLISHED, 657.0, "Apache-2.0",
                      note="Swin-T; the BPM paper's detector; the default"),
    PretrainedWeights("gdino", "IDEA-Research/grounding-dino-base", "hf-hub:IDEA-Research/grounding-dino-base",
                      _GDINO_PUBLISHED, 890.0, "Apache-2.0"),
    PretrainedWeights("sam2", "facebook/sam2.1-hiera-tiny", "hf-hub:facebook/sam2.1-hiera-tiny", _SAM2_PUBLISHED,
                      149.0, "Apache-2.0", note="SAM 2.1 Hiera-Tiny in transformers' layout; the BPM fast preset"),
    PretrainedWeights("owlvit", "google/owlvit-base-patch32", "hf-hub:google/owlvit-base-patch32", _OWL_PUBLISHED,
                      585.0, "Apache-2.0", note="OWL-ViT ViT-B/32 at 768 px; the BPM fast preset's detector"),
    PretrainedWeights("owlvit", "google/owlvit-base-patch16", "hf-hub:google/owlvit-base-patch16", _OWL_PUBLISHED,
                      583.0, "Apache-2.0", note="ViT-B/16: finer boxes, ~4x the compute of B/32"),
    PretrainedWeights("sam", "vit_b", SAM_CHECKPOINT_URLS["vit_b"], ("sam_vit_b_01ec64.pth",), 358.0, "Apache-2.0",
                      note="the default"),
    PretrainedWeights("sam", "vit_l", SAM_CHECKPOINT_URLS["vit_l"], ("sam_vit_l_0b3195.pth",), 1192.0, "Apache-2.0"),
    PretrainedWeights("sam", "vit_h", SAM_CHECKPOINT_URLS["vit_h"], ("sam_vit_h_4b8939.pth",), 2445.0, "Apache-2.0",
                      note="Grounded-SAM's choice"),
    # perceptual feature networks (reference, preservation and distribution metrics; docs/metrics.md)
    PretrainedWeights("dino", "facebook/dino-vits16", "hf-hub:facebook/dino-vits16", _DINO_PUBLISHED, 83.0,
                      "Apache-2.0", note="MagicBrush's DINO similarity"),
    PretrainedWeights("dino", "facebook/dino-vitb8", "hf-hub:facebook/dino-vitb8", _DINO_PUBLISHED, 327.0,
                      "Apache-2.0", note="PIE-Bench's structure distance"),
    PretrainedWeights("dino", "facebook/dinov2-base", "hf-hub:facebook/dinov2-base", _DINO_PUBLISHED, 330.0,
                      "Apache-2.0", note="HATIE's feature similarities"),
    PretrainedWeights("lpips", "alex", TORCHVISION_BACKBONE_URLS["alex"], ("alexnet-owt-7be5be79.pth",), 233.0,
                      "BSD-3-Clause (torchvision)", note="LPIPS backbone (HATIE); LPIPS' linear heads ship in torchmetrics"),
    PretrainedWeights("lpips", "squeeze", TORCHVISION_BACKBONE_URLS["squeeze"], ("squeezenet1_1-b8a52dc0.pth",), 4.7,
                      "BSD-3-Clause (torchvision)", note="LPIPS backbone (PIE-Bench)"),
    PretrainedWeights("lpips", "vgg", TORCHVISION_BACKBONE_URLS["vgg"], ("vgg16-397923af.pth",), 528.0,
                      "BSD-3-Clause (torchvision)", note="LPIPS backbone"),
    PretrainedWeights("fid", "inception-v3-compat", FID_INCEPTION_URL, ("weights-inception-2015-12-05-6726825d.pth",),
                      91.2, "Apache-2.0 (TensorFlow weights, converted by torch-fidelity)",
                      note="FID's Inception (torchmetrics / torch-fidelity)"),
)


def pretrained_entry(family: str, spec: str) -> PretrainedWeights | None:
    """The table row for ``spec`` of ``family``, if this tool knows it by name."""
    for entry in PRETRAINED:
        if entry.family == family and entry.spec == spec:
            return entry
    return None


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


# ---------------------------------------------------------------------- CLIP


@dataclass(frozen=True)
class ClipFiles:
    """What open_clip needs for one CLIP spec, all local."""

    model_name: str  # first argument of open_clip.create_model
    checkpoint: Path | None  # weights file for built-in architectures (None: random, or inside ``folder``)
    folder: Path | None = None  # for hf-hub: / local-dir: (open_clip_config.json + weights)
    tokenizer_name: str | None = None  # argument of open_clip.get_tokenizer
    tokenizer_cache: Path | None = None
    preprocess: dict[str, Any] = field(default_factory=dict)  # the tag's mean/std/interpolation/resize_mode
    quick_gelu: bool = False
    source: str = ""  # where the weights came from, for messages


def clip_file_list(files: ClipFiles) -> list[Path]:
    """The local files a resolved CLIP model is read from."""
    if files.checkpoint is not None:
        return [files.checkpoint]
    if files.folder is not None:
        found = [files.folder / OPEN_CLIP_CONFIG]
        found += [files.folder / name for name in OPEN_CLIP_WEIGHT_FILES if (files.folder / name).is_file()][:1]
        return found
    return []


def clip_tag_source(arch: str, tag: str) -> tuple[str | None, str | None, str | None]:
    """``(repo_id, filename or None, url)`` open_clip's pretrained table gives for ``arch/tag``."""
    import open_clip

    cfg = open_clip.get_pretrained_cfg(arch, tag) or {}
    hub = (cfg.get("hf_hub") or "").rstrip("/")
    repo_id = filename = None
    if hub:
        parts = hub.split("/")
        repo_id, filename = "/".join(parts[:2]), ("/".join(parts[2:]) or None)
    return repo_id, filename, cfg.get("url") or None


def clip_how_to_fix(spec: Any) -> str:
    if spec.kind == "checkpoint":
        return (f"Check that the file is an open_clip state dict for {spec.arch} "
                "(open_clip_model.safetensors or open_clip_pytorch_model.bin from the model's hub page).")
    if spec.kind == "local-dir":
        return f"The folder needs {OPEN_CLIP_CONFIG} and a weight file ({' or '.join(OPEN_CLIP_WEIGHT_FILES)})."
    fetch = "download the weights"
    if spec.kind == "pretrained":
        repo_id, filename, url = clip_tag_source(spec.arch, spec.pretrained)
        if repo_id:
            fetch = f"download {filename or OPEN_CLIP_WEIGHT_FILES[0]} from {hub_endpoint()}/{repo_id}"
        elif url:
            fetch = f"download {url}"
    elif spec.kind == "hf-hub":
        fetch = f"download the repository {hub_endpoint()}/{spec.source_id}"
    # Kept short (the app's status area and the CLI show it whole); docs/models.md has the long story.
    return (
        f"Fix: run `augclip-demo download --clip {spec.raw}` where there is internet (then copy AUGCLIP_CACHE_DIR "
        f"here), or {fetch} and pass --clip-checkpoint PATH (AUGCLIP_CLIP_CHECKPOINT=PATH)."
    )


def resolve_clip(spec: Any, cache_dir: Path, *, progress: bool = False) -> ClipFiles:
    """Local files for a parsed CLIP :class:`~augclip_demo.inference.specs.ModelSpec` (downloading what is missing)."""
    import open_clip

    model = f"CLIP {spec.raw}"
    how = clip_how_to_fix(spec)
    hub_cache = Path(cache_dir) / "open_clip"
    tag_cfg = (open_clip.get_pretrained_cfg(spec.arch, spec.pretrained) or {}) if spec.arch and spec.pretrained else {}
    preprocess = {k: tag_cfg[k] for k in ("mean", "std", "interpolation", "resize_mode") if k in tag_cfg}
    quick_gelu = bool(tag_cfg.get("quick_gelu"))
    if spec.kind == "random":
        return ClipFiles(spec.arch, None, tokenizer_name=spec.arch, preprocess={}, source="random")
    if spec.kind == "checkpoint":
        path = Path(spec.checkpoint)
        if not path.is_file():
            raise WeightsUnavailableError(model, f"the local file {path}", "The file does not exist; check the path "
                                          "given with --clip-checkpoint / AUGCLIP_CLIP_CHECKPOINT.")
        return ClipFiles(spec.arch, path, tokenizer_name=spec.arch, tokenizer_cache=hub_cache, preprocess=preprocess,
                         quick_gelu=quick_gelu, source=str(path))
    if spec.kind == "local-dir":
        folder = Path(spec.source_id).expanduser()
        if not (folder / OPEN_CLIP_CONFIG).is_file():
            raise WeightsUnavailableError(model, f"the local folder {folder} (no {OPEN_CLIP_CONFIG} there)", how)
        weights = [folder / name for name in OPEN_CLIP_WEIGHT_FILES if (folder / name).is_file()]
        if not weights:
            raise WeightsUnavailableError(model, f"the local folder {folder} (no weight file there)", how)
        for path in weights[:1]:
            if (problem := check_weight_file(path)) is not None:
                raise WeightsUnavailableError(model, f"the file {path}", f"It {problem}. {how}")
        return ClipFiles(f"local-dir:{folder}", None, folder=folder, tokenizer_name=f"local-dir:{folder}",
                         source=str(folder))
    if spec.kind == "hf-hub":
        fetch = HubFetch(model, spec.source_id, hub_cache, how, progress=progress)
        config = fetch.fetch([OPEN_CLIP_CONFIG])
        assert config is not None
        weights = fetch.fetch(OPEN_CLIP_WEIGHT_FILES)
        assert weights is not None
        if weights.parent != config.parent:
            raise fetch.fail(weights.name, f"the config and the weights come from different snapshots ({config.parent} "
                             f"and {weights.parent})", "Delete the repository's folder from the cache and download again.")
        text_cfg = json.loads(config.read_text(encoding="utf-8")).get("model_cfg", {}).get("text_cfg", {})
        if text_cfg.get("hf_tokenizer_name"):  # the tokenizer lives in a (possibly other) hub repository
            tokenizer, tok_cache = f"hf-hub:{spec.source_id}", _cache_root_of(config)
        else:
            tokenizer, tok_cache = f"local-dir:{config.parent}", None
        return ClipFiles(f"local-dir:{config.parent}", None, folder=config.parent, tokenizer_name=tokenizer,
                         tokenizer_cache=tok_cache, source=f"{hub_endpoint()}/{spec.source_id}")
    # a built-in architecture with a pretrained tag
    repo_id, filename, url = clip_tag_source(spec.arch, spec.pretrained)
    if repo_id:
        fetch = HubFetch(model, repo_id, hub_cache, how, progress=progress)
        names = [filename] if filename else list(OPEN_CLIP_WEIGHT_FILES)
        if filename and filename.endswith((".bin", ".pth")):  # open_clip prefers a safetensors twin
            names.insert(0, filename[:-4] + ".safetensors")
        path = fetch.fetch(names)
        assert path is not None
        source = f"{hub_endpoint()}/{repo_id}"
    elif url:
        path = fetch_url(model, url, hub_cache / Path(urlparse(url).path).name, how, progress=progress)
        source = url
    else:
        raise WeightsUnavailableError(model, "open_clip's pretrained table (no source for this tag)", how)
    return ClipFiles(spec.arch, path, tokenizer_name=spec.arch, tokenizer_cache=hub_cache, preprocess=preprocess,
                     quick_gelu=quick_gelu, source=source)


def _cache_root_of(path: Path) -> Path:
    """The hub cache folder holding ``.../models--org--name/snapshots/<sha>/file``."""
    for parent in path.parents:
        if parent.name.startswith("models--"):
            return parent.parent
    return path.parent


# ---------------------------------------------------------------------- GroundingDINO


def gdino_how_to_fix(spec: str) -> str:
    repo = spec if "/" in spec and not spec.startswith(("/", ".", "~")) else "IDEA-Research/grounding-dino-tiny"
    return (
        f"Fix: run `augclip-demo download --bpm` where there is internet (then copy AUGCLIP_CACHE_DIR here), or "
        f"download {hub_endpoint()}/{repo} (`hf download {repo} --local-dir gdino`) and pass --gdino-model PATH "
        "(AUGCLIP_GDINO_MODEL=PATH)."
    )


def resolve_gdino(spec: str, local_folder: Path | None, cache_dir: Path, *, progress: bool = False) -> Path:
    """A folder ``from_pretrained`` can load without the network: the local folder, or the hub snapshot."""
    model = f"GroundingDINO {spec}"
    how = gdino_how_to_fix(spec)
    if local_folder is not None:
        if not (local_folder / "config.json").is_file():
            raise WeightsUnavailableError(model, f"the local folder {local_folder} (no config.json there)",
                                          "Give a folder saved with save_pretrained (config.json, model.safetensors, "
                                          "tokenizer and preprocessor files), e.g. a download of the hub repository. "
                                          + how)
        weights = [local_folder / n for n in GDINO_WEIGHT_ALTERNATIVES if (local_folder / n).is_file()]
        if not weights:
            raise WeightsUnavailableError(model, f"the local folder {local_folder} (no model.safetensors or "
                                          "pytorch_model.bin there)", how)
        if (problem := check_weight_file(weights[0])) is not None:
            raise WeightsUnavailableError(model, f"the file {weights[0]}", f"It {problem}. {how}")
        return local_folder
    return _fetch_snapshot_folder(model, spec, cache_dir, how, GDINO_FILES, progress)


def _fetch_snapshot_folder(model: str, spec: str, cache_dir: Path | str, how: str,
                           files: Sequence[tuple[tuple[str, ...], bool]], progress: bool = False) -> Path:
    """Fetch ``files`` (``(names, required)`` pairs) of a hub repository; the one snapshot folder holding them.

    Files from two snapshots in one folder would mix revisions, so that is refused with the fix."""
    fetch = HubFetch(model, spec, Path(cache_dir) / "huggingface", how, progress=progress)
    folders = set()
    for names, required in files:
        path = fetch.fetch(names, required=required)
        if path is not None:
            folders.add(path.parent)
    if len(folders) != 1:
        raise WeightsUnavailableError(model, f"the cache ({', '.join(sorted(map(str, folders)))})",
                                      "The files come from different snapshots; delete the repository's cache folder "
                                      "and download again. " + how)
    return folders.pop()


def _fast_preset_how_to_fix(spec: str, default_repo: str, local_dir: str, variable: str) -> str:
    """How to get a fast-preset BPM model (SAM 2 or OWL-ViT) onto a machine without internet."""
    repo = spec if "/" in spec and not spec.startswith(("/", ".", "~")) else default_repo
    return (
        f"On a machine with internet, run `augclip-demo download --bpm-fast` (or download {hub_endpoint()}/{repo}, "
        f"e.g. `hf download {repo} --local-dir {local_dir}`, and set {variable}=PATH); or copy a filled "
        "AUGCLIP_CACHE_DIR from such a machine; or use AUGCLIP_BPM_PRESET=standard. For an offline smoke test only, "
        f"{variable}=random:test runs with untrained weights."
    )


def sam2_how_to_fix(spec: str) -> str:
    return _fast_preset_how_to_fix(spec, "facebook/sam2.1-hiera-tiny", "sam2", "AUGCLIP_FAST_SAM_MODEL")


def resolve_sam2(spec: str, local_folder: Path | None, cache_dir: Path, *, progress: bool = False) -> Path:
    """A folder ``Sam2Model.from_pretrained`` can load offline: the local folder, or the hub snapshot."""
    return resolve_transformers_folder(f"SAM 2 {spec}", spec, local_folder, cache_dir, sam2_how_to_fix(spec),
                                       files=SAM2_FILES, progress=progress)


def owl_how_to_fix(spec: str) -> str:
    return _fast_preset_how_to_fix(spec, "google/owlvit-base-patch32", "owlvit", "AUGCLIP_FAST_DETECTOR_MODEL")


def resolve_owl(spec: str, local_folder: Path | None, cache_dir: Path, *, progress: bool = False) -> Path:
    """A folder ``OwlViTForObjectDetection.from_pretrained`` can load offline: the local folder, or the hub snapshot."""
    return resolve_transformers_folder(f"OWL-ViT {spec}", spec, local_folder, cache_dir, owl_how_to_fix(spec),
                                       files=OWL_FILES, progress=progress)


# ---------------------------------------------------------------------- SAM


def sam_url(arch: str, override: str | None = None) -> str | None:
    """The checkpoint URL for ``arch``: ``override`` (AUGCLIP_SAM_URL) or the official one."""
    return override or SAM_CHECKPOINT_URLS.get(arch)


def sam_how_to_fix(arch: str, url: str | None) -> str:
    url = url or SAM_CHECKPOINT_URLS["vit_b"]
    return (f"Fix: run `augclip-demo download --bpm` where there is internet (then copy AUGCLIP_CACHE_DIR here), or "
            f"download {url} and pass --sam-checkpoint PATH (AUGCLIP_SAM_CHECKPOINT=PATH; AUGCLIP_SAM_URL for a "
            f"mirror) with --sam-model {arch}.")


def sam_cache_path(cache_dir: Path, url: str) -> Path:
    return Path(cache_dir) / "sam" / Path(urlparse(url).path).name


def resolve_sam(arch: str, checkpoint: Path | None, url: str | None, cache_dir: Path, *, sha256: str | None = None,
                progress: bool = False) -> Path:
    """The local SAM checkpoint: the given file, else the URL's file in the cache (downloaded when missing)."""
    model = f"SAM {arch}"
    how = sam_how_to_fix(arch, url)
    if checkpoint is not None:
        if not checkpoint.is_file():
            raise WeightsUnavailableError(model, f"the local file {checkpoint}", "The file does not exist; check "
                                          "--sam-checkpoint / AUGCLIP_SAM_CHECKPOINT. " + how)
        if sha256 and (digest := sha256_of(checkpoint)) != sha256.lower():
            raise WeightsUnavailableError(model, f"the local file {checkpoint}", f"Its SHA-256 is {digest}, expected "
                                          f"{sha256.lower()} (AUGCLIP_SAM_SHA256): corrupt or a different file. " + how)
        return checkpoint
    if url is None:
        raise WeightsUnavailableError(model, "no checkpoint file and no URL", how)
    return fetch_url(model, url, sam_cache_path(cache_dir, url), how, sha256=sha256, progress=progress)


# ---------------------------------------------------------------------- load-time guards


def summarize_state_dict_error(exc: BaseException, limit: int = 3) -> str:
    """One line from PyTorch's long ``load_state_dict`` report: counts and the first few differences."""
    text = str(exc)
    parts = []
    import re

    for label, pattern in (("missing", r"Missing key\(s\) in state_dict: (.*?)(?:\.\s*$|\.\s*\n|$)"),
                           ("unexpected", r"Unexpected key\(s\) in state_dict: (.*?)(?:\.\s*$|\.\s*\n|$)")):
        match = re.search(pattern, text, flags=re.S | re.M)
        if match:
            keys = re.findall(r'"([^"]+)"', match.group(1))
            shown = ", ".join(keys[:limit]) + (", ..." if len(keys) > limit else "")
            parts.append(f"{len(keys)} {label} key(s) ({shown})")
    sizes = re.findall(r"size mismatch for ([^:]+): copying a param with shape (torch\.Size\(\[[^\]]*\]\)) from "
                       r"checkpoint, the shape in current model is (torch\.Size\(\[[^\]]*\]\))", text)
    if sizes:
        shown = "; ".join(f"{name}: file {a.replace('torch.Size', '')} vs model {b.replace('torch.Size', '')}"
                          for name, a, b in sizes[:limit])
        parts.append(f"{len(sizes)} shape mismatch(es) ({shown}{'; ...' if len(sizes) > limit else ''})")
    return "; ".join(parts) if parts else _first_line(exc)


def compare_state_dicts(expected: dict[str, Any], found: dict[str, Any], limit: int = 3) -> str:
    """One line saying how a file's tensors differ from the model's: missing, unexpected, different shapes."""
    def shape(value: Any) -> tuple[int, ...]:
        return tuple(getattr(value, "shape", ()))

    missing = [k for k in expected if k not in found]
    unexpected = [k for k in found if k not in expected]
    shapes = [(k, shape(found[k]), shape(expected[k])) for k in expected if k in found
              and shape(found[k]) != shape(expected[k])]
    parts = []
    for label, keys in (("missing", missing), ("unexpected", unexpected)):
        if keys:
            parts.append(f"{len(keys)} {label} key(s) ({', '.join(keys[:limit])}{', ...' if len(keys) > limit else ''})")
    if shapes:
        shown = "; ".join(f"{k}: file {list(a)} vs model {list(b)}" for k, a, b in shapes[:limit])
        parts.append(f"{len(shapes)} shape mismatch(es) ({shown}{'; ...' if len(shapes) > limit else ''})")
    return "; ".join(parts) if parts else "the tensors match by name and shape"


def describe_load_error(exc: BaseException, path: Path | None) -> str:
    """What went wrong reading a weight file, in words (never pickle's advice to disable safe loading)."""
    if path is not None and path.is_file() and (problem := check_weight_file(path)) is not None:
        return f"the file {problem}"
    text = str(exc)
    if "state_dict" in text and ("Missing key" in text or "Unexpected key" in text or "size mismatch" in text):
        return "the file is for a different architecture: " + summarize_state_dict_error(exc)
    if "weights_only" in text or "Unpickling" in type(exc).__name__ or "pickle" in text.lower():
        return "the file is not a PyTorch state dict that can be loaded safely (not a checkpoint, or a full pickled object)"
    return f"{type(exc).__name__}: {_first_line(exc)}"


class OpenClipRandomInitGuard(logging.Handler):
    """Collects open_clip's log lines that mean "weights were not loaded" while a model is created.

    open_clip logs and carries on (random initialisation) when a hub weight file cannot be fetched;
    :func:`ensure_no_random_init` turns that into an error instead.
    """

    SIGNS = ("initialized randomly", "no clip weights found", "could not find/download", "initialized partially",
             "failed to download")

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "open_clip" in (record.pathname or "") or record.name.startswith("open_clip"):
            message = record.getMessage()
            if any(sign in message.lower() for sign in self.SIGNS):
                self.messages.append(message)


def ensure_no_random_init(create: Callable[[], Any], model: str, where: str, how_to_fix: str) -> Any:
    """Run ``create`` (an open_clip factory call) and raise if open_clip fell back to random weights."""
    guard = OpenClipRandomInitGuard()
    root = logging.getLogger()
    old_level = root.level
    hidden = _HideOpenClip() if old_level > logging.WARNING else None
    others = list(root.handlers)
    root.addHandler(guard)
    if hidden is not None:  # we need open_clip's warnings; the user asked not to see them
        root.setLevel(logging.WARNING)
        for handler in others:
            handler.addFilter(hidden)
    try:
        result = create()
    finally:
        root.removeHandler(guard)
        if hidden is not None:
            root.setLevel(old_level)
            for handler in others:
                handler.removeFilter(hidden)
    if guard.messages:
        raise WeightsUnavailableError(model, where, "open_clip did not load the weights (" + guard.messages[0][:200]
                                      + "); refusing to run with random weights. " + how_to_fix)
    return result


class _HideOpenClip(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "open_clip" not in (record.pathname or "")


def quiet_transformers() -> None:
    """No loading bars and no repeated advisory warnings from transformers while we load (errors still show)."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass


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


# ---------------------------------------------------------------------- feature networks (DINO, LPIPS, FID)


def dino_how_to_fix(spec: str) -> str:
    repo = spec if "/" in spec and not spec.startswith(("/", ".", "~")) else "facebook/dino-vits16"
    flag = "--hatie" if repo == "facebook/dinov2-base" else "--all"  # HATIE's network: its own command (needs.py)
    return (f"On a machine with internet, run `augclip-demo download {flag}` (or download the repository "
            f"{hub_endpoint()}/{repo}, e.g. `hf download {repo} --local-dir dino`, then give that folder as the "
            "model); or copy a filled AUGCLIP_CACHE_DIR from such a machine. For an offline smoke test only, "
            "random:dino-vits16 (or random:tiny) runs with untrained weights.")


def resolve_transformers_folder(model: str, spec: str, local_folder: Path | None, cache_dir: Path, how: str, *,
                                files: tuple[tuple[tuple[str, ...], bool], ...] = DINO_FILES,
                                progress: bool = False) -> Path:
    """A folder ``from_pretrained`` can load offline: ``local_folder`` checked, or the hub snapshot of ``spec``."""
    weight_names = next(names for names, _ in files if names[0].endswith((".safetensors", ".bin")))
    if local_folder is not None:
        if not (local_folder / "config.json").is_file():
            raise WeightsUnavailableError(model, f"the local folder {local_folder} (no config.json there)",
                                          "Give a folder saved with save_pretrained (config.json and "
                                          f"{' or '.join(weight_names)}), e.g. a download of the hub repository. " + how)
        found = [local_folder / name for name in weight_names if (local_folder / name).is_file()]
        if not found:
            raise WeightsUnavailableError(model, f"the local folder {local_folder} (no {' or '.join(weight_names)} "
                                          "there)", how)
        if (problem := check_weight_file(found[0])) is not None:
            raise WeightsUnavailableError(model, f"the file {found[0]}", f"It {problem}. {how}")
        return local_folder
    return _fetch_snapshot_folder(model, spec, cache_dir, how, files, progress)


def mirrored_url(url: str, mirror: str | None) -> str:
    """``url``, or the same file name under ``mirror`` (``AUGCLIP_FILE_MIRROR``) when one is set."""
    if not mirror:
        return url
    return mirror.rstrip("/") + "/" + Path(urlparse(url).path).name


def torchvision_hash_prefix(name: str) -> str | None:
    """The SHA-256 prefix torchvision writes into its weight file names (``alexnet-owt-7be5be79.pth``)."""
    import re

    match = re.search(r"-([a-f0-9]{8,})\.", name)
    return match.group(1) if match else None


def url_weights_how_to_fix(model: str, url: str, flag: str, download: str = "--all") -> str:
    return (f"On a machine with internet, run `augclip-demo download {download}` (or download {url} and give the file "
            f"with {flag}); or copy a filled AUGCLIP_CACHE_DIR from such a machine; AUGCLIP_FILE_MIRROR points at a "
            f"mirror holding the same file names. For an offline smoke test only, the random: variant of {model} "
            "runs with untrained weights.")


def resolve_url_weights(model: str, url: str, checkpoint: Path | None, cache_dir: Path, subdir: str, how: str, *,
                        check_name_hash: bool = False, progress: bool = False) -> Path:
    """A local weight file: ``checkpoint`` checked, else ``url``'s file in ``cache_dir/subdir`` (downloaded when
    missing), else the same file already in torch's hub cache. ``check_name_hash`` compares the file's
    SHA-256 with the prefix in its name (torchvision's convention), for files from the official URL."""
    if checkpoint is not None:
        if not checkpoint.is_file():
            raise WeightsUnavailableError(model, f"the local file {checkpoint}", "The file does not exist. " + how)
        if (problem := check_weight_file(checkpoint)) is not None:
            raise WeightsUnavailableError(model, f"the local file {checkpoint}", f"It {problem}. {how}")
        return checkpoint
    name = Path(urlparse(url).path).name
    target = Path(cache_dir) / subdir / name
    if not target.is_file():
        import torch.hub

        torch_cached = Path(torch.hub.get_dir()) / "checkpoints" / name
        if torch_cached.is_file() and check_weight_file(torch_cached) is None:
            target = torch_cached
    prefix = torchvision_hash_prefix(name) if check_name_hash else None
    path = fetch_url(model, url, target, how, progress=progress)
    if prefix and not sha256_of(path).startswith(prefix):
        raise WeightsUnavailableError(model, f"the file {path}", f"Its SHA-256 does not start with {prefix}, as its "
                                      "name says it should: corrupt or a different file. Delete it and run again. "
                                      + how)
    return path
