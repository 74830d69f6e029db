"""The model families: one table of what this tool loads, and one way to get a (pooled) model from it.

A row (:class:`ModelFamily`) says, for one family: the wrapper class, the spec grammar, the files a
model of it is read from, the default spec, the CLI flag and environment variable that choose it, the
how-to-fix text every "weights unavailable" error of the family ends with, the wrapper arguments the
settings give (:func:`settings_arguments`), and the features that load it besides CLIP and BPM's region
models (:mod:`.needs`): a new family is a new row. :func:`get_model` is the
one way to get a wrapper from a family and a spec (one wrapper per canonical spec, device and
cache, living in the bounded pool of :mod:`augclip_demo.inference.pool`). :func:`model_label` and
:meth:`ModelFamily.untrained` derive a model's name in reports and whether its weights are untrained
from the spec, for every family.

Spec grammars (besides CLIP's own, :func:`augclip_demo.inference.specs.parse_model_spec`):

* ``hub``: a Hub id ``ORG/NAME``, a local folder saved with ``save_pretrained``, or ``random:KIND``
  (KIND one of the family's random kinds): GroundingDINO, OWL-ViT, SAM 2, DINO;
* ``named``: one of the family's names, or ``random:NAME``: SAM, LPIPS, FID.

This module imports no model code: the wrapper class is named by its import path, so the status
line, ``doctor`` and ``download`` read the table without loading torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import (
    DEFAULT_CLIP_MODEL,
    DEFAULT_FAST_DETECTOR_MODEL,
    DEFAULT_FAST_SAM_MODEL,
    DEFAULT_GDINO_MODEL,
    DEFAULT_SAM_MODEL,
)
from ..errors import ConfigError
from .specs import (  # noqa: F401 - RANDOM_MARKER, UNTRAINED: a family's label and marker facts
    RANDOM_MARKER,
    UNTRAINED,
    check_hub_id,
    check_spec_text,
    is_path_spec,
    model_label,
    shown_spec,
    untrained_spec,
)
from .weights.fetch import hub_endpoint
from .weights.table import (
    DINO_FILES,
    FID_INCEPTION_URL,
    GDINO_FILES,
    OPEN_CLIP_CONFIG,
    OPEN_CLIP_WEIGHT_FILES,
    OWL_FILES,
    SAM2_FILES,
    SAM_CHECKPOINT_URLS,
    TORCHVISION_BACKBONE_URLS,
)

if TYPE_CHECKING:
    from ..config import Settings
    from .pool import LazyModel

# ---------------------------------------------------------------------- the two spec grammars


def _hub_spec(family: ModelFamily, spec: object) -> str:
    """The canonical ``hub``-grammar spec: trimmed, ``random:`` lower case and known, a Hub id checked as one."""
    raw = " ".join(check_spec_text(spec if spec is not None else "", f"{family.name} model spec").split())
    if not raw:
        raise ConfigError(f"the {family.name} model is empty; set {family.variable}"
                          + (f" or {family.flag}" if family.flag else ""))
    if raw.lower().startswith("random:"):
        kind = raw.split(":", 1)[1].strip().lower()
        if kind not in family.random_kinds:
            raise ConfigError(f"unknown {family.name} spec {shown_spec(raw)}; random specs: "
                              + ", ".join(f"random:{k}" for k in family.random_kinds))
        return f"random:{kind}"
    if not is_path_spec(raw):
        if raw.count("/") != 1:
            raise ConfigError(f"{family.name} model {shown_spec(raw)} is neither a hub id (ORG/NAME, e.g. "
                              f"{family.default}), a local folder, nor random:KIND")
        check_hub_id(raw, raw)
    return raw


def _named_spec(family: ModelFamily, spec: object) -> str:
    """The canonical ``named``-grammar spec: lower case, ``NAME`` or ``random:NAME`` with NAME one of the family's."""
    raw = check_spec_text(spec if spec is not None else "", f"{family.name} model spec").lower()
    random = raw.startswith("random:")
    name = raw.split(":", 1)[1].strip() if random else raw
    if name not in family.names:
        shown = [n for n in family.names if n not in family.untrained_names]
        either = ", ".join(shown[:-1]) + " or " + shown[-1] if len(shown) > 1 else shown[0]
        raise ConfigError(f"unknown {family.name} model {shown_spec(raw)}; use {either} "
                          f"(or random:{shown[0]} for untrained weights)")
    return f"random:{name}" if random else name


