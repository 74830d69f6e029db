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
``shapes:tiny``               the toy CLIP trained on the synthetic shapes world
                              (``augclip_demo.world``; ``training/train_shapes_clip.py``), read from
                              ``inference/shipped/shapes-tiny/``: knows those scenes and nothing else
============================  ====================================================================

Anything built with ``random:`` is *untrained*; every report computed with it says so.

Every spec is normalised here, once: surrounding whitespace goes, whitespace after the schema
(``random: ViT-B-16``) and around ``/`` goes, a pretrained tag takes open_clip's own spelling
(lower case, ``-`` as ``_``: open_clip matches tags that way), and ``random:augclip-tiny-vit`` is
``random:tiny``. Architecture names stay as written: open_clip matches them exactly. The canonical
text is :attr:`ModelSpec.raw`, so equal models give equal specs and every model cache keys on it.
Specs longer than :data:`MAX_SPEC_CHARS`, with control characters, or with a hub id that is not
``ORG/NAME`` are refused with one line that quotes at most the spec's first characters.

``random:`` architectures are built only up to :data:`MAX_RANDOM_PARAMS` parameters, counted on
PyTorch's meta device (no memory) before anything is allocated.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ConfigError

TINY_ARCH = "augclip-tiny-vit"
#: Longest spec accepted (a local folder path fits; hub ids are at most 96 characters).
MAX_SPEC_CHARS = 1024
#: Largest ``random:`` architecture built, in parameters: ViT-L-14 (428 M) fits; ViT-H-14 (986 M),
#: RN50x64 (623 M) and ViT-bigG-14 (2.5 G) are refused. Random weights are for tests and speed
#: benchmarks, where the published architectures up to ViT-L-14 cover the paper's models.
MAX_RANDOM_PARAMS = 500_000_000
_SHOWN_CHARS = 60
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_CONFIG_DIR = Path(__file__).with_name("model_configs")
#: Models this project trains, read from the package's ``shipped/`` folder: spec -> (folder under ``shipped/``,
#: what the model is, said wherever its results are shown). They load through open_clip's ``local-dir:`` path.
_SHIPPED_CLIP: dict[str, tuple[str, str]] = {
    "shapes:tiny": ("shapes-tiny", "toy model trained on synthetic shapes; meaningful only for such scenes"),
}
_SHIPPED_DIR = Path(__file__).with_name("shipped")
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
        return untrained_spec(self.raw)  # CLIP's family has no test-only names and no folder marker

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
    def shipped_note(self) -> str | None:
        """What a model shipped with the package is (:data:`_SHIPPED_CLIP`), else None."""
        return shipped_note(self.raw)

    @property
    def label(self) -> str:
        """Human-readable name used in reports and the UI."""
        detail = self.shipped_note or (f"weights: {self.checkpoint}" if self.checkpoint else "")
        return model_label("", self.raw, self.untrained, detail)


#: What a label says of a model whose weights are random.
UNTRAINED = " (random weights, untrained)"
#: Written into folders saved from random models: loading such a folder says the weights are untrained.
RANDOM_MARKER = "augclip_random_weights.json"
#: The seed every family draws its ``random:`` weights from, so one spec gives the same network in any process.
RANDOM_INIT_SEED = 0


@contextlib.contextmanager
def seeded_random(seed: int = RANDOM_INIT_SEED) -> Iterator[None]:
    """torch's CPU generator seeded with ``seed`` for the block, and given back as it was after: how every
    family builds its ``random:`` network (the caller's own random state is left alone)."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def shipped_note(spec: str) -> str | None:
    """What the shipped model of canonical ``spec`` is (said wherever its results are shown), else None."""
    entry = _SHIPPED_CLIP.get(spec)
    return entry[1] if entry else None


def shown_model(spec: str) -> str:
    """``spec`` as a results table names it: with what it is when it is a shipped model."""
    return model_label("", spec, False, shipped_note(spec) or "")


def is_path_spec(spec: str) -> bool:
    """Whether a ``hub`` spec names a folder on this machine (absolute, ``./``, ``~`` or existing), not a Hub id."""
    if spec.startswith("random:"):
        return False
    path = Path(spec).expanduser()
    return path.is_absolute() or spec.startswith((".", "~")) or path.exists()


def model_label(prefix: str, text: str, untrained: bool, detail: str = "") -> str:
    """A model's name in reports: ``prefix text (detail)``, and :data:`UNTRAINED` when its weights are random."""
    base = f"{prefix} {text}".strip() + (f" ({detail})" if detail else "")
    return base + (UNTRAINED if untrained else "")


