"""The one place for configuration.

Settings come from environment variables; CLI flags and function arguments override them through
:meth:`Settings.replace`. Secrets (``OPENAI_API_KEY``) are deliberately *not* part of
:class:`Settings`: they are read by the OpenAI SDK itself at the moment a client is built, so a
settings object can be printed, logged or saved without leaking anything.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .errors import ConfigError

DEFAULT_CLIP_MODEL = "ViT-B-16/openai"
DEFAULT_MLLM_MODEL = "gpt-4o"
DEFAULT_MLLM_TIMEOUT = 60.0
DEFAULT_MLLM_MAX_RETRIES = 3
DEFAULT_ATTRIBUTE_PROVIDER = "clip-vocab"
DEFAULT_GDINO_MODEL = "IDEA-Research/grounding-dino-tiny"
DEFAULT_SAM_MODEL = "vit_b"
DEFAULT_FAST_SAM_MODEL = "facebook/sam2.1-hiera-tiny"
DEFAULT_FAST_DETECTOR_MODEL = "google/owlvit-base-patch32"
#: OWL-ViT's score threshold for text queries (its model card's examples); BPM's fast preset default.
DEFAULT_OWL_BOX_THRESHOLD = 0.1
BPM_PRESETS = ("standard", "fast")
PRECISIONS = ("auto", "fp32", "fp16", "bf16")
#: Kernels for the CLIP towers' float32 matrix products on a CPU (augclip_demo/inference/cpu_matmul.py).
CPU_MATMULS = ("auto", "onednn", "blas")
DEFAULT_MAX_EDITS = 8
DEFAULT_APP_CONCURRENCY = 2
DEFAULT_MAX_LOADED_MODELS = 4
DEFAULT_MAX_MODEL_MEMORY_MB = 8192
DEFAULT_JUDGE_CONCURRENCY = 4
#: The shipped examples (assets/examples of the checkout this package is installed from, e.g. ``pip install -e .``).
EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "assets" / "examples"
#: Bounds on what a web client sends (docs/security.md, "Bounds on every input"); checked before any work.
DEFAULT_MAX_TEXT_CHARS = 2000
DEFAULT_MAX_ATTRIBUTES = 64
DEFAULT_MAX_ATTRIBUTE_CHARS = 200
DEFAULT_MAX_C = 1e6
DEFAULT_MAX_BATCH_EDITS = 16
DEFAULT_MAX_BATCH_ITEMS = 10000

#: Environment variables read by :meth:`Settings.from_env`, with what each one sets.
ENVIRONMENT_VARIABLES: dict[str, str] = {
    "AUGCLIP_CLIP_MODEL": f"CLIP backbone spec (default {DEFAULT_CLIP_MODEL}; see docs/models.md)",
    "AUGCLIP_CLIP_CHECKPOINT": "local CLIP checkpoint file used instead of downloading the spec's weights",
    "AUGCLIP_DEVICE": "auto (default: CUDA when present, else CPU), cpu, cuda, cuda:N or mps",
    "AUGCLIP_PRECISION": "auto (default: fp16 autocast on CUDA, fp32 elsewhere), fp32, fp16 or bf16",
    "AUGCLIP_CPU_MATMUL": ("kernels of the CLIP towers' float32 matrix products on a CPU: auto (default: torch's "
                           "own, as blas), onednn (oneDNN on x86: 1.4x faster on one machine, no faster on another; "
                           "measure with benchmarks/matmul_bench.py), or blas; both are full float32, embeddings "
                           "differ at float rounding"),
    "AUGCLIP_CACHE_DIR": "root of every cache and downloaded file (default: the user cache directory)",
    "AUGCLIP_MAX_IMAGE_PIXELS": "decompression-bomb limit in pixels (default: Pillow's, about 89.5 M)",
    "AUGCLIP_MAX_UPLOAD_MB": "largest image file the app accepts, in MB (default 25)",
    "AUGCLIP_ATTRIBUTE_PROVIDER": f"attribute provider name (default {DEFAULT_ATTRIBUTE_PROVIDER})",
    "AUGCLIP_MLLM_MODEL": f"model name for the openai-compatible provider (default {DEFAULT_MLLM_MODEL})",
    "AUGCLIP_MLLM_TIMEOUT": f"seconds to wait for one chat-completions answer (default {DEFAULT_MLLM_TIMEOUT:g})",
    "AUGCLIP_MLLM_MAX_RETRIES": (f"retries with backoff on 429 / 5xx / timeouts / connection errors "
                                 f"(default {DEFAULT_MLLM_MAX_RETRIES})"),
    "AUGCLIP_GDINO_MODEL": (f"GroundingDINO hub id or local folder (default {DEFAULT_GDINO_MODEL}); "
                            "random:swint / random:tiny for untrained weights"),
    "AUGCLIP_BPM_PRESET": "BPM region models: standard (GroundingDINO at 800 px + segment-anything SAM, the paper's) "
                          "or fast (OWL-ViT B/32 at 768 px + SAM 2.1 Hiera-Tiny at 512 px; docs/bpm.md says what it "
                          "gives up); unset, the web app on a machine without CUDA uses fast",
    "AUGCLIP_FAST_SAM_MODEL": "SAM 2 for the fast BPM preset: facebook/sam2.1-hiera-tiny (default), a local folder, "
                              "or random:hiera-tiny / random:test (untrained)",
    "AUGCLIP_FAST_DETECTOR_MODEL": ("OWL-ViT detector for the fast BPM preset: google/owlvit-base-patch32 (default), "
                                    "google/owlvit-base-patch16, a local folder, or random:owlvit-b32 / random:test "
                                    "(untrained); a GroundingDINO name (IDEA-Research/grounding-dino-tiny, "
                                    "random:swint) runs GroundingDINO at 512 px instead"),
    "AUGCLIP_SAM_MODEL": "SAM architecture: vit_b (default), vit_l or vit_h; random:vit_b / random:tiny for untrained weights",
    "AUGCLIP_SAM_CHECKPOINT": "local SAM checkpoint file (default: downloaded into the cache directory)",
    "AUGCLIP_SAM_URL": "where the SAM checkpoint is downloaded from (default: the official file; set for a mirror)",
    "AUGCLIP_SAM_SHA256": "expected SHA-256 of the SAM checkpoint (checked when set; a mismatch stops the run)",
    "AUGCLIP_HATIE_DINO": "DINOv2 network of HATIE's measures: hub id or folder (default facebook/dinov2-base; "
                          "random:tiny-v2 / random:dinov2-base for untrained weights)",
    "AUGCLIP_HATIE_LPIPS": "LPIPS backbone of HATIE's measures: alex (default), squeeze, vgg, or random:NET",
    "AUGCLIP_HATIE_CLIP": "CLIP of HATIE's measures: a CLIP model spec (default ViT-B-32/openai, the published "
                          "code's; random:tiny for untrained weights)",
    "AUGCLIP_FILE_MIRROR": ("base URL of a mirror holding the LPIPS backbones and the FID Inception file under their "
                            "published names (default: torchvision's and torch-fidelity's official URLs)"),
    "AUGCLIP_UPLOAD_MAX_ZIP_MB": "largest image zip accepted by the app's batch upload, in MB (default 512)",
    "AUGCLIP_UPLOAD_MAX_FILES": "most entries (files and folders) an uploaded image zip may hold (default 20000)",
    "AUGCLIP_UPLOAD_MAX_UNZIPPED_MB": "most bytes an uploaded image zip may expand to, in MB (default 4096)",
    "AUGCLIP_STUDY_DB": "SQLite file of the rating studies (default: studies.sqlite3 in the cache directory)",
    "AUGCLIP_STUDY_OPERATOR_TOKEN": ("operator token of the app's Study tab (unset: studies are run from the CLI only); "
                                     "a secret, read when checked, never stored in the settings"),
    "AUGCLIP_MAX_EDITS": f"most edited images in one evaluation, in the app and the CLI (default {DEFAULT_MAX_EDITS})",
    "AUGCLIP_MAX_IMAGE_SIDE": "working resolution: longer images are reduced while decoding (default 2048 px)",
    "AUGCLIP_MAX_REQUEST_PIXELS": "pixels all images of one app request may hold, before reduction (default 1.5 G)",
    "AUGCLIP_ALLOWED_MODELS": ("comma-separated CLIP model specs web clients may pick (default: the configured "
                               "model and the app's list)"),
    "AUGCLIP_EXPLORE_FILES": ("comma-separated batch results files the app's Explore tab may open (RESULTS or "
                              "RESULTS=MANIFEST; JSONL, .parquet or a folder of Parquet parts); web clients pick "
                              "among these by name, never by path (default: none, uploads only)"),
    "AUGCLIP_MAX_TEXT_CHARS": (f"most characters in one text a web client sends: target, source text, instruction, "
                               f"caption, manifest texts (default {DEFAULT_MAX_TEXT_CHARS})"),
    "AUGCLIP_MAX_ATTRIBUTES": f"most attributes in one list, in the app and a batch upload (default {DEFAULT_MAX_ATTRIBUTES})",
    "AUGCLIP_MAX_ATTRIBUTE_CHARS": f"most characters in one attribute (default {DEFAULT_MAX_ATTRIBUTE_CHARS})",
    "AUGCLIP_MAX_C": f"largest C (svm / logistic) a web client may set (default {DEFAULT_MAX_C:g})",
    "AUGCLIP_MAX_BATCH_EDITS": f"most edits in one item of an uploaded batch manifest (default {DEFAULT_MAX_BATCH_EDITS})",
    "AUGCLIP_MAX_BATCH_ITEMS": f"most items in an uploaded batch manifest (default {DEFAULT_MAX_BATCH_ITEMS})",
    "AUGCLIP_CONCURRENCY": f"app requests run at once (default {DEFAULT_APP_CONCURRENCY})",
    "AUGCLIP_APP_DISK_MB": "most bytes the app's session files and Gradio's cache may hold, in MB (default 1024)",
    "AUGCLIP_APP_FILES_MAX_AGE_S": "seconds the app keeps a session's files after their last change (default 3600)",
    "AUGCLIP_MAX_LOADED_MODELS": (f"most models (CLIP, GroundingDINO, SAM) kept loaded at once; the least recently "
                                  f"used unused one is unloaded beyond it (default {DEFAULT_MAX_LOADED_MODELS})"),
    "AUGCLIP_MAX_MODEL_MEMORY_MB": (f"most MB of weights (parameters + buffers) kept loaded at once, same eviction "
                                    f"(default {DEFAULT_MAX_MODEL_MEMORY_MB})"),
    "AUGCLIP_JUDGE_MODEL": "chat model of the MLLM judge (default: AUGCLIP_MLLM_MODEL); see docs/judge.md",
    "AUGCLIP_JUDGE_BASE_URL": "OpenAI-compatible API root of the judge (default: OPENAI_BASE_URL, else OpenAI)",
    "AUGCLIP_JUDGE_SAMPLES": "answers per question and edit, to measure the judge's own spread (default 1, at most 16)",
    "AUGCLIP_JUDGE_TEMPERATURE": "judge sampling temperature (default 0 for one sample, 1 for several)",
    "AUGCLIP_JUDGE_CONCURRENCY": f"judge requests in flight at once (default {DEFAULT_JUDGE_CONCURRENCY})",
    "AUGCLIP_JUDGE_RPM": "most judge requests started per minute (default 0: no limit beyond the concurrency)",
}


def _number(env: Mapping[str, str], var: str, kind: type[int] | type[float]) -> int | float | None:
    """``env[var]`` as ``kind``, ``None`` when unset or blank; a clear :class:`ConfigError` otherwise."""
    raw = (env.get(var) or "").strip()
    if not raw:
        return None
    try:
        return kind(raw)
    except ValueError:
        article = "an integer" if kind is int else "a number"
        raise ConfigError(f"{var} must be {article}, got {raw!r}") from None


def max_image_pixels_from_env(env: Mapping[str, str] | None = None) -> int | None:
    """``AUGCLIP_MAX_IMAGE_PIXELS`` read and checked exactly as :meth:`Settings.from_env` does.

    For callers that hold no :class:`Settings` (``io.open_image`` without ``max_pixels``), so the
    variable is parsed in one place and not the rest of the environment.
    """
    value = _number(os.environ if env is None else env, "AUGCLIP_MAX_IMAGE_PIXELS", int)
    if value is not None and value <= 0:
        raise ConfigError(f"AUGCLIP_MAX_IMAGE_PIXELS must be a positive number of pixels, got {value}")
    return value


def study_operator_token(env: Mapping[str, str] | None = None) -> str | None:
    """``AUGCLIP_STUDY_OPERATOR_TOKEN``, read at the moment it is checked (a secret: never a :class:`Settings` field)."""
    value = ((os.environ if env is None else env).get("AUGCLIP_STUDY_OPERATOR_TOKEN") or "").strip()
    if value and len(value) < 16:
        raise ConfigError("AUGCLIP_STUDY_OPERATOR_TOKEN must be at least 16 characters (e.g. the output of "
                          "`python -c \"import secrets; print(secrets.token_urlsafe(24))\"`)")
    return value or None


def default_cache_dir() -> Path:
    """The platform's user cache directory for this tool (e.g. ``~/.cache/augclip-demo``)."""
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("augclip-demo", appauthor=False))
    except ImportError:  # platformdirs is in requirements.txt; this keeps bare imports working
        return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "augclip-demo"


