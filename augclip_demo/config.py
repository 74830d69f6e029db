"""The one place for configuration.

Each setting is declared once in :data:`SETTINGS` (field, variable, type, default, check, help, who
sets it); :class:`Settings`, :meth:`Settings.from_env`, the CLI's --help texts and docs/configuration.md
come from that declaration. The environment is read only at the edges (CLI, web app, API, the
Evaluator's default); everything below takes a :class:`Settings` or explicit values. CLI flags and
function arguments override variables through :meth:`Settings.replace`. Secrets (``OPENAI_API_KEY``) are deliberately *not* part of
:class:`Settings`: they are read by the OpenAI SDK itself at the moment a client is built, so a
settings object can be printed, logged or saved without leaking anything.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .errors import ConfigError

DEFAULT_CLIP_MODEL = "ViT-B-16/openai"
_DEFAULT_MLLM_MODEL = "gpt-4o"
_DEFAULT_MLLM_TIMEOUT = 60.0
_DEFAULT_MLLM_MAX_RETRIES = 3
_DEFAULT_ATTRIBUTE_PROVIDER = "clip-vocab"
DEFAULT_GDINO_MODEL = "IDEA-Research/grounding-dino-tiny"
DEFAULT_SAM_MODEL = "vit_b"
DEFAULT_FAST_SAM_MODEL = "facebook/sam2.1-hiera-tiny"
DEFAULT_FAST_DETECTOR_MODEL = "google/owlvit-base-patch32"
#: OWL-ViT's score threshold for text queries (its model card's examples); BPM's fast preset default.
DEFAULT_OWL_BOX_THRESHOLD = 0.1
_BPM_PRESETS = ("standard", "fast")
PRECISIONS = ("auto", "fp32", "fp16", "bf16")
#: Kernels for the CLIP towers' float32 matrix products on a CPU (augclip_demo/inference/cpu_matmul.py).
CPU_MATMULS = ("auto", "onednn", "blas")
DEFAULT_MAX_EDITS = 8
_DEFAULT_APP_CONCURRENCY = 2
#: MB the app's requests' heavy stages (explanations, figures, BPM) may hold at once (ui/guard.MemoryGate).
DEFAULT_STAGE_MEMORY_MB = 1536
DEFAULT_MAX_LOADED_MODELS = 4
DEFAULT_MAX_MODEL_MEMORY_MB = 8192
_DEFAULT_JUDGE_CONCURRENCY = 4
#: The shipped examples (assets/examples of the checkout this package is installed from, e.g. ``pip install -e .``).
EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "assets" / "examples"
#: Bounds on what a web client sends (docs/security.md, "Bounds on every input"); checked before any work.
_DEFAULT_MAX_TEXT_CHARS = 2000
DEFAULT_MAX_ATTRIBUTES = 64
DEFAULT_MAX_ATTRIBUTE_CHARS = 200
_DEFAULT_MAX_C = 1e6
_DEFAULT_MAX_BATCH_EDITS = 16
_DEFAULT_MAX_BATCH_ITEMS = 10000
#: uvicorn's own default for forwarded_allow_ips: a proxy on this machine
_DEFAULT_FORWARDED_ALLOW_IPS = "127.0.0.1,::1"
#: One client's share of the app's disk cap, and how long an upload no event has used is kept (ui/storage.py).
_DEFAULT_APP_CLIENT_DISK_PERCENT = 60
_DEFAULT_APP_UPLOAD_UNUSED_S = 600

#: Smallest accepted width and height of an input image, in pixels (io refuses smaller files).
MIN_IMAGE_SIDE = 8
#: Longest side, in pixels, that images are worked on at (larger ones are reduced while decoding).
DEFAULT_MAX_IMAGE_SIDE = 2048
#: Pixels (width x height, summed over its images) one app request may bring, before reduction.
DEFAULT_MAX_REQUEST_PIXELS = 1_500_000_000
_DEFAULT_HATIE_DINO = "facebook/dinov2-base"  # HATIE: DINOv2-base, token features mean-pooled
_DEFAULT_HATIE_LPIPS = "alex"
_DEFAULT_HATIE_CLIP = "ViT-B-32/openai"  # HATIE's CLIP for every CLIP measure (published code)

#: Who sets a setting; docs/configuration.md has one section for each.
_USER, _SERVICES, LIMIT = "user", "services", "limit"
AUDIENCES: dict[str, tuple[str, str]] = {
    _USER: ("Settings you set", "The handful most runs choose: which CLIP, where it runs, where files go, which "
                               "attribute provider and judge."),
    _SERVICES: ("Models, downloads and services", "Which networks BPM and HATIE load, where weights come from, and "
                                                 "how the OpenAI-compatible services are called."),
    LIMIT: ("Operator limits", "Bounds an operator of the web app (or a shared machine) sets on what one request, "
                               "upload or process may use; the defaults suit one user on one machine."),
}


def prepare_server_process(env: MutableMapping[str, str] | None = None) -> None:
    """Process settings of the web server, applied before torch is imported (``python app.py`` and
    ``augclip-demo explore`` both call this first; an operator's own value wins). OpenMP's worker threads spin
    after each parallel region by default and take the cores the event loop needs to answer page loads;
    passive waiting halved their 90th percentile on 2 cores (docs/security.md)."""
    env = os.environ if env is None else env
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def default_cache_dir() -> Path:
    """The platform's user cache directory for this tool (e.g. ``~/.cache/augclip-demo``)."""
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("augclip-demo", appauthor=False))
    except ImportError:  # platformdirs is in requirements.txt; this keeps bare imports working
        return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "augclip-demo"


