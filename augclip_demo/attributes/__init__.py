"""Attribute extraction: source attributes D_S and target attributes D_T (paper Sec. 4.1).

Providers, chosen by name (Python API, CLI ``--provider``, the app):

* ``manual``: lists given by the user or loaded from JSON (:class:`ManualProvider`);
* ``openai``: a multi-modal LLM behind any OpenAI-compatible API with the paper's prompts
  (:class:`~.openai_provider.OpenAIProvider`, App. C.2 / C.3);
* ``clip-vocab``: offline ranking of a built-in phrase vocabulary with CLIP, lower fidelity
  (:class:`~.clip_vocab.ClipVocabProvider`).

:func:`provider_status` lists them with availability and fidelity labels; :func:`build_provider`
builds one from settings; :func:`get_provider` builds one by name with explicit arguments.
"""

from typing import Any

from .answers import clean_attributes, merge_samples, parse_attribute_list
from .base import (
    FIDELITY_CLIP_VOCAB,
    FIDELITY_MLLM,
    FIDELITY_USER,
    LOWER_FIDELITY_LABELS,
    AttributeProvider,
    Attributes,
    ManualProvider,
    ProgressCallback,
    Provenance,
    available_providers,
    get_provider,
    register_provider,
)
from .catalog import PROVIDER_NAMES, ProviderStatus, build_provider, is_lower_fidelity, provider_status
from .disk_cache import AttributeCache
from .extracting import ExtractingProvider
from .openai_provider import OpenAIProvider
from .prompts import PROMPT_VERSION
from .vocabulary import Vocabulary, default_vocabulary, make_vocabulary


def _clip_vocab_provider(**kwargs: Any) -> AttributeProvider:
    """The ``clip-vocab`` provider; its module (torch, open_clip) loads when one is first built."""
    from .clip_vocab import ClipVocabProvider

    return ClipVocabProvider(**kwargs)


def __getattr__(name: str) -> Any:
    # ClipVocabProvider and vocabulary_embeddings need torch: imported on first use, so the package
    # (and `augclip-demo --help`, which lists the providers) stays light
    if name in ("ClipVocabProvider", "vocabulary_embeddings"):
        from . import clip_vocab

        return getattr(clip_vocab, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


register_provider("openai", OpenAIProvider)
register_provider("clip-vocab", _clip_vocab_provider)

__all__ = [
    "FIDELITY_CLIP_VOCAB",
    "FIDELITY_MLLM",
    "FIDELITY_USER",
    "LOWER_FIDELITY_LABELS",
    "PROMPT_VERSION",
    "PROVIDER_NAMES",
    "AttributeCache",
    "AttributeProvider",
    "Attributes",
    "ClipVocabProvider",
    "ExtractingProvider",
    "ManualProvider",
    "OpenAIProvider",
    "ProgressCallback",
    "Provenance",
    "ProviderStatus",
    "Vocabulary",
    "available_providers",
    "build_provider",
    "clean_attributes",
    "default_vocabulary",
    "get_provider",
    "is_lower_fidelity",
    "make_vocabulary",
    "merge_samples",
    "parse_attribute_list",
    "provider_status",
    "register_provider",
    "vocabulary_embeddings",
]
