"""A small client for any OpenAI-compatible chat-completions endpoint that accepts images.

OpenAI itself, vLLM, Ollama, LM Studio and TGI all speak the same ``/v1/chat/completions``
format. This wraps the official ``openai`` SDK (its ``base_url``, timeout and retry-with-backoff
machinery) and turns every failure into one :class:`~augclip_demo.errors.LLMError` whose message
names the base URL and the model, never the key.

Configuration, in order of precedence:

* base URL: the ``base_url`` argument, else the SDK's standard ``OPENAI_BASE_URL``, else the
  hosted API (``https://api.openai.com/v1``);
* model: the ``model`` argument, else ``Settings.mllm_model`` (``AUGCLIP_MLLM_MODEL``, default ``gpt-4o``);
* timeout and retries: arguments, else ``Settings.mllm_timeout`` / ``mllm_max_retries``
  (``AUGCLIP_MLLM_TIMEOUT``, ``AUGCLIP_MLLM_MAX_RETRIES``);
* key: only the SDK's standard ``OPENAI_API_KEY``, read by the SDK itself. It is never an argument,
  never kept on this object, never part of its ``repr``, and scrubbed from every error message.
  Local servers usually need no key: when a base URL is set and ``OPENAI_API_KEY`` is not, a fixed
  placeholder (:data:`NO_KEY_PLACEHOLDER`) is sent instead.

Retries (SDK behaviour): HTTP 408 / 409 / 429 / 5xx, timeouts and connection errors are retried
``max_retries`` times with exponential backoff from 0.5 s (capped at 8 s, 0-25 % jitter); a
server's ``Retry-After`` / ``retry-after-ms`` header is honoured. 401 / 403 / 404 / 400 fail at once.
"""

from __future__ import annotations

import base64
import io
import logging
import os
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from PIL import Image

from ..config import Settings
from ..errors import LLMError
from ..io import ImageInput, LoadedImage, open_image

log = logging.getLogger(__name__)

HOSTED_BASE_URL = "https://api.openai.com/v1"
#: Sent as the bearer token to a custom base URL when ``OPENAI_API_KEY`` is not set (local servers
#: such as vLLM without ``--api-key`` or Ollama accept any token; the SDK refuses to run without one).
NO_KEY_PLACEHOLDER = "no-key-set"
_KEY_ENV = "OPENAI_API_KEY"
_BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_IMAGE_MAX_SIDE = 1024


@dataclass(frozen=True)
class EndpointStatus:
    """Whether an OpenAI-compatible endpoint is configured, and a human reason (no secrets)."""

    configured: bool
    base_url: str
    key_set: bool
    reason: str


def endpoint_status(base_url: str | None = None, env: Mapping[str, str] | None = None) -> EndpointStatus:
    """Is there enough configuration to call an endpoint? Needs a key or a base URL.

    Never contacts the server: "configured" does not mean "reachable".
    """
    env = os.environ if env is None else env
    key_set = bool((env.get(_KEY_ENV) or "").strip())
    url = (base_url or env.get(_BASE_URL_ENV) or "").strip()
    shown = display_url(url or HOSTED_BASE_URL)
    if url and key_set:
        reason = f"{_BASE_URL_ENV} / base URL {shown}, with {_KEY_ENV} set"
    elif url:
        reason = f"base URL {shown} (no {_KEY_ENV}: fine for most local servers)"
    elif key_set:
        reason = f"{_KEY_ENV} is set (hosted API at {shown})"
    else:
        reason = (f"not configured: set {_KEY_ENV} for the hosted OpenAI API, or {_BASE_URL_ENV} for a local "
                  "OpenAI-compatible server (vLLM, Ollama, LM Studio, TGI)")
    return EndpointStatus(configured=bool(url or key_set), base_url=shown, key_set=key_set, reason=reason)


