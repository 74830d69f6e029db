"""Exceptions that carry a message meant for the user.

Every error the engine raises on purpose derives from :class:`AugclipError`, so the CLI and the
app can show its message as is (one clear line, no traceback) while genuine bugs still surface
as ordinary exceptions.
"""

from __future__ import annotations


class AugclipError(Exception):
    """Base class: the message says what is wrong and what to do about it."""


class ConfigError(AugclipError, ValueError):
    """A setting (environment variable, CLI flag or argument) has an invalid value."""


class ImageLoadError(AugclipError, ValueError):
    """An input could not be read as an image; the message names the input."""


class WeightsUnavailableError(AugclipError, RuntimeError):
    """Model weights could not be obtained (no network, missing file, bad checkpoint).

    The message names the model, where loading was attempted and how to provide a local file.
    """

    def __init__(self, model: str, tried: str, how_to_fix: str, cause: BaseException | None = None):
        self.model = model
        self.tried = tried
        self.how_to_fix = how_to_fix
        detail = f" ({type(cause).__name__}: {_first_line(cause)})" if cause is not None else ""
        super().__init__(
            f"weights for {model} could not be loaded: tried {tried}{detail}. {how_to_fix}"
        )


class InputError(AugclipError, ValueError):
    """A non-image input (text, attribute list, option) is missing or malformed."""


class InstructionParseError(InputError):
    """An editing instruction could not be parsed into (o1, o2, size state, position state).

    The message says why (no object named, a pronoun such as "it", an unsupported form) and what
    to do: rephrase, use the LLM parser, or fill the four fields by hand.
    """


class LLMError(AugclipError, RuntimeError):
    """A request to an OpenAI-compatible chat endpoint failed, or its answer was unusable.

    The message names the base URL and the model and says what to do; it never contains the API
    key (server messages are scrubbed before they are quoted). ``kind`` is a stable machine-readable
    reason for callers that react differently (the app, the batch runner): ``not_configured``,
    ``auth`` (401), ``forbidden`` (403), ``not_found`` (404), ``bad_request`` (400/422),
    ``rate_limited`` (429 after every retry), ``server`` (5xx after every retry), ``timeout``,
    ``connection``, ``bad_response``, ``no_answer`` (no text came back), ``refused`` (the model declined:
    the answer's ``refusal`` field), ``filtered`` (the server's content filter stopped the answer),
    ``no_list`` (the text held no usable list), ``bad_json`` (the text was not the JSON asked for),
    ``http`` (any other status). ``status`` is the HTTP status when there was one.
    """

    def __init__(self, message: str, *, kind: str = "error", status: int | None = None,
                 base_url: str | None = None, model: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.base_url = base_url
        self.model = model
class ManifestError(InputError):
    """A batch manifest has problems; ``problems`` lists every one (line, item id, what is wrong)."""

    def __init__(self, path: str, problems: list[str]):
        self.path = path
        self.problems = list(problems)
        shown = self.problems[:50]
        more = len(self.problems) - len(shown)
        lines = [f"manifest {path}: {len(self.problems)} problem(s); fix them all and run again:"]
        lines += [f"  {problem}" for problem in shown]
        if more:
            lines.append(f"  ... and {more} more")
        super().__init__("\n".join(lines))


class UnsafeArchiveError(InputError):
    """An uploaded zip was refused (too large, too many files, unsafe paths, links, encryption)."""


def _first_line(exc: BaseException | None) -> str:
    text = str(exc).strip() if exc is not None else ""
    return text.splitlines()[0][:300] if text else "no details"


class ExplanationUnavailableError(AugclipError, ValueError):
    """An explanation cannot be computed for this model or input (e.g. relevancy on a CNN tower)."""