# ---------------------------------------------------------------------- how to fix (the end of every weights error)


#: The CLIP spec that always runs offline, and what its scores are worth.
_OFFLINE_RANDOM_CLIP = ("random:tiny", "untrained: every feature runs, the scores mean nothing")


@dataclass(frozen=True)
class OfflineClip:
    """A CLIP that needs no download: ``random:tiny`` (built in code) or a model shipped in the package."""

    spec: str
    what: str
    present: bool  # its files are in this installation (always, for random:tiny)
    folder: Path | None = None  # where a shipped model's files are (None for random:tiny)


def offline_clip_models() -> list[OfflineClip]:
    """``random:tiny``, then every shipped model of the weights table (``package:`` source) and whether its
    files (the open_clip config and a weight file) are here."""
    from .specs import parse_model_spec, shipped_note
    from .weights.table import PRETRAINED

    models = [OfflineClip(*_OFFLINE_RANDOM_CLIP, present=True)]
    for entry in PRETRAINED:
        if entry.family == "clip" and entry.source.startswith("package:"):
            folder = Path(str(parse_model_spec(entry.spec).source_id))
            present = (folder / OPEN_CLIP_CONFIG).is_file() and any(
                (folder / name).is_file() for name in OPEN_CLIP_WEIGHT_FILES)
            models.append(OfflineClip(entry.spec, shipped_note(entry.spec) or entry.note, present, folder))
    return models


def _offline_clip_hint() -> str:
    """One sentence naming the offline CLIP choices that can run here, a shipped trained model before
    ``random:tiny`` (which only shows that everything runs)."""
    present = [model for model in offline_clip_models() if model.present]
    present.sort(key=lambda model: model.folder is None)  # the shipped (trained) ones first; a stable sort
    choices = [f"--clip-model {model.spec} ({model.what.replace(':', ';').split(';')[0]})" for model in present]
    return f"Offline: {' or '.join(choices)}."


def _clip_how_to_fix(spec: Any, url: str | None = None) -> str:
    """For a CLIP spec (text, or parsed: a :class:`~augclip_demo.inference.specs.ModelSpec`)."""
    from .specs import parse_model_spec
    from .weights.resolve import clip_tag_source

    if isinstance(spec, str):
        spec = parse_model_spec(spec)

    if spec.shipped_note:
        return (f"{spec.raw}'s files are not in this installation (training/train_shapes_clip.py writes them "
                f"into {spec.source_id}). {_offline_clip_hint()}")
    if spec.kind == "checkpoint":
        return (f"Check that the file is an open_clip state dict for {spec.arch} "
                "(open_clip_model.safetensors or open_clip_pytorch_model.bin from the model's hub page).")
    if spec.kind == "local-dir":
        return f"The folder needs {OPEN_CLIP_CONFIG} and a weight file ({' or '.join(OPEN_CLIP_WEIGHT_FILES)})."
    fetch = "download the weights"
    if spec.kind == "pretrained":
        repo_id, filename, tag_url = clip_tag_source(spec.arch, spec.pretrained)
        if repo_id:
            fetch = f"download {filename or OPEN_CLIP_WEIGHT_FILES[0]} from {hub_endpoint()}/{repo_id}"
        elif tag_url:
            fetch = f"download {tag_url}"
    elif spec.kind == "hf-hub":
        fetch = f"download the repository {hub_endpoint()}/{spec.source_id}"
    # Kept short (the app's status area and the CLI show it whole); docs/models.md has the long story.
    return (
        f"Fix: run `augclip-demo download --clip {spec.raw}` where there is internet (then copy AUGCLIP_CACHE_DIR "
        f"here), or {fetch} and pass --clip-checkpoint PATH (AUGCLIP_CLIP_CHECKPOINT=PATH). {_offline_clip_hint()}"
    )


def _hub_repo(spec: str, default: str) -> str:
    return spec if "/" in spec and not spec.startswith(("/", ".", "~")) else default


def _gdino_how_to_fix(spec: str, url: str | None = None) -> str:
    repo = _hub_repo(spec, DEFAULT_GDINO_MODEL)
    return (
        f"Fix: run `augclip-demo download --bpm` where there is internet (then copy AUGCLIP_CACHE_DIR here), or "
        f"download {hub_endpoint()}/{repo} (`hf download {repo} --local-dir gdino`) and pass --gdino-model PATH "
        "(AUGCLIP_GDINO_MODEL=PATH)."
    )


