"""Model inference: CLIP backbones (and, from the BPM module, the region models).

Everything that touches torch models lives here; :mod:`augclip_demo.metrics` stays model-free.
"""

from .clip_encoder import ClipEncoder, ModelInfo, get_encoder
from .device import resolve_device
from .specs import TINY_ARCH, ModelSpec, parse_model_spec

__all__ = ["ClipEncoder", "ModelInfo", "ModelSpec", "TINY_ARCH", "get_encoder", "parse_model_spec", "resolve_device"]