def _parse_model_list(text: str) -> tuple[str, ...]:
    """``"a, b,,c"`` -> ``("a", "b", "c")``: the allow-list of CLIP model specs, in the given order."""
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive_int(value: object) -> bool:
    return _is_int(value) and value > 0  # type: ignore[operator]


def _int_from(low: int, high: int) -> Callable[[object], bool]:
    return lambda value: _is_int(value) and low <= value <= high  # type: ignore[operator]


def _one_of(choices: tuple[str, ...]) -> Callable[[object], bool]:
    return lambda value: value in choices


def _not_blank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _forwarded_list(value: object) -> bool:
    """uvicorn's forwarded_allow_ips: ``*``, or addresses and networks, comma-separated (not blank)."""
    import ipaddress

    if not isinstance(value, str):
        return False
    parts = [part.strip() for part in value.split(",") if part.strip()]
    try:
        return bool(parts) and all(part == "*" or ipaddress.ip_network(part, strict=False) for part in parts)
    except ValueError:
        return False


def _sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdefABCDEF" for c in value)


@dataclass(frozen=True)
class Setting:
    """One setting, declared once: from here come :class:`Settings`' field default, the environment variable
    and how it is parsed, the check and its message, the CLI help and its row in docs/configuration.md."""

    field: str
    env: str
    kind: type  # str, int, float, Path or tuple (a comma-separated list)
    default: Any
    help: str  # plain words, no default (added from ``default``), shared by --help and the docs
    audience: str  # USER, SERVICES or LIMIT
    allowed: str = ""  # what ``check`` accepts, in words: "one of auto, fp32", "a positive integer"
    check: Callable[[Any], bool] | None = None  # not run on None (an unset optional setting)
    flags: str = ""  # the CLI options that override it, as the docs show them
    default_words: str | None = None  # for a default that is not a plain value (None, computed)
    factory: Callable[[], Any] | None = None  # a default computed when a Settings is made

    def parse(self, raw: str) -> Any:
        """The variable's text (stripped, not blank) as this setting's type; a ConfigError naming it otherwise."""
        if self.kind in (int, float):
            try:
                return self.kind(raw)
            except ValueError:
                article = "an integer" if self.kind is int else "a number"
                raise ConfigError(f"{self.env} must be {article}, got {raw!r}") from None
        if self.kind is Path:
            return Path(raw).expanduser()
        if self.kind is tuple:
            return _parse_model_list(raw)
        return raw

    def accepts(self, value: Any) -> bool:
        return value is None or self.check is None or bool(self.check(value))

    @property
    def default_text(self) -> str:
        if self.default_words is not None:
            return self.default_words
        return f"{self.default:g}" if isinstance(self.default, float) else str(self.default)

    @property
    def cli_help(self) -> str:
        """The --help text of the CLI options that set this (no % in it: argparse would read it as a format)."""
        return f"{self.help} (default {self.default_text})"


_POSITIVE = "a positive integer"