def _fast_preset_how_to_fix(family: str) -> Callable[[str, str | None], str]:
    """How to get a fast-preset BPM model (SAM 2 or OWL-ViT) onto a machine without internet."""
    def how(spec: str, url: str | None = None) -> str:
        row = FAMILIES[family]
        repo = _hub_repo(spec, row.default)
        return (
            f"On a machine with internet, run `augclip-demo download --bpm-fast` (or download {hub_endpoint()}/{repo}, "
            f"e.g. `hf download {repo} --local-dir {family}`, and set {row.variable}=PATH); or copy a filled "
            "AUGCLIP_CACHE_DIR from such a machine; or use AUGCLIP_BPM_PRESET=standard. For an offline smoke test "
            f"only, {row.variable}=random:test runs with untrained weights."
        )
    return how


def _sam_how_to_fix(spec: str, url: str | None = None) -> str:
    arch = spec.split(":", 1)[-1]
    url = url or SAM_CHECKPOINT_URLS["vit_b"]
    return (f"Fix: run `augclip-demo download --bpm` where there is internet (then copy AUGCLIP_CACHE_DIR here), or "
            f"download {url} and pass --sam-checkpoint PATH (AUGCLIP_SAM_CHECKPOINT=PATH; AUGCLIP_SAM_URL for a "
            f"mirror) with --sam-model {arch}.")


def _dino_how_to_fix(spec: str, url: str | None = None) -> str:
    repo = _hub_repo(spec, "facebook/dino-vits16")
    flag = "--hatie" if repo == "facebook/dinov2-base" else "--all"  # HATIE's network: its own command (needs.py)
    return (f"On a machine with internet, run `augclip-demo download {flag}` (or download the repository "
            f"{hub_endpoint()}/{repo}, e.g. `hf download {repo} --local-dir dino`, then give that folder as the "
            "model); or copy a filled AUGCLIP_CACHE_DIR from such a machine. For an offline smoke test only, "
            "random:dino-vits16 (or random:tiny) runs with untrained weights.")


def _url_weights_how_to_fix(model: str, flag: str) -> Callable[[str, str | None], str]:
    """For weights that are one file at a URL (LPIPS backbones, FID's Inception); ``url`` is the file's."""
    def how(spec: str, url: str | None = None) -> str:
        # LPIPS alex is HATIE's backbone: its own download command (needs.py)
        download = "--hatie" if spec == "alex" else "--all"
        shown = f"LPIPS {spec}" if model == "LPIPS" else model
        return (f"On a machine with internet, run `augclip-demo download {download}` (or download {url} and give the "
                f"file with {flag}); or copy a filled AUGCLIP_CACHE_DIR from such a machine; AUGCLIP_FILE_MIRROR points "
                f"at a mirror holding the same file names. For an offline smoke test only, the random: variant of "
                f"{shown} runs with untrained weights.")
    return how


# ---------------------------------------------------------------------- a family's arguments from the settings


def _no_arguments(settings: Settings, device: str) -> dict[str, Any]:
    return {}


def _clip_arguments(settings: Settings, device: str) -> dict[str, Any]:
    """CLIP's precision, checkpoint file and CPU matmul mode (resolved for ``device``)."""
    from .cpu_matmul import resolve_cpu_matmul
    from .device import resolve_amp_dtype

    return {"precision": settings.precision, "checkpoint": settings.clip_checkpoint,
            "cpu_matmul": resolve_cpu_matmul(settings.cpu_matmul, device, resolve_amp_dtype(device, settings.precision))}


def _sam_arguments(settings: Settings, device: str) -> dict[str, Any]:
    """SAM's checkpoint file, download URL and its expected SHA-256."""
    return {"checkpoint": settings.sam_checkpoint, "url": settings.sam_url, "sha256": settings.sam_sha256}


def _mirror_arguments(settings: Settings, device: str) -> dict[str, Any]:
    """The mirror of weights that are one file at a URL (LPIPS backbones, FID's Inception)."""
    return {"mirror": settings.file_mirror}


# ---------------------------------------------------------------------- the table