def parse_model_list(text: str) -> tuple[str, ...]:
    """``"a, b,,c"`` -> ``("a", "b", "c")``: the allow-list of CLIP model specs, in the given order."""
    return tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


@dataclass(frozen=True)
class Settings:
    """Resolved configuration. Build with :meth:`from_env`, override with :meth:`replace`."""

    clip_model: str = DEFAULT_CLIP_MODEL
    clip_checkpoint: Path | None = None
    device: str = "auto"
    precision: str = "auto"
    cpu_matmul: str = "auto"
    cache_dir: Path = dataclasses.field(default_factory=default_cache_dir)
    max_image_pixels: int | None = None
    max_upload_mb: float = 25.0
    attribute_provider: str = DEFAULT_ATTRIBUTE_PROVIDER
    mllm_model: str = DEFAULT_MLLM_MODEL
    mllm_timeout: float = DEFAULT_MLLM_TIMEOUT
    mllm_max_retries: int = DEFAULT_MLLM_MAX_RETRIES
    gdino_model: str = DEFAULT_GDINO_MODEL
    sam_model: str = DEFAULT_SAM_MODEL
    bpm_preset: str = "standard"
    fast_sam_model: str = DEFAULT_FAST_SAM_MODEL
    fast_detector_model: str = DEFAULT_FAST_DETECTOR_MODEL
    sam_checkpoint: Path | None = None
    sam_url: str | None = None
    sam_sha256: str | None = None
    file_mirror: str | None = None
    hatie_dino: str = "facebook/dinov2-base"
    hatie_lpips: str = "alex"
    hatie_clip: str = "ViT-B-32/openai"
    upload_max_zip_mb: int = 512
    upload_max_files: int = 20000
    upload_max_unzipped_mb: int = 4096
    study_db: Path | None = None  # None: <cache_dir>/studies.sqlite3
    max_edits: int = DEFAULT_MAX_EDITS
    allowed_models: tuple[str, ...] = ()
    explore_files: tuple[str, ...] = ()  # RESULTS or RESULTS=MANIFEST entries (the Explore tab's files)
    concurrency: int = DEFAULT_APP_CONCURRENCY
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    max_attributes: int = DEFAULT_MAX_ATTRIBUTES
    max_attribute_chars: int = DEFAULT_MAX_ATTRIBUTE_CHARS
    max_c: float = DEFAULT_MAX_C
    max_batch_edits: int = DEFAULT_MAX_BATCH_EDITS
    max_batch_items: int = DEFAULT_MAX_BATCH_ITEMS
    app_disk_mb: int = 1024
    app_files_max_age_s: int = 3600
    max_loaded_models: int = DEFAULT_MAX_LOADED_MODELS
    max_model_memory_mb: int = DEFAULT_MAX_MODEL_MEMORY_MB
    judge_model: str | None = None  # None: mllm_model
    judge_base_url: str | None = None  # None: OPENAI_BASE_URL
    judge_samples: int = 1
    judge_temperature: float | None = None  # None: 0 for one sample, 1 for several
    judge_concurrency: int = DEFAULT_JUDGE_CONCURRENCY
    judge_requests_per_minute: float = 0.0

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.cpu_matmul not in CPU_MATMULS:
            raise ConfigError(f"AUGCLIP_CPU_MATMUL must be one of {', '.join(CPU_MATMULS)}, got {self.cpu_matmul!r}")
        if not self.clip_model.strip():
            raise ConfigError("the CLIP model spec is empty; set AUGCLIP_CLIP_MODEL or --clip-model")
        if not self.max_upload_mb > 0:
            raise ConfigError(f"max_upload_mb must be positive, got {self.max_upload_mb}")
        if self.max_image_pixels is not None and self.max_image_pixels <= 0:
            raise ConfigError(f"max_image_pixels must be positive, got {self.max_image_pixels}")
        if self.bpm_preset not in BPM_PRESETS:
            raise ConfigError(f"AUGCLIP_BPM_PRESET must be one of {', '.join(BPM_PRESETS)}, got {self.bpm_preset!r}")
        if not self.mllm_model.strip():
            raise ConfigError("the MLLM model name is empty; set AUGCLIP_MLLM_MODEL or --mllm-model")
        if not self.mllm_timeout > 0:
            raise ConfigError(f"the MLLM timeout must be a positive number of seconds, got {self.mllm_timeout}")
        if self.mllm_max_retries < 0:
            raise ConfigError(f"the MLLM retry count must be 0 or more, got {self.mllm_max_retries}")
        if self.sam_sha256 is not None and not (len(self.sam_sha256) == 64
                                                 and all(c in "0123456789abcdefABCDEF" for c in self.sam_sha256)):
            raise ConfigError(f"AUGCLIP_SAM_SHA256 must be 64 hexadecimal digits, got {self.sam_sha256!r}")
        if not 1 <= self.judge_samples <= 16:
            raise ConfigError(f"AUGCLIP_JUDGE_SAMPLES must be from 1 to 16, got {self.judge_samples}")
        if self.judge_temperature is not None and not 0 <= self.judge_temperature <= 2:
            raise ConfigError(f"AUGCLIP_JUDGE_TEMPERATURE must be from 0 to 2, got {self.judge_temperature}")
        if not 1 <= self.judge_concurrency <= 64:
            raise ConfigError(f"AUGCLIP_JUDGE_CONCURRENCY must be from 1 to 64, got {self.judge_concurrency}")
        if not (isinstance(self.max_c, (int, float)) and 1e-4 <= self.max_c < float("inf")):
            raise ConfigError(f"AUGCLIP_MAX_C must be a finite number of at least 0.0001, got {self.max_c!r}")
        if not self.judge_requests_per_minute >= 0:
            raise ConfigError(f"AUGCLIP_JUDGE_RPM must be 0 or more, got {self.judge_requests_per_minute}")
        for name in ("upload_max_zip_mb", "upload_max_files", "upload_max_unzipped_mb", "max_edits", "concurrency",
                     "app_disk_mb", "app_files_max_age_s", "max_loaded_models", "max_model_memory_mb", "max_text_chars",
                     "max_attributes", "max_attribute_chars", "max_batch_edits", "max_batch_items"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Read ``AUGCLIP_*`` variables from ``env`` (default ``os.environ``), then apply overrides.

        Overrides whose value is ``None`` are ignored, so CLI arguments can be passed straight in.
        """
        env = os.environ if env is None else env

        def get(name: str) -> str | None:
            value = env.get(name)
            return value.strip() if value and value.strip() else None

        values: dict[str, object] = {}
        simple = {
            "clip_model": "AUGCLIP_CLIP_MODEL",
            "device": "AUGCLIP_DEVICE",
            "precision": "AUGCLIP_PRECISION",
            "cpu_matmul": "AUGCLIP_CPU_MATMUL",
            "attribute_provider": "AUGCLIP_ATTRIBUTE_PROVIDER",
            "mllm_model": "AUGCLIP_MLLM_MODEL",
            "gdino_model": "AUGCLIP_GDINO_MODEL",
            "sam_model": "AUGCLIP_SAM_MODEL",
            "bpm_preset": "AUGCLIP_BPM_PRESET",
            "fast_sam_model": "AUGCLIP_FAST_SAM_MODEL",
            "fast_detector_model": "AUGCLIP_FAST_DETECTOR_MODEL",
            "sam_url": "AUGCLIP_SAM_URL",
            "sam_sha256": "AUGCLIP_SAM_SHA256",
            "judge_model": "AUGCLIP_JUDGE_MODEL",
            "judge_base_url": "AUGCLIP_JUDGE_BASE_URL",
            "file_mirror": "AUGCLIP_FILE_MIRROR",
            "hatie_dino": "AUGCLIP_HATIE_DINO",
            "hatie_lpips": "AUGCLIP_HATIE_LPIPS",
            "hatie_clip": "AUGCLIP_HATIE_CLIP",
        }
        for field, var in simple.items():
            if (value := get(var)) is not None:
                values[field] = value
        for field, var in {
            "clip_checkpoint": "AUGCLIP_CLIP_CHECKPOINT",
            "cache_dir": "AUGCLIP_CACHE_DIR",
            "sam_checkpoint": "AUGCLIP_SAM_CHECKPOINT",
            "study_db": "AUGCLIP_STUDY_DB",
        }.items():
            if (value := get(var)) is not None:
                values[field] = Path(value).expanduser()
        if (pixels := max_image_pixels_from_env(env)) is not None:
            values["max_image_pixels"] = pixels
        for field, var, kind in (("max_upload_mb", "AUGCLIP_MAX_UPLOAD_MB", float),
                                 ("mllm_timeout", "AUGCLIP_MLLM_TIMEOUT", float),
                                 ("mllm_max_retries", "AUGCLIP_MLLM_MAX_RETRIES", int),
                                 ("upload_max_zip_mb", "AUGCLIP_UPLOAD_MAX_ZIP_MB", int),
                                 ("upload_max_files", "AUGCLIP_UPLOAD_MAX_FILES", int),
                                 ("upload_max_unzipped_mb", "AUGCLIP_UPLOAD_MAX_UNZIPPED_MB", int),
                                 ("max_edits", "AUGCLIP_MAX_EDITS", int),
                                 ("concurrency", "AUGCLIP_CONCURRENCY", int),
                                 ("max_text_chars", "AUGCLIP_MAX_TEXT_CHARS", int),
                                 ("max_attributes", "AUGCLIP_MAX_ATTRIBUTES", int),
                                 ("max_attribute_chars", "AUGCLIP_MAX_ATTRIBUTE_CHARS", int),
                                 ("max_c", "AUGCLIP_MAX_C", float),
                                 ("max_batch_edits", "AUGCLIP_MAX_BATCH_EDITS", int),
                                 ("max_batch_items", "AUGCLIP_MAX_BATCH_ITEMS", int),
                                 ("app_disk_mb", "AUGCLIP_APP_DISK_MB", int),
                                 ("app_files_max_age_s", "AUGCLIP_APP_FILES_MAX_AGE_S", int),
                                 ("max_loaded_models", "AUGCLIP_MAX_LOADED_MODELS", int),
                                 ("max_model_memory_mb", "AUGCLIP_MAX_MODEL_MEMORY_MB", int),
                                 ("judge_samples", "AUGCLIP_JUDGE_SAMPLES", int),
                                 ("judge_temperature", "AUGCLIP_JUDGE_TEMPERATURE", float),
                                 ("judge_concurrency", "AUGCLIP_JUDGE_CONCURRENCY", int),
                                 ("judge_requests_per_minute", "AUGCLIP_JUDGE_RPM", float)):
            if (value := _number(env, var, kind)) is not None:
                values[field] = value
        if (value := get("AUGCLIP_ALLOWED_MODELS")) is not None:
            values["allowed_models"] = parse_model_list(value)
        if (value := get("AUGCLIP_EXPLORE_FILES")) is not None:
            values["explore_files"] = parse_model_list(value)
        return cls(**values).replace(**overrides)

    def replace(self, **overrides: object) -> Settings:
        """A copy with the given fields changed; ``None`` values leave a field as it is."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = set(overrides) - known
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        changes = {k: v for k, v in overrides.items() if v is not None}
        for key in ("allowed_models", "explore_files"):
            if isinstance(changes.get(key), str):
                changes[key] = parse_model_list(changes[key])
        for key in ("clip_checkpoint", "cache_dir", "sam_checkpoint", "study_db"):
            if key in changes and not isinstance(changes[key], Path):
                changes[key] = Path(str(changes[key])).expanduser()
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