#: Every setting, in the order docs/configuration.md lists them within a section.
SETTINGS: tuple[Setting, ...] = (
    # -- what a user sets
    Setting("clip_model", "AUGCLIP_CLIP_MODEL", str, DEFAULT_CLIP_MODEL,
            "CLIP backbone spec (the default is the paper's model; see docs/models.md)", _USER,
            "a non-empty CLIP model spec", _not_blank, "--clip-model"),
    Setting("clip_checkpoint", "AUGCLIP_CLIP_CHECKPOINT", Path, None,
            "local CLIP weights file used instead of downloading the spec's weights", _USER,
            flags="--clip-checkpoint", default_words="none: the spec's published weights"),
    Setting("device", "AUGCLIP_DEVICE", str, "auto",
            "where models run: auto (CUDA when present, else CPU), cpu, cuda, cuda:N or mps", _USER,
            flags="--device"),
    Setting("precision", "AUGCLIP_PRECISION", str, "auto",
            "auto (fp16 autocast on CUDA, fp32 elsewhere), fp32, fp16 or bf16", _USER,
            f"one of {', '.join(PRECISIONS)}", _one_of(PRECISIONS), "--precision"),
    Setting("cache_dir", "AUGCLIP_CACHE_DIR", Path, None,
            "root of every cache and downloaded file", _USER, flags="--cache-dir",
            default_words="the platform's user cache folder, e.g. ~/.cache/augclip-demo", factory=default_cache_dir),
    Setting("attribute_provider", "AUGCLIP_ATTRIBUTE_PROVIDER", str, _DEFAULT_ATTRIBUTE_PROVIDER,
            "attribute provider used when no attributes are given", _USER, flags="--provider"),
    Setting("mllm_model", "AUGCLIP_MLLM_MODEL", str, _DEFAULT_MLLM_MODEL,
            "model name for the openai-compatible attribute provider", _USER,
            "a non-empty model name", _not_blank, "--mllm-model"),
    Setting("bpm_preset", "AUGCLIP_BPM_PRESET", str, "standard",
            "BPM region models: standard (GroundingDINO at 800 px + segment-anything SAM, the paper's) or fast "
            "(OWL-ViT B/32 at 768 px + SAM 2.1 Hiera-Tiny at 512 px; docs/bpm.md says what it gives up); unset, "
            "the web app on a machine without CUDA uses fast and turns BPM on", _USER,
            f"one of {', '.join(_BPM_PRESETS)}", _one_of(_BPM_PRESETS)),
    Setting("judge_model", "AUGCLIP_JUDGE_MODEL", str, None,
            "chat model of the MLLM judge (docs/judge.md)", _USER, flags="--judge-model",
            default_words="AUGCLIP_MLLM_MODEL"),
    Setting("judge_base_url", "AUGCLIP_JUDGE_BASE_URL", str, None,
            "OpenAI-compatible API root of the judge; reports show it without user info or query", _USER,
            flags="--judge-base-url", default_words="OPENAI_BASE_URL, else OpenAI"),
    # -- models, downloads and services
    Setting("cpu_matmul", "AUGCLIP_CPU_MATMUL", str, "auto",
            "kernels of the CLIP towers' float32 matrix products on a CPU: auto (torch's own, as blas), onednn "
            "(oneDNN on x86: 1.4x faster on one machine, no faster on another; benchmarks/matmul_bench.py says "
            "which holds for yours) or blas; both are full float32, embeddings differ at float rounding (~1e-6), "
            "so vocabulary stores and batch runs record which one made them (docs/performance.md)", _SERVICES,
            f"one of {', '.join(CPU_MATMULS)}", _one_of(CPU_MATMULS), "--cpu-matmul"),
    Setting("mllm_timeout", "AUGCLIP_MLLM_TIMEOUT", float, _DEFAULT_MLLM_TIMEOUT,
            "seconds to wait for one chat-completions answer", _SERVICES,
            "a positive number of seconds", lambda v: _is_number(v) and v > 0),
    Setting("mllm_max_retries", "AUGCLIP_MLLM_MAX_RETRIES", int, _DEFAULT_MLLM_MAX_RETRIES,
            "retries with exponential backoff on HTTP 429 / 5xx, timeouts and connection errors", _SERVICES,
            "an integer of 0 or more", lambda v: _is_int(v) and v >= 0),
    Setting("gdino_model", "AUGCLIP_GDINO_MODEL", str, DEFAULT_GDINO_MODEL,
            "GroundingDINO of BPM's standard preset: hub id (IDEA-Research/grounding-dino-base too), a local "
            "folder, or random:tiny / random:swint (untrained)", _SERVICES, flags="--gdino-model"),
    Setting("sam_model", "AUGCLIP_SAM_MODEL", str, DEFAULT_SAM_MODEL,
            "SAM of BPM's standard preset: vit_b, vit_l or vit_h; random:vit_b / random:tiny for untrained "
            "weights", _SERVICES, flags="--sam-model"),
    Setting("sam_checkpoint", "AUGCLIP_SAM_CHECKPOINT", Path, None,
            "local SAM checkpoint file for BPM", _SERVICES, flags="--sam-checkpoint",
            default_words="the official file, downloaded into AUGCLIP_CACHE_DIR/sam"),
    Setting("sam_url", "AUGCLIP_SAM_URL", str, None,
            "where the SAM checkpoint is downloaded from (set it for a mirror)", _SERVICES,
            default_words="the official file for the architecture"),
    Setting("sam_sha256", "AUGCLIP_SAM_SHA256", str, None,
            "expected SHA-256 of the SAM checkpoint; checked when set, a mismatch stops the run", _SERVICES,
            "64 hexadecimal digits", _sha256, default_words="not checked"),
    Setting("fast_sam_model", "AUGCLIP_FAST_SAM_MODEL", str, DEFAULT_FAST_SAM_MODEL,
            "SAM 2 of the fast BPM preset, run at 512 px: hub id, a local folder, or random:hiera-tiny / "
            "random:test (untrained)", _SERVICES),
    Setting("fast_detector_model", "AUGCLIP_FAST_DETECTOR_MODEL", str, DEFAULT_FAST_DETECTOR_MODEL,
            "OWL-ViT detector of the fast BPM preset: google/owlvit-base-patch32, google/owlvit-base-patch16, a "
            "local folder, or random:owlvit-b32 / random:test (untrained); a GroundingDINO name "
            "(IDEA-Research/grounding-dino-tiny, -base, random:swint, random:tiny) runs GroundingDINO at "
            "512 / 853 px instead, for comparisons", _SERVICES),
    Setting("file_mirror", "AUGCLIP_FILE_MIRROR", str, None,
            "base URL of a mirror serving the LPIPS backbones (alexnet-owt-7be5be79.pth, ...) and the FID "
            "Inception file (weights-inception-2015-12-05-6726825d.pth) under their published names", _SERVICES,
            default_words="torchvision's and torch-fidelity's official URLs"),
    Setting("hatie_dino", "AUGCLIP_HATIE_DINO", str, _DEFAULT_HATIE_DINO,
            "DINOv2 network of HATIE's measures: hub id or local folder (random:tiny-v2 / random:dinov2-base for "
            "untrained weights)", _SERVICES, flags="--hatie-dino"),
    Setting("hatie_lpips", "AUGCLIP_HATIE_LPIPS", str, _DEFAULT_HATIE_LPIPS,
            "LPIPS backbone of HATIE's measures: alex (as HATIE), squeeze, vgg, or random:NET", _SERVICES,
            flags="--hatie-lpips"),
    Setting("hatie_clip", "AUGCLIP_HATIE_CLIP", str, _DEFAULT_HATIE_CLIP,
            "CLIP of HATIE's measures: a CLIP model spec (the default is the published code's; random:tiny for "
            "untrained weights); --hatie-clip-from run uses the run's CLIP instead", _SERVICES, flags="--hatie-clip"),
    Setting("study_db", "AUGCLIP_STUDY_DB", Path, None,
            "SQLite file of the rating studies (docs/study.md)", _SERVICES, flags="study --db",
            default_words="studies.sqlite3 in the cache folder"),
    Setting("judge_samples", "AUGCLIP_JUDGE_SAMPLES", int, 1,
            "answers per question and edit, to measure the judge's own spread", _SERVICES,
            "from 1 to 16", _int_from(1, 16), "--judge-samples"),
    Setting("judge_temperature", "AUGCLIP_JUDGE_TEMPERATURE", float, None,
            "judge sampling temperature", _SERVICES, "from 0 to 2", lambda v: _is_number(v) and 0 <= v <= 2,
            "--judge-temperature", default_words="0 for one sample, 1 for several"),
    Setting("judge_concurrency", "AUGCLIP_JUDGE_CONCURRENCY", int, _DEFAULT_JUDGE_CONCURRENCY,
            "judge requests in flight at once", _SERVICES, "from 1 to 64", _int_from(1, 64), "--judge-concurrency"),
    Setting("judge_requests_per_minute", "AUGCLIP_JUDGE_RPM", float, 0.0,
            "most judge requests started per minute (0: no limit beyond the concurrency)", _SERVICES,
            "0 or more", lambda v: _is_number(v) and v >= 0, "--judge-rpm"),
    # -- operator limits
    Setting("max_image_pixels", "AUGCLIP_MAX_IMAGE_PIXELS", int, None,
            "decompression-bomb limit in pixels (twice the limit is refused, as Pillow does)", LIMIT,
            "a positive number of pixels", _positive_int, default_words="Pillow's, about 89.5 M"),
    Setting("max_image_side", "AUGCLIP_MAX_IMAGE_SIDE", int, DEFAULT_MAX_IMAGE_SIDE,
            "working resolution in pixels: images with a longer side are reduced while decoding", LIMIT,
            f"an integer of at least {MIN_IMAGE_SIDE}", lambda v: _is_int(v) and v >= MIN_IMAGE_SIDE),
    Setting("max_request_pixels", "AUGCLIP_MAX_REQUEST_PIXELS", int, DEFAULT_MAX_REQUEST_PIXELS,
            "pixels all images of one app request may hold, before reduction", LIMIT, _POSITIVE, _positive_int,
            default_words="1.5 G"),
    Setting("max_upload_mb", "AUGCLIP_MAX_UPLOAD_MB", float, 25.0,
            "largest image file the app accepts, in MB", LIMIT, "a positive number", lambda v: _is_number(v) and v > 0),
    Setting("upload_max_zip_mb", "AUGCLIP_UPLOAD_MAX_ZIP_MB", int, 512,
            "largest image zip the app's batch upload accepts, in MB", LIMIT, _POSITIVE, _positive_int),
    Setting("upload_max_files", "AUGCLIP_UPLOAD_MAX_FILES", int, 20000,
            "most entries (files and folders) an uploaded image zip may hold", LIMIT, _POSITIVE, _positive_int),
    Setting("upload_max_unzipped_mb", "AUGCLIP_UPLOAD_MAX_UNZIPPED_MB", int, 4096,
            "most bytes an uploaded image zip may expand to, in MB", LIMIT, _POSITIVE, _positive_int),
    Setting("max_edits", "AUGCLIP_MAX_EDITS", int, DEFAULT_MAX_EDITS,
            "most edited images in one evaluation, in the app and the CLI", LIMIT, _POSITIVE, _positive_int,
            "--max-edits (app)"),
    Setting("allowed_models", "AUGCLIP_ALLOWED_MODELS", tuple, (),
            "comma-separated CLIP model specs web clients may pick", LIMIT, flags="--allowed-models (app)",
            default_words="the configured model and the app's list"),
    Setting("explore_files", "AUGCLIP_EXPLORE_FILES", tuple, (),
            "comma-separated batch results files the app's Explore tab may open (RESULTS or RESULTS=MANIFEST; "
            "JSONL, .parquet or a folder of Parquet parts); web clients pick among them by name, never by path "
            "(docs/explore.md)", LIMIT, flags="--explore-files (app), augclip-demo explore",
            default_words="none, uploads only"),
    Setting("forwarded_allow_ips", "AUGCLIP_FORWARDED_ALLOW_IPS", str, _DEFAULT_FORWARDED_ALLOW_IPS,
            "comma-separated addresses or networks (CIDR) of the reverse proxies whose X-Forwarded-For the app "
            "believes, as uvicorn's forwarded_allow_ips reads them (* trusts every peer: only behind a proxy that "
            "every request passes); a request from any other peer is counted against that peer's own address "
            "(docs/security.md, \"Forwarded addresses\")", LIMIT, "addresses or networks, comma-separated",
            _forwarded_list),
    Setting("concurrency", "AUGCLIP_CONCURRENCY", int, _DEFAULT_APP_CONCURRENCY,
            "app requests run at once", LIMIT, _POSITIVE, _positive_int, "--concurrency (app)"),
    Setting("stage_memory_mb", "AUGCLIP_STAGE_MEMORY_MB", int, DEFAULT_STAGE_MEMORY_MB,
            "memory, in MB, that the app's requests may hold at once in their explanation, figure and BPM stages "
            "(each reserves an estimate from its images' pixels; one that would pass the bound waits for the "
            "others; one larger than the bound runs alone)", LIMIT, _POSITIVE, _positive_int),
    Setting("max_text_chars", "AUGCLIP_MAX_TEXT_CHARS", int, _DEFAULT_MAX_TEXT_CHARS,
            "most characters in one text a web client sends (target, source text, instruction, caption, BPM "
            "fields, manifest texts)", LIMIT, _POSITIVE, _positive_int),
    Setting("max_attributes", "AUGCLIP_MAX_ATTRIBUTES", int, DEFAULT_MAX_ATTRIBUTES,
            "most attributes in one list, in the app and in a batch upload", LIMIT, _POSITIVE, _positive_int),
    Setting("max_attribute_chars", "AUGCLIP_MAX_ATTRIBUTE_CHARS", int, DEFAULT_MAX_ATTRIBUTE_CHARS,
            "most characters in one attribute", LIMIT, _POSITIVE, _positive_int),
    Setting("max_c", "AUGCLIP_MAX_C", float, _DEFAULT_MAX_C,
            "largest C (svm / logistic) a web client may set", LIMIT, "a finite number of at least 0.0001",
            lambda v: _is_number(v) and 1e-4 <= v < float("inf")),
    Setting("max_batch_edits", "AUGCLIP_MAX_BATCH_EDITS", int, _DEFAULT_MAX_BATCH_EDITS,
            "most edits in one item of an uploaded batch manifest", LIMIT, _POSITIVE, _positive_int),
    Setting("max_batch_items", "AUGCLIP_MAX_BATCH_ITEMS", int, _DEFAULT_MAX_BATCH_ITEMS,
            "most items in an uploaded batch manifest", LIMIT, _POSITIVE, _positive_int),
    Setting("app_disk_mb", "AUGCLIP_APP_DISK_MB", int, 1024,
            "most bytes the app's session folders and Gradio's cache may hold, in MB", LIMIT, _POSITIVE,
            _positive_int),
    Setting("app_files_max_age_s", "AUGCLIP_APP_FILES_MAX_AGE_S", int, 3600,
            "seconds the app keeps a session's files after their last change", LIMIT, _POSITIVE, _positive_int),
    Setting("app_client_disk_percent", "AUGCLIP_APP_CLIENT_DISK_PERCENT", int, _DEFAULT_APP_CLIENT_DISK_PERCENT,
            "share of AUGCLIP_APP_DISK_MB, in percent, that the uploads of one client address (as "
            "AUGCLIP_FORWARDED_ALLOW_IPS resolves it) may hold at once, those still arriving included; the default "
            "leaves room for one upload of the largest zip (docs/security.md, \"Uploads in flight\")", LIMIT,
            "an integer from 1 to 100", _int_from(1, 100)),
    Setting("app_upload_unused_s", "AUGCLIP_APP_UPLOAD_UNUSED_S", int, _DEFAULT_APP_UPLOAD_UNUSED_S,
            "seconds an upload that no event has used yet is kept; then it is deleted and no longer counts against "
            "its client's share", LIMIT, _POSITIVE, _positive_int),
    Setting("max_loaded_models", "AUGCLIP_MAX_LOADED_MODELS", int, DEFAULT_MAX_LOADED_MODELS,
            "most models (CLIP, GroundingDINO, SAM together) kept loaded at once; beyond it the least recently "
            "used model that no running request uses is unloaded", LIMIT, _POSITIVE, _positive_int),
    Setting("max_model_memory_mb", "AUGCLIP_MAX_MODEL_MEMORY_MB", int, DEFAULT_MAX_MODEL_MEMORY_MB,
            "most MB of model weights (parameters + buffers, measured after loading) kept loaded at once, same "
            "eviction; one model larger than this is refused", LIMIT, _POSITIVE, _positive_int),
)
SETTING: dict[str, Setting] = {s.field: s for s in SETTINGS}


