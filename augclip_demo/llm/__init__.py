"""Clients for large (multi-modal) language models behind an OpenAI-compatible chat API.

Shared by the attribute providers (AugCLIP App. C.2 / C.3 prompts) and the BPM instruction parser.
"""

from ..errors import LLMError
from .client import (
    HOSTED_BASE_URL,
    NO_KEY_PLACEHOLDER,
    ChatReply,
    EndpointStatus,
    OpenAICompatibleClient,
    display_url,
    endpoint_status,
    image_data_url,
    redact,
    user_message,
    user_message_with_image,
)

__all__ = [
    "HOSTED_BASE_URL",
    "NO_KEY_PLACEHOLDER",
    "ChatReply",
    "EndpointStatus",
    "LLMError",
    "OpenAICompatibleClient",
    "display_url",
    "endpoint_status",
    "image_data_url",
    "redact",
    "user_message",
    "user_message_with_image",
]
