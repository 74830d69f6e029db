"""CLIP backbone specs: one string names an architecture and where its weights come from.

Grammar (see the README's "Model specs"):

============================  ====================================================================
``ARCH/TAG``                  open_clip architecture + pretrained tag, e.g. ``ViT-B-16/openai`` (the
                              paper's model), downloaded by open_clip's normal hub / URL path
``ARCH/TAG`` + checkpoint     same architecture and tag settings (QuickGELU, preprocessing), weights
                              from a local file (``--clip-checkpoint`` / ``AUGCLIP_CLIP_CHECKPOINT``)
``ARCH`` + checkpoint         architecture with weights from a local file
``hf-hub:ORG/REPO``           an open_clip model published on the Hugging Face Hub
``local-dir:PATH``            an open_clip folder (``open_clip_config.json`` + weights)
``random:ARCH``               the real architecture with random weights (benchmarks only)
``random:tiny``               a tiny registered ViT (2 layers, width 64) for tests
============================  ====================================================================

Anything built with ``random:`` is *untrained*; every report computed with it says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ConfigError

TINY_ARCH = "augclip-tiny-vit"
_CONFIG_DIR = Path(__file__).with_name("model_configs")
_registered = False

SpecKind = Literal["pretrained", "checkpoint", "hf-hub", "local-dir", "random"]


def register_model_configs() -> None:
    """Add this package's architecture configs (the tiny test ViT) to open_clip's registry."""
    global _registered
    if _registered:
        return
    import open_clip

    if TINY_ARCH not in open_clip.list_models():
        open_clip.add_model_config(_CONFIG_DIR)
    _registered = True


@dataclass(frozen=True)
class ModelSpec:
    """A parsed backbone spec."""

    raw: str
    kind: SpecKind
    arch: str | None = None
    pretrained: str | None = None
    source_id: str | None = None  # hub repo id or local folder for the schema kinds
    checkpoint: Path | None = None

    @property
    def untrained(self) -> bool:
        """True when the weights are random: scores computed with them are not meaningful."""
        return self.kind == "random"

    @property
    def open_clip_name(self) -> str:
        """The ``model_name`` argument for ``open_clip.create_model``."""
        if self.kind == "hf-hub":
            return f"hf-hub:{self.source_id}"
        if self.kind == "local-dir":
            return f"local-dir:{self.source_id}"
        assert self.arch is not None
        return self.arch

    @property
    def label(self) -> str:
        """Human-readable name used in reports and the UI."""
        if self.kind == "checkpoint":
            base = f"{self.arch}/{self.pretrained}" if self.pretrained else str(self.arch)
            return f"{base} (weights: {self.checkpoint})"
        if self.kind == "random":
            return f"{self.raw} (random weights, untrained)"
        return self.raw


def parse_model_spec(spec: str, checkpoint: str | os.PathLike | None = None) -> ModelSpec:
    """Parse a backbone spec string; raise :class:`ConfigError` for anything malformed or unknown."""
    import open_clip

    register_model_configs()
    raw = (spec or "").strip()
    if not raw:
        raise ConfigError("the CLIP model spec is empty; use e.g. ViT-B-16/openai or random:tiny")
    ckpt = Path(checkpoint).expanduser() if checkpoint else None

    if raw.startswith("random:"):
        if ckpt is not None:
            raise ConfigError(
                f"{raw} asks for random weights but a checkpoint file was also given ({ckpt}); "
                "drop one of the two"
            )
        name = raw[len("random:"):].strip()
        arch = TINY_ARCH if name == "tiny" else name
        _require_arch(arch, open_clip.list_models())
        return ModelSpec(raw=raw, kind="random", arch=arch)

    for schema in ("hf-hub", "local-dir"):
        if raw.startswith(schema + ":"):
            if ckpt is not None:
                raise ConfigError(f"{raw} brings its own weights; a checkpoint file cannot be combined with it")
            ident = raw[len(schema) + 1:].strip()
            if not ident:
                raise ConfigError(f"{raw}: missing the {'repository id' if schema == 'hf-hub' else 'folder'}")
            return ModelSpec(raw=raw, kind=schema, source_id=ident)  # type: ignore[arg-type]

    arch, _, tag = raw.partition("/")
    arch, tag = arch.strip(), tag.strip()
    _require_arch(arch, open_clip.list_models())
    if tag:
        tags = open_clip.list_pretrained_tags_by_model(arch)
        if tag not in tags and not open_clip.pretrained.is_pretrained_cfg(arch, tag):
            raise ConfigError(
                f"{arch} has no pretrained tag {tag!r}; available: {', '.join(tags) or 'none'} "
                "(or give a local checkpoint with --clip-checkpoint)"
            )
    if ckpt is not None:
        return ModelSpec(raw=raw, kind="checkpoint", arch=arch, pretrained=tag or None, checkpoint=ckpt)
    if not tag:
        tags = open_clip.list_pretrained_tags_by_model(arch)
        raise ConfigError(
            f"{raw} names no weights: use {arch}/TAG (tags: {', '.join(tags) or 'none'}), "
            f"give a local file with --clip-checkpoint, or random:{arch} for untrained weights"
        )
    return ModelSpec(raw=raw, kind="pretrained", arch=arch, pretrained=tag)


def _require_arch(arch: str, known: list[str]) -> None:
    if arch not in known:
        close = [name for name in known if arch.lower().replace("-", "") in name.lower().replace("-", "")]
        hint = f" Did you mean: {', '.join(close[:5])}?" if close else ""
        raise ConfigError(f"unknown open_clip architecture {arch!r}.{hint} See open_clip.list_models().")
