"""Attribute sets, their provenance, the provider interface and the provider registry."""

from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import ImageInput, parse_json

_ATTRIBUTES_FORMAT_KEYS = ("source_attributes", "target_attributes")

# Fidelity labels: shown next to every attribute set (reports, CLI table, app). The paper extracts
# attributes with an MLLM (Sec. 4.1); the offline CLIP-vocabulary ranking is a stand-in of lower
# fidelity and is always labelled so.
#: Attributes typed or loaded by the user.
FIDELITY_USER = "user-provided"
#: Attributes extracted by a multi-modal LLM with the paper's prompts (App. C.2 / C.3).
FIDELITY_MLLM = "MLLM-extracted (the paper's method)"
#: Attributes ranked from a fixed phrase vocabulary by CLIP: lower fidelity than an MLLM.
FIDELITY_CLIP_VOCAB = "lower fidelity: CLIP vocabulary ranking, not an MLLM"
#: Labels that the UI and reports flag as lower fidelity than the paper's MLLM extraction.
LOWER_FIDELITY_LABELS = frozenset({FIDELITY_CLIP_VOCAB})


def is_lower_fidelity(label: str) -> bool:
    """True for fidelity labels of lower-fidelity stand-ins for the paper's MLLM extraction."""
    return label in LOWER_FIDELITY_LABELS

#: ``progress(fraction_done, message)``; ``gradio.Progress`` instances fit this signature.
ProgressCallback = Callable[[float, str], None]


@dataclass
class Provenance:
    """Where an attribute set came from (never contains credentials)."""

    provider: str = "manual"
    model: str | None = None
    prompt_version: str | None = None
    seed: int | None = None
    samples: int = 1
    seconds: float | None = None
    fidelity: str = FIDELITY_USER
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def lower_fidelity(self) -> bool:
        """True for attribute sets that are a lower-fidelity stand-in for the paper's MLLM extraction."""
        return is_lower_fidelity(self.fidelity)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Provenance:
        data = dict(data or {})
        known = {k: data.pop(k) for k in list(data) if k in cls.__dataclass_fields__}
        prov = cls(**known)
        prov.extra.update(data)  # keep unknown keys rather than dropping them
        return prov


# What each Provenance field may hold when read from a file (None where the field is optional).
_PROVENANCE_TYPES: dict[str, tuple[type, ...]] = {
    "provider": (str,), "model": (str, type(None)), "prompt_version": (str, type(None)), "seed": (int, type(None)),
    "samples": (int,), "seconds": (int, float, type(None)), "fidelity": (str,), "extra": (dict,),
}


_WHITESPACE = re.compile(r"\s+")


def _clean_attribute_list(items: Iterable[object], label: str) -> list[str]:
    """Strip each entry, collapse inner whitespace and drop empty ones; reject non-strings."""
    cleaned: list[str] = []
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InputError(f"{label} entry #{i + 1} is a {type(item).__name__}, not a string")
        text = _WHITESPACE.sub(" ", item).strip()
        if text:
            cleaned.append(text)
    return cleaned