def untrained_spec(spec: str, *, names: tuple[str, ...] = (), folders: bool = False) -> bool:
    """Whether a model of canonical ``spec`` has untrained weights: ``random:``, one of the family's test-only
    ``names``, or (for families whose specs may be ``folders``) a folder saved from a random model (it carries
    :data:`RANDOM_MARKER`). The one rule for every family (:mod:`.families`) and CLIP's specs."""
    if spec.startswith("random:") or spec in names:
        return True
    return folders and is_path_spec(spec) and (Path(spec).expanduser() / RANDOM_MARKER).is_file()


def shown_spec(spec: str) -> str:
    """``spec`` quoted for a message: at most the first characters, control characters escaped."""
    text = str(spec)
    if len(text) > _SHOWN_CHARS:
        return repr(text[:_SHOWN_CHARS])[:-1] + f"...' ({len(text)} characters)"
    return repr(text)


def check_spec_text(spec: object, what: str = "model spec") -> str:
    """``spec`` without surrounding whitespace; :class:`ConfigError` if it is not a string, empty,
    longer than :data:`MAX_SPEC_CHARS` or holds control characters."""
    if not isinstance(spec, str):
        raise ConfigError(f"the {what} must be text, got {type(spec).__name__}")
    raw = spec.strip()
    if len(raw) > MAX_SPEC_CHARS:
        raise ConfigError(f"the {what} {shown_spec(raw)} is too long: at most {MAX_SPEC_CHARS} characters")
    if any(unicodedata.category(ch) == "Cc" for ch in raw):
        raise ConfigError(f"the {what} {shown_spec(raw)} contains control characters (a line break, tab or NUL)")
    return raw


def check_hub_id(repo_id: str, spec: str) -> str:
    """``repo_id`` if it has the Hub's ``NAME`` / ``ORG/NAME`` form, else :class:`ConfigError`."""
    if (len(repo_id) > 96 or not _HUB_ID.match(repo_id) or ".." in repo_id or "--" in repo_id
            or repo_id.endswith((".", "-"))):
        raise ConfigError(f"{shown_spec(spec)} does not name a Hugging Face Hub repository: the id must be ORG/NAME "
                          "(letters, digits, '-', '_', '.'; no '..', at most 96 characters)")
    return repo_id


