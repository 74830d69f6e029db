"""Attribute extraction: source attributes D_S and target attributes D_T (paper Sec. 4.1).

Providers are chosen by name through :func:`get_provider`.
"""

from .base import (
    AttributeProvider,
    Attributes,
    ManualProvider,
    Provenance,
    available_providers,
    get_provider,
    register_provider,
)

__all__ = [
    "AttributeProvider",
    "Attributes",
    "ManualProvider",
    "Provenance",
    "available_providers",
    "get_provider",
    "register_provider",
]
