"""Which providers exist, whether each can run here, and building one from settings.

For the app and the CLI:

    >>> for s in provider_status(settings):
    ...     print(s.name, s.available, s.reason, s.fidelity_label)
    manual True attribute lists typed by you or loaded from a JSON file  user-provided
    openai False not configured: set OPENAI_API_KEY ... MLLM-extracted (the paper's method)
    clip-vocab True offline: ranks 3279 built-in phrases with ViT-B-16/openai ... lower fidelity: ...

and ``build_provider(name, settings, encoder=...)`` to get a ready provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..choices import PROVIDER_NAMES
from ..config import Settings
from ..llm.client import endpoint_status
from .base import (
    FIDELITY_CLIP_VOCAB,
    FIDELITY_MLLM,
    FIDELITY_USER,
    AttributeProvider,
    ProgressCallback,
    available_providers,
    get_provider,
    is_lower_fidelity,
)


@dataclass(frozen=True)
class ProviderStatus:
    """One provider as the app lists it.

    ``available``: can run now without more configuration (``openai`` needs ``OPENAI_API_KEY`` or
    ``OPENAI_BASE_URL``; it is not contacted, so a configured server may still be down).
    ``reason``: a human sentence saying why (or why not), never containing a key.
    ``fidelity_label``: the label reports and the UI show next to its attributes.
    ``lower_fidelity``: True for the CLIP-vocabulary stand-in (flag it in the UI).
    ``needs_network``: True when extraction calls a server.
    """

    name: str
    available: bool
    reason: str
    fidelity_label: str
    needs_network: bool

    @property
    def lower_fidelity(self) -> bool:
        return is_lower_fidelity(self.fidelity_label)


def provider_status(settings: Settings | None = None) -> list[ProviderStatus]:
    """Every known provider with availability and a reason; cheap (loads no model, sends nothing)."""
    settings = settings or Settings()
    statuses = [
        ProviderStatus("manual", True, "attribute lists typed by you or loaded from a JSON file "
                       '{"source_attributes": [...], "target_attributes": [...]}', FIDELITY_USER, False),
    ]
    endpoint = endpoint_status()
    reason = f"{endpoint.reason}; model {settings.mllm_model}" if endpoint.configured else endpoint.reason
    statuses.append(ProviderStatus("openai", endpoint.configured, reason, FIDELITY_MLLM, True))
    statuses.append(ProviderStatus("clip-vocab", True, _clip_vocab_reason(settings), FIDELITY_CLIP_VOCAB, False))
    for name in available_providers():  # providers registered by other modules
        if name not in PROVIDER_NAMES:
            statuses.append(ProviderStatus(name, True, "registered provider", "unknown", False))
    return statuses


def _clip_vocab_reason(settings: Settings) -> str:
    from .clip_vocab import vocabulary_cache_slug
    from .vocabulary import default_vocabulary

    vocabulary = default_vocabulary()
    text = (f"offline: ranks {len(vocabulary)} built-in phrases with the CLIP model {settings.clip_model}; "
            "no MLLM, so lower fidelity than the paper's extraction")
    # A cheap look for this spec's file (parsing the spec would import open_clip, seconds on a CPU box);
    # a different checkpoint or precision of the same spec may still need its own encoding.
    folder = settings.cache_dir / "clip_vocab"
    cached = folder.is_dir() and any(folder.glob(f"{vocabulary_cache_slug(settings.clip_model)}-{vocabulary.version}-*.npz"))
    return text + ("; vocabulary embeddings are cached" if cached
                   else "; the first use encodes the vocabulary once (then cached on disk)")


def build_provider(name: str, settings: Settings | None = None, *, encoder: Any = None, use_cache: bool = True,
                   progress: ProgressCallback | None = None, **options: Any) -> AttributeProvider:
    """A provider by name, configured from ``settings``.

    ``encoder``: the CLIP encoder ``clip-vocab`` should share (the evaluator's). ``use_cache=False``
    bypasses the attribute cache (``--no-cache``). ``options`` go to the provider's constructor
    (``openai``: ``model``, ``samples``, ``seed``, ``temperature``, ``base_url``...; ``clip-vocab``:
    ``source_k``, ``target_k``, ``max_similarity``...; ``manual``: ``attributes`` / ``path`` /
    ``source`` + ``target``).
    """
    settings = settings or Settings()
    if name == "openai":
        from .openai_provider import OpenAIProvider

        return OpenAIProvider(settings=settings, use_cache=use_cache, progress=progress, **options)
    if name == "clip-vocab":
        from .clip_vocab import ClipVocabProvider

        return ClipVocabProvider(encoder, settings=settings, use_cache=use_cache, progress=progress, **options)
    return get_provider(name, **options)  # manual and registered providers; unknown names raise there