@dataclass(frozen=True)
class ModelFamily:
    """One family of models: how its specs read, where its weights come from, and who chooses it."""

    key: str  # "clip", "gdino", ... (the weights table's family, needs.py's ModelNeed.family)
    name: str  # what the status line, doctor and download call it
    wrapper: str  # "module:Class" of its LazyModel wrapper, imported on first use
    grammar: str  # "clip", "hub" or "named" (see the module docstring)
    files: str  # what a model of the family is read from, in words
    default: str  # the default spec
    setting: str | None  # the Settings field holding the spec in use (None: the caller names it)
    flag: str | None  # the CLI flag that sets it
    variable: str | None  # the environment variable that sets it
    how_to_fix: Callable[..., str]  # (spec, url=None) -> the end of every weights error
    label_prefix: str = ""  # what labels start with (GroundingDINO's and CLIP's are the bare spec)
    random_kinds: tuple[str, ...] = ()  # hub grammar: the KINDs of random:KIND
    names: tuple[str, ...] = ()  # named grammar: the names
    untrained_names: tuple[str, ...] = ()  # names with no trained weights anywhere (SAM's test architecture)
    #: (settings, resolved device) -> the wrapper's arguments the settings give besides the spec, the device and
    #: the cache folder (:func:`settings_arguments`)
    arguments: Callable[[Settings, str], dict[str, Any]] = _no_arguments
    needed_by: tuple[str, ...] = ()  # the features (needs.py's FEATURES keys) that load it beside CLIP and BPM's

    @property
    def wrapper_class(self) -> type[LazyModel]:
        module, _, cls = self.wrapper.partition(":")
        return getattr(importlib.import_module(module, __package__), cls)

    def canonical(self, spec: object) -> str:
        """The spec in its one spelling (:class:`ConfigError` for one the grammar refuses). CLIP: see
        :func:`~augclip_demo.inference.specs.parse_model_spec` (its canonical text is ``.raw``)."""
        if self.grammar == "hub":
            return _hub_spec(self, spec)
        if self.grammar == "named":
            return _named_spec(self, spec)
        from .specs import parse_model_spec

        return parse_model_spec(str(spec)).raw

    def spec_of(self, settings: Settings) -> str:
        """The spec the settings choose (the default when no setting holds one)."""
        return str(getattr(settings, self.setting) or self.default) if self.setting else self.default

    def untrained(self, spec: str) -> bool:
        """Whether a model of canonical ``spec`` has untrained weights: ``random:``, a test-only name, or a
        folder saved from a random model (it carries :data:`RANDOM_MARKER`)."""
        return untrained_spec(spec, names=self.untrained_names, folders=self.grammar == "hub")

    def label(self, text: str, untrained: bool, detail: str = "") -> str:
        return model_label(self.label_prefix, text, untrained, detail)