@dataclass
class Attributes:
    """Source attributes (D_S) and target attributes (D_T) as texts, with provenance."""

    source: list[str]
    target: list[str]
    provenance: Provenance = field(default_factory=Provenance)

    def __post_init__(self) -> None:
        if isinstance(self.source, str) or isinstance(self.target, str):
            raise InputError("attributes must be lists of strings, not a single string")
        self.source = _clean_attribute_list(self.source, "source attributes")
        self.target = _clean_attribute_list(self.target, "target attributes")
        if isinstance(self.provenance, dict):
            self.provenance = Provenance.from_dict(self.provenance)

    def validate(self) -> Attributes:
        """Raise :class:`InputError` when either list is empty (AugCLIP needs both sets)."""
        missing = [name for name, items in (("source", self.source), ("target", self.target)) if not items]
        if missing:
            raise InputError(
                f"no {' and no '.join(missing)} attributes: AugCLIP needs at least one of each "
                "(type them one per line, load a JSON file, or choose an extracting provider)"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_attributes": list(self.source),
            "target_attributes": list(self.target),
            "provenance": self.provenance.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, origin: str = "attributes") -> Attributes:
        if not isinstance(data, dict):
            raise InputError(f"{origin}: expected a JSON object with source_attributes and target_attributes")
        missing = [key for key in _ATTRIBUTES_FORMAT_KEYS if key not in data]
        if missing:
            raise InputError(f"{origin}: missing key(s) {', '.join(missing)}; expected "
                             '{"source_attributes": [...], "target_attributes": [...]}')
        for key in _ATTRIBUTES_FORMAT_KEYS:
            if not isinstance(data[key], list):
                raise InputError(f"{origin}: {key} must be a list of strings, got {type(data[key]).__name__}")
        provenance = data.get("provenance")
        if provenance is not None:
            if not isinstance(provenance, dict):
                raise InputError(f"{origin}: provenance must be an object, got {type(provenance).__name__}")
            for key, kinds in _PROVENANCE_TYPES.items():
                if key in provenance and not (isinstance(provenance[key], kinds) and not isinstance(provenance[key], bool)):
                    raise InputError(f"{origin}: provenance.{key} has the wrong type ({type(provenance[key]).__name__})")
        try:
            return cls(
                source=data["source_attributes"],
                target=data["target_attributes"],
                provenance=Provenance.from_dict(data.get("provenance")),
            )
        except InputError as exc:
            raise InputError(f"{origin}: {exc}") from None

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Attributes:
        path = Path(path)
        if not path.is_file():
            raise InputError(f"attributes file {path}: not found")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"attributes file {path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                             "save it as UTF-8 JSON") from None
        data = parse_json(text, f"attributes file {path}")
        return cls.from_dict(data, origin=f"attributes file {path}")


class AttributeProvider(ABC):
    """Extracts source and target attributes for one (source image, target text) pair."""

    name: str = "provider"
    fidelity: str = FIDELITY_USER

    @abstractmethod
    def extract(self, source_image: ImageInput, target_text: str, source_text: str | None = None) -> Attributes:
        """Return the attributes, with provenance filled in."""


class ManualProvider(AttributeProvider):
    """Attributes given by the user (lists or a JSON file); extraction just returns them."""

    name = "manual"

    def __init__(self, attributes: Attributes | None = None, *, path: str | Path | None = None,
                 source: Iterable[str] | None = None, target: Iterable[str] | None = None):
        if attributes is None and path is not None:
            attributes = Attributes.load(path)
        if attributes is None and (source is not None or target is not None):
            attributes = Attributes(list(source or []), list(target or []))
        if attributes is None:
            raise InputError(
                "the manual provider needs attribute lists: give them one per line, or a JSON file "
                '{"source_attributes": [...], "target_attributes": [...]}'
            )
        self.attributes = attributes

    def extract(self, source_image: ImageInput, target_text: str, source_text: str | None = None) -> Attributes:
        start = time.perf_counter()
        attrs = Attributes(list(self.attributes.source), list(self.attributes.target),
                           Provenance.from_dict(self.attributes.provenance.to_dict()))
        if attrs.provenance.seconds is None:
            attrs.provenance.seconds = time.perf_counter() - start
        return attrs


ProviderFactory = Callable[..., AttributeProvider]
_PROVIDERS: dict[str, ProviderFactory] = {"manual": ManualProvider}


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Make a provider available by name (Python API, CLI ``--provider`` and the app)."""
    _PROVIDERS[name] = factory


def available_providers() -> list[str]:
    return sorted(_PROVIDERS)


def get_provider(name: str, **kwargs: Any) -> AttributeProvider:
    """Build the provider registered under ``name`` with ``kwargs``."""
    factory = _PROVIDERS.get(name)
    if factory is None:
        raise InputError(f"unknown attribute provider {name!r}; available: {', '.join(available_providers())}")
    return factory(**kwargs)
