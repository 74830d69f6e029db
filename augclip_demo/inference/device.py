"""Device and precision selection shared by every model wrapper (CLIP, GroundingDINO, SAM)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from ..errors import ConfigError


def resolve_device(requested: str | torch.device | None = "auto") -> torch.device:
    """``auto``/``None`` -> CUDA when available, else CPU; otherwise the named device, checked."""
    if isinstance(requested, torch.device):
        return requested
    name = (requested or "auto").strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise ConfigError(f"unknown device {requested!r}; use auto, cpu, cuda, cuda:N or mps") from exc
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device {requested!r} was requested but no CUDA GPU is available here; use cpu")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(f"device {requested!r}: only {torch.cuda.device_count()} CUDA device(s) present")
    if device.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ConfigError("device 'mps' was requested but Metal is not available here; use cpu")
    return device


def resolve_amp_dtype(device: torch.device, precision: str = "auto") -> torch.dtype | None:
    """The autocast dtype for ``precision`` on ``device``; ``None`` means plain fp32.

    ``auto`` uses fp16 autocast on CUDA (CLIP was trained in mixed precision; cosine scores move by
    about 1e-3) and fp32 elsewhere, where half precision is slow or unsupported.
    """
    if precision == "fp32":
        return None
    if precision == "fp16":
        return torch.float16
    if precision == "bf16":
        return torch.bfloat16
    if precision == "auto":
        return torch.float16 if device.type == "cuda" else None
    raise ConfigError(f"unknown precision {precision!r}; use auto, fp32, fp16 or bf16")


@contextlib.contextmanager
def autocast(device: torch.device, dtype: torch.dtype | None) -> Iterator[None]:
    """Autocast to ``dtype`` on ``device`` (a no-op for ``None``)."""
    if dtype is None:
        yield
        return
    with torch.autocast(device_type=device.type, dtype=dtype):
        yield


def device_description(device: torch.device) -> str:
    """E.g. ``cuda:0 (NVIDIA H100 80GB HBM3)`` or ``cpu (4 threads)``."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    if device.type == "cpu":
        return f"cpu ({torch.get_num_threads()} threads)"
    return str(device)


def is_out_of_memory(exc: BaseException) -> bool:
    """True for CUDA / MPS out-of-memory errors (the batch can be split and retried)."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()