def display_url(url: str) -> str:
    """The URL without user info, query or fragment (those can carry credentials)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")) or url


_KEY_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-*.]{3,}"),  # OpenAI keys (also their masked echoes "sk-proj-****abcd")
    re.compile(r"(?i)bearer\s+\S+"),
)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """``text`` with the current ``OPENAI_API_KEY`` and anything key-shaped replaced by ``***``."""
    env = os.environ if env is None else env
    key = (env.get(_KEY_ENV) or "").strip()
    if key:
        text = text.replace(key, "***")
    for pattern in _KEY_PATTERNS:
        text = pattern.sub("***", text)
    return text


# ---------------------------------------------------------------------- messages with images
def image_data_url(image: ImageInput | LoadedImage, *, max_side: int | None = DEFAULT_IMAGE_MAX_SIDE,
                   image_format: str = "JPEG", quality: int = 90) -> str:
    """``data:image/...;base64,...`` for ``image`` (any input :func:`~augclip_demo.io.open_image` takes).

    The image is shrunk (never enlarged) so its longer side is at most ``max_side`` (``None``: keep
    the size): vision models downscale large inputs anyway (GPT-4o to 2048 px, then 768 px on the
    short side), so sending more only costs upload time. JPEG at quality 90 by default keeps a
    photo around 100-300 kB; ``image_format="PNG"`` sends lossless pixels.
    """
    loaded = image if isinstance(image, LoadedImage) else open_image(image)
    pil: Image.Image = loaded.image
    if max_side is not None and max(pil.size) > max_side:
        pil = pil.copy()
        pil.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    fmt = image_format.upper()
    if fmt not in ("JPEG", "PNG", "WEBP"):
        raise ValueError(f"image_format must be JPEG, PNG or WEBP, got {image_format!r}")
    buffer = io.BytesIO()
    pil.save(buffer, format=fmt, **({"quality": quality} if fmt != "PNG" else {}))
    mime = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}[fmt]
    return f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def user_message(text: str, images: Sequence[ImageInput | LoadedImage] = (), *, detail: str | None = None,
                 max_side: int | None = DEFAULT_IMAGE_MAX_SIDE, image_format: str = "JPEG") -> dict[str, Any]:
    """A chat ``user`` message: plain text, or text followed by images sent as data URLs.

    ``detail`` (``"low"`` / ``"high"`` / ``"auto"``) is passed through only when given; servers
    that do not know it would otherwise see an unexpected key.
    """
    if not images:
        return {"role": "user", "content": text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for image in images:
        image_url: dict[str, str] = {"url": image_data_url(image, max_side=max_side, image_format=image_format)}
        if detail:
            image_url["detail"] = detail
        parts.append({"type": "image_url", "image_url": image_url})
    return {"role": "user", "content": parts}


def user_message_with_image(text: str, image: ImageInput | LoadedImage, **kwargs: Any) -> dict[str, Any]:
    """A ``user`` message with ``text`` and one image as a data URL (see :func:`user_message`)."""
    return user_message(text, [image], **kwargs)


# ---------------------------------------------------------------------- the client
_HTTP_CLIENT: Any = None
_HTTP_LOCK = threading.Lock()


def _shared_http_client() -> Any:
    """One HTTP connection pool (with the SDK's defaults) for every client in the process.

    Building an HTTP client loads TLS certificates, which costs far more than a request to a local
    server (hundreds of ms on a busy CPU); a batch run builds a provider per item, so they share it.
    Timeouts are still per client: the SDK sends its own timeout with every request.
    """
    global _HTTP_CLIENT
    with _HTTP_LOCK:
        if _HTTP_CLIENT is None or _HTTP_CLIENT.is_closed:
            import openai

            _HTTP_CLIENT = openai.DefaultHttpxClient()
        return _HTTP_CLIENT


@dataclass(frozen=True)
class ChatReply:
    """One answer: its text, the model name the server reports, why it stopped, seconds taken."""

    text: str
    model: str
    finish_reason: str | None
    seconds: float
    #: token -> log-probability of the answer's first token's alternatives, when asked for
    #: (``top_logprobs``) and the server gives them; else None
    first_token_logprobs: dict[str, float] | None = None


class OpenAICompatibleClient:
    """Chat completions against OpenAI or any OpenAI-compatible server.

    Build it from :class:`~augclip_demo.config.Settings` (``OpenAICompatibleClient(settings)``) or
    with explicit ``base_url`` / ``model`` / ``timeout`` / ``max_retries``. Raises
    :class:`LLMError` (``kind="not_configured"``) when neither ``OPENAI_API_KEY`` nor a base URL
    is set. Thread-safe (the SDK's HTTP client is).
    """

    def __init__(self, settings: Settings | None = None, *, base_url: str | None = None,
                 model: str | None = None, timeout: float | None = None, max_retries: int | None = None):
        settings = settings or Settings()
        self.model = (model or settings.mllm_model).strip()
        self.timeout = float(timeout if timeout is not None else settings.mllm_timeout)
        self.max_retries = int(max_retries if max_retries is not None else settings.mllm_max_retries)
        if not self.model:
            raise LLMError("no model name given for the OpenAI-compatible provider; set AUGCLIP_MLLM_MODEL or "
                           "--mllm-model", kind="not_configured")
        if not self.timeout > 0 or self.max_retries < 0:
            raise LLMError(f"invalid timeout {self.timeout} s or retry count {self.max_retries}",
                           kind="not_configured")
        status = endpoint_status(base_url)
        if not status.configured:
            raise LLMError(f"the OpenAI-compatible provider is {status.reason}", kind="not_configured",
                           model=self.model)
        explicit_url = (base_url or os.environ.get(_BASE_URL_ENV) or "").strip() or None
        self.base_url = status.base_url  # for messages and provenance: no user info or query
        self.key_set = status.key_set

        import openai

        try:
            self._sdk = openai.OpenAI(
                # None: the SDK reads OPENAI_API_KEY itself; the placeholder only when no key exists.
                api_key=None if status.key_set else NO_KEY_PLACEHOLDER,
                base_url=explicit_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                http_client=_shared_http_client(),
            )
        except openai.OpenAIError as exc:
            raise LLMError(f"could not set up the client for {self._where()}: {redact(str(exc))}",
                           kind="not_configured", base_url=self.base_url, model=self.model) from None

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> OpenAICompatibleClient:
        return cls(settings, **kwargs)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r}, timeout={self.timeout:g}, "
                f"max_retries={self.max_retries}, key={'set' if self.key_set else 'not set'})")

    __str__ = __repr__

    def _where(self) -> str:
        return f"{self.base_url} (model {self.model})"

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    # ------------------------------------------------------------------ requests
    def chat(self, messages: list[dict], *, seed: int | None = None, temperature: float = 0.0,
             max_tokens: int | None = None, response_format: dict[str, Any] | None = None) -> str:
        """Send ``messages`` and return the answer's text.

        ``seed`` is passed through (OpenAI and vLLM honour it; servers that ignore it just sample).
        ``max_tokens`` uses the classic field, which every OpenAI-compatible server accepts.
        ``response_format`` (e.g. ``{"type": "json_schema", ...}``) is sent only when given: servers
        that constrain decoding (OpenAI, vLLM, Ollama, LM Studio) honour it, others may answer 400.
        Raises :class:`LLMError` on any failure, after the SDK's retries where they apply.
        """
        return self.complete(messages, seed=seed, temperature=temperature, max_tokens=max_tokens,
                             response_format=response_format).text

    def complete(self, messages: list[dict], *, seed: int | None = None, temperature: float = 0.0,
                 max_tokens: int | None = None, response_format: dict[str, Any] | None = None,
                 top_logprobs: int | None = None) -> ChatReply:
        """Like :meth:`chat`, returning a :class:`ChatReply` (text, reported model, finish reason, time).

        An answer without text is an :class:`LLMError`: ``kind="refused"`` when the model declined
        (the message's ``refusal`` field), ``kind="filtered"`` when the server's content filter
        stopped it (``finish_reason="content_filter"``), else ``kind="no_answer"``.
        ``top_logprobs`` asks for that many alternatives of every answer token (``logprobs`` in the
        request); servers that ignore it answer without them (``first_token_logprobs`` is None).
        """
        import openai

        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature}
        if seed is not None:
            kwargs["seed"] = int(seed)
        if max_tokens is not None:
            kwargs["max_tokens"] = int(max_tokens)
        if response_format is not None:
            kwargs["response_format"] = response_format
        if top_logprobs is not None:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = int(top_logprobs)
        start = time.perf_counter()
        try:
            response = self._sdk.chat.completions.create(**kwargs)
        except openai.OpenAIError as exc:
            raise self._translate(exc) from None
        except ValueError as exc:  # the body was not UTF-8 / not JSON (the SDK lets the decoder's error through)
            kind = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "not JSON"
            raise LLMError(f"{self._where()} sent an answer that is {kind}; is this an OpenAI-compatible "
                           "endpoint?", kind="bad_response", base_url=self.base_url, model=self.model) from None
        seconds = time.perf_counter() - start
        choices = getattr(response, "choices", None) or []
        message = choices[0].message if choices else None
        text = getattr(message, "content", None) if message is not None else None
        finish = getattr(choices[0], "finish_reason", None) if choices else None
        if not isinstance(text, str) or not text.strip():
            refusal = getattr(message, "refusal", None) if message is not None else None
            detail = f"; it refused: {redact(str(refusal))[:200]}" if refusal else ""
            kind = "refused" if refusal else "filtered" if finish == "content_filter" else "no_answer"
            raise LLMError(f"{self._where()} returned no text (finish_reason={finish}){detail}",
                           kind=kind, base_url=self.base_url, model=self.model)
        log.debug("chat answer from %s in %.2fs (%d chars)", self._where(), seconds, len(text))
        return ChatReply(text=text, model=str(getattr(response, "model", None) or self.model),
                         finish_reason=finish, seconds=seconds,
                         first_token_logprobs=_first_token_logprobs(choices[0]) if top_logprobs is not None else None)

    def _translate(self, exc: Exception) -> LLMError:
        """One clear :class:`LLMError` per failure class; server messages are quoted scrubbed."""
        import openai

        where = self._where()
        common = {"base_url": self.base_url, "model": self.model}
        tries = f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(f"{where} gave no answer within {self.timeout:g} s ({tries}); check that the server "
                            "is up and not overloaded, or raise AUGCLIP_MLLM_TIMEOUT", kind="timeout", **common)
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f" ({type(cause).__name__}: {redact(str(cause))[:200]})" if cause else ""
            return LLMError(f"could not connect to {where} ({tries}){detail}; is the server running and is "
                            f"{_BASE_URL_ENV} right (it usually ends in /v1)?", kind="connection", **common)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            server = _server_message(exc)
            quoted = f": {server}" if server else ""
            if status == 401:
                key_hint = (f"check {_KEY_ENV}" if self.key_set else
                            f"{_KEY_ENV} is not set and this server requires a key")
                return LLMError(f"{where} refused the credentials (HTTP 401); {key_hint}", kind="auth",
                                status=status, **common)
            if status == 403:
                return LLMError(f"{where} denied access (HTTP 403){quoted}; the key may lack access to this model "
                                "or the region/organisation is not allowed", kind="forbidden", status=status, **common)
            if status == 404:
                return LLMError(f"{where}: not found (HTTP 404){quoted}; check the model name (--mllm-model / "
                                f"AUGCLIP_MLLM_MODEL: e.g. the name vLLM serves or an Ollama tag such as llava) and "
                                f"that the base URL points at the API root (usually ending in /v1)",
                                kind="not_found", status=status, **common)
            if status == 429:
                return LLMError(f"{where} is still rate limiting (HTTP 429) after {tries} with backoff{quoted}; wait "
                                "and retry, use fewer samples, or raise AUGCLIP_MLLM_MAX_RETRIES",
                                kind="rate_limited", status=status, **common)
            if status >= 500:
                return LLMError(f"{where} failed with a server error (HTTP {status}) on all {tries}{quoted}",
                                kind="server", status=status, **common)
            if status in (400, 422):
                return LLMError(f"{where} rejected the request (HTTP {status}){quoted}; if the model cannot read "
                                "images, choose a vision model", kind="bad_request", status=status, **common)
            return LLMError(f"{where} answered HTTP {status}{quoted}", kind="http", status=status, **common)
        if isinstance(exc, openai.APIResponseValidationError):
            return LLMError(f"{where} sent an answer that is not a chat completion; is this an OpenAI-compatible "
                            "endpoint?", kind="bad_response", **common)
        return LLMError(f"request to {where} failed: {type(exc).__name__}: {redact(str(exc))[:300]}",
                        kind="bad_response", **common)


def _first_token_logprobs(choice: Any) -> dict[str, float] | None:
    """token -> log-probability of the first answer token's alternatives (the token itself included)."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    first = content[0]
    out: dict[str, float] = {}
    for alt in list(getattr(first, "top_logprobs", None) or []) + [first]:
        token, logprob = getattr(alt, "token", None), getattr(alt, "logprob", None)
        if isinstance(token, str) and isinstance(logprob, (int, float)):
            out.setdefault(token, float(logprob))
    return out or None


def _server_message(exc: Any) -> str:
    """The server's own error text (OpenAI's ``{"error": {"message": ...}}`` or raw), scrubbed and short."""
    body = getattr(exc, "body", None)
    message: object = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message is None:
            message = body.get("detail") or body.get("message")
    elif isinstance(body, str):
        message = body
    if message is None:
        return ""
    text = re.sub(r"\s+", " ", str(message)).strip()
    return redact(text)[:300]
