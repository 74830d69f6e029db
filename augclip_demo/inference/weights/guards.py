"""Load-time guards: a weight file that does not fit its model is an error in words, never random weights."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...errors import WeightsUnavailableError
from .fetch import _first_line, check_weight_file


def _summarize_state_dict_error(exc: BaseException, limit: int = 3) -> str:
    """One line from PyTorch's long ``load_state_dict`` report: counts and the first few differences."""
    text = str(exc)
    parts = []
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
        return "the file is for a different architecture: " + _summarize_state_dict_error(exc)
    if "weights_only" in text or "Unpickling" in type(exc).__name__ or "pickle" in text.lower():
        return "the file is not a PyTorch state dict that can be loaded safely (not a checkpoint, or a full pickled object)"
    return f"{type(exc).__name__}: {_first_line(exc)}"


def create_open_clip(factory: Callable[..., Any], model_name: str, *, model: str, where: str, how_to_fix: str,
                     **kwargs: Any) -> Any:
    """``factory(model_name, **kwargs)`` (open_clip's ``create_model`` or ``create_model_and_transforms``) with
    open_clip's own ``require_pretrained`` check: a model whose full weights were not loaded is an error here,
    where open_clip alone would log a warning and carry on with random weights.

    ``require_pretrained`` covers every form this tool passes to open_clip: an architecture with a weight
    file (``ARCH/TAG`` after download, ``--clip-checkpoint``), and ``local-dir:FOLDER`` (``hf-hub:`` after
    download, ``local-dir:``). ``random:`` specs never come here.
    """
    try:
        return factory(model_name, require_pretrained=True, **kwargs)
    except RuntimeError as exc:
        # open_clip raises a bare RuntimeError for this; its other RuntimeErrors (a key mismatch) pass on
        if not str(exc).startswith("Required pretrained weights"):
            raise
        raise WeightsUnavailableError(model, where, "open_clip did not load the weights (" + _first_line(exc)[:200]
                                      + "); refusing to run with random weights. " + how_to_fix) from exc


def quiet_transformers() -> None:
    """No loading bars and no repeated advisory warnings from transformers while we load (errors still show)."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