@dataclass(frozen=True)
class _OtherVariable:
    """An environment variable that is not a setting (a secret, a standard one read by its own library, a test's)."""

    name: str
    help: str
    flags: str = ""


#: Read where they are used, never stored in :class:`Settings`; listed in docs/configuration.md.
OTHER_VARIABLES: tuple[_OtherVariable, ...] = (
    _OtherVariable("OPENAI_API_KEY", "the OpenAI SDK's standard key variable, read by the SDK only; never logged, "
                                    "cached or reported"),
    _OtherVariable("OPENAI_BASE_URL", "the OpenAI SDK's standard base URL: a local OpenAI-compatible server, e.g. "
                                     "http://localhost:8000/v1 (vLLM) or http://localhost:11434/v1 (Ollama)"),
    _OtherVariable("AUGCLIP_STUDY_OPERATOR_TOKEN", "unlocks the app's Study tab (at least 16 characters); a secret, "
                                                  "read when checked, never part of the settings; unset: studies are "
                                                  "run from the CLI only"),
    _OtherVariable("RAY_ADDRESS", "Ray's standard variable: the cluster batch --engine ray joins (auto: the running "
                                 "one); unset, the run starts a local Ray instance and stops it afterwards "
                                 "(docs/ray.md)", "--ray-address"),
    _OtherVariable("AUGCLIP_TEST_ARTIFACTS", "tests only: folder for the browser tests' screenshots and the "
                                            "downloaded HTML report (default test-artifacts/ at the repository root; "
                                            ".ci/run leaves it on disk for CI to keep)"),
)