FAMILIES: dict[str, ModelFamily] = {f.key: f for f in (
    ModelFamily("clip", "CLIP", ".clip_encoder:ClipEncoder", "clip",
                "open_clip weights: a tag's file from open_clip's pretrained table, an open_clip hub repository or "
                "folder (open_clip_config.json + weights), or a state dict file",
                DEFAULT_CLIP_MODEL, "clip_model", "--clip-model", "AUGCLIP_CLIP_MODEL", _clip_how_to_fix,
                arguments=_clip_arguments),
    ModelFamily("gdino", "GroundingDINO", ".grounding:GroundingDetector", "hub",
                "a transformers folder: " + ", ".join(n[0] for n, _ in GDINO_FILES),
                DEFAULT_GDINO_MODEL, "gdino_model", "--gdino-model", "AUGCLIP_GDINO_MODEL", _gdino_how_to_fix,
                random_kinds=("tiny", "swint")),
    ModelFamily("sam", "SAM", ".segmenter:SamSegmenter", "named",
                "one segment-anything checkpoint file (" + ", ".join(SAM_CHECKPOINT_URLS.values()) + ")",
                DEFAULT_SAM_MODEL, "sam_model", "--sam-model", "AUGCLIP_SAM_MODEL", _sam_how_to_fix,
                label_prefix="SAM", names=("vit_b", "vit_l", "vit_h", "tiny"), untrained_names=("tiny",),
                arguments=_sam_arguments),
    ModelFamily("sam2", "SAM 2.1", ".sam2_segmenter:Sam2Segmenter", "hub",
                "a transformers folder: " + ", ".join(n[0] for n, _ in SAM2_FILES),
                DEFAULT_FAST_SAM_MODEL, "fast_sam_model", None, "AUGCLIP_FAST_SAM_MODEL",
                _fast_preset_how_to_fix("sam2"), label_prefix="SAM 2", random_kinds=("hiera-tiny", "test")),
    ModelFamily("owlvit", "OWL-ViT", ".owl_detector:OwlDetector", "hub",
                "a transformers folder: " + ", ".join(n[0] for n, _ in OWL_FILES),
                DEFAULT_FAST_DETECTOR_MODEL, "fast_detector_model", None, "AUGCLIP_FAST_DETECTOR_MODEL",
                _fast_preset_how_to_fix("owlvit"), label_prefix="OWL-ViT", random_kinds=("owlvit-b32", "test")),
    ModelFamily("dino", "DINO", ".dino:DinoFeatures", "hub",
                "a transformers folder: " + ", ".join(n[0] for n, _ in DINO_FILES),
                "facebook/dino-vits16", "hatie_dino", "--hatie-dino", "AUGCLIP_HATIE_DINO", _dino_how_to_fix,
                label_prefix="DINO", random_kinds=("dino-vits16", "dino-vitb8", "dinov2-base", "tiny", "tiny-v2"),
                needed_by=("hatie",)),
    ModelFamily("lpips", "LPIPS", ".lpips:LpipsNetwork", "named",
                "torchvision's ImageNet backbone file (" + ", ".join(TORCHVISION_BACKBONE_URLS.values())
                + "); the linear heads ship with torchmetrics",
                "alex", "hatie_lpips", "--hatie-lpips", "AUGCLIP_HATIE_LPIPS",
                _url_weights_how_to_fix("LPIPS", "the LPIPS backbone option"), label_prefix="LPIPS",
                names=("alex", "squeeze", "vgg"), arguments=_mirror_arguments, needed_by=("hatie",)),
    ModelFamily("fid", "FID Inception", ".fid:FidInception", "named",
                f"torch-fidelity's converted Inception-v3 file ({FID_INCEPTION_URL})",
                "inception-v3-compat", None, None, None,
                _url_weights_how_to_fix("the FID Inception", "the FID weights option"), label_prefix="FID",
                names=("inception-v3-compat",), arguments=_mirror_arguments),
)}


def family(key: str) -> ModelFamily:
    """The row of ``key`` (:class:`ConfigError` naming the known ones otherwise)."""
    try:
        return FAMILIES[key]
    except KeyError:
        raise ConfigError(f"unknown model family {key!r}; one of {', '.join(FAMILIES)}") from None


def settings_arguments(key: str, settings: Settings, *, device: str | None = None) -> dict[str, Any]:
    """The wrapper arguments of family ``key`` that the settings give (besides the spec): the device, the cache
    folder and the row's own (:attr:`ModelFamily.arguments`); :class:`ConfigError` for a family the table does
    not know. ``device`` replaces the settings' (fetching weights builds wrappers on the CPU without asking
    which accelerator there is)."""
    from .device import resolve_device

    row = family(key)
    device = resolve_device(settings.device if device is None else device)
    return {"device": device, "cache_dir": settings.cache_dir, **row.arguments(settings, device)}


def get_model(key: str, settings: Settings, spec: str | None = None, **arguments: Any) -> Any:
    """The process-wide wrapper of family ``key`` for ``spec`` (default: the one ``settings`` choose).

    The wrapper's other arguments come from ``settings`` (:func:`settings_arguments`), overridden by
    ``arguments`` (e.g. ``input_size``, or ``checkpoint=None``). One wrapper per canonical spec and
    arguments, so every spelling of one model gives the same object; its network lives in the bounded
    pool, whose limits are set from ``settings``.
    """
    from .pool import POOL

    row = family(key)
    args = {**settings_arguments(key, settings), **arguments}
    raw = spec if spec is not None else row.spec_of(settings)
    canonical: Any
    if row.grammar == "clip":
        from .specs import parse_model_spec

        canonical = parse_model_spec(raw, args.pop("checkpoint", None))  # the checkpoint is part of the spec
    else:
        canonical = row.canonical(raw)
    POOL.configure_from(settings)
    lookup = (key, canonical, *sorted((name, str(value)) for name, value in args.items()))
    return POOL.lookup(lookup, lambda: row.wrapper_class(canonical, **args))
