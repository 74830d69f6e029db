"""Which models each feature needs: the one table the status line, the BPM and HATIE tabs, ``doctor``,
``download`` and the CLI read, so they all name the same models and the same command.

A feature's models follow the settings: the scores need the configured CLIP model; BPM the two region
models of the configured preset (``standard``: GroundingDINO + SAM; ``fast``: OWL-ViT + SAM 2.1) with
CLIP; HATIE always GroundingDINO + SAM (its detection threshold is on GroundingDINO's scale) with
CLIP, its own CLIP (ViT-B/32 unless the run's is chosen) and its feature networks (DINOv2, LPIPS). :func:`missing_models` looks on disk only, then asks
whether the source can be reached (one connection per host), and loads nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlparse

from ..config import Settings
from ..errors import AugclipError
from .families import FAMILIES

#: feature key -> what the page and the CLI call it
FEATURES: dict[str, str] = {"scores": "scores (AugCLIP, CLIPdir, CLIP-I, CLIP-T)", "bpm": "BPM", "hatie": "HATIE"}


@dataclass(frozen=True)
class ModelNeed:
    """One model a feature loads: its family (a key of the family table) and the spec the settings give."""

    family: str
    spec: str

    @property
    def label(self) -> str:
        return f"{FAMILIES[self.family].name} {self.spec}"


@dataclass(frozen=True)
class MissingModel:
    need: ModelNeed
    reason: str  # short: why it cannot be had here (not on disk, and the source cannot be reached)


def bpm_region_models(settings: Settings, preset: str | None = None) -> list[ModelNeed]:
    """The detector and segmenter of BPM's ``preset`` (default: the configured one)."""
    from .grounding import KNOWN_HUB_MODELS, RANDOM_SPECS

    def need(key: str, spec: str | None = None) -> ModelNeed:
        return ModelNeed(key, spec if spec is not None else FAMILIES[key].spec_of(settings))

    if (preset or settings.bpm_preset) == "fast":
        spec = " ".join(str(settings.fast_detector_model).split())
        detector = "gdino" if spec in KNOWN_HUB_MODELS or spec.lower() in RANDOM_SPECS else "owlvit"
        return [need(detector, settings.fast_detector_model), need("sam2")]
    return [need("gdino"), need("sam")]


def _feature_models(settings: Settings, feature: str) -> list[ModelNeed]:
    """The models of the families whose row says ``feature`` loads them (:attr:`ModelFamily.needed_by`)."""
    return [ModelNeed(key, row.spec_of(settings)) for key, row in FAMILIES.items() if feature in row.needed_by]


def models_needed(settings: Settings, feature: str, *, with_clip: bool = True) -> list[ModelNeed]:
    """The models ``feature`` (a key of :data:`FEATURES`) loads, CLIP first unless ``with_clip`` is False."""
    run_clip = ModelNeed("clip", FAMILIES["clip"].spec_of(settings))
    clip = [run_clip] if with_clip else []
    if feature == "scores":
        return [run_clip, *_feature_models(settings, feature)]
    if feature == "bpm":
        return clip + bpm_region_models(settings) + _feature_models(settings, feature)
    if feature == "hatie":
        # HATIE measures with its own CLIP (ViT-B/32 by default); an empty spec means the run's CLIP.
        own_clip = ([ModelNeed("clip", settings.hatie_clip)]
                    if settings.hatie_clip and ModelNeed("clip", settings.hatie_clip) not in clip else [])
        return clip + bpm_region_models(settings, "standard") + own_clip + _feature_models(settings, feature)
    raise AugclipError(f"unknown feature {feature!r}; one of {', '.join(FEATURES)}")


def download_command(settings: Settings, feature: str) -> str:
    """The one command that fetches what ``feature`` needs (run where there is internet)."""
    if feature == "scores":
        return f"augclip-demo download --clip {settings.clip_model}"
    if feature == "bpm":
        return "augclip-demo download --bpm-fast" if settings.bpm_preset == "fast" else "augclip-demo download --bpm"
    if feature == "hatie":
        return "augclip-demo download --hatie"
    raise AugclipError(f"unknown feature {feature!r}; one of {', '.join(FEATURES)}")