#: ``AUGCLIP_*`` variable -> its help (with the default), for the --help texts of options that set one.
ENVIRONMENT_VARIABLES: dict[str, str] = {
    **{s.env: s.cli_help for s in SETTINGS},
    **{v.name: v.help for v in OTHER_VARIABLES if v.name == "AUGCLIP_STUDY_OPERATOR_TOKEN"},
}


def setting_help(field: str) -> str:
    """The --help text of a CLI option that sets the setting ``field`` (its declared help and default)."""
    return SETTING[field].cli_help


def study_operator_token(env: Mapping[str, str] | None = None) -> str | None:
    """``AUGCLIP_STUDY_OPERATOR_TOKEN``, read at the moment it is checked (a secret: never a :class:`Settings` field)."""
    value = ((os.environ if env is None else env).get("AUGCLIP_STUDY_OPERATOR_TOKEN") or "").strip()
    if value and len(value) < 16:
        raise ConfigError("AUGCLIP_STUDY_OPERATOR_TOKEN must be at least 16 characters (e.g. the output of "
                          "`python -c \"import secrets; print(secrets.token_urlsafe(24))\"`)")
    return value or None


def _field(name: str) -> Any:
    """The dataclass field of setting ``name``, its default taken from the declaration."""
    spec = SETTING[name]
    if spec.factory is not None:
        return dataclasses.field(default_factory=spec.factory)
    return spec.default