def parse_model_spec(spec: str, checkpoint: str | os.PathLike | None = None) -> ModelSpec:
    """Parse a backbone spec string into its canonical :class:`ModelSpec`; raise :class:`ConfigError` for
    anything malformed or unknown (see the module docstring for the normalisation rules)."""
    import open_clip

    register_model_configs()
    raw = check_spec_text(spec if spec is not None else "", "CLIP model spec")
    if not raw:
        raise ConfigError("the CLIP model spec is empty; use e.g. ViT-B-16/openai or random:tiny")
    ckpt = Path(checkpoint).expanduser() if checkpoint else None
    if ckpt is not None:
        check_spec_text(str(checkpoint), "CLIP checkpoint path")

    if raw.startswith("random:"):
        if ckpt is not None:
            raise ConfigError(
                f"{shown_spec(raw)} asks for random weights but a checkpoint file was also given ({ckpt}); "
                "drop one of the two"
            )
        name = raw[len("random:"):].strip()
        arch = TINY_ARCH if name == "tiny" else name
        _require_arch(arch, open_clip.list_models())
        _check_random_size(arch)
        return ModelSpec(raw="random:tiny" if arch == TINY_ARCH else f"random:{arch}", kind="random", arch=arch)

    shipped = " ".join(raw.lower().split())
    if shipped in _SHIPPED_CLIP:
        if ckpt is not None:
            raise ConfigError(f"{shipped} is a model shipped with the package; a checkpoint file cannot be combined "
                              "with it")
        return ModelSpec(raw=shipped, kind="local-dir", source_id=str(_SHIPPED_DIR / _SHIPPED_CLIP[shipped][0]))

    for schema in ("hf-hub", "local-dir"):
        if raw.startswith(schema + ":"):
            if ckpt is not None:
                raise ConfigError(f"{shown_spec(raw)} brings its own weights; a checkpoint file cannot be combined "
                                  "with it")
            ident = raw[len(schema) + 1:].strip()
            if not ident:
                raise ConfigError(f"{raw}: missing the {'repository id' if schema == 'hf-hub' else 'folder'}")
            if schema == "hf-hub":
                check_hub_id(ident, raw)
            else:
                ident = os.path.normpath(os.path.expanduser(ident))
            return ModelSpec(raw=f"{schema}:{ident}", kind=schema, source_id=ident)  # type: ignore[arg-type]

    arch, _, tag = raw.partition("/")
    arch, tag = arch.strip(), tag.strip()
    _require_arch(arch, open_clip.list_models())
    if tag:
        tags = open_clip.list_pretrained_tags_by_model(arch)
        if tag not in tags and not open_clip.pretrained.is_pretrained_cfg(arch, tag):
            raise ConfigError(
                f"{arch} has no pretrained tag {shown_spec(tag)}; available: {', '.join(tags) or 'none'} "
                "(or give a local checkpoint with --clip-checkpoint)"
            )
        tag = _canonical_tag(arch, tag)
    canonical = f"{arch}/{tag}" if tag else arch
    if ckpt is not None:
        return ModelSpec(raw=canonical, kind="checkpoint", arch=arch, pretrained=tag or None, checkpoint=ckpt)
    if not tag:
        tags = open_clip.list_pretrained_tags_by_model(arch)
        raise ConfigError(
            f"{raw} names no weights: use {arch}/TAG (tags: {', '.join(tags) or 'none'}), "
            f"give a local file with --clip-checkpoint, or random:{arch} for untrained weights"
        )
    return ModelSpec(raw=canonical, kind="pretrained", arch=arch, pretrained=tag)


def _canonical_tag(arch: str, tag: str) -> str:
    """open_clip's own key for ``tag`` (it matches tags lower-cased with ``-`` as ``_``)."""
    import open_clip

    if tag in open_clip.list_pretrained_tags_by_model(arch):
        return tag
    cleaned = tag.lower().replace("-", "_")
    return cleaned if cleaned in open_clip.list_pretrained_tags_by_model(arch) else tag


@functools.lru_cache(maxsize=256)
def _random_param_count(arch: str) -> int | None:
    """Parameters of open_clip architecture ``arch``, counted on the meta device (allocates nothing);
    ``None`` when the architecture cannot be built there (e.g. a text tower that needs the network)."""
    import logging

    import open_clip
    import torch

    register_model_configs()
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # open_clip warns "initialized randomly", which is the point here
    try:
        with torch.device("meta"):
            model = open_clip.create_model(arch, device="meta")
        return int(sum(p.numel() for p in model.parameters()))
    except Exception:  # noqa: BLE001 - no estimate; the real build reports its own error
        return None
    finally:
        logging.disable(previous)


def _check_random_size(arch: str) -> None:
    """:class:`ConfigError` when ``random:arch`` has more than :data:`MAX_RANDOM_PARAMS` parameters."""
    count = _random_param_count(arch)
    if count is not None and count > MAX_RANDOM_PARAMS:
        raise ConfigError(
            f"random:{arch} has {count / 1e6:,.0f} M parameters ({count * 4 / 2**30:.1f} GiB in fp32), more than the "
            f"{MAX_RANDOM_PARAMS / 1e6:,.0f} M built with random weights; use random:ViT-B-16 or random:ViT-L-14 "
            "for speed tests, or real weights for this architecture"
        )


def _require_arch(arch: str, known: list[str]) -> None:
    if arch not in known:
        close = [name for name in known if arch.lower().replace("-", "") in name.lower().replace("-", "")]
        hint = f" Did you mean: {', '.join(close[:5])}?" if close else ""
        raise ConfigError(f"unknown open_clip architecture {shown_spec(arch)}.{hint} See open_clip.list_models().")