def model_source(need: ModelNeed) -> str | None:
    """Where the model's weights are downloaded from (a URL), when the weights table knows it."""
    from .weights.fetch import hub_endpoint
    from .weights.table import pretrained_entry

    entry = pretrained_entry(need.family, need.spec)
    if entry is None:
        return hub_endpoint() if "/" in need.spec and not need.spec.startswith(("/", ".", "~")) else None
    return f"{hub_endpoint()}/{entry.repo_id}" if entry.repo_id else entry.source


def unreachable_cause(url: str, _seen: dict[str, str | None] | None = None) -> str | None:
    """Why ``url``'s host cannot be reached now (offline mode, no route), or None; one check per host."""
    from .weights.fetch import hub_offline, unreachable_reason

    if hub_offline():  # the resolvers then fetch nothing, from the Hub or any URL
        return "HF_HUB_OFFLINE is set"
    host = urlparse(url).netloc
    seen = _seen if _seen is not None else {}
    if host not in seen:
        seen[host] = unreachable_reason(url, timeout=2.0)
    return seen[host]


def _is_present(need: ModelNeed, settings: Settings) -> bool:
    """Whether the weights are on disk (or need none: ``random:`` specs). Touches no network."""
    from .prefetch import fetch_model
    from .weights.fetch import local_only

    try:
        with local_only():
            fetch_model(need.family, need.spec, settings, progress=False)
    except AugclipError:
        return False
    return True


def _missing_models(settings: Settings, feature: str, *, hosts: dict[str, str | None] | None = None) -> list[MissingModel]:
    """The models of ``feature`` that are neither on disk nor downloadable now (loads nothing)."""
    hosts = {} if hosts is None else hosts
    missing = []
    for need in models_needed(settings, feature):
        if _is_present(need, settings):
            continue
        source = model_source(need)
        cause = unreachable_cause(source, hosts) if source else "no weights on disk and no known source"
        if cause is not None:
            missing.append(MissingModel(need, f"not on disk; {cause}"))
    return missing


def page_models(settings: Settings) -> list[tuple[str, str]]:
    """``(family, spec)`` of what the page runs on its own: the scores' and BPM's models (a Space fetches them)."""
    return list(dict.fromkeys((n.family, n.spec) for f in ("scores", "bpm") for n in models_needed(settings, f)))


def feature_readiness(settings: Settings, features: tuple[str, ...] = tuple(FEATURES)) -> dict[str, list[MissingModel]]:
    """``{feature: its missing models}`` for every feature (one reachability check per host in all)."""
    hosts: dict[str, str | None] = {}
    return {feature: _missing_models(settings, feature, hosts=hosts) for feature in features}


def missing_line(settings: Settings, feature: str, missing: list[MissingModel]) -> str:
    """One line: what ``feature`` lacks and the one command that provides it (backquoted)."""
    names = ", ".join(m.need.label for m in missing)
    return f"{FEATURES[feature]} needs {names}: run `{download_command(settings, feature)}` where there is internet"


def missing_on_disk(settings: Settings, feature: str) -> list[ModelNeed]:
    """The models of ``feature`` whose weights are not on disk (touches no network: ``doctor``)."""
    return [need for need in models_needed(settings, feature) if not _is_present(need, settings)]


def web_app_settings(settings: Settings, *, cuda: bool, environ: Mapping[str, str]) -> Settings:
    """The web page's settings: without CUDA, BPM runs the fast preset unless AUGCLIP_BPM_PRESET says otherwise.

    The fast preset (OWL-ViT + SAM 2.1 at 512 px) takes about 4 s per new source/edit pair on 2 CPU cores,
    the standard one about 50 s (docs/performance.md, BPM); results name the preset. The library and the
    CLI keep the paper's standard preset unless asked. ``environ``: the environment the caller (an edge) read.
    """
    if not cuda and "AUGCLIP_BPM_PRESET" not in environ:
        return settings.replace(bpm_preset="fast")
    return settings