@dataclass(frozen=True)
class Settings:
    """Resolved configuration. Build with :meth:`from_env` (at the edges: CLI, app, API), override with
    :meth:`replace`. Each field is declared in :data:`SETTINGS` (variable, default, check, help)."""

    clip_model: str = _field("clip_model")
    clip_checkpoint: Path | None = _field("clip_checkpoint")
    device: str = _field("device")
    precision: str = _field("precision")
    cpu_matmul: str = _field("cpu_matmul")
    cache_dir: Path = _field("cache_dir")
    max_image_pixels: int | None = _field("max_image_pixels")
    max_image_side: int = _field("max_image_side")
    max_request_pixels: int = _field("max_request_pixels")
    max_upload_mb: float = _field("max_upload_mb")
    attribute_provider: str = _field("attribute_provider")
    mllm_model: str = _field("mllm_model")
    mllm_timeout: float = _field("mllm_timeout")
    mllm_max_retries: int = _field("mllm_max_retries")
    gdino_model: str = _field("gdino_model")
    sam_model: str = _field("sam_model")
    bpm_preset: str = _field("bpm_preset")
    fast_sam_model: str = _field("fast_sam_model")
    fast_detector_model: str = _field("fast_detector_model")
    sam_checkpoint: Path | None = _field("sam_checkpoint")
    sam_url: str | None = _field("sam_url")
    sam_sha256: str | None = _field("sam_sha256")
    file_mirror: str | None = _field("file_mirror")
    hatie_dino: str = _field("hatie_dino")
    hatie_lpips: str = _field("hatie_lpips")
    hatie_clip: str = _field("hatie_clip")
    upload_max_zip_mb: int = _field("upload_max_zip_mb")
    upload_max_files: int = _field("upload_max_files")
    upload_max_unzipped_mb: int = _field("upload_max_unzipped_mb")
    study_db: Path | None = _field("study_db")  # None: <cache_dir>/studies.sqlite3
    max_edits: int = _field("max_edits")
    allowed_models: tuple[str, ...] = _field("allowed_models")
    explore_files: tuple[str, ...] = _field("explore_files")  # RESULTS or RESULTS=MANIFEST entries
    forwarded_allow_ips: str = _field("forwarded_allow_ips")
    concurrency: int = _field("concurrency")
    stage_memory_mb: int = _field("stage_memory_mb")
    max_text_chars: int = _field("max_text_chars")
    max_attributes: int = _field("max_attributes")
    max_attribute_chars: int = _field("max_attribute_chars")
    max_c: float = _field("max_c")
    max_batch_edits: int = _field("max_batch_edits")
    max_batch_items: int = _field("max_batch_items")
    app_disk_mb: int = _field("app_disk_mb")
    app_files_max_age_s: int = _field("app_files_max_age_s")
    app_client_disk_percent: int = _field("app_client_disk_percent")
    app_upload_unused_s: int = _field("app_upload_unused_s")
    max_loaded_models: int = _field("max_loaded_models")
    max_model_memory_mb: int = _field("max_model_memory_mb")
    judge_model: str | None = _field("judge_model")  # None: mllm_model
    judge_base_url: str | None = _field("judge_base_url")  # None: OPENAI_BASE_URL
    judge_samples: int = _field("judge_samples")
    judge_temperature: float | None = _field("judge_temperature")  # None: 0 for one sample, 1 for several
    judge_concurrency: int = _field("judge_concurrency")
    judge_requests_per_minute: float = _field("judge_requests_per_minute")

    def __post_init__(self) -> None:
        for spec in SETTINGS:
            value = getattr(self, spec.field)
            if not spec.accepts(value):
                # Set by a flag or an argument: named as the caller named it; an environment-only setting also
                # names its variable, the one way a user sets it.
                where = "" if spec.flags else f" (set with {spec.env})"
                raise ConfigError(f"{spec.field} must be {spec.allowed}, got {value!r}{where}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Read the ``AUGCLIP_*`` variables of :data:`SETTINGS` from ``env`` (default ``os.environ``), then apply
        overrides. Blank variables count as unset.

        Overrides whose value is ``None`` are ignored, so CLI arguments can be passed straight in. A bad
        variable is a :class:`ConfigError` naming it, its value and what is allowed.
        """
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for spec in SETTINGS:
            raw = (env.get(spec.env) or "").strip()
            if not raw:
                continue
            value = spec.parse(raw)
            if not spec.accepts(value):
                raise ConfigError(f"{spec.field} must be {spec.allowed}, got {raw!r} (from {spec.env})")
            values[spec.field] = value
        return cls(**values).replace(**overrides)

    def replace(self, **overrides: object) -> Settings:
        """A copy with the given fields changed; ``None`` values leave a field as it is."""
        unknown = set(overrides) - set(SETTING)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        changes = {k: v for k, v in overrides.items() if v is not None}
        for key, value in changes.items():
            kind = SETTING[key].kind
            if kind is tuple and isinstance(value, str):
                changes[key] = _parse_model_list(value)
            elif kind is Path and not isinstance(value, Path):
                changes[key] = Path(str(value)).expanduser()
        return dataclasses.replace(self, **changes) if changes else self

    @property
    def study_db_path(self) -> Path:
        """The rating studies' database file."""
        return self.study_db or self.cache_dir / "studies.sqlite3"

    def as_dict(self) -> dict[str, object]:
        """Plain values for reports and logs (no secrets: keys are never settings, and the judge's base URL is
        shown without user info, query or fragment)."""
        values = {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(self).items()}
        if self.judge_base_url:
            parts = urlsplit(self.judge_base_url)
            host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
            values["judge_base_url"] = urlunsplit((parts.scheme, host, parts.path, "", ""))
        return values


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def configuration_markdown() -> str:
    """docs/configuration.md, generated from :data:`SETTINGS` and :data:`OTHER_VARIABLES`
    (``python -m augclip_demo.config --markdown > docs/configuration.md``; a test compares the two)."""
    lines = [
        "# Configuration",
        "",
        "<!-- Generated from augclip_demo/config.py (SETTINGS, OTHER_VARIABLES) by",
        "     `python -m augclip_demo.config --markdown > docs/configuration.md`; edit the declarations, not this "
        "page. -->",
        "",
        "Environment variables set the defaults; the matching CLI flags override them. They are read in one "
        "place, `augclip_demo/config.py`, by the command line, the web app, the API and an Evaluator built "
        "without settings; everything below them takes the resulting settings as arguments. A bad value stops the start with a "
        "message naming the variable, its value and what is allowed. Blank variables count as unset.",
    ]
    for audience, (title, intro) in AUDIENCES.items():
        lines += ["", f"## {title}", "", intro, "", "| variable | flag | default | meaning |",
                  "| --- | --- | --- | --- |"]
        for spec in SETTINGS:
            if spec.audience != audience:
                continue
            flags = f"`{spec.flags}`" if spec.flags else ""
            allowed = f"; must be {spec.allowed}" if spec.allowed else ""
            lines.append(f"| `{spec.env}` | {flags} | {_cell(spec.default_text)} | {_cell(spec.help + allowed)} |")
    lines += ["", "## Other variables", "",
              "Not settings: secrets and the standard variables of other libraries are read where they are used "
              "and never stored, logged or reported.", "", "| variable | flag | meaning |", "| --- | --- | --- |"]
    lines += [f"| `{v.name}` | {f'`{v.flags}`' if v.flags else ''} | {_cell(v.help)} |" for v in OTHER_VARIABLES]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m augclip_demo.config --markdown  (prints docs/configuration.md)")
    sys.stdout.write(configuration_markdown())
